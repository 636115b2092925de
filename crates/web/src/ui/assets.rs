//! Static files (CSS, JS), embedded in the binary and served under content-hashed names with a
//! year of caching: a new build changes the name, never what an old name serves.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

struct Asset {
    /// `app.css`.
    name: &'static str,
    /// `text/css; charset=utf-8`.
    content_type: &'static str,
    body: &'static str,
}

const ASSETS: [Asset; 2] = [
    Asset {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../../../../web/static/app.css"),
    },
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../../../web/static/app.js"),
    },
];

/// `/static/app.<hash>.css` for each asset, computed once.
fn hashed() -> &'static [String; 2] {
    static NAMES: OnceLock<[String; 2]> = OnceLock::new();
    NAMES.get_or_init(|| {
        ASSETS.map(|a| {
            let digest = driftwatch_core::hex(&Sha256::digest(a.body.as_bytes()));
            let (stem, ext) = a.name.split_once('.').unwrap_or((a.name, ""));
            format!("/static/{stem}.{}.{ext}", &digest[..12])
        })
    })
}

/// The stylesheet's URL.
pub fn css_url() -> &'static str {
    &hashed()[0]
}

/// The script's URL.
pub fn js_url() -> &'static str {
    &hashed()[1]
}

/// Total size of the CSS and JS a page loads.
pub fn total_bytes() -> usize {
    ASSETS.iter().map(|a| a.body.len()).sum()
}

/// `GET /static/{file}`: only the current hashed names are served.
pub async fn serve(Path(file): Path<String>) -> Response {
    let wanted = format!("/static/{file}");
    match hashed().iter().position(|name| *name == wanted) {
        Some(i) => {
            let asset = &ASSETS[i];
            (
                [
                    (header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
                    (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable")),
                ],
                asset.body,
            )
                .into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_have_hashed_names_and_stay_small() {
        assert!(css_url().starts_with("/static/app.") && css_url().ends_with(".css"));
        assert_eq!(css_url().len(), "/static/app.".len() + 12 + ".css".len());
        assert!(total_bytes() < 60 * 1024, "CSS + JS is {} bytes", total_bytes());
    }
}

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
    body: String,
}

/// The files, made once: the stylesheet with the endpoint form's rules for each kind.
fn assets() -> &'static [Asset; 2] {
    static ASSETS: OnceLock<[Asset; 2]> = OnceLock::new();
    ASSETS.get_or_init(|| {
        [
            Asset {
                name: "app.css",
                content_type: "text/css; charset=utf-8",
                body: format!("{}{}", include_str!("../../../../web/static/app.css"), kind_rules()),
            },
            Asset {
                name: "app.js",
                content_type: "text/javascript; charset=utf-8",
                body: include_str!("../../../../web/static/app.js").to_owned(),
            },
        ]
    })
}

/// The endpoint form shows the settings of the kind chosen, without script: one rule per kind
/// that has settings, made from the kinds' specs.
fn kind_rules() -> String {
    let selectors: Vec<String> = driftwatch_channels::EndpointKind::ALL
        .iter()
        .filter(|k| !k.spec().fields.is_empty())
        .map(|k| format!("form:has(.kind-select option[value=\"{k}\"]:checked) .kind-fields[data-kind=\"{k}\"]"))
        .collect();
    format!("{} {{ display: block; }}\n", selectors.join(",\n"))
}

/// `/static/app.<hash>.css` for each asset, computed once.
fn hashed() -> &'static [String; 2] {
    static NAMES: OnceLock<[String; 2]> = OnceLock::new();
    NAMES.get_or_init(|| {
        assets().each_ref().map(|a| {
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
    assets().iter().map(|a| a.body.len()).sum()
}

/// `GET /static/{file}`: only the current hashed names are served.
pub async fn serve(Path(file): Path<String>) -> Response {
    let wanted = format!("/static/{file}");
    match hashed().iter().position(|name| *name == wanted) {
        Some(i) => {
            let asset = &assets()[i];
            (
                [
                    (header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
                    (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable")),
                ],
                asset.body.as_str(),
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
        let css = &assets()[0].body;
        assert!(css.contains(r#"option[value="mattermost"]:checked) .kind-fields[data-kind="mattermost"]"#), "{css}");
        assert!(!css.contains(r#"[data-kind="slack"]"#), "slack has no settings to show");
    }
}

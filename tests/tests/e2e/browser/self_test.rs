//! The browser harness tested on pages of its own, served with a strict Content-Security-Policy
//! as the application's pages are: forms, cookies, dark mode, screenshots and axe-core.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{Browser, Scheme, Violation};

const CSP: &str = "default-src 'self'";

const STYLE: &str = "body { background: rgb(255, 255, 255); color: rgb(17, 17, 17); font: 16px sans-serif; }
main { max-width: 40rem; margin: 0 auto; padding: 1rem; }
input { font: inherit; }
@media (prefers-color-scheme: dark) { body { background: rgb(17, 17, 17); color: rgb(238, 238, 238); } }";

fn page(title: &str, body: &str) -> Response {
    let html = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title>
<link rel="stylesheet" href="/style.css"></head><body><main>{body}</main></body></html>"#
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CONTENT_SECURITY_POLICY, CSP)], html).into_response()
}

/// The pages: `/form` posts to `/result`, which echoes the text and sets a session-like cookie;
/// `/unlabelled` has an input without a label (a critical axe violation). `/form` carries an
/// inline script that the CSP must block.
async fn serve_pages() -> String {
    let app = axum::Router::new()
        .route("/style.css", get(|| async { ([(header::CONTENT_TYPE, "text/css")], STYLE) }))
        .route(
            "/form",
            get(|| async {
                page(
                    "Harness form",
                    r#"<h1>Say something</h1><script>document.title = "inline script ran";</script>
<form method="post" action="/result"><label for="words">Words</label> <input id="words" name="words">
<button>Send</button></form>"#,
                )
            }),
        )
        .route(
            "/result",
            axum::routing::post(|body: String| async move {
                let words = url::form_urlencoded::parse(body.as_bytes())
                    .find(|(k, _)| k == "words")
                    .map(|(_, v)| v.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"))
                    .unwrap_or_default();
                let mut response =
                    page("Harness result", &format!(r#"<h1>Thanks</h1><p id="echo">You said: {words}</p>"#));
                let cookie = "dw_session=abc; HttpOnly; SameSite=Strict; Path=/".parse().expect("header");
                response.headers_mut().insert(header::SET_COOKIE, cookie);
                response
            }),
        )
        .route(
            "/unlabelled",
            get(|| async { page("Unlabelled", r#"<h1>Search</h1><form><input type="text" name="q"></form>"#) }),
        );
    format!("http://{}", driftwatch_test_support::serve(app).await)
}

pub async fn drives_a_form_on_a_strict_csp_page() {
    let Some(browser) = Browser::start().await else { return };
    let base = serve_pages().await;
    browser.goto(&format!("{base}/form")).await;
    assert_eq!(browser.client().title().await.expect("title"), "Harness form", "the CSP blocks inline scripts");
    assert_eq!(browser.execute("return 6 * 7;").await, 42, "WebDriver scripts run despite the CSP");

    browser.fill("#words", "hello <b>").await;
    browser.submit_form("form").await;
    assert_eq!(browser.text("#echo").await, "You said: hello <b>");
    assert_eq!(browser.current_url().await.path(), "/result");

    let cookie = browser.cookie("dw_session").await;
    assert_eq!((cookie.value.as_str(), cookie.path.as_deref()), ("abc", Some("/")));
    assert!(cookie.http_only && !cookie.secure, "{cookie:?}");
    assert_eq!(cookie.same_site.as_deref(), Some("Strict"));
}

pub async fn emulates_dark_mode_and_screenshots_both_sizes() {
    let Some(browser) = Browser::start().await else { return };
    let base = serve_pages().await;
    browser.goto(&format!("{base}/form")).await;
    let background = "return getComputedStyle(document.body).backgroundColor;";
    assert_eq!(browser.execute(background).await, "rgb(255, 255, 255)");
    browser.prefer_color_scheme(Some(Scheme::Dark)).await;
    assert_eq!(browser.execute(background).await, "rgb(17, 17, 17)");

    let files = browser.screenshot("harness-form").await;
    let names: Vec<String> = files.iter().map(|f| f.file_name().expect("name").to_string_lossy().into()).collect();
    assert_eq!(
        names,
        ["desktop-light", "desktop-dark", "phone-light", "phone-dark"].map(|s| format!("harness-form-{s}.png"))
    );
    for (file, width) in files.iter().zip([1280, 1280, 390, 390]) {
        let png = std::fs::read(file).expect("screenshot written");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 2_000, "{} is no real PNG", file.display());
        let png_width = u32::from_be_bytes(png[16..20].try_into().expect("IHDR width"));
        assert_eq!(png_width, width, "{}", file.display());
    }
    // Emulation is reset: light again, and the window's own width.
    assert_eq!(browser.execute(background).await, "rgb(255, 255, 255)");
    assert_eq!(browser.execute("return window.innerWidth;").await, 1280);
}

pub async fn axe_finds_serious_violations_despite_the_csp() {
    let Some(browser) = Browser::start().await else { return };
    if !browser.has_axe().await {
        return;
    }
    let base = serve_pages().await;
    browser.goto(&format!("{base}/unlabelled")).await;
    let violations: Vec<Violation> = browser.check_accessibility("unlabelled").await;
    let label = violations.iter().find(|v| v.id == "label").unwrap_or_else(|| panic!("{violations:?}"));
    assert_eq!(label.impact, "critical");
    assert_eq!(label.targets, ["input"]);

    browser.goto(&format!("{base}/form")).await;
    browser.assert_accessible("the form").await;
    browser.prefer_color_scheme(Some(Scheme::Dark)).await;
    browser.assert_accessible("the form in dark mode").await;
}

//! Screenshots at desktop and phone widths in light and dark, through chromedriver's Chrome
//! DevTools Protocol passthrough (`POST /session/{id}/goog/cdp/execute`).

use std::path::PathBuf;

use axum::http::Method;
use base64::Engine as _;
use fantoccini::wd::WebDriverCompatibleCommand;
use serde_json::{Value, json};

use super::Browser;

/// A `prefers-color-scheme` to emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Light,
    Dark,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Light => "light",
            Scheme::Dark => "dark",
        }
    }
}

/// The sizes every screenshot is taken at: name, CSS width and height, mobile emulation.
const SIZES: [(&str, u32, u32, bool); 2] = [("desktop", 1280, 900, false), ("phone", 390, 844, true)];
/// Chromium refuses captures taller than this.
const MAX_HEIGHT: f64 = 16_000.0;

/// One DevTools command sent through chromedriver.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (Method, Option<String>) {
        (Method::POST, Some(json!({ "cmd": self.cmd, "params": self.params }).to_string()))
    }
}

impl Browser {
    /// Runs a Chrome DevTools Protocol command on the current tab and returns its result.
    pub async fn cdp(&self, cmd: &'static str, params: Value) -> Value {
        self.client.issue_cmd(Cdp { cmd, params }).await.unwrap_or_else(|e| panic!("CDP {cmd}: {e}"))
    }

    /// Emulates `prefers-color-scheme` (`None` goes back to the browser's own, light).
    pub async fn prefer_color_scheme(&self, scheme: Option<Scheme>) {
        let features = match scheme {
            Some(scheme) => json!([{ "name": "prefers-color-scheme", "value": scheme.name() }]),
            None => json!([]),
        };
        self.cdp("Emulation.setEmulatedMedia", json!({ "media": "", "features": features })).await;
    }

    /// Saves the whole current page as `target/screenshots/<name>-<desktop|phone>-<light|dark>.png`
    /// (1280 and 390 CSS pixels wide; wider if the page overflows, which then shows) and returns
    /// the files. Emulation is reset afterwards, so the test goes on at 1280x900 in light.
    pub async fn screenshot(&self, name: &str) -> Vec<PathBuf> {
        let dir = super::target_dir().join("screenshots");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let mut files = Vec::new();
        for (size, width, height, mobile) in SIZES {
            let metrics = json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile });
            self.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
            for scheme in [Scheme::Light, Scheme::Dark] {
                self.prefer_color_scheme(Some(scheme)).await;
                let path = dir.join(format!("{name}-{size}-{}.png", scheme.name()));
                let png = self.capture_page(width, height).await;
                std::fs::write(&path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
                files.push(path);
            }
        }
        self.cdp("Emulation.clearDeviceMetricsOverride", json!({})).await;
        self.prefer_color_scheme(None).await;
        files
    }

    /// A PNG of the whole laid-out page, at least the viewport.
    async fn capture_page(&self, width: u32, height: u32) -> Vec<u8> {
        let layout = self.cdp("Page.getLayoutMetrics", json!({})).await;
        let content = &layout["cssContentSize"];
        let clip_width = content["width"].as_f64().unwrap_or(0.0).max(f64::from(width)).ceil();
        let clip_height = content["height"].as_f64().unwrap_or(0.0).clamp(f64::from(height), MAX_HEIGHT).ceil();
        let shot = self
            .cdp(
                "Page.captureScreenshot",
                json!({
                    "format": "png",
                    "captureBeyondViewport": true,
                    "clip": { "x": 0, "y": 0, "width": clip_width, "height": clip_height, "scale": 1 },
                }),
            )
            .await;
        let data = shot["data"].as_str().unwrap_or_else(|| panic!("no screenshot data: {shot}"));
        base64::engine::general_purpose::STANDARD.decode(data).expect("screenshot is base64")
    }
}

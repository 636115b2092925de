//! The screenshot of a render.

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{CaptureScreenshotFormat, CaptureScreenshotParams, Viewport};
use chromiumoxide::page::ScreenshotParams;
use driftwatch_core::ScreenshotMode;

use super::{RenderError, Screenshot, browser};
use crate::config::BrowserConfig;

/// Photographs the window, or the page cut at the height cap, as WebP.
pub(super) async fn screenshot(
    page: &Page,
    config: &BrowserConfig,
    mode: ScreenshotMode,
) -> Result<Screenshot, RenderError> {
    let (width, height) = match mode {
        ScreenshotMode::FullPage => {
            let metrics = page.layout_metrics().await.map_err(browser)?;
            let height = metrics.css_content_size.height.ceil().clamp(1.0, f64::from(config.full_page_max_height));
            (config.window.0, height as u32)
        }
        _ => config.window,
    };
    let cdp_params = CaptureScreenshotParams {
        format: Some(CaptureScreenshotFormat::Webp),
        quality: Some(80),
        clip: Some(Viewport { x: 0.0, y: 0.0, width: f64::from(width), height: f64::from(height), scale: 1.0 }),
        capture_beyond_viewport: Some(mode == ScreenshotMode::FullPage),
        // Encoding is most of a screenshot's cost; a few more bytes are cheaper than CPU.
        optimize_for_speed: Some(true),
        ..CaptureScreenshotParams::default()
    };
    let bytes = page
        .screenshot(ScreenshotParams { cdp_params, full_page: Some(false), omit_background: None })
        .await
        .map_err(browser)?;
    Ok(Screenshot { bytes, width, height, format: "webp" })
}

//! Visual change between two screenshots.
//!
//! [`compare`] decodes two screenshots (WebP, PNG or JPEG, as Chromium's
//! `Page.captureScreenshot` produces them) and reports the share of pixels that differ;
//! [`highlight`] draws a PNG of the newer screenshot with the changed pixels in red;
//! [`compare_and_highlight`] does both from one decode.
//!
//! # Semantics
//!
//! - **Canvas.** Both images are laid on a canvas as wide as the wider one and as tall as the
//!   taller one, anchored at the top left. When the sizes differ (a full-page screenshot whose
//!   page grew or shrank), a pixel present in only one of the images counts as changed. A pixel
//!   present in neither (possible only when one image is wider and the other taller) is not
//!   compared at all.
//! - **Compared pixels** are the union of both images' areas minus the ignored ones, so
//!   [`VisualChange::changed_percent`] is `changed_pixels / compared_pixels * 100`, unrounded.
//!   When nothing is compared (every pixel ignored), it is 0.
//! - **Ignored rectangles** ([`Rect`], in screenshot pixels) are clipped to the canvas and may
//!   overlap; a pixel inside any of them is neither compared nor counted.
//! - **Tolerance.** Two pixels differ when any of their red, green or blue values differ by more
//!   than [`Tolerance::max_channel_delta`] (40 by default, which absorbs lossy WebP/JPEG noise
//!   but not real content changes). Transparent pixels are composited over white first.
//! - **Limits.** An image over [`MAX_PIXELS`], or a canvas over it, is refused with
//!   [`VisualError::TooLarge`] after reading only its header, before any pixel is decoded.
//!   Unreadable input (garbage, truncated files, unsupported formats) gives
//!   [`VisualError::Decode`]; no input makes these functions panic.

mod decode;
mod diff;
mod paint;

use decode::Pair;
pub use decode::dimensions;

/// The most pixels (width × height) an image, or the comparison canvas, may have: 40 megapixels,
/// far above a 1280 × 8000 full-page screenshot. Larger images are refused before decoding.
pub const MAX_PIXELS: u64 = 40_000_000;

/// A rectangle in screenshot pixels (CSS pixels at device scale 1), ignored when comparing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rect {
    /// Left edge, in pixels from the left of the screenshot.
    pub x: u32,
    /// Top edge, in pixels from the top of the screenshot.
    pub y: u32,
    /// Width in pixels; 0 makes the rectangle empty.
    pub width: u32,
    /// Height in pixels; 0 makes the rectangle empty.
    pub height: u32,
}

/// How different two pixels must be to count as changed.
///
/// Two pixels differ when the largest absolute difference of their red, green and blue values
/// is greater than [`max_channel_delta`](Tolerance::max_channel_delta).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tolerance {
    /// The largest per-channel difference (0–255) still counted as unchanged. 0 counts any
    /// difference; the default, 40, absorbs the noise of lossy WebP or JPEG encoding.
    pub max_channel_delta: u8,
}

impl Tolerance {
    /// Counts any difference at all, for lossless screenshots.
    pub const EXACT: Tolerance = Tolerance { max_channel_delta: 0 };

    /// The default tolerance, [`Tolerance::new`]`(40)`.
    pub const DEFAULT: Tolerance = Tolerance { max_channel_delta: 40 };

    /// A tolerance counting a pixel as changed when a channel differs by more than
    /// `max_channel_delta`.
    #[must_use]
    pub const fn new(max_channel_delta: u8) -> Self {
        Tolerance { max_channel_delta }
    }
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance::DEFAULT
    }
}

/// The result of comparing two screenshots.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VisualChange {
    /// Share of compared pixels that differ, 0.0–100.0, unrounded.
    pub changed_percent: f64,
    /// Pixels that differ, including those present in only one of the images.
    pub changed_pixels: u64,
    /// Pixels compared (the union of both images' areas minus ignored ones).
    pub compared_pixels: u64,
    /// Width of the comparison canvas: the larger of both images' widths.
    pub width: u32,
    /// Height of the comparison canvas: the larger of both images' heights.
    pub height: u32,
    /// Bounding box of the changed pixels, when any.
    pub changed_region: Option<Rect>,
}

/// Why two screenshots could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum VisualError {
    /// An image could not be read: not WebP, PNG or JPEG, truncated or corrupt.
    #[error("cannot decode the {0}")]
    Decode(String),
    /// An image, or the canvas both make, has more than the allowed number of pixels.
    #[error("image of {width}x{height} pixels exceeds the limit of {max_pixels} pixels")]
    TooLarge {
        /// Width of the refused image or canvas.
        width: u32,
        /// Height of the refused image or canvas.
        height: u32,
        /// The limit, [`MAX_PIXELS`].
        max_pixels: u64,
    },
    /// The highlighted picture could not be encoded as PNG.
    #[error("cannot encode the highlighted picture: {0}")]
    Encode(String),
}

/// Decodes both images and compares them.
///
/// See the [crate documentation](crate) for how sizes, ignored rectangles and the tolerance
/// are handled.
pub fn compare(
    before: &[u8],
    after: &[u8],
    ignore: &[Rect],
    tolerance: Tolerance,
) -> Result<VisualChange, VisualError> {
    let pair = Pair::decode(before, after, MAX_PIXELS)?;
    Ok(pair.analyse(ignore, tolerance))
}

/// A PNG of `after` with changed pixels highlighted.
///
/// The picture has the canvas size (see [`VisualChange::width`] and
/// [`VisualChange::height`]). Changed pixels are red; unchanged ones show `after` in faded grey;
/// ignored rectangles are hatched and outlined in blue; canvas pixels in neither image are
/// white.
pub fn highlight(before: &[u8], after: &[u8], ignore: &[Rect], tolerance: Tolerance) -> Result<Vec<u8>, VisualError> {
    let pair = Pair::decode(before, after, MAX_PIXELS)?;
    pair.highlight(ignore, tolerance)
}

/// [`compare`] and [`highlight`] together, decoding each image once.
pub fn compare_and_highlight(
    before: &[u8],
    after: &[u8],
    ignore: &[Rect],
    tolerance: Tolerance,
) -> Result<(VisualChange, Vec<u8>), VisualError> {
    let pair = Pair::decode(before, after, MAX_PIXELS)?;
    let change = pair.analyse(ignore, tolerance);
    Ok((change, pair.highlight(ignore, tolerance)?))
}

#[cfg(test)]
mod tests;

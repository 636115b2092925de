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

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use image::{DynamicImage, ImageDecoder, ImageReader, Limits, RgbImage};

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

/// Width and height of an encoded image without decoding the pixels.
pub fn dimensions(bytes: &[u8]) -> Result<(u32, u32), VisualError> {
    let read = || -> Result<(u32, u32), String> {
        ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| e.to_string())?
            .into_dimensions()
            .map_err(|e| e.to_string())
    };
    match catch_unwind(AssertUnwindSafe(read)) {
        Ok(Ok(size)) => Ok(size),
        Ok(Err(e)) => Err(VisualError::Decode(format!("image: {e}"))),
        Err(_) => Err(VisualError::Decode("image: the decoder panicked".into())),
    }
}

/// Red for changed pixels in [`highlight`].
const CHANGED: [u8; 3] = [255, 0, 0];
/// Background for canvas pixels in neither image.
const BACKGROUND: [u8; 3] = [255, 255, 255];
/// Hatching and outline of ignored rectangles.
const IGNORED: [u8; 3] = [40, 90, 220];
/// Period and thickness, in pixels, of the diagonal hatching of ignored rectangles.
const HATCH_PERIOD: u32 = 12;
const HATCH_WIDTH: u32 = 4;
/// Thickness of the outline of ignored rectangles.
const OUTLINE: u32 = 2;

/// Decoded pixels, 3 bytes (R, G, B) per pixel, rows packed.
struct Frame {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Frame {
    /// Row `y` as RGB bytes, empty below the image.
    fn row(&self, y: u32) -> &[u8] {
        if y >= self.height {
            return &[];
        }
        let len = self.width as usize * 3;
        let start = y as usize * len;
        &self.rgb[start..start + len]
    }
}

/// Reads the header, refuses over-large images, then decodes to RGB.
fn decode(bytes: &[u8], which: &str, max_pixels: u64) -> Result<Frame, VisualError> {
    let decode_err = |e: image::ImageError| VisualError::Decode(format!("{which} image: {e}"));
    let run = || -> Result<Frame, VisualError> {
        let mut reader = ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| VisualError::Decode(format!("{which} image: {e}")))?;
        let side = u32::try_from(max_pixels).unwrap_or(u32::MAX);
        let mut limits = Limits::default();
        limits.max_image_width = Some(side);
        limits.max_image_height = Some(side);
        reader.limits(limits);
        let decoder = reader.into_decoder().map_err(decode_err)?;
        let (width, height) = decoder.dimensions();
        check_size(width, height, max_pixels)?;
        let image = DynamicImage::from_decoder(decoder).map_err(decode_err)?;
        Ok(to_rgb(image))
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(result) => result,
        Err(_) => Err(VisualError::Decode(format!("{which} image: the decoder panicked"))),
    }
}

fn check_size(width: u32, height: u32, max_pixels: u64) -> Result<(), VisualError> {
    if u64::from(width) * u64::from(height) > max_pixels {
        return Err(VisualError::TooLarge { width, height, max_pixels });
    }
    Ok(())
}

/// Converts to packed RGB, compositing any transparency over white.
fn to_rgb(image: DynamicImage) -> Frame {
    let (width, height) = (image.width(), image.height());
    if !image.color().has_alpha() {
        return Frame { width, height, rgb: image.into_rgb8().into_raw() };
    }
    let rgba = image.into_rgba8().into_raw();
    let (pixels, _) = rgba.as_chunks::<4>();
    let mut rgb = Vec::with_capacity(pixels.len() * 3);
    for &[r, g, b, a] in pixels {
        if a == 255 {
            rgb.extend_from_slice(&[r, g, b]);
        } else {
            let a = u32::from(a);
            let over = |c: u8| ((u32::from(c) * a + 255 * (255 - a) + 127) / 255) as u8;
            rgb.extend_from_slice(&[over(r), over(g), over(b)]);
        }
    }
    Frame { width, height, rgb }
}

/// A rectangle clipped to the canvas, as half-open ranges; never empty.
#[derive(Clone, Copy)]
struct Clipped {
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
}

fn clip(rects: &[Rect], width: u32, height: u32) -> Vec<Clipped> {
    rects
        .iter()
        .filter_map(|r| {
            let c = Clipped {
                x0: r.x.min(width),
                y0: r.y.min(height),
                x1: r.x.saturating_add(r.width).min(width),
                y1: r.y.saturating_add(r.height).min(height),
            };
            (c.x0 < c.x1 && c.y0 < c.y1).then_some(c)
        })
        .collect()
}

/// Fills `out` with the sorted, disjoint `[start, end)` column ranges ignored on row `y`.
fn ignored_spans(rects: &[Clipped], y: u32, out: &mut Vec<(u32, u32)>) {
    out.clear();
    out.extend(rects.iter().filter(|r| r.y0 <= y && y < r.y1).map(|r| (r.x0, r.x1)));
    out.sort_unstable();
    let mut merged = 0;
    for i in 0..out.len() {
        let (start, end) = out[i];
        if merged > 0 && start <= out[merged - 1].1 {
            out[merged - 1].1 = out[merged - 1].1.max(end);
        } else {
            out[merged] = (start, end);
            merged += 1;
        }
    }
    out.truncate(merged);
}

/// Calls `f(start, end)` for each column range of `0..width` outside the sorted, disjoint
/// `ignored` ranges.
fn for_each_gap(ignored: &[(u32, u32)], width: u32, mut f: impl FnMut(u32, u32)) {
    let mut x = 0;
    for &(start, end) in ignored {
        if x < start {
            f(x, start);
        }
        x = end;
    }
    if x < width {
        f(x, width);
    }
}

#[inline]
fn differs(p: &[u8; 3], q: &[u8; 3], threshold: u8) -> bool {
    p[0].abs_diff(q[0]).max(p[1].abs_diff(q[1])).max(p[2].abs_diff(q[2])) > threshold
}

/// Pixels per block in [`for_each_changed_block`].
const BLOCK: usize = 64;

/// Calls `f(offset, before, after)` for each block of [`BLOCK`] pixels (fewer at the end) that
/// may hold a changed pixel: one where some channel differs by more than `threshold`.
///
/// Screenshots mostly stay the same, and the largest difference over a block's flat bytes
/// vectorises well, so unchanged blocks cost a fraction of a per-pixel test.
#[inline]
fn for_each_changed_block(
    before: &[[u8; 3]],
    after: &[[u8; 3]],
    threshold: u8,
    mut f: impl FnMut(usize, &[[u8; 3]], &[[u8; 3]]),
) {
    for (i, (b, a)) in before.chunks(BLOCK).zip(after.chunks(BLOCK)).enumerate() {
        let max = b.as_flattened().iter().zip(a.as_flattened()).fold(0, |m, (x, y)| m.max(x.abs_diff(*y)));
        if max > threshold {
            f(i * BLOCK, b, a);
        }
    }
}

/// Pixels of `row` (RGB bytes) in columns `start..end`.
fn pixels(row: &[u8], start: u32, end: u32) -> &[[u8; 3]] {
    row[start as usize * 3..end as usize * 3].as_chunks::<3>().0
}

/// Both decoded screenshots and their canvas.
struct Pair {
    before: Frame,
    /// `None` when `after` had the same bytes as `before`.
    after: Option<Frame>,
    width: u32,
    height: u32,
}

impl Pair {
    fn decode(before: &[u8], after: &[u8], max_pixels: u64) -> Result<Pair, VisualError> {
        let (b, a) = if before == after {
            (decode(before, "before", max_pixels)?, None)
        } else {
            // Decoding dominates the cost: decode both at once.
            let (b, a) = std::thread::scope(|scope| {
                let a = scope.spawn(|| decode(after, "after", max_pixels));
                let b = decode(before, "before", max_pixels);
                let a =
                    a.join().unwrap_or_else(|_| Err(VisualError::Decode("after image: the decoder panicked".into())));
                (b, a)
            });
            (b?, Some(a?))
        };
        let after_frame = a.as_ref().unwrap_or(&b);
        let width = b.width.max(after_frame.width);
        let height = b.height.max(after_frame.height);
        check_size(width, height, max_pixels)?;
        Ok(Pair { before: b, after: a, width, height })
    }

    fn after(&self) -> &Frame {
        self.after.as_ref().unwrap_or(&self.before)
    }

    fn analyse(&self, ignore: &[Rect], tolerance: Tolerance) -> VisualChange {
        let (before, after) = (&self.before, self.after());
        let identical = self.after.is_none();
        let threshold = tolerance.max_channel_delta;
        let rects = clip(ignore, self.width, self.height);
        let mut spans = Vec::new();
        let (mut compared, mut changed) = (0u64, 0u64);
        // Bounding box of changes: min x, min y, max x, max y (inclusive).
        let mut bbox: Option<(u32, u32, u32, u32)> = None;

        for y in 0..self.height {
            let (row_b, row_a) = (before.row(y), after.row(y));
            let wb = if y < before.height { before.width } else { 0 };
            let wa = if y < after.height { after.width } else { 0 };
            let (common, union) = (wb.min(wa), wb.max(wa));
            if union == 0 {
                continue;
            }
            ignored_spans(&rects, y, &mut spans);
            let mut row_first = u32::MAX;
            let mut row_last = 0;
            for_each_gap(&spans, union, |x0, x1| {
                compared += u64::from(x1 - x0);
                let c1 = x1.min(common);
                if x0 < c1 && !identical {
                    let (pb, pa) = (pixels(row_b, x0, c1), pixels(row_a, x0, c1));
                    for_each_changed_block(pb, pa, threshold, |offset, pb, pa| {
                        let mut flags = pb.iter().zip(pa).map(|(p, q)| differs(p, q, threshold));
                        let Some(first) = flags.position(|d| d) else {
                            return;
                        };
                        let last = flags.rposition(|d| d).map_or(first, |l| first + 1 + l);
                        changed += 1 + pb[first + 1..]
                            .iter()
                            .zip(&pa[first + 1..])
                            .filter(|(p, q)| differs(p, q, threshold))
                            .count() as u64;
                        row_first = row_first.min(x0 + (offset + first) as u32);
                        row_last = row_last.max(x0 + (offset + last) as u32);
                    });
                }
                // Columns present in only one image.
                let e0 = x0.max(common);
                if e0 < x1 {
                    changed += u64::from(x1 - e0);
                    row_first = row_first.min(e0);
                    row_last = row_last.max(x1 - 1);
                }
            });
            if row_first != u32::MAX {
                bbox = Some(match bbox {
                    None => (row_first, y, row_last, y),
                    Some((x0, y0, x1, _)) => (x0.min(row_first), y0, x1.max(row_last), y),
                });
            }
        }

        let changed_percent = if compared == 0 { 0.0 } else { changed as f64 * 100.0 / compared as f64 };
        VisualChange {
            changed_percent,
            changed_pixels: changed,
            compared_pixels: compared,
            width: self.width,
            height: self.height,
            changed_region: bbox.map(|(x0, y0, x1, y1)| Rect { x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1 }),
        }
    }

    fn highlight(&self, ignore: &[Rect], tolerance: Tolerance) -> Result<Vec<u8>, VisualError> {
        let (before, after) = (&self.before, self.after());
        let identical = self.after.is_none();
        let threshold = tolerance.max_channel_delta;
        let rects = clip(ignore, self.width, self.height);
        let stride = self.width as usize * 3;
        let mut out = vec![0u8; stride * self.height as usize];
        let mut spans = Vec::new();

        for (y, out_row) in (0..self.height).zip(out.chunks_exact_mut(stride.max(1))) {
            let (row_b, row_a) = (before.row(y), after.row(y));
            let wb = if y < before.height { before.width } else { 0 };
            let wa = if y < after.height { after.width } else { 0 };
            let (common, union) = (wb.min(wa), wb.max(wa));
            let out_px = out_row.as_chunks_mut::<3>().0;

            // Base: `after` faded to light grey, white where it has no pixels.
            for (o, p) in out_px.iter_mut().zip(row_a.as_chunks::<3>().0) {
                *o = faded(p);
            }
            for o in out_px.iter_mut().skip(wa as usize) {
                *o = BACKGROUND;
            }

            ignored_spans(&rects, y, &mut spans);
            for_each_gap(&spans, union, |x0, x1| {
                let c1 = x1.min(common);
                if x0 < c1 && !identical {
                    let (pb, pa) = (pixels(row_b, x0, c1), pixels(row_a, x0, c1));
                    let out = &mut out_px[x0 as usize..c1 as usize];
                    for_each_changed_block(pb, pa, threshold, |offset, pb, pa| {
                        for ((o, p), q) in out[offset..].iter_mut().zip(pb).zip(pa) {
                            if differs(p, q, threshold) {
                                *o = CHANGED;
                            }
                        }
                    });
                }
                let e0 = x0.max(common);
                if e0 < x1 {
                    out_px[e0 as usize..x1 as usize].fill(CHANGED);
                }
            });
            for &(x0, x1) in &spans {
                for x in x0..x1 {
                    if (x + y) % HATCH_PERIOD < HATCH_WIDTH {
                        let o = &mut out_px[x as usize];
                        *o = std::array::from_fn(|i| ((u16::from(o[i]) + u16::from(IGNORED[i])) / 2) as u8);
                    }
                }
            }
        }

        for r in &rects {
            outline(&mut out, self.width, r);
        }

        let image = RgbImage::from_raw(self.width, self.height, out)
            .ok_or_else(|| VisualError::Encode("pixel buffer of the wrong size".into()))?;
        let mut png = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
            .map_err(|e| VisualError::Encode(e.to_string()))?;
        Ok(png)
    }
}

/// `p` as a light grey of the same lightness.
#[inline]
fn faded(p: &[u8; 3]) -> [u8; 3] {
    let luma = (u32::from(p[0]) * 77 + u32::from(p[1]) * 150 + u32::from(p[2]) * 29) >> 8;
    let v = (255 - (255 - luma) * 2 / 5) as u8;
    [v, v, v]
}

/// Draws the border of `r` (already clipped) into the packed RGB canvas `out`.
fn outline(out: &mut [u8], width: u32, r: &Clipped) {
    let mut set = |x: u32, y: u32| {
        let i = (y as usize * width as usize + x as usize) * 3;
        out[i..i + 3].copy_from_slice(&IGNORED);
    };
    for y in r.y0..r.y1 {
        let edge_row = y < r.y0 + OUTLINE || y + OUTLINE >= r.y1;
        if edge_row {
            (r.x0..r.x1).for_each(|x| set(x, y));
        } else {
            (r.x0..r.x1.min(r.x0 + OUTLINE)).for_each(|x| set(x, y));
            (r.x1.saturating_sub(OUTLINE).max(r.x0)..r.x1).for_each(|x| set(x, y));
        }
    }
}

#[cfg(test)]
mod tests;

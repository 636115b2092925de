//! Drawing the highlighted picture: changed pixels red, ignored rectangles hatched in blue.

use std::io::Cursor;

use image::RgbImage;

use crate::decode::Pair;
use crate::diff::{Clipped, clip, differs, for_each_changed_block, for_each_gap, ignored_spans, pixels};
use crate::{Rect, Tolerance, VisualError};

/// Red for changed pixels in [`highlight`](crate::highlight).
pub(crate) const CHANGED: [u8; 3] = [255, 0, 0];
/// Background for canvas pixels in neither image.
pub(crate) const BACKGROUND: [u8; 3] = [255, 255, 255];
/// Hatching and outline of ignored rectangles.
pub(crate) const IGNORED: [u8; 3] = [40, 90, 220];
/// Period and thickness, in pixels, of the diagonal hatching of ignored rectangles.
const HATCH_PERIOD: u32 = 12;
const HATCH_WIDTH: u32 = 4;
/// Thickness of the outline of ignored rectangles.
const OUTLINE: u32 = 2;

impl Pair {
    pub(crate) fn highlight(&self, ignore: &[Rect], tolerance: Tolerance) -> Result<Vec<u8>, VisualError> {
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

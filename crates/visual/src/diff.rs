//! Counting changed pixels: ignored rectangles, changed blocks and the bounding box.

use crate::decode::Pair;
use crate::{Rect, Tolerance, VisualChange};

/// A rectangle clipped to the canvas, as half-open ranges; never empty.
#[derive(Clone, Copy)]
pub(crate) struct Clipped {
    pub(crate) x0: u32,
    pub(crate) y0: u32,
    pub(crate) x1: u32,
    pub(crate) y1: u32,
}

pub(crate) fn clip(rects: &[Rect], width: u32, height: u32) -> Vec<Clipped> {
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
pub(crate) fn ignored_spans(rects: &[Clipped], y: u32, out: &mut Vec<(u32, u32)>) {
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
pub(crate) fn for_each_gap(ignored: &[(u32, u32)], width: u32, mut f: impl FnMut(u32, u32)) {
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
pub(crate) fn differs(p: &[u8; 3], q: &[u8; 3], threshold: u8) -> bool {
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
pub(crate) fn for_each_changed_block(
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
pub(crate) fn pixels(row: &[u8], start: u32, end: u32) -> &[[u8; 3]] {
    row[start as usize * 3..end as usize * 3].as_chunks::<3>().0
}

impl Pair {
    pub(crate) fn analyse(&self, ignore: &[Rect], tolerance: Tolerance) -> VisualChange {
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
}

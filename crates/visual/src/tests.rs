#![allow(clippy::unwrap_used)]

use super::*;
use crate::decode::decode;
use crate::diff::differs;
use crate::paint::{BACKGROUND, CHANGED, IGNORED};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::webp::WebPEncoder;
use image::{ImageEncoder, Rgb, RgbImage, RgbaImage};
use std::io::Cursor;

fn png(img: &RgbImage) -> Vec<u8> {
    let mut out = Vec::new();
    img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}

fn webp_lossless(img: &RgbImage) -> Vec<u8> {
    let mut out = Vec::new();
    WebPEncoder::new_lossless(&mut out)
        .write_image(img.as_raw(), img.width(), img.height(), image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

fn jpeg(img: &RgbImage, quality: u8) -> Vec<u8> {
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, quality)
        .write_image(img.as_raw(), img.width(), img.height(), image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// A page-like picture: a soft gradient background, a coloured header bar and rows of dark
/// "text" strokes on white.
fn page(width: u32, height: u32) -> RgbImage {
    RgbImage::from_fn(width, height, |x, y| {
        if y < 60 {
            Rgb([30, 60 + (x * 100 / width) as u8, 140])
        } else if x < 200 {
            let g = 200 + (y * 50 / height) as u8;
            Rgb([g, g, 250])
        } else {
            let line = (y - 60) % 24;
            let glyph = (x / 7) % 9 != 0 && ((x * 7 + y * 3) % 11) < 6;
            if (6..16).contains(&line) && glyph && x < width - 100 { Rgb([20, 20, 30]) } else { Rgb([255, 255, 255]) }
        }
    })
}

fn flat(width: u32, height: u32, colour: [u8; 3]) -> RgbImage {
    RgbImage::from_pixel(width, height, Rgb(colour))
}

/// Paints a rectangle of `colour` onto `img`.
fn paint(img: &mut RgbImage, r: Rect, colour: [u8; 3]) {
    for y in r.y..r.y + r.height {
        for x in r.x..r.x + r.width {
            img.put_pixel(x, y, Rgb(colour));
        }
    }
}

fn rect(x: u32, y: u32, width: u32, height: u32) -> Rect {
    Rect { x, y, width, height }
}

/// Straightforward per-pixel reference for [`compare`], to check the span arithmetic against.
fn reference(a: &RgbImage, b: &RgbImage, ignore: &[Rect], threshold: u8) -> (u64, u64) {
    let (w, h) = (a.width().max(b.width()), a.height().max(b.height()));
    let (mut compared, mut changed) = (0, 0);
    for y in 0..h {
        for x in 0..w {
            let ignored = ignore.iter().any(|r| {
                u64::from(x) >= u64::from(r.x)
                    && u64::from(x) < u64::from(r.x) + u64::from(r.width)
                    && u64::from(y) >= u64::from(r.y)
                    && u64::from(y) < u64::from(r.y) + u64::from(r.height)
            });
            let pa = (x < a.width() && y < a.height()).then(|| a.get_pixel(x, y).0);
            let pb = (x < b.width() && y < b.height()).then(|| b.get_pixel(x, y).0);
            if ignored || (pa.is_none() && pb.is_none()) {
                continue;
            }
            compared += 1;
            match (pa, pb) {
                (Some(p), Some(q)) => changed += u64::from(differs(&p, &q, threshold)),
                _ => changed += 1,
            }
        }
    }
    (compared, changed)
}

#[test]
fn identical_images_are_unchanged() {
    let img = page(1280, 900);
    let bytes = png(&img);
    let same = compare(&bytes, &bytes, &[], Tolerance::EXACT).unwrap();
    assert_eq!(same.changed_pixels, 0);
    assert_eq!(same.changed_percent, 0.0);
    assert_eq!(same.compared_pixels, 1280 * 900);
    assert_eq!((same.width, same.height), (1280, 900));
    assert_eq!(same.changed_region, None);

    // The same pixels in another lossless format.
    let other = compare(&bytes, &webp_lossless(&img), &[], Tolerance::EXACT).unwrap();
    assert_eq!(other, same);
}

#[test]
fn block_of_100x100_on_1000x1000_is_one_percent() {
    let before = flat(1000, 1000, [240, 240, 240]);
    let mut after = before.clone();
    paint(&mut after, rect(300, 400, 100, 100), [10, 10, 10]);
    for (b, a) in [(png(&before), png(&after)), (webp_lossless(&before), webp_lossless(&after))] {
        let change = compare(&b, &a, &[], Tolerance::default()).unwrap();
        assert_eq!(change.changed_pixels, 10_000);
        assert_eq!(change.compared_pixels, 1_000_000);
        assert_eq!(change.changed_percent, 1.0);
        assert_eq!(change.changed_region, Some(rect(300, 400, 100, 100)));
    }
}

#[test]
fn change_inside_ignore_rect_is_not_counted() {
    let before = flat(1000, 1000, [240, 240, 240]);
    let mut after = before.clone();
    paint(&mut after, rect(300, 400, 100, 100), [10, 10, 10]);
    let ignore = [rect(290, 390, 200, 200)];
    let change = compare(&png(&before), &png(&after), &ignore, Tolerance::default()).unwrap();
    assert_eq!(change.changed_pixels, 0);
    assert_eq!(change.changed_percent, 0.0);
    assert_eq!(change.compared_pixels, 1_000_000 - 200 * 200);
    assert_eq!(change.changed_region, None);
}

#[test]
fn partially_overlapping_ignore_rects_leave_the_rest_counted() {
    let before = flat(1000, 1000, [240, 240, 240]);
    let mut after = before.clone();
    paint(&mut after, rect(100, 100, 100, 100), [10, 10, 10]);
    // Covers the block's top right quarter; the second overlaps the first and the block.
    let ignore = [rect(150, 100, 200, 50), rect(120, 120, 50, 50)];
    let change = compare(&png(&before), &png(&after), &ignore, Tolerance::default()).unwrap();
    // Block 10_000, minus 150..200 x 100..150 (2_500), minus the second rect's part outside
    // the first: 120..170 x 120..150 less 150..170 x 120..150, plus 120..170 x 150..170.
    let ignored_in_block = 2_500 + (50 * 30 - 20 * 30) + 50 * 20;
    assert_eq!(change.changed_pixels, 10_000 - ignored_in_block);
    let ignored = 200 * 50 + 50 * 50 - 20 * 30;
    assert_eq!(change.compared_pixels, 1_000_000 - ignored);
    assert_eq!(change.changed_region, Some(rect(100, 100, 100, 100)));
    let expected = (10_000 - ignored_in_block) as f64 * 100.0 / (1_000_000 - ignored) as f64;
    assert!((change.changed_percent - expected).abs() < 1e-9);
}

#[test]
fn every_pixel_ignored_is_zero_percent() {
    let before = flat(50, 40, [0, 0, 0]);
    let after = flat(50, 60, [255, 255, 255]);
    let ignore = [rect(0, 0, 30, 100), rect(25, 0, u32::MAX, u32::MAX)];
    let change = compare(&png(&before), &png(&after), &ignore, Tolerance::EXACT).unwrap();
    assert_eq!(change.compared_pixels, 0);
    assert_eq!(change.changed_pixels, 0);
    assert_eq!(change.changed_percent, 0.0);
    assert_eq!((change.width, change.height), (50, 60));
}

#[test]
fn extra_rows_of_a_taller_page_count_as_changed() {
    let before = page(200, 100);
    let mut after = RgbImage::new(200, 150);
    for (x, y, p) in before.enumerate_pixels() {
        after.put_pixel(x, y, *p);
    }
    let change = compare(&png(&before), &png(&after), &[], Tolerance::EXACT).unwrap();
    assert_eq!((change.width, change.height), (200, 150));
    assert_eq!(change.compared_pixels, 200 * 150);
    assert_eq!(change.changed_pixels, 200 * 50);
    assert!((change.changed_percent - 100.0 / 3.0).abs() < 1e-9);
    assert_eq!(change.changed_region, Some(rect(0, 100, 200, 50)));

    // The other way round: the page shrank.
    let shrank = compare(&png(&after), &png(&before), &[], Tolerance::EXACT).unwrap();
    assert_eq!(shrank, change);
}

#[test]
fn different_widths_and_heights_compare_the_union() {
    // Wide and short against narrow and tall: the bottom right corner is in neither.
    let a = flat(120, 50, [100, 100, 100]);
    let b = flat(80, 90, [100, 100, 100]);
    let change = compare(&png(&a), &png(&b), &[], Tolerance::EXACT).unwrap();
    assert_eq!((change.width, change.height), (120, 90));
    assert_eq!(change.compared_pixels, 120 * 50 + 80 * 40);
    assert_eq!(change.changed_pixels, 40 * 50 + 80 * 40);
    assert_eq!(change.changed_region, Some(rect(0, 0, 120, 90)));
}

#[test]
fn matches_a_per_pixel_reference() {
    // Sizes of both images, and the rectangles to ignore.
    type Case<'a> = ((u32, u32), (u32, u32), &'a [Rect]);
    let cases: &[Case] = &[
        ((64, 48), (64, 48), &[]),
        ((64, 48), (64, 70), &[rect(10, 10, 20, 50), rect(25, 5, 30, 10)]),
        ((90, 30), (50, 60), &[rect(40, 20, 100, 5), rect(0, 0, 1, 1)]),
        ((50, 60), (90, 30), &[rect(45, 0, 10, 100), rect(45, 0, 10, 100)]),
        ((30, 30), (30, 30), &[rect(31, 0, 5, 5), rect(0, 29, 0, 5)]),
        ((40, 40), (41, 39), &[rect(5, 5, 5, 5), rect(7, 3, 2, 20), rect(6, 6, 1, 1)]),
    ];
    for (i, &((wa, ha), (wb, hb), ignore)) in cases.iter().enumerate() {
        let a = RgbImage::from_fn(wa, ha, |x, y| Rgb([(x * 7) as u8, (y * 5) as u8, 128]));
        let b = RgbImage::from_fn(wb, hb, |x, y| {
            let noise = ((x * 31 + y * 17 + i as u32) % 97) as u8;
            Rgb([(x * 7) as u8, (y * 5) as u8, 100 + noise])
        });
        for threshold in [0, 40, 255] {
            let change = compare(&png(&a), &png(&b), ignore, Tolerance::new(threshold)).unwrap();
            let expected = reference(&a, &b, ignore, threshold);
            assert_eq!((change.compared_pixels, change.changed_pixels), expected, "case {i}, threshold {threshold}");
        }
    }
}

#[test]
fn jpeg_noise_stays_under_half_a_percent() {
    let img = page(1280, 900);
    let change = compare(&png(&img), &jpeg(&img, 80), &[], Tolerance::default()).unwrap();
    assert!(change.changed_percent < 0.5, "JPEG noise counted as {}% changed", change.changed_percent);
    // Without tolerance the noise is visible, so the test does exercise it.
    let exact = compare(&png(&img), &jpeg(&img, 80), &[], Tolerance::EXACT).unwrap();
    assert!(exact.changed_percent > 1.0, "{}", exact.changed_percent);
}

#[test]
fn transparency_is_composited_over_white() {
    let transparent = RgbaImage::from_pixel(20, 20, image::Rgba([0, 0, 0, 0]));
    let mut bytes = Vec::new();
    transparent.write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
    let white = png(&flat(20, 20, [255, 255, 255]));
    let change = compare(&bytes, &white, &[], Tolerance::EXACT).unwrap();
    assert_eq!(change.changed_pixels, 0);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let good = png(&page(64, 64));
    let samples: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"not an image at all".to_vec(),
        vec![0xFF; 1000],
        b"\x89PNG\r\n\x1a\n".to_vec(),
        b"RIFF\x10\x00\x00\x00WEBPVP8 ".to_vec(),
        vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16],
        good[..good.len() / 2].to_vec(),
    ];
    for bytes in &samples {
        assert!(matches!(compare(bytes, &good, &[], Tolerance::default()), Err(VisualError::Decode(_))));
        assert!(matches!(compare(&good, bytes, &[], Tolerance::default()), Err(VisualError::Decode(_))));
        assert!(highlight(bytes, bytes, &[], Tolerance::default()).is_err());
    }
    assert!(dimensions(b"garbage").is_err());
    assert!(dimensions(&[]).is_err());
}

#[test]
fn damaged_files_never_panic() {
    let img = page(96, 80);
    for good in [png(&img), webp_lossless(&img), jpeg(&img, 80)] {
        // Truncated at many lengths.
        for len in (0..good.len()).step_by(good.len() / 97 + 1) {
            let _ = compare(&good[..len], &good, &[], Tolerance::default());
            let _ = dimensions(&good[..len]);
        }
        // Single corrupted bytes.
        for i in (0..good.len()).step_by(good.len() / 211 + 1) {
            let mut bad = good.clone();
            bad[i] ^= 0x5A;
            let _ = compare(&good, &bad, &[], Tolerance::default());
        }
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A PNG whose header claims `width` x `height` RGB pixels, with a token image data chunk.
fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
    chunk(&mut out, b"IEND", &[]);
    out
}

#[test]
fn huge_dimensions_are_refused_before_decoding() {
    let bomb = png_claiming(50_000, 50_000);
    assert_eq!(dimensions(&bomb).unwrap(), (50_000, 50_000));
    let small = png(&flat(10, 10, [0, 0, 0]));
    for (before, after) in [(&bomb, &small), (&small, &bomb)] {
        match compare(before, after, &[], Tolerance::default()) {
            Err(VisualError::TooLarge { width, height, max_pixels }) => {
                assert_eq!((width, height, max_pixels), (50_000, 50_000, MAX_PIXELS))
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
    assert!(matches!(highlight(&bomb, &small, &[], Tolerance::default()), Err(VisualError::TooLarge { .. })));
}

#[test]
fn images_and_canvases_over_the_cap_are_refused() {
    let img = png(&flat(100, 100, [1, 2, 3]));
    assert!(decode(&img, "before", 10_000).is_ok());
    assert!(matches!(
        decode(&img, "before", 9_999),
        Err(VisualError::TooLarge { width: 100, height: 100, max_pixels: 9_999 })
    ));
    // Each image fits, but the canvas both make does not.
    let wide = png(&flat(100, 10, [0, 0, 0]));
    let tall = png(&flat(10, 100, [0, 0, 0]));
    assert!(Pair::decode(&wide, &tall, 1_000).is_err());
    assert!(Pair::decode(&wide, &tall, 10_000).is_ok());
}

#[test]
fn dimensions_reads_every_format() {
    let img = page(123, 45);
    for bytes in [png(&img), webp_lossless(&img), jpeg(&img, 80)] {
        assert_eq!(dimensions(&bytes).unwrap(), (123, 45));
    }
}

#[test]
fn highlight_marks_changes_red_and_ignored_areas_blue() {
    let before = page(300, 200);
    let mut after = before.clone();
    paint(&mut after, rect(20, 100, 30, 30), [250, 250, 0]);
    paint(&mut after, rect(200, 150, 10, 10), [0, 200, 0]);
    let ignore = [rect(190, 140, 40, 40)];
    let (change, bytes) = compare_and_highlight(&png(&before), &png(&after), &ignore, Tolerance::default()).unwrap();
    assert_eq!(change, compare(&png(&before), &png(&after), &ignore, Tolerance::default()).unwrap());
    assert_eq!(bytes, highlight(&png(&before), &png(&after), &ignore, Tolerance::default()).unwrap());

    let picture = image::load_from_memory_with_format(&bytes, image::ImageFormat::Png).unwrap().into_rgb8();
    assert_eq!(picture.dimensions(), (300, 200));
    let red = |p: &Rgb<u8>| p[0] > 200 && p[1] < 80 && p[2] < 80;
    assert!(red(picture.get_pixel(30, 110)), "changed pixel not red");
    let unchanged = picture.get_pixel(250, 10);
    assert!(!red(unchanged), "unchanged pixel is red");
    assert!(unchanged[0] == unchanged[1] && unchanged[1] == unchanged[2]);
    // The ignored change is not red, and the outline is blue.
    assert!(!red(picture.get_pixel(205, 155)));
    assert_eq!(picture.get_pixel(190, 160).0, IGNORED);
}

#[test]
fn highlight_covers_the_whole_canvas() {
    let before = flat(100, 80, [200, 200, 200]);
    let after = flat(60, 120, [200, 200, 200]);
    let bytes = highlight(&png(&before), &png(&after), &[], Tolerance::default()).unwrap();
    let picture = image::load_from_memory(&bytes).unwrap().into_rgb8();
    assert_eq!(picture.dimensions(), (100, 120));
    assert_eq!(picture.get_pixel(80, 10).0, CHANGED); // only in before
    assert_eq!(picture.get_pixel(30, 100).0, CHANGED); // only in after
    assert_eq!(picture.get_pixel(90, 110).0, BACKGROUND); // in neither
    assert_ne!(picture.get_pixel(30, 30).0, CHANGED); // in both, equal
}

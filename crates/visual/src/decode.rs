//! Reading screenshots: the header check, decoding to packed RGB and the canvas both make.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use image::{DynamicImage, ImageDecoder, ImageReader, Limits};

use crate::VisualError;

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

/// Decoded pixels, 3 bytes (R, G, B) per pixel, rows packed.
pub(crate) struct Frame {
    pub(crate) width: u32,
    pub(crate) height: u32,
    rgb: Vec<u8>,
}

impl Frame {
    /// Row `y` as RGB bytes, empty below the image.
    pub(crate) fn row(&self, y: u32) -> &[u8] {
        if y >= self.height {
            return &[];
        }
        let len = self.width as usize * 3;
        let start = y as usize * len;
        &self.rgb[start..start + len]
    }
}

/// Reads the header, refuses over-large images, then decodes to RGB.
pub(crate) fn decode(bytes: &[u8], which: &str, max_pixels: u64) -> Result<Frame, VisualError> {
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

/// Both decoded screenshots and their canvas.
pub(crate) struct Pair {
    pub(crate) before: Frame,
    /// `None` when `after` had the same bytes as `before`.
    pub(crate) after: Option<Frame>,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

impl Pair {
    pub(crate) fn decode(before: &[u8], after: &[u8], max_pixels: u64) -> Result<Pair, VisualError> {
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

    pub(crate) fn after(&self) -> &Frame {
        self.after.as_ref().unwrap_or(&self.before)
    }
}

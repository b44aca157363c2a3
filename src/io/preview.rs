//! PNG previews of rendered frames: exposure, Reinhard tone mapping on luminance, sRGB encoding, 8 bits.
//!
//! For a linear colour `c` and `exposure_stops` e, the preview pixel is
//!
//! ```text
//! x  = c · 2^e                                    exposure
//! L  = 0.2126 x.r + 0.7152 x.g + 0.0722 x.b       luminance (Rec. 709)
//! y  = x · (1 / (1 + L))                          Reinhard on luminance, keeps the hue
//! px = round(255 · srgb(clamp(y, 0, 1)))          sRGB transfer function, 8 bits
//! ```
//!
//! Scaling by luminance rather than per channel keeps saturated colours from washing out;
//! channels that still exceed 1 are clamped. Non-finite values are shown black.

use std::path::Path;

use glam::Vec3;
use image::ImageEncoder;

use super::atomic::write_atomically;
use super::IoError;
use crate::render::Frame;

/// Writes an 8-bit sRGB PNG preview of `frame.color` (see the module docs for the curve),
/// atomically: to a temporary file beside `path`, then renamed into place.
pub fn write_preview_png(path: &Path, frame: &Frame, exposure_stops: f32) -> Result<(), IoError> {
    frame
        .check_color_size()
        .map_err(|message| IoError::invalid_data(path, message))?;
    let scale = exposure_stops.exp2();
    let pixels: Vec<[u8; 3]> = frame
        .color
        .iter()
        .map(|&c| tone_map(c * scale).to_array().map(encode_srgb8))
        .collect();
    write_rgb8_png(path, frame.width, frame.height, &pixels)
}

/// Writes 8-bit RGB `pixels` (`width` × `height`, rows from the top) as a PNG, atomically.
pub fn write_rgb8_png(
    path: &Path,
    width: u32,
    height: u32,
    pixels: &[[u8; 3]],
) -> Result<(), IoError> {
    if pixels.len() as u64 != u64::from(width) * u64::from(height) {
        return Err(IoError::invalid_data(
            path,
            format!("{} pixels for a {width}x{height} image", pixels.len()),
        ));
    }
    let bytes: Vec<u8> = pixels.iter().flatten().copied().collect();
    write_atomically(path, |file| {
        image::codecs::png::PngEncoder::new(file)
            .write_image(&bytes, width, height, image::ExtendedColorType::Rgb8)
            .map_err(|e| match e {
                image::ImageError::IoError(source) => IoError::write(path, source),
                other => IoError::invalid_data(path, format!("PNG: {other}")),
            })
    })
}

/// Reinhard's global operator applied to luminance: `x / (1 + L(x))`; non-finite input is black.
pub fn tone_map(linear: Vec3) -> Vec3 {
    if !linear.is_finite() {
        return Vec3::ZERO;
    }
    let x = linear.max(Vec3::ZERO);
    let luminance = x.dot(Vec3::new(0.2126, 0.7152, 0.0722));
    x / (1.0 + luminance)
}

/// The sRGB opto-electronic transfer function (IEC 61966-2-1) of a linear value in [0, 1]
/// (clamped), rounded to 8 bits.
pub fn encode_srgb8(linear: f32) -> u8 {
    let x = if linear.is_nan() {
        0.0
    } else {
        linear.clamp(0.0, 1.0)
    };
    let encoded = if x <= 0.003_130_8 {
        12.92 * x
    } else {
        1.055 * x.powf(1.0 / 2.4) - 0.055
    };
    // `encoded` is in [0, 1], so the product rounds into 0..=255.
    (encoded * 255.0).round() as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tone_mapping_keeps_the_hue_and_stays_below_one() {
        let y = tone_map(Vec3::new(8.0, 4.0, 2.0));
        assert!((y.x / y.y - 2.0).abs() < 1e-5 && (y.y / y.z - 2.0).abs() < 1e-5);
        assert!(tone_map(Vec3::splat(1e6)).max_element() <= 1.0);
        assert_eq!(tone_map(Vec3::new(f32::NAN, 1.0, 1.0)), Vec3::ZERO);
    }

    #[test]
    fn srgb_encoding_covers_the_full_byte_range() {
        assert_eq!(encode_srgb8(0.0), 0);
        assert_eq!(encode_srgb8(1.0), 255);
        assert_eq!(encode_srgb8(2.0), 255);
        assert_eq!(encode_srgb8(-1.0), 0);
    }
}

//! Images in: textures and environment maps (PNG and JPEG decoded from sRGB, OpenEXR and
//! Radiance HDR as linear) and float EXR vector-displacement maps.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use glam::Vec3;

use super::IoError;
use crate::scene::{TextureImage, VdImage};

/// The four bytes every OpenEXR file starts with.
const EXR_MAGIC: [u8; 4] = [0x76, 0x2f, 0x31, 0x01];

/// Loads a texture as linear RGB, row 0 at the top. PNG and JPEG are decoded from sRGB (their
/// alpha is dropped, grey is repeated into R, G and B); OpenEXR and Radiance HDR are linear, see
/// [`read_exr_rgb`] for the channels used. The format is recognised from the file's first bytes.
/// A texture's or an environment map's texels must be finite: the first that is not is an
/// error naming it.
pub fn load_texture(path: &Path) -> Result<TextureImage, IoError> {
    let image = read_image(path)?;
    check_texels(path, image.width, &image.texels, f32::INFINITY)?;
    Ok(image)
}

/// [`load_texture`] for a colour that scales an albedo or a tint: beyond 0..1 it makes or takes
/// light, and its first such texel is a warning (once per loaded file).
pub fn load_albedo_texture(path: &Path) -> Result<TextureImage, IoError> {
    let image = load_texture(path)?;
    let outside = |t: &Vec3| t.min_element() < 0.0 || t.max_element() > 1.0;
    if let Some((x, y, t)) = first_texel(image.width, &image.texels, outside) {
        let how = if t.min_element() < 0.0 {
            "negative"
        } else {
            "more"
        };
        log::warn!(
            "{}: texel ({x}, {y}) is {} {} {}, outside 0..1: a surface it colours reflects {how} \
             light than it receives there",
            path.display(),
            t.x,
            t.y,
            t.z
        );
    }
    Ok(image)
}

/// [`load_texture`] without the check of its texels: any image as stored (`caustica compare`
/// reports non-finite pixels itself).
pub fn read_image(path: &Path) -> Result<TextureImage, IoError> {
    let (width, height, texels) = if starts_with_exr_magic(path)? {
        read_exr_rgb(path)?
    } else {
        read_srgb_image(path)?
    };
    Ok(TextureImage {
        width,
        height,
        texels,
    })
}

/// The largest displacement a VD map's texel may hold in any channel: far beyond any surface's
/// detail, and far from f32's end, where patch bounds would overflow.
pub const MAX_VD_TEXEL: f32 = 1e6;

/// The first texel of a `width`-wide image (row 0 at the top) for which `pick` holds: its
/// column, row and value.
fn first_texel(
    width: u32,
    texels: &[Vec3],
    pick: impl Fn(&Vec3) -> bool,
) -> Option<(u32, u32, Vec3)> {
    let i = texels.iter().position(pick)?;
    Some((i as u32 % width.max(1), i as u32 / width.max(1), texels[i]))
}

/// Refuses the first texel that is not finite or has a channel beyond `limit` in size, naming
/// it (row 0 at the top).
fn check_texels(path: &Path, width: u32, texels: &[Vec3], limit: f32) -> Result<(), IoError> {
    let bad = |t: &Vec3| !t.is_finite() || t.abs().max_element() > limit;
    if let Some((x, y, t)) = first_texel(width, texels, bad) {
        let why = if t.is_finite() {
            format!("beyond ±{limit:e}")
        } else {
            "not finite".to_string()
        };
        return Err(IoError::format(
            path,
            format!("texel ({x}, {y}) is {} {} {}: {why}", t.x, t.y, t.z),
        ));
    }
    Ok(())
}

/// Loads a vector-displacement map from a float OpenEXR file: the R, G and B channels as stored
/// (no colour conversion), row 0 at the top. See [`read_exr_rgb`] for other channel names.
pub fn load_vd_image(path: &Path) -> Result<VdImage, IoError> {
    if !starts_with_exr_magic(path)? {
        return Err(IoError::format(
            path,
            "not an OpenEXR file (vector displacement maps must be float EXR images)",
        ));
    }
    let (width, height, texels) = read_exr_rgb(path)?;
    check_texels(path, width, &texels, MAX_VD_TEXEL)?;
    Ok(VdImage {
        width,
        height,
        texels,
    })
}

/// The files of a UDIM map that exist ([`crate::scene::AssetLoader::find_udim_tiles`]):
/// `pattern`'s folder is listed, and every regular file whose name is the pattern's with its
/// token replaced by a tile (`<UDIM>`: four digits, 1001–9999;
/// `<UVTILE>`: `u{1..=10}_v{1..=900}`) is returned with its tile number, ascending.
pub fn find_udim_tiles(pattern: &Path) -> Result<Vec<(u32, PathBuf)>, IoError> {
    let name = pattern
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some((token, at)) = crate::scene::vdmap::UDIM_TOKENS
        .into_iter()
        .find_map(|t| name.find(t).map(|at| (t, at)))
    else {
        return Err(IoError::format(
            pattern,
            "the file name holds no <UDIM> or <UVTILE> token",
        ));
    };
    let (prefix, suffix) = (&name[..at], &name[at + token.len()..]);
    let folder = match pattern.parent() {
        Some(f) if !f.as_os_str().is_empty() => f.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let entries = std::fs::read_dir(&folder).map_err(|e| IoError::read(&folder, e))?;
    let mut tiles = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| IoError::read(&folder, e))?;
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(middle) = file
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
        else {
            continue;
        };
        let number = if token == "<UDIM>" {
            udim_number(middle)
        } else {
            uvtile_number(middle)
        };
        let Some(number) = number else { continue };
        let path = folder.join(&file);
        if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            tiles.push((number, path));
        }
    }
    tiles.sort();
    tiles.dedup_by_key(|(n, _)| *n);
    Ok(tiles)
}

/// `1001`…`9999` as written by Mari (four digits).
fn udim_number(text: &str) -> Option<u32> {
    if text.len() != 4 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = text.parse().ok()?;
    (n >= 1001).then_some(n)
}

/// `u{U}_v{V}` as written by Mudbox (column and row from 1) → `1000 + U + 10·(V − 1)`.
fn uvtile_number(text: &str) -> Option<u32> {
    let (u, v) = text.strip_prefix('u')?.split_once("_v")?;
    let digits = |t: &str| !t.is_empty() && t.len() <= 3 && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(u) || !digits(v) {
        return None;
    }
    let (u, v): (u32, u32) = (u.parse().ok()?, v.parse().ok()?);
    ((1..=10).contains(&u) && (1..=900).contains(&v)).then(|| 1000 + u + 10 * (v - 1))
}

fn starts_with_exr_magic(path: &Path) -> Result<bool, IoError> {
    let mut head = [0u8; 4];
    let filled = read_head(path, &mut head)?;
    Ok(filled == head.len() && head == EXR_MAGIC)
}

/// Reads the first bytes of `path` into `head` (fewer when the file is shorter); how many.
pub(crate) fn read_head(path: &Path, head: &mut [u8]) -> Result<usize, IoError> {
    let mut file = File::open(path).map_err(|e| IoError::read(path, e))?;
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(IoError::read(path, e)),
        }
    }
    Ok(filled)
}

/// PNG or JPEG through the `image` crate, converted from sRGB to linear; Radiance HDR
/// (`.hdr`, RGBE), which is linear already, as stored.
fn read_srgb_image(path: &Path) -> Result<(u32, u32, Vec<Vec3>), IoError> {
    let file = File::open(path).map_err(|e| IoError::read(path, e))?;
    let reader = image::ImageReader::new(BufReader::new(file))
        .with_guessed_format()
        .map_err(|e| IoError::read(path, e))?;
    let linear = reader.format() == Some(image::ImageFormat::Hdr);
    let decoded = reader.decode().map_err(|e| match e {
        image::ImageError::IoError(source) => IoError::read(path, source),
        other => IoError::format(path, other.to_string()),
    })?;
    let rgb = decoded.to_rgb32f();
    if linear {
        let texels = rgb.pixels().map(|p| Vec3::new(p[0], p[1], p[2])).collect();
        return Ok((rgb.width(), rgb.height(), texels));
    }
    let texels = rgb
        .pixels()
        .map(|p| {
            Vec3::new(
                srgb_to_linear(p[0]),
                srgb_to_linear(p[1]),
                srgb_to_linear(p[2]),
            )
        })
        .collect();
    Ok((rgb.width(), rgb.height(), texels))
}

/// The sRGB electro-optical transfer function (IEC 61966-2-1): encoded value to linear.
pub fn srgb_to_linear(encoded: f32) -> f32 {
    if encoded <= 0.04045 {
        encoded / 12.92
    } else {
        ((encoded + 0.055) / 1.055).powf(2.4)
    }
}

/// Reads the first layer of an OpenEXR file as three float channels, row 0 at the top. It uses,
/// in this order of preference, the channels `R G B`, `X Y Z`, or one channel (`Y` or the only
/// one) repeated three times. Channels of named layers (`albedo.R`) are not considered.
pub fn read_exr_rgb(path: &Path) -> Result<(u32, u32, Vec<Vec3>), IoError> {
    use exr::prelude::*;
    check_exr_size(path)?;
    let image = read()
        .no_deep_data()
        .largest_resolution_level()
        .all_channels()
        .first_valid_layer()
        .all_attributes()
        .from_file(path)
        .map_err(|e| exr_read_error(path, e))?;
    let layer = &image.layer_data;
    let (width, height) = (layer.size.width(), layer.size.height());
    let channels = &layer.channel_data.list;
    let find = |name: &str| channels.iter().find(|c| c.name.eq(name));
    let chosen: [&AnyChannel<FlatSamples>; 3] =
        if let (Some(r), Some(g), Some(b)) = (find("R"), find("G"), find("B")) {
            [r, g, b]
        } else if let (Some(x), Some(y), Some(z)) = (find("X"), find("Y"), find("Z")) {
            [x, y, z]
        } else if let Some(grey) = find("Y").or(if channels.len() == 1 {
            channels.first()
        } else {
            None
        }) {
            [grey, grey, grey]
        } else {
            let names: Vec<String> = channels.iter().map(|c| c.name.to_string()).collect();
            return Err(IoError::format(
                path,
                format!(
                    "EXR: no R, G, B channels (the file has {})",
                    names.join(", ")
                ),
            ));
        };
    let pixel_count = width * height;
    if chosen.iter().any(|c| c.sample_data.len() != pixel_count) {
        return Err(IoError::format(
            path,
            "EXR: subsampled channels are not supported",
        ));
    }
    let [r, g, b] = chosen.map(|c| c.sample_data.values_as_f32());
    let texels: Vec<Vec3> = r
        .zip(g)
        .zip(b)
        .map(|((r, g), b)| Vec3::new(r, g, b))
        .collect();
    let to_u32 =
        |n: usize| u32::try_from(n).map_err(|_| IoError::format(path, "EXR: image is too large"));
    Ok((to_u32(width)?, to_u32(height)?, texels))
}

/// Turns an error of the `exr` crate into an [`IoError`]: file-system errors stay read errors,
/// everything else is a format error.
/// The most pixels an EXR may claim ([`check_exr_size`]): as many as a frame may have
/// (`scene::limits::MAX_PIXELS`).
const MAX_EXR_PIXELS: u64 = crate::scene::limits::MAX_PIXELS;

/// The most raw pixel bytes an EXR may claim per byte of the file: deflate's largest
/// compression ratio is 1032:1 (RLE's 128:1, PIZ's and the others' below), so a header that
/// claims more describes pixels the file cannot hold.
const MAX_EXR_EXPANSION: u64 = 1100;

/// Reads an EXR's headers alone and refuses one whose image is larger than
/// [`MAX_EXR_PIXELS`] or than the file's size could hold, before its pixels are allocated (a
/// header claiming 60001 × 60001 pixels over one row of data).
pub(crate) fn check_exr_size(path: &Path) -> Result<(), IoError> {
    let meta =
        exr::meta::MetaData::read_from_file(path, false).map_err(|e| exr_read_error(path, e))?;
    let file_size = std::fs::metadata(path)
        .map_err(|e| IoError::read(path, e))?
        .len();
    for header in meta.headers.iter() {
        let size = header.layer_size;
        let pixels = size.0 as u64 * size.1 as u64;
        if pixels > MAX_EXR_PIXELS {
            return Err(IoError::format(
                path,
                format!(
                    "EXR: the header claims {}x{} pixels, more than the {MAX_EXR_PIXELS} an image \
                     may have",
                    size.0, size.1
                ),
            ));
        }
        if header.deep {
            continue;
        }
        // Every channel's samples at its sampling rate (the crate's own sum divides by it
        // unchecked).
        let mut raw = 0u64;
        for channel in &header.channels.list {
            let (sx, sy) = (channel.sampling.0 as u64, channel.sampling.1 as u64);
            if sx == 0 || sy == 0 {
                return Err(IoError::format(
                    path,
                    format!("EXR: channel \"{}\" has a sampling rate of 0", channel.name),
                ));
            }
            let samples = (size.0 as u64).div_ceil(sx) * (size.1 as u64).div_ceil(sy);
            raw += samples * channel.sample_type.bytes_per_sample() as u64;
        }
        if raw > file_size.saturating_mul(MAX_EXR_EXPANSION) {
            return Err(IoError::format(
                path,
                format!(
                    "EXR: the header claims {}x{} pixels ({raw} bytes of samples), more than a file \
                     of {file_size} bytes can hold",
                    size.0, size.1
                ),
            ));
        }
    }
    Ok(())
}

pub(crate) fn exr_read_error(path: &Path, error: exr::error::Error) -> IoError {
    match error {
        exr::error::Error::Io(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            IoError::format(path, "EXR: the file ends early (truncated?)")
        }
        exr::error::Error::Io(source) => IoError::read(path, source),
        other => IoError::format(path, format!("EXR: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srgb_decoding_matches_the_standard_curve() {
        assert_eq!(srgb_to_linear(0.0), 0.0);
        assert!((srgb_to_linear(1.0) - 1.0).abs() < 1e-6);
        assert!((srgb_to_linear(188.0 / 255.0) - 0.5029).abs() < 1e-3);
        assert!((srgb_to_linear(0.04) - 0.04 / 12.92).abs() < 1e-9);
    }
}

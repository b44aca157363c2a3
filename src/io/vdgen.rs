//! Procedural vector-displacement maps for example scenes and tests, and a writer for float EXR VD maps.
//!
//! Every map is a tangent-space map meant for `space tangent`, `channels 0 1 2`, `midlevel 0`:
//! the stored R, G, B are the displacement's components along the patch frame's T (the `s`
//! direction), B (the `t` direction) and N (the quad normal), in units of a patch whose edges
//! are 1 long (the map's `scale` scales them). The texel at column `x`, row `y` of a `w`×`h`
//! map holds the displacement at its centre, `u = (x + ½)/w`, `v = 1 − (y + ½)/h` (row 0 is
//! the top, as everywhere in Caustica). Both maps are radially symmetric about the patch centre
//! and zero on and near its border, so neighbouring patches meet without cracks. With
//! `d = (u, v) − (½, ½)`, `r = |d|` and `d̂ = d / r` (zero at the centre):
//!
//! # `ripples`
//!
//! Rings that also push the surface sideways, which a height map cannot do:
//!
//! ```text
//! w(r) = (1 − (r / 0.5)²)²  for r < 0.5, else 0          smooth fade to the border
//! D    = ( 0.03 · sin(2π·4·r) · w · d̂ ,  0.04 · cos(2π·4·r) · w )
//!          └── T, B: sideways, radial ──┘  └── N: height ──┘
//! ```
//!
//! # `overhang`
//!
//! A mushroom cap: the middle rises and its rim is pushed outward over the ring below it, which
//! is pulled inward, so the surface folds back over itself. With `t = r / 0.4`, for `t < 1`:
//!
//! ```text
//! D = ( 0.2 · sin(πt) · sin(2πt) · d̂ ,  0.3 · (1 + cos(πt)) / 2 ),   else D = 0
//! ```
//!
//! The displaced profile is `R(t) = 0.4 t + 0.2 sin(πt) sin(2πt)` (distance from the centre)
//! and `Z(t) = 0.15 (1 + cos πt)` (height). `R` decreases around `t = ½` (`R'(½) = 0.4 − 0.2·2π
//! < 0`): there the surface runs back under itself. `Z` falls strictly for `0 < t < 1` and `R`
//! stays positive, so the surface overhangs without intersecting itself; both `R'` and `Z'`
//! match the flat surface at `t = 1`, so the fold joins the plane smoothly.

use std::f32::consts::PI;
use std::path::Path;

use glam::{Vec2, Vec3};

use super::atomic::write_atomically;
use super::IoError;
use crate::scene::VdImage;

/// The names [`generate`] accepts.
pub const KINDS: [&str; 2] = ["ripples", "overhang"];

/// The map called `kind` (one of [`KINDS`]) at `size`×`size` texels; `None` for an unknown kind.
pub fn generate(kind: &str, size: u32) -> Option<VdImage> {
    match kind {
        "ripples" => Some(ripples(size)),
        "overhang" => Some(overhang(size)),
        _ => None,
    }
}

/// The `ripples` map of the module docs at `size`×`size` texels.
pub fn ripples(size: u32) -> VdImage {
    tabulate(size, ripples_at)
}

/// The `overhang` map of the module docs at `size`×`size` texels.
pub fn overhang(size: u32) -> VdImage {
    tabulate(size, overhang_at)
}

/// The `ripples` displacement at patch coordinates `uv`.
pub fn ripples_at(uv: Vec2) -> Vec3 {
    let (r, direction) = polar(uv);
    if r >= 0.5 {
        return Vec3::ZERO;
    }
    let fade = (1.0 - (r / 0.5).powi(2)).powi(2);
    let phase = 2.0 * PI * 4.0 * r;
    let sideways = direction * (0.03 * phase.sin() * fade);
    sideways.extend(0.04 * phase.cos() * fade)
}

/// The `overhang` displacement at patch coordinates `uv`.
pub fn overhang_at(uv: Vec2) -> Vec3 {
    let (r, direction) = polar(uv);
    let t = r / 0.4;
    if t >= 1.0 {
        return Vec3::ZERO;
    }
    let outward = direction * (0.2 * (PI * t).sin() * (2.0 * PI * t).sin());
    outward.extend(0.3 * (1.0 + (PI * t).cos()) / 2.0)
}

/// Distance from the patch centre and the unit direction away from it (zero at the centre).
fn polar(uv: Vec2) -> (f32, Vec2) {
    let d = uv - Vec2::splat(0.5);
    (d.length(), d.normalize_or_zero())
}

/// Samples `displacement` at every texel centre of a `size`×`size` map, row 0 at the top (v = 1).
fn tabulate(size: u32, displacement: impl Fn(Vec2) -> Vec3) -> VdImage {
    let n = size as usize;
    let mut texels = Vec::with_capacity(n * n);
    for y in 0..size {
        for x in 0..size {
            let uv = Vec2::new(
                (x as f32 + 0.5) / size as f32,
                1.0 - (y as f32 + 0.5) / size as f32,
            );
            texels.push(displacement(uv));
        }
    }
    VdImage {
        width: size,
        height: size,
        texels,
    }
}

/// Writes `image` as a ZIP-compressed 32-bit float OpenEXR file with channels R, G, B, row 0
/// at the top (what [`load_vd_image`](super::load_vd_image) reads back), atomically.
pub fn write_vd_image(path: &Path, image: &VdImage) -> Result<(), IoError> {
    use exr::prelude::{
        AnyChannel, AnyChannels, Encoding, FlatSamples, Image, Layer, LayerAttributes,
        WritableImage,
    };
    image
        .check_size()
        .map_err(|message| IoError::invalid_data(path, message))?;
    let channel = |name: &str, index: usize| {
        AnyChannel::new(
            name,
            FlatSamples::F32(image.texels.iter().map(|t| t[index]).collect()),
        )
    };
    let channels =
        AnyChannels::sort(vec![channel("R", 0), channel("G", 1), channel("B", 2)].into());
    let attributes = LayerAttributes {
        software_name: Some(
            format!("Caustica {}", env!("CARGO_PKG_VERSION"))
                .as_str()
                .into(),
        ),
        ..LayerAttributes::default()
    };
    let layer = Layer::new(
        (image.width as usize, image.height as usize),
        attributes,
        Encoding::SMALL_LOSSLESS,
        channels,
    );
    let exr_image = Image::from_layer(layer);
    write_atomically(path, |file| {
        exr_image.write().to_buffered(file).map_err(|e| match e {
            exr::error::Error::Io(source) => IoError::write(path, source),
            other => IoError::invalid_data(path, format!("EXR: {other}")),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_maps_vanish_on_the_patch_border() {
        for i in 0..=20 {
            let a = i as f32 / 20.0;
            for uv in [
                Vec2::new(a, 0.0),
                Vec2::new(a, 1.0),
                Vec2::new(0.0, a),
                Vec2::new(1.0, a),
            ] {
                assert!(ripples_at(uv).length() < 1e-6, "ripples at {uv}");
                assert!(overhang_at(uv).length() < 1e-6, "overhang at {uv}");
            }
        }
    }

    #[test]
    fn the_overhang_profile_never_meets_itself() {
        // Height falls strictly and the distance from the centre stays positive.
        let profile = |t: f32| {
            let d = overhang_at(Vec2::new(0.5 + 0.4 * t, 0.5));
            (0.4 * t + d.x, d.z)
        };
        let mut previous = profile(0.0);
        for i in 1..=1000 {
            let (radius, height) = profile(i as f32 / 1000.0);
            assert!(radius > 0.0);
            assert!(
                height < previous.1,
                "height rises at t = {}",
                i as f32 / 1000.0
            );
            previous = (radius, height);
        }
    }

    #[test]
    fn the_first_row_is_the_top_of_the_patch() {
        let image = tabulate(4, |uv| uv.extend(0.0));
        assert_eq!(image.texels[0], Vec3::new(0.125, 0.875, 0.0));
        assert_eq!(image.texels[15], Vec3::new(0.875, 0.125, 0.0));
    }
}

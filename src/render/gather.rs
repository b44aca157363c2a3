//! What both backends share of the second half of photon mapping (paper 003 sections
//! 6.2.3–6.2.5): the diffuse shading points of the shade trees, the screen-space quadtree's
//! geometric variation, irradiance samples and their Ward-style interpolation weights.
//!
//! **Interpolation.** An irradiance sample `i` at `xᵢ` with normal `nᵢ` and radius `Rᵢ` (the
//! harmonic mean distance its gather rays travelled, clamped to
//! [`SAMPLE_RADIUS_MIN`]..[`SAMPLE_RADIUS_MAX`] of the scene radius) has at a point `x` with
//! normal `n` Ward's error `εᵢ = ‖x − xᵢ‖/Rᵢ + sqrt(1 − n·nᵢ)`. Among the
//! [`INTERPOLATION_NEIGHBOURS`] samples nearest to `x`, those with `εᵢ < a`
//! ([`INTERPOLATION_ACCURACY`]) weigh `wᵢ = 1 − εᵢ/a` (Tabellion and Lamorlette's smooth form of
//! Ward's `1/εᵢ`, so the interpolated irradiance has no seams where a sample drops out), and the
//! irradiance is `Σ wᵢ Eᵢ / Σ wᵢ`. Where no sample is that close, the point falls back to the
//! nearest samples facing its side (`n·nᵢ > 0`), weighted by `1/(εᵢ + 10⁻³)`; with none of
//! those either, it gets no indirect light.
//!
//! **The same arithmetic on the GPU.** `shaders/shared/irradiance.wgsl` is the twin of
//! [`ward_error`] and [`interpolate_irradiance`]. Both take `‖x − xᵢ‖²` from
//! `accel::knn::squared_distance` (the kNN search's own distances on the GPU) and `n·nᵢ` from
//! [`exact_dot`], whose products are exact, so a driver's fusing of `a·b + c` into a
//! multiply-add cannot move a sample across the `εᵢ < a` or `n·nᵢ > 0` decisions; the samples
//! are summed in the same (distance, index) order. What is left to differ are the square roots
//! and divisions, which GPUs need not round correctly (a few units of roundoff).

use glam::Vec3;

use crate::accel::knn::squared_distance;
use crate::scene::Scene;

/// A diffuse hit of a shade tree: where photon mapping adds caustics and indirect light.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShadingPoint {
    pub position: Vec3,
    /// The shading normal turned towards the viewer.
    pub normal: Vec3,
    /// What an irradiance `E` here adds to the pixel: the path's throughput from the camera,
    /// over the pixel's sample count, times the surface's albedo/π.
    pub weight: Vec3,
    /// The pixel (`y · width + x`) the path started from.
    pub pixel: u32,
}

/// An irradiance sample: the final-gathered irradiance at a seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IrradianceSample {
    pub position: Vec3,
    pub normal: Vec3,
    /// Indirect irradiance (W/m²).
    pub irradiance: Vec3,
    /// Ward's validity radius: the harmonic mean distance of the gather rays' hits, clamped.
    pub radius: f32,
}

/// α of equation 6.1 is this over the scene radius: a position difference of a tenth of the
/// scene's radius counts as much as normals 60° apart.
pub const SEEDING_ALPHA_SCENE: f32 = 10.0;
/// α of equation 6.1 for a scene of radius `scene_radius`.
pub fn seeding_alpha(scene_radius: f32) -> f32 {
    SEEDING_ALPHA_SCENE / scene_radius.max(1e-6)
}

/// Fixed-point bits of the minimum seed density β (`gather { min_density }`): both backends
/// work with `round(β · 2^16)`.
pub const SEED_DENSITY_BITS: u32 = 16;

/// β as the integer `round(β · 2^16)`, β clamped to `0..=1` (NaN counts as 0), computed once on
/// the host and handed to both backends.
pub fn seed_min_density_fixed(beta: f32) -> u32 {
    let beta = if beta.is_nan() {
        0.0
    } else {
        beta.clamp(0.0, 1.0)
    };
    (beta * (1u32 << SEED_DENSITY_BITS) as f32).round() as u32
}

/// What adaptive seeding is asked for: the parameters of
/// `cpu::gather::seed_irradiance_samples` and of its GPU twin `gpu::seeding`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeedingSettings {
    /// The image the shading points' pixels index (`y · width + x`).
    pub width: u32,
    pub height: u32,
    /// Quadtree levels below the root (clamped to 1..=16).
    pub levels: u32,
    /// Seeds wanted (`K`).
    pub seeds: u32,
    /// The minimum density β (`gather { min_density }`, clamped to 0..=1): the share of the
    /// seeds handed down the quadtree in proportion to point counts rather than errors.
    pub min_density: f32,
    /// α of paper 003 eq. 6.1 ([`seeding_alpha`]).
    pub alpha: f32,
    /// The frame's seed of the random streams.
    pub seed: u64,
}

impl SeedingSettings {
    /// The settings of `scene`'s `gather` block and film, for a scene of radius `scene_radius`.
    pub fn from_scene(scene: &Scene, scene_radius: f32) -> SeedingSettings {
        SeedingSettings {
            width: scene.film.width.max(1),
            height: scene.film.height.max(1),
            levels: scene.gather.quadtree_levels,
            seeds: scene.gather.seeds,
            min_density: scene.gather.min_density,
            alpha: seeding_alpha(scene_radius),
            seed: scene.film.seed,
        }
    }
}

/// Ward's accuracy `a`: the largest error of a sample used without falling back.
pub const INTERPOLATION_ACCURACY: f32 = 0.5;
/// Samples considered for each interpolation.
pub const INTERPOLATION_NEIGHBOURS: usize = 12;
/// Bounds of a sample's radius, as fractions of the scene radius.
pub const SAMPLE_RADIUS_MIN: f32 = 0.02;
pub const SAMPLE_RADIUS_MAX: f32 = 0.5;

/// `d` as `h + l` exactly: `h` its 12 leading significant bits, `l = d − h` the rest (at most
/// 12 bits), so that products of two such parts are exact in `f32` (as `accel::knn` splits).
fn split(d: f32) -> (f32, f32) {
    let h = f32::from_bits(d.to_bits() & 0xffff_f000);
    (h, d - h)
}

/// `a·b` from exact partial products summed in a fixed order, so that contracting `p·q + r`
/// into a fused multiply-add (which GPU drivers may do) cannot change it: the twin of
/// `irradiance_dot` in `shaders/shared/irradiance.wgsl`. Within a few units of roundoff of the
/// exact dot product for unit vectors (products below `f32::MIN_POSITIVE` aside).
pub fn exact_dot(a: Vec3, b: Vec3) -> f32 {
    let (axh, axl) = split(a.x);
    let (ayh, ayl) = split(a.y);
    let (azh, azl) = split(a.z);
    let (bxh, bxl) = split(b.x);
    let (byh, byl) = split(b.y);
    let (bzh, bzl) = split(b.z);
    let high = (axh * bxh + ayh * byh) + azh * bzh;
    let middle = ((axh * bxl + axl * bxh) + (ayh * byl + ayl * byh)) + (azh * bzl + azl * bzh);
    let low = (axl * bxl + ayl * byl) + azl * bzl;
    high + (middle + low)
}

/// Ward's error of `sample` at `x` with normal `n`, from the squared distance of
/// `accel::knn::squared_distance` and [`exact_dot`] (see the module docs).
pub fn ward_error(sample: &IrradianceSample, x: Vec3, n: Vec3) -> f32 {
    let p = sample.position;
    let d2 = squared_distance([x.x, x.y, x.z, 0.0], [p.x, p.y, p.z, 0.0]);
    d2.sqrt() / sample.radius.max(1e-12) + (1.0 - exact_dot(n, sample.normal)).max(0.0).sqrt()
}

/// The interpolated irradiance at `x` from `candidates` (the samples nearest to `x`, in the
/// order they are summed: the kNN search's ascending (distance, index) order), as the module
/// documentation describes.
pub fn interpolate_irradiance<'a>(
    candidates: impl Iterator<Item = &'a IrradianceSample> + Clone,
    x: Vec3,
    n: Vec3,
) -> Vec3 {
    let (mut sum, mut total) = (Vec3::ZERO, 0.0f32);
    for s in candidates.clone() {
        let e = ward_error(s, x, n);
        if e < INTERPOLATION_ACCURACY {
            let w = 1.0 - e / INTERPOLATION_ACCURACY;
            sum += s.irradiance * w;
            total += w;
        }
    }
    if total > 0.0 {
        return sum / total;
    }
    for s in candidates {
        if exact_dot(n, s.normal) > 0.0 {
            let w = 1.0 / (ward_error(s, x, n) + 1e-3);
            sum += s.irradiance * w;
            total += w;
        }
    }
    if total > 0.0 {
        sum / total
    } else {
        Vec3::ZERO
    }
}

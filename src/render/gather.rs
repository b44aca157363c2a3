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

use glam::Vec3;

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
/// The quadtree's geometric variation of a point against a node's mean (paper 003 eq. 6.1):
/// `α·‖x − x̄‖ + sqrt(2 − 2 n·n̄)`.
pub fn geometric_variation(alpha: f32, x: Vec3, n: Vec3, mean_x: Vec3, mean_n: Vec3) -> f32 {
    alpha * (x - mean_x).length() + (2.0 - 2.0 * n.dot(mean_n)).max(0.0).sqrt()
}

/// Ward's accuracy `a`: the largest error of a sample used without falling back.
pub const INTERPOLATION_ACCURACY: f32 = 0.5;
/// Samples considered for each interpolation.
pub const INTERPOLATION_NEIGHBOURS: usize = 12;
/// Bounds of a sample's radius, as fractions of the scene radius.
pub const SAMPLE_RADIUS_MIN: f32 = 0.02;
pub const SAMPLE_RADIUS_MAX: f32 = 0.5;

/// Ward's error of `sample` at `x` with normal `n`.
pub fn ward_error(sample: &IrradianceSample, x: Vec3, n: Vec3) -> f32 {
    (x - sample.position).length() / sample.radius.max(1e-12)
        + (1.0 - n.dot(sample.normal)).max(0.0).sqrt()
}

/// The interpolated irradiance at `x` from `candidates` (the samples nearest to `x`), as the
/// module documentation describes.
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
        if n.dot(s.normal) > 0.0 {
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

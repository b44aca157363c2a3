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
//! **Gradients.** Each sample carries Ward and Heckbert's translational gradient of its
//! irradiance ([`translational_gradient`], one world-space vector per RGB channel), and a sample
//! `i` offers `max(Eᵢ + (x − xᵢ)·∇Eᵢ, 0)` per channel ([`extrapolated_irradiance`]) instead of
//! `Eᵢ` to both sums above. Without it the weighted mean of the neighbours' irradiance is off by
//! the gradient times the offset of their centroid: where a point's neighbours all lie on one
//! side of it (at the edge of what the camera sees of a surface, next to an opening) that is a
//! bias of first order in the samples' spacing, which a progressive render's passes do not
//! average away.
//!
//! **The same arithmetic on the GPU.** `shaders/shared/irradiance.wgsl` is the twin of
//! [`ward_error`] and [`interpolate_irradiance`]. Both take `‖x − xᵢ‖²` from
//! `accel::knn::squared_distance` (the kNN search's own distances on the GPU) and `n·nᵢ` from
//! [`exact_dot`], whose products are exact, so a driver's fusing of `a·b + c` into a
//! multiply-add cannot move a sample across the `εᵢ < a` or `n·nᵢ > 0` decisions; the samples
//! are summed in the same (distance, index) order. What is left to differ are the square roots
//! and divisions, which GPUs need not round correctly (a few units of roundoff).

use glam::{Vec2, Vec3};

use super::photons::orthonormal_basis;
use super::sampling::integer_sqrt;
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
    /// The translational gradient of each RGB channel of `irradiance` (W/m³, world space, in the
    /// sample's tangent plane): [`translational_gradient`].
    pub gradient: [Vec3; 3],
}

/// The strata of a seed's gather rays: `rows` bands of equal projected solid angle in θ
/// (`sin²θ` from `j/rows` to `(j + 1)/rows`) times `columns` equal sectors in φ, one ray each,
/// as Ward and Heckbert's gradient needs. `gather { rays }` is rounded down to `rows × columns`
/// (`rows = ⌊√rays⌋`): 64 and 256 rays are 8 × 8 and 16 × 16, 128 rays are 11 × 11.
pub fn gather_strata(rays: u32) -> (u32, u32) {
    let rays = rays.max(1);
    let rows = integer_sqrt(rays);
    (rows, rays / rows)
}

/// The gather rays a seed of `scene` traces: [`gather_strata`]'s rows × columns.
pub fn gather_ray_count(scene: &Scene) -> u32 {
    let (rows, columns) = gather_strata(scene.gather.rays);
    rows * columns
}

/// The direction of gather ray `j` (stratum row `j / columns`, column `j % columns`) about the
/// unit normal `n`, jittered inside its stratum by `u` in [0,1)²: cosine-distributed over the
/// hemisphere when the strata are. The tangent frame is [`orthonormal_basis`]`(n)`, the one
/// [`translational_gradient`] uses. Twin: `gather_direction` in `shaders/gather/common.wgsl`.
pub fn gather_direction(n: Vec3, j: u32, rows: u32, columns: u32, u: Vec2) -> Vec3 {
    let (row, column) = (j / columns, j % columns);
    let sin2 = ((row as f32 + u.y) / rows as f32).min(1.0);
    let phi = std::f32::consts::TAU * (column as f32 + u.x) / columns as f32;
    let (sin, cos) = (sin2.sqrt(), (1.0 - sin2).max(0.0).sqrt());
    let (t, b) = orthonormal_basis(n);
    t * (sin * phi.cos()) + b * (sin * phi.sin()) + n * cos
}

/// Ward and Heckbert's translational irradiance gradient ("Irradiance gradients", 1992, in
/// the form for cosine-distributed strata of Křivánek et al.'s irradiance-caching notes) at a
/// seed with unit normal `n`, from its rays' radiance `l` and first-hit distances `r` (infinite
/// for a miss) in [`gather_direction`]'s stratum order. Each boundary between two neighbouring
/// strata moves, as the point moves, like the nearer of the two surfaces seen across it, so
/// the irradiance changes by the radiance difference across the boundary times the projected
/// solid angle swept:
///
/// `∇E = Σₖ [ uₖ (2π/N) Σ_{j≥1} sinθⱼ cos²θⱼ (L_{j,k} − L_{j−1,k}) / min(r_{j,k}, r_{j−1,k})
///          + vₖ Σⱼ (sinθ_{j+1} − sinθⱼ) (L_{j,k} − L_{j,k−1}) / min(r_{j,k}, r_{j,k−1}) ]`
///
/// with `θⱼ` the lower edge of row `j` (`sin²θⱼ = j/M`), `uₖ` the tangent direction at the
/// middle of sector `k` and `vₖ` the one a quarter turn from its lower edge. Distances below
/// `r_min` count as `r_min` (two strata seeing a corner would otherwise make the gradient
/// unbounded). Twin: the end of `shaders/gather/reduce.wgsl`.
pub fn translational_gradient(
    n: Vec3,
    rows: u32,
    columns: u32,
    l: &[Vec3],
    r: &[f32],
    r_min: f32,
) -> [Vec3; 3] {
    let (t, b) = orthonormal_basis(n);
    let (m, cols) = (rows as usize, columns as usize);
    let inv_min = |a: f32, b: f32| 1.0 / a.min(b).max(r_min);
    let mut g = [Vec3::ZERO; 3];
    for k in 0..cols {
        let km = (k + cols - 1) % cols;
        let mut across_theta = Vec3::ZERO;
        let mut across_phi = Vec3::ZERO;
        for j in 0..m {
            let (here, lower_edge) = (j * cols + k, j as f32 / rows as f32);
            if j > 0 {
                let below = (j - 1) * cols + k;
                let w = lower_edge.sqrt() * (1.0 - lower_edge) * inv_min(r[here], r[below]);
                across_theta += (l[here] - l[below]) * w;
            }
            if cols > 1 {
                let before = j * cols + km;
                let upper_edge = (j + 1) as f32 / rows as f32;
                let w = (upper_edge.sqrt() - lower_edge.sqrt()) * inv_min(r[here], r[before]);
                across_phi += (l[here] - l[before]) * w;
            }
        }
        let sector = std::f32::consts::TAU / columns as f32;
        let middle = sector * (k as f32 + 0.5);
        let edge = sector * k as f32;
        let u = t * middle.cos() + b * middle.sin();
        let v = t * -edge.sin() + b * edge.cos();
        across_theta *= sector;
        for (c, g) in g.iter_mut().enumerate() {
            *g += u * across_theta[c] + v * across_phi[c];
        }
    }
    g
}

/// What sample `s` offers the interpolation at `x`: its irradiance moved along its gradient,
/// `max(E + (x − xₛ)·∇E, 0)` per channel.
pub fn extrapolated_irradiance(s: &IrradianceSample, x: Vec3) -> Vec3 {
    let d = x - s.position;
    (s.irradiance
        + Vec3::new(
            d.dot(s.gradient[0]),
            d.dot(s.gradient[1]),
            d.dot(s.gradient[2]),
        ))
    .max(Vec3::ZERO)
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
            sum += extrapolated_irradiance(s, x) * w;
            total += w;
        }
    }
    if total > 0.0 {
        return sum / total;
    }
    for s in candidates {
        if exact_dot(n, s.normal) > 0.0 {
            let w = 1.0 / (ward_error(s, x, n) + 1e-3);
            sum += extrapolated_irradiance(s, x) * w;
            total += w;
        }
    }
    if total > 0.0 {
        sum / total
    } else {
        Vec3::ZERO
    }
}

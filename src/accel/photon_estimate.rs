//! The photon density estimate (flux per area at a surface point, from its k nearest photons)
//! with its filters, the photon record both backends store, and the octahedral direction code:
//! the CPU twin of `shaders/shared/photon_estimate.wgsl`.
//!
//! The estimate at `x` with normal `n` is `Σ wᵢ Φᵢ / (norm · π r²)` over the `k` nearest photons
//! within `max_dist2` ([`knn`](super::knn)), counting only photons that arrive from the side `n`
//! faces (`dot(n, −direction) > 0`; the others still take part in choosing `r`, as in Jensen's
//! estimate). The radius `r`:
//! - `k` photons found: the distance of the farthest of them (the k-th nearest);
//! - fewer than `k` found and `max_dist2` finite: the search radius `sqrt(max_dist2)` (the
//!   photons were gathered over that whole disc);
//! - fewer than `k` found and no radius: the distance of the farthest found.
//!
//! No photon, or `r = 0` (every photon found lies exactly at `x`), gives zero. The renderer
//! multiplies the result by `albedo / π` for the reflected radiance of a diffuse surface.

use std::f32::consts::PI;

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::knn::{knn_search, knn_search_filtered, KnnHeap, Neighbour};

/// One stored photon. WGSL twin: `PhotonRecord` in `shaders/shared/photon_estimate.wgsl`
/// (size and offsets checked by a test). The kd-tree is built over the positions, as
/// `[x, y, z, 0]`, so that point `i` of the tree is photon `i`.
#[repr(C)]
#[derive(Pod, Zeroable, Clone, Copy, Debug, PartialEq)]
pub struct PhotonRecord {
    pub position: [f32; 3],
    /// The unit direction of travel (towards the surface), [`octahedral_encode`]d.
    pub direction: u32,
    /// The photon's flux (power) per colour channel.
    pub power: [f32; 3],
    /// Left to the photon tracer (e.g. caustic or global); the estimate ignores it.
    pub flags: u32,
}

/// The weight a photon gets by its distance `d` from the query, relative to the radius `r`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EstimateFilter {
    /// Every photon weighs 1.
    None,
    /// Jensen's cone filter: `w = 1 − d/(k·r)`, normalised by `1 − 2/(3k)`. `k >= 1` (e.g. 1.1);
    /// smaller or NaN values are clamped to 1 ([`EstimateFilter::cone_k`]).
    Cone { k: f32 },
    /// The 2D Epanechnikov kernel `w = 2·(1 − d²/r²)`, whose integral over the disc is `π r²`.
    Epanechnikov,
}

impl EstimateFilter {
    /// The cone filter's `k` as both backends use it: at least 1 (NaN becomes 1); 1 for the
    /// other filters.
    pub fn cone_k(self) -> f32 {
        match self {
            EstimateFilter::Cone { k } => k.max(1.0),
            _ => 1.0,
        }
    }

    /// The code the WGSL estimate reads (`ESTIMATE_FILTER_*` in `photon_estimate.wgsl`).
    pub fn code(self) -> u32 {
        match self {
            EstimateFilter::None => 0,
            EstimateFilter::Cone { .. } => 1,
            EstimateFilter::Epanechnikov => 2,
        }
    }

    /// The filter's normalisation: the average weight over a uniformly covered disc.
    pub fn normalisation(self) -> f32 {
        match self {
            EstimateFilter::Cone { .. } => 1.0 - 2.0 / (3.0 * self.cone_k()),
            EstimateFilter::None | EstimateFilter::Epanechnikov => 1.0,
        }
    }
}

/// The steps of the octahedral grid per axis: a code holds `x` in bits 0–15 and `y` in bits
/// 16–31, each `round((p·0.5 + 0.5) · 65535)` of the folded octahedral coordinate `p ∈ [−1, 1]`.
pub const OCTAHEDRAL_STEPS: u32 = 65535;

/// Encodes a direction (any length; a zero or non-finite vector encodes +z) on the 16+16-bit
/// octahedral grid. A code decodes ([`octahedral_decode`]) and encodes back to itself, except on
/// the grid's border (a coordinate 0 or 65535), where the octahedron's fold makes mirrored codes
/// the same direction (all four corners are −z): those encode back to the one with the
/// nonnegative fold sign, which decodes to the same direction.
pub fn octahedral_encode(v: Vec3) -> u32 {
    let l1 = v.x.abs() + v.y.abs() + v.z.abs();
    let v = if l1 > 0.0 && l1.is_finite() {
        v
    } else {
        Vec3::Z
    };
    let l1 = v.x.abs() + v.y.abs() + v.z.abs();
    let (mut px, mut py) = (v.x / l1, v.y / l1);
    if v.z < 0.0 {
        (px, py) = (
            (1.0 - py.abs()) * sign_not_zero(px),
            (1.0 - px.abs()) * sign_not_zero(py),
        );
    }
    let quantise = |p: f32| {
        ((p * 0.5 + 0.5) * OCTAHEDRAL_STEPS as f32)
            .round()
            .clamp(0.0, OCTAHEDRAL_STEPS as f32) as u32
    };
    quantise(px) | quantise(py) << 16
}

/// The direction of a code scaled to `|x| + |y| + |z| = 65535`, every component an integer and
/// so exact in `f32` on both backends: the facing test uses it, since its sign needs no
/// normalisation. `65535` is odd and a grid coordinate `2q − 65535` is odd, so `z` is never zero
/// and the fold never meets a zero sign.
pub fn octahedral_decode_l1(code: u32) -> Vec3 {
    let steps = OCTAHEDRAL_STEPS as i32;
    let x = 2 * (code & 0xffff) as i32 - steps;
    let y = 2 * (code >> 16) as i32 - steps;
    let z = steps - x.abs() - y.abs();
    let (x, y) = if z < 0 {
        (
            (steps - y.abs()) * x.signum(),
            (steps - x.abs()) * y.signum(),
        )
    } else {
        (x, y)
    };
    Vec3::new(x as f32, y as f32, z as f32)
}

/// The unit direction of a code.
pub fn octahedral_decode(code: u32) -> Vec3 {
    octahedral_decode_l1(code).normalize()
}

/// Where a stored photon's `flags` keep its surface normal: bits 16–31 hold
/// [`coarse_octahedral_encode`] of the shading normal on the side the photon arrived from (the
/// tracer's path flags use the low bits). The irradiance photons (Christensen's precomputed
/// irradiance) are estimated with it and matched by it.
pub const PHOTON_NORMAL_SHIFT: u32 = 16;

/// A direction on an 8+8-bit octahedral grid: the 8 leading bits of each coordinate of
/// [`octahedral_encode`] (about 0.5° apart), `x` in bits 0–7, `y` in bits 8–15.
pub fn coarse_octahedral_encode(v: Vec3) -> u32 {
    let code = octahedral_encode(v);
    ((code >> 8) & 0xff) | ((code >> 24) << 8)
}

/// The unit direction of a [`coarse_octahedral_encode`] code: each coordinate at the centre of
/// its 8-bit cell.
pub fn coarse_octahedral_decode(code: u32) -> Vec3 {
    let x = ((code & 0xff) << 8) | 0x80;
    let y = (((code >> 8) & 0xff) << 8) | 0x80;
    octahedral_decode(x | y << 16)
}

fn sign_not_zero(v: f32) -> f32 {
    if v >= 0.0 {
        1.0
    } else {
        -1.0
    }
}

/// Whether a photon travelling along `direction` (as [`octahedral_decode_l1`] gives it: integer
/// components of at most 16 bits) arrives on the side `n` faces: `dot(n, direction) < 0`. Each
/// component of `n` is split into three parts of at most 8 significant bits, so every product
/// with a direction component is exact and the sum, in a fixed order, is the same on the CPU
/// and the GPU whether or not a driver fuses multiply-adds (see `accel::knn`).
pub fn arrives_in_front(n: Vec3, direction: Vec3) -> bool {
    let axis = |n: f32, d: f32| {
        let [a, b, c] = split3(n);
        (a * d + b * d) + c * d
    };
    (axis(n.x, direction.x) + axis(n.y, direction.y)) + axis(n.z, direction.z) < 0.0
}

/// `v` as three parts of at most 8 significant bits each whose sum is exactly `v` (by masking
/// the bits: the 8 leading significant bits, then the 8 after them, then the rest).
fn split3(v: f32) -> [f32; 3] {
    let a = f32::from_bits(v.to_bits() & 0xffff_0000);
    let rest = v - a;
    let b = f32::from_bits(rest.to_bits() & 0xffff_0000);
    [a, b, rest - b]
}

/// Irradiance-like flux density at `x` with normal `n`: `(1/(norm·π r²)) Σ wᵢ Φᵢ` over the `k`
/// nearest photons within `max_dist2`, counting only photons arriving from the side `n` faces;
/// `r` as the module documentation says. `points` is the kd-tree's point array (`words`, layout
/// in `accel::kdtree`) and `photons[i]` the photon of `points[i]`; a missing photon counts as
/// none. Any `k` works here (the GPU refuses `k > KNN_MAX_K`); `k = 0` gives zero.
#[allow(clippy::too_many_arguments)]
pub fn photon_flux_density(
    words: &[u32],
    points: &[[f32; 4]],
    photons: &[PhotonRecord],
    x: Vec3,
    n: Vec3,
    k: usize,
    max_dist2: f32,
    filter: EstimateFilter,
) -> Vec3 {
    let mut heap = KnnHeap::new(k, max_dist2);
    knn_search(words, points, x, &mut heap);
    flux_density_of_neighbours(
        heap.entries(),
        heap.is_full(),
        photons,
        n,
        max_dist2,
        filter,
    )
}

/// The estimate at irradiance photon `index` of a map whose every `stride`-th photon is one
/// (Christensen's precomputed irradiance, `render::irradiance_photons`), on the side `n` faces:
/// the `k` nearest photons that are not irradiance photons, their power scaled by
/// `stride/(stride − 1)`; with `stride` 1, the `k` nearest other photons.
///
/// A lookup picks the irradiance photon nearest a gather hit, which makes the space between
/// them empty of irradiance photons. An estimate that counted them would see that hole (and
/// one centred on a photon always finds the photon itself): both made the Cornell box's
/// progressive stills darker the more irradiance photons there were (−0.76% with every photon,
/// the ceiling −3.6%). The photons that are not irradiance photons are a thinning of the map
/// independent of the lookup's choice, so their estimate is not. `stride` 1 has no such photons
/// and keeps the hole.
#[allow(clippy::too_many_arguments)]
pub fn irradiance_photon_estimate(
    words: &[u32],
    points: &[[f32; 4]],
    photons: &[PhotonRecord],
    index: u32,
    stride: u32,
    n: Vec3,
    k: usize,
    max_dist2: f32,
    filter: EstimateFilter,
) -> Vec3 {
    let Some(photon) = photons.get(index as usize) else {
        return Vec3::ZERO;
    };
    let mut heap = KnnHeap::new(k, max_dist2);
    let accept = |i: u32| {
        if stride <= 1 {
            i != index
        } else {
            i % stride != 0
        }
    };
    knn_search_filtered(
        words,
        points,
        Vec3::from(photon.position),
        &mut heap,
        accept,
    );
    let e = flux_density_of_neighbours(
        heap.entries(),
        heap.is_full(),
        photons,
        n,
        max_dist2,
        filter,
    );
    e * thinning_scale(stride)
}

/// The factor that makes the photons outside the irradiance photons (all but every
/// `stride`-th) stand for the whole map: `stride/(stride − 1)`, 1 for `stride` ≤ 1.
pub fn thinning_scale(stride: u32) -> f32 {
    if stride <= 1 {
        1.0
    } else {
        stride as f32 / (stride - 1) as f32
    }
}

/// The estimate from the photons found (in any order; the search's heap order is what both
/// backends sum in), `full` when `k` were found.
///
/// When the k-th nearest photon sets the radius (`full`, k ≥ 2), that photon lies on the
/// disc's edge and is left out of the sum: given `r`, the other `k − 1` photons are spread over
/// the disc, so the estimate's mean is `(k − 1)/(π r²)` photons' power per area, which for a
/// locally uniform density is the density itself (Jensen's `k/(π r²)` is `k/(k − 1)` too
/// bright: +1.6% at k = 64, +5% at k = 21 without a filter). A filter's weights keep this
/// unbiased, since they are normalised over the disc. A fixed radius (fewer than `k` found
/// within `max_dist2`) counts every photon.
pub fn flux_density_of_neighbours(
    found: &[Neighbour],
    full: bool,
    photons: &[PhotonRecord],
    n: Vec3,
    max_dist2: f32,
    filter: EstimateFilter,
) -> Vec3 {
    let farthest = found.iter().fold(0.0f32, |m, f| m.max(f.dist2));
    let r2 = if !full && max_dist2.is_finite() {
        max_dist2
    } else {
        farthest
    };
    let has_area = r2 > 0.0;
    if found.is_empty() || !has_area {
        return Vec3::ZERO;
    }
    let r = r2.sqrt();
    let cone_kr = filter.cone_k() * r;
    // The photon on the edge: the largest (distance², index), a total order (the heap's root).
    let edge = (full && found.len() >= 2)
        .then(|| {
            (0..found.len()).max_by(|&a, &b| {
                let (x, y) = (&found[a], &found[b]);
                x.dist2.total_cmp(&y.dist2).then(x.index.cmp(&y.index))
            })
        })
        .flatten();
    let mut sum = Vec3::ZERO;
    for (j, f) in found.iter().enumerate() {
        if Some(j) == edge {
            continue;
        }
        let Some(photon) = photons.get(f.index as usize) else {
            continue;
        };
        if !arrives_in_front(n, octahedral_decode_l1(photon.direction)) {
            continue;
        }
        let w = match filter {
            EstimateFilter::None => 1.0,
            EstimateFilter::Cone { .. } => 1.0 - f.dist2.sqrt() / cone_kr,
            // (r2 − d2)/r2: the farthest photon weighs exactly 0 on every GPU too.
            EstimateFilter::Epanechnikov => 2.0 * ((r2 - f.dist2) / r2),
        };
        sum += w * Vec3::from(photon.power);
    }
    sum / (filter.normalisation() * PI * r2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code on a dense sweep of the grid (every 7th x and 11th y, the edges and the middle)
    /// decodes to a unit direction that encodes back to the same code, or on the border to a
    /// code of the same direction.
    #[test]
    fn octahedral_codes_round_trip_exactly() {
        let special = [0, 1, 2, 32766, 32767, 32768, 32769, 65533, 65534, 65535];
        let mut xs: Vec<u32> = (0..=OCTAHEDRAL_STEPS).step_by(7).collect();
        let mut ys: Vec<u32> = (0..=OCTAHEDRAL_STEPS).step_by(11).collect();
        xs.extend(special);
        ys.extend(special);
        let mut border = 0;
        for &x in &xs {
            for &y in &ys {
                let code = x | y << 16;
                let v = octahedral_decode(code);
                assert!((v.length() - 1.0).abs() < 1e-6, "{code:#x} → {v}");
                let back = octahedral_encode(v);
                if x == 0 || y == 0 || x == OCTAHEDRAL_STEPS || y == OCTAHEDRAL_STEPS {
                    assert_eq!(octahedral_decode_l1(back), octahedral_decode_l1(code));
                    border += 1;
                } else {
                    assert_eq!(back, code, "{x}, {y} → {v}");
                }
            }
        }
        assert!(border > 0);
        assert_eq!(octahedral_encode(-Vec3::Z), 0xffff_ffff);
        assert_eq!(octahedral_decode(0), -Vec3::Z);
    }

    #[test]
    fn octahedral_encoding_keeps_directions_within_the_grid_step() {
        let dirs = [
            Vec3::X,
            -Vec3::X,
            Vec3::Y,
            -Vec3::Y,
            Vec3::Z,
            -Vec3::Z,
            Vec3::new(0.3, -0.4, -0.866).normalize(),
            Vec3::new(-1.0, 2.0, 3.0).normalize(),
        ];
        for d in dirs {
            // Half a grid step on the square is at most about 2.2e-5 on the sphere.
            let back = octahedral_decode(octahedral_encode(d));
            assert!((back - d).length() < 3e-5, "{d} → {back}");
        }
        assert_eq!(octahedral_encode(Vec3::ZERO), octahedral_encode(Vec3::Z));
        assert_eq!(
            octahedral_encode(Vec3::splat(f32::NAN)),
            octahedral_encode(Vec3::Z)
        );
    }

    #[test]
    fn the_facing_test_splits_normals_exactly_and_agrees_with_the_dot_product() {
        for v in [0.1f32, -0.707, 1.0, 3.3e-5, -0.99999994, 0.0] {
            let [a, b, c] = split3(v);
            assert_eq!((a + b) + c, v);
            for part in [a, b, c] {
                assert_eq!(part.to_bits() & 0xffff, 0, "{v}: {part}");
            }
        }
        let n = Vec3::new(0.2, -0.5, 0.8).normalize();
        for code in [0u32, 0x1234_5678, 0x8000_7fff, 0xffff_ffff, 0x0001_fffe] {
            let d = octahedral_decode_l1(code);
            let dot = n.as_dvec3().dot(d.as_dvec3());
            if dot.abs() > 1e-3 {
                assert_eq!(arrives_in_front(n, d), dot < 0.0, "{code:#x}");
            }
        }
    }

    #[test]
    fn filters_are_normalised_and_the_cone_k_is_at_least_one() {
        assert_eq!(EstimateFilter::Cone { k: 0.5 }.cone_k(), 1.0);
        assert_eq!(EstimateFilter::Cone { k: f32::NAN }.cone_k(), 1.0);
        assert!((EstimateFilter::Cone { k: 1.0 }.normalisation() - 1.0 / 3.0).abs() < 1e-7);
        // Each filter's weight averages its normalisation over a uniform disc (midpoint rule in
        // rings of equal width: the area element is 2πρ dρ).
        for filter in [
            EstimateFilter::None,
            EstimateFilter::Cone { k: 1.1 },
            EstimateFilter::Epanechnikov,
        ] {
            let rings = 100_000;
            let mut integral = 0.0f64;
            for i in 0..rings {
                let rho = (i as f64 + 0.5) / rings as f64;
                let w = match filter {
                    EstimateFilter::None => 1.0,
                    EstimateFilter::Cone { .. } => 1.0 - rho / filter.cone_k() as f64,
                    EstimateFilter::Epanechnikov => 2.0 * (1.0 - rho * rho),
                };
                integral += w * 2.0 * rho / rings as f64;
            }
            assert!(
                (integral - filter.normalisation() as f64).abs() < 1e-6,
                "{filter:?}: {integral}"
            );
        }
    }
}

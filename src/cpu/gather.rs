//! The second half of photon mapping on the CPU (paper 003 sections 6.2.3–6.2.5), written
//! plainly: adaptive seeding of irradiance samples in a screen-space quadtree, final gather
//! from the global photon map, the irradiance samples' kd-tree and their interpolation at every
//! diffuse shading point, and the caustic map's estimate there.

use glam::Vec3;
use rayon::prelude::*;

use super::irradiance_photons::IrradiancePhotons;
use super::photons::PhotonTree;
use crate::accel::kdtree::{build_point_kdtree, PointKdTree};
use crate::accel::knn::knn;
use crate::accel::{Prepared, Ray, VdFrame};
use crate::cpu::optics::{
    dielectric_split, face_forward, offset_origin, reflect, specular_reflectance,
};
use crate::cpu::plastic::{Plastic, PlasticHit};
use crate::cpu::rough::{RoughHit, RoughSurface};
use crate::render::gather::{
    gather_direction, gather_strata, interpolate_irradiance, seed_min_density_fixed,
    translational_gradient, IrradianceSample, SeedingSettings, ShadingPoint,
    INTERPOLATION_NEIGHBOURS, SAMPLE_RADIUS_MAX, SAMPLE_RADIUS_MIN, SEED_DENSITY_BITS,
};
use crate::render::photons::EstimateSettings;
use crate::render::progress::Phase;
use crate::render::sampling::SampleStream;
use crate::scene::{MaterialKind, Scene};

/// The `sample` coordinate of the seed selection's random streams.
pub const SEED_STREAM_TAG: u32 = 0x8000_0010;
/// The `sample` coordinate of gather ray 0's random stream; ray `j` of a seed uses this plus `j`
/// (and the seed's index as the `pixel`), so every gather ray has its own stream on both
/// backends: 2 numbers for its direction, then 1 per specular step.
pub const GATHER_STREAM_TAG: u32 = 0x8000_0011;

/// Morton code of a pixel's cell in the `2^levels × 2^levels` screen quadtree (`levels` at most
/// 16; `width` and `height` count as at least 1), below `4^levels`. A pixel past the image's end
/// counts as in the last row of cells (the GPU twin, `shaders/seeding/common.wgsl`, computes
/// the same with 32-bit words).
pub fn quadtree_code(pixel: u32, width: u32, height: u32, levels: u32) -> u32 {
    let (width, height) = (width.max(1), height.max(1));
    let levels = levels.min(16);
    let (x, y) = (pixel % width, pixel / width);
    let last = (1u64 << levels) - 1;
    let cx = (((x as u64) << levels) / width as u64).min(last) as u32;
    let cy = (((y as u64) << levels) / height as u64).min(last) as u32;
    let spread = |v: u32| {
        let mut v = v & 0xffff;
        v = (v | (v << 8)) & 0x00ff_00ff;
        v = (v | (v << 4)) & 0x0f0f_0f0f;
        v = (v | (v << 2)) & 0x3333_3333;
        (v | (v << 1)) & 0x5555_5555
    };
    spread(cx) | spread(cy) << 1
}

/// Splits `total` between parts in proportion to `weights` (all zero: equally), never giving a
/// part more than its `cap`; floors first, then the largest remainders (ties to the lower
/// index), again over the parts with room left until all is given. `total` must not exceed the
/// sum of the caps.
///
/// Integer arithmetic only, so the GPU twin (`shaders/seeding/distribute.wgsl`, up to four
/// parts) decides the same: the weights are first shifted right by the fewest bits that bring
/// their sum below 2^31; a part's share of `left` is `w·left / Σw` over the open parts, its
/// floor the integer quotient and its remainder the integer remainder (all remainders of a round
/// share the denominator, so comparing them compares the fractions exactly).
pub fn apportion(total: u32, weights: &[u64], caps: &[u32]) -> Vec<u32> {
    let parts = weights.len().min(caps.len());
    let sum: u128 = weights[..parts].iter().map(|&w| w as u128).sum();
    let shift = (128 - sum.leading_zeros()).saturating_sub(31);
    let w: Vec<u64> = weights[..parts]
        .iter()
        .map(|&x| x.checked_shr(shift).unwrap_or(0))
        .collect();
    let mut out = vec![0u32; parts];
    let mut left = total;
    let mut open: Vec<usize> = (0..parts).filter(|&i| caps[i] > 0).collect();
    while left > 0 && !open.is_empty() {
        // Below 2^31 (see above), and `w · left` below 2^63.
        let sum: u64 = open.iter().map(|&i| w[i]).sum();
        let k = open.len() as u64;
        let mut given = 0;
        let mut remainders = Vec::new();
        for &i in &open {
            let num = w[i] * left as u64;
            let (whole, rem) = match num.checked_div(sum) {
                Some(q) => (q, num - q * sum),
                None => (left as u64 / k, left as u64 % k),
            };
            let room = caps[i] - out[i];
            // The quotient is at most `left`.
            let whole = (whole as u32).min(room);
            out[i] += whole;
            given += whole;
            remainders.push((rem, i));
        }
        left -= given;
        remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, i) in &remainders {
            if left == 0 {
                break;
            }
            if out[i] < caps[i] {
                out[i] += 1;
                left -= 1;
            }
        }
        open.retain(|&i| out[i] < caps[i]);
    }
    out
}

/// Fixed-point bits of `α·x` in the seeding quadtree: a position key counts `2^-10` units of
/// `1/α` (a thousandth of a tenth of the scene radius with the default α).
pub const SEED_POSITION_BITS: u32 = 10;
/// Fixed-point bits of a normal component.
pub const SEED_NORMAL_BITS: u32 = 14;
/// Position keys are clamped to `±2^30` before the bias of `2^30` makes them unsigned.
const SEED_POSITION_LIMIT: f32 = (1u32 << 30) as f32;
/// Positions are clamped to `±2^90` and the scale to `2^37`, so that their product is finite.
const SEED_COORDINATE_LIMIT: f32 = (1u128 << 90) as f32;
const SEED_SCALE_LIMIT: f32 = (1u64 << 37) as f32;
/// The per-axis position difference counted at most (32 α-units, about 3 scene radii).
const SEED_DIFFERENCE_CAP: u32 = 1 << 15;

/// `x` with NaN, infinities and subnormals made 0, decided on its bits (what a GPU that flushes
/// subnormals sees, and WGSL may not test NaN reliably).
pub fn seed_clean(x: f32) -> f32 {
    let exponent = x.to_bits() & 0x7f80_0000;
    if exponent == 0 || exponent == 0x7f80_0000 {
        0.0
    } else {
        x
    }
}

/// The factor from a coordinate to its position key before rounding: `α · 2^10`, clamped to
/// `0..=2^37` (computed once on the host and handed to the GPU as the same `f32`).
pub fn seed_position_scale(alpha: f32) -> f32 {
    (seed_clean(alpha) * (1u32 << SEED_POSITION_BITS) as f32).clamp(0.0, SEED_SCALE_LIMIT)
}

/// A shading point of the seeding quadtree in fixed point: position keys (`2^30 +
/// floor(scale · x)`, clamped) and normal keys (`floor(2^14 · n)`, components clamped to ±1).
/// The only float operation is one multiplication per coordinate, which every GPU rounds
/// correctly; the rest is exact, so both backends key a point the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeedPoint {
    pub position: [u32; 3],
    pub normal: [i32; 3],
}

impl SeedPoint {
    pub fn new(position: Vec3, normal: Vec3, scale: f32) -> SeedPoint {
        let key = |x: f32| {
            let v = seed_clean(
                seed_clean(x).clamp(-SEED_COORDINATE_LIMIT, SEED_COORDINATE_LIMIT) * scale,
            );
            (v.floor().clamp(-SEED_POSITION_LIMIT, SEED_POSITION_LIMIT) as i32 + (1 << 30)) as u32
        };
        let normal_key = |c: f32| {
            (seed_clean(c).clamp(-1.0, 1.0) * (1u32 << SEED_NORMAL_BITS) as f32).floor() as i32
        };
        SeedPoint {
            position: position.to_array().map(key),
            normal: normal.to_array().map(normal_key),
        }
    }
}

/// The direction of a sum of normal keys as a normal key of length about `2^14`: the sum is
/// shifted (arithmetically) until its largest component has 15 bits, then each component is
/// scaled by `2^14 / isqrt(|t|²)` with a quotient truncated towards zero. Zero stays zero.
pub fn seed_mean_normal(sum: [i64; 3]) -> [i32; 3] {
    let largest = sum.iter().map(|s| s.unsigned_abs()).max().unwrap_or(0);
    if largest == 0 {
        return [0; 3];
    }
    let bits = 64 - largest.leading_zeros();
    let t = sum.map(|s| {
        if bits > 15 {
            (s >> (bits - 15)) as i32
        } else {
            (s << (15 - bits)) as i32
        }
    });
    // |t| ≤ 2^15 per component: the squares' sum stays below 2^32, and the length is ≥ 2^14.
    let len2: u32 = t.iter().map(|&c| (c * c) as u32).sum();
    let len = len2.isqrt() as i32;
    t.map(|c| c * (1 << SEED_NORMAL_BITS) / len)
}

/// The geometric variation of paper 003 eq. 6.1, `α‖x − x̄‖ + ‖n − n̄‖` (for unit normals
/// `‖n − n̄‖ = sqrt(2 − 2 n·n̄)`), in units of `2^-14`: `isqrt(Σ d²) · 2^4 + isqrt(Σ e²)` with
/// `d` the position key differences (each capped at `2^15`) and `e` the normal key differences.
/// Below `2^21`; exact integers, so the same on every backend.
pub fn seed_variation(point: &SeedPoint, mean: &SeedPoint) -> u32 {
    let mut d2 = 0u32;
    let mut e2 = 0u32;
    for a in 0..3 {
        let d = point.position[a]
            .abs_diff(mean.position[a])
            .min(SEED_DIFFERENCE_CAP);
        d2 += d * d;
        let e = (point.normal[a] - mean.normal[a]).unsigned_abs();
        e2 += e * e;
    }
    (d2.isqrt() << (SEED_NORMAL_BITS - SEED_POSITION_BITS)) + e2.isqrt()
}

/// Seed `j` of `count` taken from a leaf of `size` points (`count ≤ size`) with the random
/// 24-bit number `u24`: the point `lo + floor(u24 · (hi − lo) / 2^24)` of the stratum
/// `lo = floor(j·size/count)` .. `hi = floor((j+1)·size/count)`. Strata are disjoint and never
/// empty, so a leaf's seeds are distinct points.
pub fn stratum_pick(j: u32, count: u32, size: u32, u24: u32) -> u32 {
    let count = count.max(1) as u64;
    let lo = j as u64 * size as u64 / count;
    let hi = (j as u64 + 1) * size as u64 / count;
    (lo + ((u24 as u64 * (hi - lo)) >> 24)) as u32
}

/// The seeds the minimum density `beta` (`round(β·2^16)`, [`seed_min_density_fixed`])
/// guarantees a quadtree node of `size` of the `n` points when `total` seeds are placed:
/// `floor(beta · floor(total·size/n) / 2^16)`, about `β·total·size/n`. Exact integers (the GPU
/// twin is `density_floor` in `shaders/seeding/common.wgsl`); for `size ≤ n` at most `total`.
///
/// Floors of floors are superadditive: children of `p₁ + p₂ + … ≤ P` points have floors that sum
/// to at most their parent's, so a node that holds its floor can give every child its own.
pub fn seed_density_floor(total: u32, size: u32, n: u32, beta: u32) -> u32 {
    let share = total as u64 * size as u64 / n.max(1) as u64;
    ((beta.min(1 << SEED_DENSITY_BITS) as u64 * share) >> SEED_DENSITY_BITS) as u32
}

/// How a node's `count` seeds go to its children (point counts `sizes`, errors `errors`):
/// each child first gets its own density floor `floors[c]` ([`seed_density_floor`], at most
/// its size), then the rest goes by [`apportion`]`(count − Σ floors, errors, sizes − floors)`.
/// The seeding always has `Σ floors ≤ count` (see [`seed_density_floor`]); were it not so, the
/// floors would be left out. With all floors 0 this is `apportion(count, errors, sizes)`, the
/// seeding without a minimum density.
pub fn split_seeds(count: u32, floors: &[u32], sizes: &[u32], errors: &[u64]) -> Vec<u32> {
    let floors: Vec<u32> = floors.iter().zip(sizes).map(|(&f, &p)| f.min(p)).collect();
    let sum: u64 = floors.iter().map(|&f| f as u64).sum();
    let floors = if sum > count as u64 {
        vec![0; floors.len()]
    } else {
        floors
    };
    let given: u32 = floors.iter().sum();
    let room: Vec<u32> = sizes.iter().zip(&floors).map(|(&p, &f)| p - f).collect();
    let by_error = apportion(count - given, errors, &room);
    floors.iter().zip(&by_error).map(|(a, b)| a + b).collect()
}

/// A node of one level of the screen quadtree: a run of the code-sorted points.
#[derive(Clone, Copy, Debug)]
struct QuadNode {
    start: usize,
    end: usize,
    error: u64,
}

/// Adaptive seeding (paper 003 listing 6.6): the indices of the shading points chosen as the
/// seeds of irradiance samples, at most `seeds` of them (exactly `min(seeds, points)`) and at
/// most one per point, in the order of the leaves and of their strata.
///
/// The points are sorted by the Morton code of their pixel's cell in a `2^levels` screen
/// quadtree (`levels` clamped to 1..=16), equal codes by index; each level's nodes are the runs
/// of equal code prefixes. The arithmetic is fixed point, so that the GPU twin
/// (`gpu::seeding`), which sums in another order, chooses the same seeds bit for bit:
///
/// - every point is keyed as a [`SeedPoint`] (positions in `2^-10/α` units, normals in `2^-14`);
/// - a node's mean position is the floor of its position keys' `u64` sum over its point count,
///   its mean normal [`seed_mean_normal`] of the `i64` sum of its normal keys;
/// - its error is the `u64` sum of its points' [`seed_variation`] against that mean (the
///   root's is not needed and left 0);
/// - the root gets `T = min(seeds, n)` seeds, and they go top-down ([`split_seeds`]): every
///   child of `p` points first gets its density floor
///   [`seed_density_floor`]`(T, p, n, β) ≈ β·T·p/n`, and the rest of its parent's seeds goes by
///   [`apportion`] with the children's errors as weights and their remaining points as caps.
///   The floors always fit (they are superadditive and the root's is at most `T`), so every
///   node holds at least its floor, whatever the errors beside it: a share β of the seeds
///   covers the image in proportion to its shading points, and a flat region is not starved.
///   β = 0 is listing 6.6's split by errors alone;
/// - a leaf with `s` seeds takes [`stratum_pick`]`(j, s, size, u24)` for `j < s`, `u24` the 24
///   bits of the `j`-th number of `SampleStream::new(seed, leaf start, SEED_STREAM_TAG)`.
pub fn seed_irradiance_samples(points: &[ShadingPoint], settings: &SeedingSettings) -> Vec<u32> {
    let &SeedingSettings {
        width,
        height,
        levels,
        seeds,
        min_density,
        alpha,
        seed,
    } = settings;
    let n = points.len();
    if n == 0 || seeds == 0 {
        return Vec::new();
    }
    let levels = levels.clamp(1, 16);
    let beta = seed_min_density_fixed(min_density);
    let codes: Vec<u32> = points
        .iter()
        .map(|p| quadtree_code(p.pixel, width, height, levels))
        .collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| (codes[i as usize], i));
    let scale = seed_position_scale(alpha);
    let keyed: Vec<SeedPoint> = order
        .iter()
        .map(|&i| {
            SeedPoint::new(
                points[i as usize].position,
                points[i as usize].normal,
                scale,
            )
        })
        .collect();
    // Levels 0 (root) ..= levels (leaves): runs of the code's top 2·level bits.
    let mut tree: Vec<Vec<QuadNode>> = Vec::new();
    for level in 0..=levels {
        let shift = 2 * (levels - level);
        let key = |k: usize| codes[order[k] as usize].checked_shr(shift).unwrap_or(0);
        let mut runs = Vec::new();
        let mut start = 0;
        for k in 1..=n {
            if k == n || key(k) != key(start) {
                runs.push((start, k));
                start = k;
            }
        }
        let nodes = runs
            .par_iter()
            .map(|&(start, end)| {
                let members = &keyed[start..end];
                let error = if level == 0 {
                    0
                } else {
                    let mut position = [0u64; 3];
                    let mut normal = [0i64; 3];
                    for p in members {
                        for a in 0..3 {
                            position[a] += p.position[a] as u64;
                            normal[a] += p.normal[a] as i64;
                        }
                    }
                    let count = members.len() as u64;
                    let mean = SeedPoint {
                        position: position.map(|s| (s / count) as u32),
                        normal: seed_mean_normal(normal),
                    };
                    members
                        .iter()
                        .map(|p| seed_variation(p, &mean) as u64)
                        .sum()
                };
                QuadNode { start, end, error }
            })
            .collect();
        tree.push(nodes);
    }
    // Top-down distribution.
    let total = seeds.min(n as u32);
    let mut counts = vec![total];
    for level in 0..levels as usize {
        let children = &tree[level + 1];
        let mut next = vec![0u32; children.len()];
        let mut c = 0;
        for (node, &count) in tree[level].iter().zip(&counts) {
            let first = c;
            while c < children.len() && children[c].end <= node.end {
                c += 1;
            }
            let kids = &children[first..c];
            let errors: Vec<u64> = kids.iter().map(|k| k.error).collect();
            let sizes: Vec<u32> = kids.iter().map(|k| (k.end - k.start) as u32).collect();
            let floors: Vec<u32> = sizes
                .iter()
                .map(|&p| seed_density_floor(total, p, n as u32, beta))
                .collect();
            let shares = split_seeds(count, &floors, &sizes, &errors);
            next[first..c].copy_from_slice(&shares);
        }
        counts = next;
    }
    // Jittered strata in each leaf.
    let mut chosen = Vec::new();
    for (leaf, &s) in tree[levels as usize].iter().zip(&counts) {
        let size = (leaf.end - leaf.start) as u32;
        let mut rng = SampleStream::new(seed, leaf.start as u32, SEED_STREAM_TAG);
        for j in 0..s {
            // next_f32 is (24 random bits) · 2^-24, so this recovers the bits exactly.
            let u24 = (rng.next_f32() * (1u32 << 24) as f32) as u32;
            let k = stratum_pick(j, s, size, u24) as usize;
            chosen.push(order[leaf.start + k]);
        }
    }
    chosen
}

/// Where a gather ray's diffuse hit gets the irradiance from the global map.
pub enum GatherLookup<'a> {
    /// A full density estimate at the hit.
    Density(&'a PhotonTree, &'a EstimateSettings),
    /// The nearest precomputed irradiance photon's (Christensen).
    Precomputed(&'a IrradiancePhotons),
}

impl<'a> GatherLookup<'a> {
    /// Precomputed irradiance when the scene asks for it (`gather { precomputed_irradiance }`),
    /// a density estimate otherwise; `photons` holds the precomputed photons when made.
    pub fn of(
        global: &'a PhotonTree,
        settings: &'a EstimateSettings,
        photons: Option<&'a IrradiancePhotons>,
    ) -> GatherLookup<'a> {
        match photons {
            Some(p) => GatherLookup::Precomputed(p),
            None => GatherLookup::Density(global, settings),
        }
    }

    /// The irradiance at `x` on the side `n` faces.
    pub fn irradiance(&self, x: Vec3, n: Vec3) -> Vec3 {
        match self {
            GatherLookup::Density(global, settings) => global.flux_density(x, n, settings),
            GatherLookup::Precomputed(photons) => photons.irradiance(x, n),
        }
    }
}

/// Radiance arriving along a gather ray: at a diffuse surface the global map's irradiance
/// (`lookup`) times albedo/π; through mirrors and glass followed by Russian roulette on the
/// Fresnel split, through rough conductors and dielectrics in one direction their BSDF samples
/// (at most `max_depth` such steps); nothing for a miss. A light's surface is black: its light is direct light, which the shadow rays bring.
#[allow(clippy::too_many_arguments)]
pub fn gather_radiance(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    lookup: &GatherLookup,
    epsilon: f32,
    mut ray: Ray,
    rng: &mut SampleStream,
) -> (Vec3, f32) {
    let mut weight = Vec3::ONE;
    let mut first_t = f32::INFINITY;
    for step in 0..=scene.film.max_depth {
        let Some(hit) = prepared.intersect_in(vd, &ray) else {
            return (Vec3::ZERO, first_t);
        };
        if step == 0 {
            first_t = hit.t * ray.dir.length();
        }
        let sp = prepared.surface_point(&ray, &hit);
        let dir = ray.dir.normalize();
        let material = &*scene.material_at(sp.material, sp.uv);
        let u = rng.next_f32();
        let facing = face_forward(sp.geometric_normal, dir);
        if let Some(surface) = RoughSurface::of(material) {
            // A glossy lobe: one direction it samples (two more numbers), u choosing a
            // dielectric's branch.
            let u_dir = rng.next_vec2();
            let Some(s) = RoughHit::new(surface, dir, sp.shading_normal, sp.geometric_normal)
                .and_then(|hit| hit.sample(u, u_dir))
            else {
                break;
            };
            weight *= s.weight;
            let side = if s.transmitted { -facing } else { facing };
            ray = Ray::new(offset_origin(sp.position, side, epsilon), s.dir);
            if weight.max_element() <= 0.0 {
                break;
            }
            continue;
        }
        match material {
            MaterialKind::Diffuse { albedo, texture } => {
                let albedo = match texture {
                    Some(t) => *albedo * scene.textures[*t as usize].sample(sp.uv),
                    None => *albedo,
                };
                let n = face_forward(sp.shading_normal, dir);
                let e = lookup.irradiance(sp.position, n);
                return (weight * albedo * std::f32::consts::FRAC_1_PI * e, first_t);
            }
            MaterialKind::Plastic {
                albedo, texture, ..
            } => {
                // The coat with the probability of its Fresnel term, else the base's density
                // query, each weighed by its probability (two more numbers for the coat).
                let albedo = match texture {
                    Some(t) => *albedo * scene.textures[*t as usize].sample(sp.uv),
                    None => *albedo,
                };
                let u_dir = rng.next_vec2();
                let Some(hit) = Plastic::of(material, albedo)
                    .and_then(|p| PlasticHit::new(p, dir, sp.shading_normal, sp.geometric_normal))
                else {
                    break;
                };
                let p_coat = hit.coat_probability();
                if u >= p_coat {
                    let n = face_forward(sp.shading_normal, dir);
                    let e = lookup.irradiance(sp.position, n);
                    let base = hit.base_albedo() * std::f32::consts::FRAC_1_PI / (1.0 - p_coat);
                    return (weight * base * e, first_t);
                }
                let Some(s) = hit.sample_coat(u_dir) else {
                    break;
                };
                weight *= s.weight / p_coat;
                ray = Ray::new(offset_origin(sp.position, facing, epsilon), s.dir);
            }
            // Every emitter is a light: its shadow rays and photons bring its light.
            MaterialKind::Emissive { .. } | MaterialKind::LightSurface { .. } => {
                return (Vec3::ZERO, first_t)
            }
            MaterialKind::Mirror { .. } | MaterialKind::Conductor { .. } => {
                let n = face_forward(sp.shading_normal, dir);
                weight *= specular_reflectance(material, -dir.dot(n));
                ray = Ray::new(offset_origin(sp.position, facing, epsilon), reflect(dir, n));
            }
            MaterialKind::Dielectric {
                ior, tint, fresnel, ..
            } => {
                let split =
                    dielectric_split(dir, sp.shading_normal, sp.geometric_normal, *ior, *fresnel);
                match split.refracted {
                    Some(t) if u >= split.fresnel => {
                        weight *= *tint;
                        ray = Ray::new(offset_origin(sp.position, -facing, epsilon), t);
                    }
                    _ => {
                        ray = Ray::new(offset_origin(sp.position, facing, epsilon), split.reflected)
                    }
                }
            }
        }
        if weight.max_element() <= 0.0 {
            break;
        }
    }
    (Vec3::ZERO, first_t)
}

/// The irradiance sample at seed `point` (index `index`): one cosine-distributed gather ray in
/// each of [`gather_strata`]'s strata, `E = π/N Σ L`, Ward's radius from the harmonic mean of
/// their hit distances, clamped to the scene radius' [`SAMPLE_RADIUS_MIN`]..[`SAMPLE_RADIUS_MAX`],
/// and the [`translational_gradient`] (distances floored at the smallest radius).
#[allow(clippy::too_many_arguments)]
pub fn final_gather(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    lookup: &GatherLookup,
    epsilon: f32,
    scene_radius: f32,
    point: &ShadingPoint,
    index: u32,
) -> IrradianceSample {
    let (rows, columns) = gather_strata(scene.gather.rays);
    let rays = rows * columns;
    let mut radiance = Vec::with_capacity(rays as usize);
    let mut distance = Vec::with_capacity(rays as usize);
    let mut inverse_distances = 0.0f64;
    let origin = offset_origin(point.position, point.normal, epsilon);
    for j in 0..rays {
        let mut rng = SampleStream::new(scene.film.seed, index, GATHER_STREAM_TAG.wrapping_add(j));
        let dir = gather_direction(point.normal, j, rows, columns, rng.next_vec2());
        let (l, t) = gather_radiance(
            scene,
            prepared,
            vd,
            lookup,
            epsilon,
            Ray::new(origin, dir),
            &mut rng,
        );
        radiance.push(l);
        if t.is_finite() && t > 0.0 {
            inverse_distances += 1.0 / t as f64;
            distance.push(t);
        } else {
            distance.push(f32::INFINITY);
        }
    }
    let sum = radiance.iter().fold(Vec3::ZERO, |s, l| s + *l);
    let harmonic = if inverse_distances > 0.0 {
        (rays as f64 / inverse_distances) as f32
    } else {
        f32::INFINITY
    };
    let r_min = SAMPLE_RADIUS_MIN * scene_radius;
    IrradianceSample {
        position: point.position,
        normal: point.normal,
        irradiance: sum * (std::f32::consts::PI / rays as f32),
        radius: harmonic.clamp(r_min, SAMPLE_RADIUS_MAX * scene_radius),
        gradient: translational_gradient(point.normal, rows, columns, &radiance, &distance, r_min),
    }
}

/// Irradiance samples with their kd-tree.
pub struct IrradianceCache {
    pub samples: Vec<IrradianceSample>,
    pub points: Vec<[f32; 4]>,
    pub tree: PointKdTree,
}

impl IrradianceCache {
    pub fn new(samples: Vec<IrradianceSample>) -> IrradianceCache {
        let points: Vec<[f32; 4]> = samples
            .iter()
            .map(|s| [s.position.x, s.position.y, s.position.z, 0.0])
            .collect();
        let tree = build_point_kdtree(&points);
        IrradianceCache {
            samples,
            points,
            tree,
        }
    }

    /// The interpolated indirect irradiance at `x` with normal `n`.
    pub fn irradiance(&self, x: Vec3, n: Vec3) -> Vec3 {
        let near = knn(
            &self.tree.words,
            &self.points,
            x,
            INTERPOLATION_NEIGHBOURS,
            f32::INFINITY,
        );
        interpolate_irradiance(near.iter().map(|nb| &self.samples[nb.index as usize]), x, n)
    }
}

/// Seeds, final gather and the irradiance cache for a frame's shading points.
#[allow(clippy::too_many_arguments)]
pub fn irradiance_cache(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    lookup: &GatherLookup,
    epsilon: f32,
    scene_radius: f32,
    points: &[ShadingPoint],
    report: &(dyn Fn(Phase, f32) + Sync),
) -> (Vec<u32>, IrradianceCache) {
    report(Phase::Seeding, 0.0);
    let seeds = seed_irradiance_samples(points, &SeedingSettings::from_scene(scene, scene_radius));
    report(Phase::Gather, 0.0);
    let gathered = std::sync::atomic::AtomicUsize::new(0);
    // A report every 1/64th of the seeds: the gather is most of a photon-mapped frame.
    let every = (seeds.len() / 64).max(1);
    let samples: Vec<IrradianceSample> = seeds
        .par_iter()
        .enumerate()
        .map(|(k, &i)| {
            let sample = final_gather(
                scene,
                prepared,
                vd,
                lookup,
                epsilon,
                scene_radius,
                &points[i as usize],
                k as u32,
            );
            let done = gathered.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if done % every == 0 {
                report(Phase::Gather, done as f32 / seeds.len() as f32);
            }
            sample
        })
        .collect();
    (seeds, IrradianceCache::new(samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_follows_weights_respects_caps_and_hands_out_everything() {
        assert_eq!(apportion(10, &[1, 1, 2], &[10, 10, 10]), vec![3, 2, 5]);
        assert_eq!(apportion(10, &[0, 0], &[10, 10]), vec![5, 5]);
        // A capped part's excess goes to the others.
        assert_eq!(apportion(10, &[100, 1, 1], &[2, 10, 10]), vec![2, 4, 4]);
        // Weights too large to multiply are shifted first, keeping their proportions.
        assert_eq!(apportion(8, &[3 << 50, 1 << 50], &[10, 10]), vec![6, 2]);
        assert_eq!(
            apportion(3, &[1, 1, 1, 1], &[1, 1, 1, 1])
                .iter()
                .sum::<u32>(),
            3
        );
    }

    #[test]
    fn quadtree_codes_interleave_cell_coordinates() {
        // 4×4 cells over an 8×8 image: pixel (3, 5) is cell (1, 2).
        assert_eq!(quadtree_code(5 * 8 + 3, 8, 8, 2), 0b10_01);
    }

    /// Shading points on a 32×32 image: the left half flat, the right half with normals that
    /// change from pixel to pixel.
    fn half_varied_points() -> Vec<ShadingPoint> {
        (0..32 * 32)
            .map(|p| {
                let (x, y) = ((p % 32) as f32, (p / 32) as f32);
                let normal = if x < 16.0 {
                    Vec3::Z
                } else {
                    Vec3::new((x * 1.7).sin(), (y * 2.3).cos(), 1.0).normalize()
                };
                ShadingPoint {
                    position: Vec3::new(x * 0.01, y * 0.01, 0.0),
                    normal,
                    weight: Vec3::ONE,
                    pixel: p,
                }
            })
            .collect()
    }

    /// Seeding settings for a 32×32 image with α = 1 and stream seed 7.
    fn settings(levels: u32, seeds: u32, min_density: f32) -> SeedingSettings {
        SeedingSettings {
            width: 32,
            height: 32,
            levels,
            seeds,
            min_density,
            alpha: 1.0,
            seed: 7,
        }
    }

    #[test]
    fn seeds_are_distinct_points_and_crowd_where_the_geometry_varies() {
        let points = half_varied_points();
        let seeds = seed_irradiance_samples(&points, &settings(4, 128, 0.0));
        assert_eq!(seeds.len(), 128);
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 128, "one seed per point at most");
        let right = seeds.iter().filter(|&&i| i % 32 >= 16).count();
        assert!(right > 100, "{right} of 128 seeds on the varied half");
        // More seeds than points: every point once.
        assert_eq!(
            seed_irradiance_samples(&points[..10], &settings(4, 50, 0.25)).len(),
            10
        );
        assert!(seed_irradiance_samples(&[], &settings(4, 50, 0.25)).is_empty());
    }

    /// With β = 0 the seeds are those the seeding chose before the minimum density existed
    /// (recorded from that code, commit d5a34c4).
    #[test]
    fn zero_min_density_reproduces_the_seeds_of_error_only_seeding() {
        let points = half_varied_points();
        let seeds = seed_irradiance_samples(&points, &settings(4, 40, 0.0));
        let before = [
            296, 18, 53, 176, 147, 148, 57, 29, 152, 188, 159, 336, 338, 372, 466, 468, 344, 348,
            473, 508, 552, 625, 626, 596, 723, 725, 601, 604, 639, 761, 765, 882, 852, 1009, 1011,
            1012, 857, 892, 985, 1020,
        ];
        assert_eq!(seeds, before);
    }

    #[test]
    fn the_density_floor_is_beta_times_the_nodes_share_of_the_seeds() {
        let half = 1 << (SEED_DENSITY_BITS - 1);
        assert_eq!(seed_density_floor(100, 50, 100, half), 25);
        assert_eq!(seed_density_floor(100, 50, 100, 0), 0);
        assert_eq!(seed_density_floor(100, 50, 100, 1 << SEED_DENSITY_BITS), 50);
        // floor(7·3/10) = 2, then floor(2/2) = 1.
        assert_eq!(seed_density_floor(7, 3, 10, half), 1);
        // No overflow at the extremes.
        assert_eq!(
            seed_density_floor(u32::MAX, u32::MAX, u32::MAX, 1 << SEED_DENSITY_BITS),
            u32::MAX
        );
        assert_eq!(seed_min_density_fixed(0.25), 1 << (SEED_DENSITY_BITS - 2));
        assert_eq!(seed_min_density_fixed(f32::NAN), 0);
        assert_eq!(seed_min_density_fixed(2.0), 1 << SEED_DENSITY_BITS);
    }

    #[test]
    fn split_seeds_gives_every_child_its_floor_and_the_rest_by_errors() {
        // Floors 2 and 6, then the 4 left all to the child with error.
        assert_eq!(split_seeds(12, &[2, 6], &[10, 30], &[100, 0]), vec![6, 6]);
        // No floors: apportion by errors.
        assert_eq!(
            split_seeds(12, &[0, 0], &[10, 30], &[100, 0]),
            apportion(12, &[100, 0], &[10, 30])
        );
        // The floor fills the child with the error, so the rest goes to the other's room.
        assert_eq!(split_seeds(4, &[1, 1], &[1, 3], &[5, 0]), vec![1, 3]);
        // Floors that do not fit are left out.
        assert_eq!(split_seeds(3, &[2, 2], &[10, 10], &[1, 1]), vec![2, 1]);
    }

    /// Every node of the quadtree holds at least its density floor: the seeds of each level's
    /// nodes, recounted from the chosen points, against `seed_density_floor`.
    #[test]
    fn every_quadtree_node_holds_its_density_floor() {
        let points = half_varied_points();
        let n = points.len() as u32;
        for (levels, seeds, beta) in [(4, 128, 0.25), (4, 300, 0.6), (3, 1000, 1.0), (5, 77, 0.1)] {
            let chosen = seed_irradiance_samples(&points, &settings(levels, seeds, beta));
            for level in 1..=levels {
                let shift = 2 * (levels - level);
                let node =
                    |i: u32| quadtree_code(points[i as usize].pixel, 32, 32, levels) >> shift;
                let mut size = std::collections::HashMap::new();
                for i in 0..n {
                    *size.entry(node(i)).or_insert(0u32) += 1;
                }
                let mut held = std::collections::HashMap::new();
                for &i in &chosen {
                    *held.entry(node(i)).or_insert(0u32) += 1;
                }
                for (key, &p) in &size {
                    let floor =
                        seed_density_floor(seeds.min(n), p, n, seed_min_density_fixed(beta));
                    let got = held.get(key).copied().unwrap_or(0);
                    assert!(
                        got >= floor,
                        "level {level} node {key}: {got} seeds, floor {floor}"
                    );
                }
            }
        }
    }
}

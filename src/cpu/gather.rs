//! The second half of photon mapping on the CPU (paper 003 sections 6.2.3–6.2.5), written
//! plainly: adaptive seeding of irradiance samples in a screen-space quadtree, final gather
//! from the global photon map, the irradiance samples' kd-tree and their interpolation at every
//! diffuse shading point, and the caustic map's estimate there.

use glam::Vec3;
use rayon::prelude::*;

use super::photons::PhotonTree;
use crate::accel::kdtree::{build_point_kdtree, PointKdTree};
use crate::accel::knn::knn;
use crate::accel::{Prepared, Ray, VdFrame};
use crate::cpu::whitted::{dielectric_split, reflect};
use crate::render::gather::{
    geometric_variation, interpolate_irradiance, IrradianceSample, ShadingPoint,
    INTERPOLATION_NEIGHBOURS, SAMPLE_RADIUS_MAX, SAMPLE_RADIUS_MIN, SEEDING_ALPHA_SCENE,
};
use crate::render::photons::{cosine_direction, EstimateSettings};
use crate::render::sampling::{stratified_sample, SampleStream};
use crate::scene::{MaterialKind, Scene};

/// The `sample` coordinate of the seed selection's random streams.
pub const SEED_STREAM_TAG: u32 = 0x8000_0010;
/// The `sample` coordinate of the gather rays' random streams.
pub const GATHER_STREAM_TAG: u32 = 0x8000_0011;

/// Morton code of a pixel's cell in the `2^levels × 2^levels` screen quadtree.
pub fn quadtree_code(pixel: u32, width: u32, height: u32, levels: u32) -> u32 {
    let (x, y) = (pixel % width, pixel / width);
    let side = 1u64 << levels;
    let cx = (x as u64 * side / width as u64) as u32;
    let cy = (y as u64 * side / height as u64) as u32;
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
/// index). `total` must not exceed the sum of the caps.
pub fn apportion(total: u32, weights: &[f64], caps: &[u32]) -> Vec<u32> {
    let mut out = vec![0u32; weights.len()];
    let mut left = total;
    let mut open: Vec<usize> = (0..weights.len()).filter(|&i| caps[i] > 0).collect();
    while left > 0 && !open.is_empty() {
        let sum: f64 = open.iter().map(|&i| weights[i].max(0.0)).sum();
        let share = |i: usize| {
            if sum > 0.0 {
                weights[i].max(0.0) / sum * left as f64
            } else {
                left as f64 / open.len() as f64
            }
        };
        let mut given = 0;
        let mut remainders = Vec::new();
        for &i in &open {
            let s = share(i);
            let room = caps[i] - out[i];
            let whole = (s.floor() as u32).min(room);
            out[i] += whole;
            given += whole;
            remainders.push((s - s.floor(), i));
        }
        left -= given;
        remainders.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
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

/// A node of one level of the screen quadtree: a run of the code-sorted points.
#[derive(Clone, Copy, Debug)]
struct QuadNode {
    start: usize,
    end: usize,
    error: f64,
}

/// Adaptive seeding (paper 003 listing 6.6): the indices of the shading points chosen as the
/// seeds of irradiance samples, at most `seeds` of them and at most one per point.
///
/// The points are sorted by the Morton code of their pixel's cell in a `2^levels` screen
/// quadtree; each level's nodes are the runs of equal code prefixes. A node's mean position and
/// normal average its points, and its error sums its points' geometric variation against it
/// (`render::gather::geometric_variation`, `alpha` for α). The seeds go top-down, each node's
/// split between its children in proportion to their errors (largest remainders, no child
/// more than its points); a leaf takes its seeds from its points by jittered strata.
pub fn seed_irradiance_samples(
    points: &[ShadingPoint],
    width: u32,
    height: u32,
    levels: u32,
    seeds: u32,
    alpha: f32,
    seed: u64,
) -> Vec<u32> {
    let n = points.len();
    if n == 0 || seeds == 0 {
        return Vec::new();
    }
    let levels = levels.clamp(1, 16);
    let codes: Vec<u32> = points
        .iter()
        .map(|p| quadtree_code(p.pixel, width, height, levels))
        .collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| (codes[i as usize], i));
    // Levels 0 (root) ..= levels (leaves): runs of the code's top 2·level bits.
    let mut tree: Vec<Vec<QuadNode>> = Vec::new();
    for level in 0..=levels {
        let shift = 2 * (levels - level);
        let key = |k: usize| {
            if shift >= 32 {
                0
            } else {
                codes[order[k] as usize] >> shift
            }
        };
        let mut nodes = Vec::new();
        let mut start = 0;
        for k in 1..=n {
            if k == n || key(k) != key(start) {
                let members = &order[start..k];
                let mut mean_x = Vec3::ZERO;
                let mut mean_n = Vec3::ZERO;
                for &i in members {
                    mean_x += points[i as usize].position;
                    mean_n += points[i as usize].normal;
                }
                mean_x /= members.len() as f32;
                let mean_n = mean_n.normalize_or_zero();
                let error: f64 = members
                    .iter()
                    .map(|&i| {
                        let p = &points[i as usize];
                        geometric_variation(alpha, p.position, p.normal, mean_x, mean_n) as f64
                    })
                    .sum();
                nodes.push(QuadNode {
                    start,
                    end: k,
                    error,
                });
                start = k;
            }
        }
        tree.push(nodes);
    }
    // Top-down distribution.
    let mut counts = vec![seeds.min(n as u32)];
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
            let weights: Vec<f64> = kids.iter().map(|k| k.error).collect();
            let caps: Vec<u32> = kids.iter().map(|k| (k.end - k.start) as u32).collect();
            let shares = apportion(count, &weights, &caps);
            next[first..c].copy_from_slice(&shares);
        }
        counts = next;
    }
    // Jittered strata in each leaf.
    let mut chosen = Vec::new();
    for (leaf, &s) in tree[levels as usize].iter().zip(&counts) {
        let size = leaf.end - leaf.start;
        let mut rng = SampleStream::new(seed, leaf.start as u32, SEED_STREAM_TAG);
        for j in 0..s as usize {
            let u = rng.next_f32() as f64;
            let k = (((j as f64 + u) * size as f64 / s as f64) as usize).min(size - 1);
            chosen.push(order[leaf.start + k]);
        }
    }
    chosen
}

/// Radiance arriving along a gather ray: at a diffuse surface the global map's estimate times
/// albedo/π, at an emissive surface its radiance, through mirrors and glass followed by
/// Russian roulette on the Fresnel split (at most `max_depth` specular steps); nothing for a
/// miss. Light sources are not hit (they are direct light, which the shadow rays bring).
#[allow(clippy::too_many_arguments)]
pub fn gather_radiance(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    global: &PhotonTree,
    settings: &EstimateSettings,
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
        let material = &scene.materials[sp.material as usize].kind;
        let u = rng.next_f32();
        let facing = face_forward(sp.geometric_normal, dir);
        match material {
            MaterialKind::Diffuse { albedo, texture } => {
                let albedo = match texture {
                    Some(t) => *albedo * scene.textures[*t as usize].image.sample(sp.uv),
                    None => *albedo,
                };
                let n = face_forward(sp.shading_normal, dir);
                let e = global.flux_density(sp.position, n, settings);
                return (weight * albedo * std::f32::consts::FRAC_1_PI * e, first_t);
            }
            MaterialKind::Emissive { radiance } => {
                let seen = if dir.dot(sp.geometric_normal) < 0.0 {
                    *radiance
                } else {
                    Vec3::ZERO
                };
                return (weight * seen, first_t);
            }
            MaterialKind::Mirror { reflectance } => {
                weight *= *reflectance;
                let n = face_forward(sp.shading_normal, dir);
                ray = Ray::new(offset(sp.position, facing, epsilon), reflect(dir, n));
            }
            MaterialKind::Dielectric { ior, tint } => {
                let split = dielectric_split(dir, sp.shading_normal, sp.geometric_normal, *ior);
                match split.refracted {
                    Some(t) if u >= split.fresnel => {
                        weight *= *tint;
                        ray = Ray::new(offset(sp.position, -facing, epsilon), t);
                    }
                    _ => ray = Ray::new(offset(sp.position, facing, epsilon), split.reflected),
                }
            }
        }
        if weight.max_element() <= 0.0 {
            break;
        }
    }
    (Vec3::ZERO, first_t)
}

/// The irradiance sample at seed `point` (index `index`): `rays` cosine-distributed gather
/// rays in strata, `E = π/N Σ L`, and Ward's radius from the harmonic mean of their hit
/// distances, clamped to the scene radius' [`SAMPLE_RADIUS_MIN`]..[`SAMPLE_RADIUS_MAX`].
#[allow(clippy::too_many_arguments)]
pub fn final_gather(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    global: &PhotonTree,
    settings: &EstimateSettings,
    epsilon: f32,
    scene_radius: f32,
    point: &ShadingPoint,
    index: u32,
) -> IrradianceSample {
    let rays = scene.gather.rays.max(1);
    let mut rng = SampleStream::new(scene.film.seed, index, GATHER_STREAM_TAG);
    let mut sum = Vec3::ZERO;
    let mut inverse_distances = 0.0f64;
    let origin = offset(point.position, point.normal, epsilon);
    for j in 0..rays {
        let u = stratified_sample(j, rays, rng.next_vec2());
        let dir = cosine_direction(point.normal, u);
        let (l, t) = gather_radiance(
            scene,
            prepared,
            vd,
            global,
            settings,
            epsilon,
            Ray::new(origin, dir),
            &mut rng,
        );
        sum += l;
        if t.is_finite() && t > 0.0 {
            inverse_distances += 1.0 / t as f64;
        }
    }
    let harmonic = if inverse_distances > 0.0 {
        (rays as f64 / inverse_distances) as f32
    } else {
        f32::INFINITY
    };
    IrradianceSample {
        position: point.position,
        normal: point.normal,
        irradiance: sum * (std::f32::consts::PI / rays as f32),
        radius: harmonic.clamp(
            SAMPLE_RADIUS_MIN * scene_radius,
            SAMPLE_RADIUS_MAX * scene_radius,
        ),
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

/// α of equation 6.1 for a scene of radius `scene_radius`.
pub fn seeding_alpha(scene_radius: f32) -> f32 {
    SEEDING_ALPHA_SCENE / scene_radius.max(1e-6)
}

/// Seeds, final gather and the irradiance cache for a frame's shading points.
#[allow(clippy::too_many_arguments)]
pub fn irradiance_cache(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    global: &PhotonTree,
    settings: &EstimateSettings,
    epsilon: f32,
    scene_radius: f32,
    points: &[ShadingPoint],
) -> (Vec<u32>, IrradianceCache) {
    let seeds = seed_irradiance_samples(
        points,
        scene.film.width.max(1),
        scene.film.height.max(1),
        scene.gather.quadtree_levels,
        scene.gather.seeds,
        seeding_alpha(scene_radius),
        scene.film.seed,
    );
    let samples: Vec<IrradianceSample> = seeds
        .par_iter()
        .enumerate()
        .map(|(k, &i)| {
            final_gather(
                scene,
                prepared,
                vd,
                global,
                settings,
                epsilon,
                scene_radius,
                &points[i as usize],
                k as u32,
            )
        })
        .collect();
    (seeds, IrradianceCache::new(samples))
}

fn face_forward(n: Vec3, dir: Vec3) -> Vec3 {
    if n.dot(dir) > 0.0 {
        -n
    } else {
        n
    }
}

fn offset(p: Vec3, n: Vec3, epsilon: f32) -> Vec3 {
    p + n * (epsilon + p.abs().max_element() * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_follows_weights_respects_caps_and_hands_out_everything() {
        assert_eq!(
            apportion(10, &[1.0, 1.0, 2.0], &[10, 10, 10]),
            vec![3, 2, 5]
        );
        assert_eq!(apportion(10, &[0.0, 0.0], &[10, 10]), vec![5, 5]);
        // A capped part's excess goes to the others.
        assert_eq!(
            apportion(10, &[100.0, 1.0, 1.0], &[2, 10, 10]),
            vec![2, 4, 4]
        );
        assert_eq!(
            apportion(3, &[1.0, 1.0, 1.0, 1.0], &[1, 1, 1, 1])
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

    #[test]
    fn seeds_are_distinct_points_and_crowd_where_the_geometry_varies() {
        let points = half_varied_points();
        let seeds = seed_irradiance_samples(&points, 32, 32, 4, 128, 1.0, 7);
        assert_eq!(seeds.len(), 128);
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 128, "one seed per point at most");
        let right = seeds.iter().filter(|&&i| i % 32 >= 16).count();
        assert!(right > 100, "{right} of 128 seeds on the varied half");
        // More seeds than points: every point once.
        assert_eq!(
            seed_irradiance_samples(&points[..10], 32, 32, 4, 50, 1.0, 7).len(),
            10
        );
        assert!(seed_irradiance_samples(&[], 32, 32, 4, 50, 1.0, 7).is_empty());
    }
}

//! The GPU's adaptive seeding (`gpu::seeding`) chooses exactly the CPU twin's seeds
//! (`cpu::gather::seed_irradiance_samples`): the same point indices in the same order, on
//! synthetic frames (planes, spheres, noisy normals, several points per pixel, empty pixels,
//! points in no particular order), on hostile inputs, for few and many seeds and every quadtree
//! depth from 1 to 8, each without a minimum density, with the default one and with all seeds
//! by point counts; like the CPU, it crowds the seeds where the geometry varies, and with a
//! minimum density a flat region keeps its guaranteed share.

mod support;

use caustica::cpu::gather::{seed_density_floor, seed_irradiance_samples, seed_position_scale};
use caustica::gpu::prims::Primitives;
use caustica::gpu::seeding::{position_scale, SeedingKernels, SeedingSettings};
use caustica::gpu::upload::GpuShadingPoint;
use caustica::gpu::{test_context, GpuContext};
use caustica::render::gather::{seed_min_density_fixed, ShadingPoint};
use caustica::scene::DEFAULT_MIN_SEED_DENSITY;
use glam::Vec3;
use support::LcgRng;

/// A frame's shading points in a `width × height` image: a floor and a back wall (flat), a
/// sphere in front (smoothly varying normals), a patch of noisy normals, up to three points per
/// pixel (a second and third bounce seen through glass elsewhere in the scene), some pixels with
/// none; the array is shuffled so that equal codes are far apart.
fn synthetic_frame(width: u32, height: u32, rng: &mut LcgRng) -> Vec<ShadingPoint> {
    let mut points = Vec::new();
    for pixel in 0..width * height {
        let (x, y) = (pixel % width, pixel / width);
        let u = (x as f32 + 0.5) / width as f32 * 2.0 - 1.0;
        let v = 1.0 - (y as f32 + 0.5) / height as f32 * 2.0;
        let hits = match rng.f32() {
            r if r < 0.1 => 0,
            r if r < 0.8 => 1,
            r if r < 0.95 => 2,
            _ => 3,
        };
        for h in 0..hits {
            let (position, normal) = if u * u + (v + 0.2) * (v + 0.2) < 0.25 && h == 0 {
                // The sphere of radius 0.5 around (0, -0.2, 2).
                let (sx, sy) = (u * 2.0, (v + 0.2) * 2.0);
                let sz = (1.0 - sx * sx - sy * sy).max(0.0).sqrt();
                let n = Vec3::new(sx, sy, -sz).normalize_or_zero();
                (Vec3::new(0.0, -0.2, 2.0) + 0.5 * n, n)
            } else if v < -0.3 {
                // The floor.
                (Vec3::new(u * 3.0, -1.0, 1.0 / (-v)), Vec3::Y)
            } else if u > 0.6 && v > 0.3 {
                // A rough patch: random normals on the wall.
                (Vec3::new(u * 3.0, v * 3.0, 4.0), rng.unit_vector())
            } else {
                // The back wall, or a deeper bounce somewhere in the room.
                let depth = 4.0 + h as f32 * rng.range(0.1, 2.0);
                (Vec3::new(u * 3.0, v * 3.0, depth), -Vec3::Z)
            };
            points.push(ShadingPoint {
                position,
                normal,
                weight: Vec3::ONE,
                pixel,
            });
        }
    }
    // Fisher-Yates with the test's generator.
    for i in (1..points.len()).rev() {
        let j = ((rng.f32() * (i + 1) as f32) as usize).min(i);
        points.swap(i, j);
    }
    points
}

fn to_gpu(points: &[ShadingPoint]) -> Vec<GpuShadingPoint> {
    points
        .iter()
        .enumerate()
        .map(|(i, p)| GpuShadingPoint::from_point(p, i as u32))
        .collect()
}

struct Seeding {
    prims: Primitives,
    kernels: SeedingKernels,
}

impl Seeding {
    fn new(ctx: &GpuContext) -> Seeding {
        Seeding {
            prims: Primitives::new(ctx).expect("the primitives build"),
            kernels: SeedingKernels::new(ctx).expect("the seeding kernels build"),
        }
    }

    /// Seeds on both backends; asserts they are equal and returns them.
    fn both(
        &self,
        ctx: &GpuContext,
        points: &[ShadingPoint],
        settings: &SeedingSettings,
    ) -> Vec<u32> {
        let cpu = seed_irradiance_samples(points, settings);
        let gpu = self
            .kernels
            .seed_irradiance_samples_vec(ctx, &self.prims, &to_gpu(points), settings)
            .unwrap_or_else(|e| panic!("{settings:?}: {e}"));
        assert_eq!(
            cpu.len(),
            gpu.len(),
            "{settings:?} over {} points",
            points.len()
        );
        if let Some(k) = (0..cpu.len()).find(|&k| cpu[k] != gpu[k]) {
            panic!(
                "{settings:?} over {} points: seed {k} is point {} on the CPU but {} on the GPU",
                points.len(),
                cpu[k],
                gpu[k]
            );
        }
        cpu
    }
}

/// The minimum densities every agreement test runs with: none (the seeding by errors alone),
/// the default and all seeds by point counts.
const DENSITIES: [f32; 3] = [0.0, DEFAULT_MIN_SEED_DENSITY, 1.0];

fn settings(width: u32, height: u32, levels: u32, seeds: u32) -> SeedingSettings {
    SeedingSettings {
        width,
        height,
        levels,
        seeds,
        min_density: DEFAULT_MIN_SEED_DENSITY,
        // A scene of radius about 3 (SEEDING_ALPHA_SCENE / 3).
        alpha: 10.0 / 3.0,
        seed: 0x1234_5678_9abc_def0,
    }
}

#[test]
fn gpu_seeds_equal_the_cpu_twins_for_every_depth_and_seed_count() {
    let Some(ctx) = test_context() else { return };
    let seeding = Seeding::new(&ctx);
    let mut rng = LcgRng(17);
    let (width, height) = (45, 38);
    let points = synthetic_frame(width, height, &mut rng);
    let n = points.len() as u32;
    assert!(n > 1500, "{n} points");
    for levels in 1..=8 {
        for seeds in [1, 37, 400, n - 3, n, n + 100] {
            for min_density in DENSITIES {
                let s = SeedingSettings {
                    min_density,
                    ..settings(width, height, levels, seeds)
                };
                let chosen = seeding.both(&ctx, &points, &s);
                assert_eq!(chosen.len() as u32, seeds.min(n));
                let mut unique = chosen.clone();
                unique.sort_unstable();
                unique.dedup();
                assert_eq!(unique.len(), chosen.len(), "one seed per point at most");
            }
        }
    }
}

#[test]
fn gpu_seeds_equal_the_cpu_twins_for_none_one_and_a_few_points() {
    let Some(ctx) = test_context() else { return };
    let seeding = Seeding::new(&ctx);
    let mut rng = LcgRng(5);
    let points = synthetic_frame(16, 16, &mut rng);
    for n in [0, 1, 2, 5] {
        for levels in [1, 3, 16] {
            for seeds in [0, 1, 3, 10] {
                for min_density in DENSITIES {
                    let s = SeedingSettings {
                        min_density,
                        ..settings(16, 16, levels, seeds)
                    };
                    let chosen = seeding.both(&ctx, &points[..n], &s);
                    assert_eq!(chosen.len(), (seeds as usize).min(n));
                }
            }
        }
    }
}

/// Larger than one workgroup's chunks, with 16 levels (codes of all 32 bits) and a different
/// stream seed: the 64-bit atomic sums and the deep levels agree too.
#[test]
fn gpu_seeds_equal_the_cpu_twins_on_a_larger_frame_with_sixteen_levels() {
    let Some(ctx) = test_context() else { return };
    let seeding = Seeding::new(&ctx);
    let mut rng = LcgRng(99);
    let (width, height) = (160, 120);
    let points = synthetic_frame(width, height, &mut rng);
    for (levels, seeds) in [(16, 2000), (6, 5000), (10, 300)] {
        for min_density in DENSITIES {
            let mut s = settings(width, height, levels, seeds);
            s.seed = levels as u64;
            s.min_density = min_density;
            seeding.both(&ctx, &points, &s);
        }
    }
}

/// NaN, infinite, subnormal and enormous coordinates and normals, pixels past the image, an
/// image of width 0, and odd α: the two backends key them the same (nothing panics either).
#[test]
fn gpu_seeds_equal_the_cpu_twins_on_hostile_inputs() {
    let Some(ctx) = test_context() else { return };
    let seeding = Seeding::new(&ctx);
    let mut rng = LcgRng(3);
    let odd = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -1e-40,
        1e-40,
        -0.0,
        3e38,
        -3e38,
        1e30,
        -1e-8,
        0.5,
        -7.25,
    ];
    let pick = |rng: &mut LcgRng| odd[((rng.f32() * odd.len() as f32) as usize).min(11)];
    let points: Vec<ShadingPoint> = (0..700)
        .map(|i| ShadingPoint {
            position: Vec3::new(pick(&mut rng), pick(&mut rng), rng.range(-2.0, 2.0)),
            normal: if i % 3 == 0 {
                Vec3::new(pick(&mut rng), pick(&mut rng), pick(&mut rng))
            } else {
                rng.unit_vector()
            },
            weight: Vec3::ONE,
            pixel: if i % 7 == 0 {
                u32::MAX - i
            } else {
                (rng.f32() * 900.0) as u32
            },
        })
        .collect();
    for (k, alpha) in [10.0 / 3.0, 0.0, f32::NAN, f32::INFINITY, 1e-30, 1e30, -2.0]
        .into_iter()
        .enumerate()
    {
        for (j, (width, height)) in [(30, 30), (0, 0), (1, 900), (7, 3)].into_iter().enumerate() {
            // The densities in turn, with odd ones (out of range, NaN) among them.
            let min_density = [
                0.0,
                DEFAULT_MIN_SEED_DENSITY,
                1.0,
                0.37,
                f32::NAN,
                -1.0,
                3.0,
            ][(k * 4 + j) % 7];
            let s = SeedingSettings {
                alpha,
                min_density,
                ..settings(width, height, 5, 250)
            };
            seeding.both(&ctx, &points, &s);
        }
    }
}

/// The GPU module's copy of the position scale is the CPU's, for ordinary and odd α.
#[test]
fn the_gpu_position_scale_is_the_cpus() {
    for alpha in [
        0.0,
        -0.0,
        1.0,
        10.0 / 3.0,
        1e-3,
        1e-40,
        1e7,
        1e30,
        -5.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
    ] {
        assert_eq!(
            position_scale(alpha).to_bits(),
            seed_position_scale(alpha).to_bits(),
            "α = {alpha}"
        );
    }
}

/// The GPU twin of the CPU unit test: on a 32×32 image whose right half has normals changing
/// from pixel to pixel, most seeds land on the right half.
#[test]
fn gpu_seeds_crowd_where_the_geometry_varies() {
    let Some(ctx) = test_context() else { return };
    let seeding = Seeding::new(&ctx);
    let points: Vec<ShadingPoint> = (0..32 * 32)
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
        .collect();
    let s = SeedingSettings {
        width: 32,
        height: 32,
        levels: 4,
        seeds: 128,
        // The seeding by errors alone.
        min_density: 0.0,
        alpha: 1.0,
        seed: 7,
    };
    let gpu = seeding
        .kernels
        .seed_irradiance_samples_vec(&ctx, &seeding.prims, &to_gpu(&points), &s)
        .unwrap();
    assert_eq!(gpu.len(), 128);
    let right = gpu.iter().filter(|&&i| i % 32 >= 16).count();
    assert!(right > 100, "{right} of 128 seeds on the varied half");
    assert_eq!(gpu, seeding.both(&ctx, &points, &s));
}

/// The constants the seeding kernels repeat from the host: the chunk size, the fixed-point bits
/// (positions, normals, the minimum density) and the seed streams' tag.
#[test]
fn the_seeding_kernels_use_the_host_constants() {
    use caustica::cpu::gather::{SEED_NORMAL_BITS, SEED_POSITION_BITS, SEED_STREAM_TAG};
    use caustica::gpu::seeding::SEED_CHUNK;
    use caustica::gpu::shader::shader_file;
    use caustica::render::gather::SEED_DENSITY_BITS;
    let common = shader_file("seeding/common.wgsl").expect("the seeding kernels' common file");
    for line in [
        format!("const CHUNK: u32 = {SEED_CHUNK}u;"),
        format!("const POSITION_BITS: u32 = {SEED_POSITION_BITS}u;"),
        format!("const NORMAL_BITS: u32 = {SEED_NORMAL_BITS}u;"),
        format!("const DENSITY_BITS: u32 = {SEED_DENSITY_BITS}u;"),
    ] {
        assert!(common.contains(&line), "common.wgsl lacks {line}");
    }
    let select = shader_file("seeding/select.wgsl").expect("the selection kernel");
    let tag = format!("const SEED_STREAM_TAG: u32 = {SEED_STREAM_TAG:#010x}u;");
    assert!(select.contains(&tag), "select.wgsl lacks {tag}");
}

/// A 64×64 image whose left half is a flat wall and whose right half is a bumpy surface (a
/// height field of short waves, so position and normal change from pixel to pixel), one point
/// per pixel.
fn flat_beside_bumpy() -> Vec<ShadingPoint> {
    (0..64 * 64)
        .map(|p| {
            let (x, y) = ((p % 64) as f32, (p / 64) as f32);
            let (h, normal) = if x < 32.0 {
                (0.0, -Vec3::Z)
            } else {
                let (a, b) = (x * 0.9, y * 1.3);
                let h = 0.05 * (a.sin() + b.cos());
                let n = Vec3::new(0.9 * 0.05 * a.cos(), -1.3 * 0.05 * b.sin(), -0.02);
                (h, n.normalize())
            };
            ShadingPoint {
                position: Vec3::new(x / 32.0 - 1.0, 1.0 - y / 32.0, 2.0 + h),
                normal,
                weight: Vec3::ONE,
                pixel: p,
            }
        })
        .collect()
}

/// The guarantee of the minimum density β, from the rule (`cpu::gather::split_seeds`): every
/// quadtree node of `p` of the `n` points holds at least its floor
/// `seed_density_floor(T, p, n, β) = floor(β·floor(T·p/n))` of the `T` seeds (the floors are
/// superadditive, so a node holding its floor can give each child its own). The flat left half
/// is two of the root's children (`n/4` points each), so it gets at least twice the floor of
/// `n/4` points: with `T = 256` that is `2·floor(64·β)`, less than 2 seeds short of `β·T/2`.
/// Without a minimum density nothing is guaranteed, and the flat half is starved: it gets
/// fewer than the default's guarantee.
#[test]
fn a_flat_half_of_the_image_keeps_its_guaranteed_share_of_seeds_on_both_backends() {
    let points = flat_beside_bumpy();
    let n = points.len() as u32;
    let s = |min_density: f32| SeedingSettings {
        width: 64,
        height: 64,
        levels: 5,
        seeds: 256,
        min_density,
        // The wall is 2 units wide in a scene of radius 33 (a hall), so its positions vary
        // less, for eq. 6.1, than the bumps' normals.
        alpha: 10.0 / 33.0,
        seed: 11,
    };
    let on_left = |seeds: &[u32]| seeds.iter().filter(|&&i| i % 64 < 32).count() as u32;
    let guaranteed = |min_density: f32| {
        2 * seed_density_floor(256, n / 4, n, seed_min_density_fixed(min_density))
    };
    let starved = on_left(&seed_irradiance_samples(&points, &s(0.0)));
    println!("β = 0: {starved} of 256 seeds on the flat half");
    assert!(
        starved < guaranteed(DEFAULT_MIN_SEED_DENSITY),
        "without a minimum density the flat half gets {starved} of 256 seeds"
    );
    let mut results = Vec::new();
    for min_density in [0.1, 0.25, 0.5, 1.0] {
        let seeds = seed_irradiance_samples(&points, &s(min_density));
        let left = on_left(&seeds);
        let bound = guaranteed(min_density);
        println!("β = {min_density}: {left} of 256 seeds on the flat half, {bound} guaranteed");
        assert!(
            left >= bound,
            "β = {min_density}: {left} of 256 seeds on the flat half, {bound} guaranteed"
        );
        assert!(bound as f32 >= min_density * 128.0 - 2.0);
        results.push((min_density, seeds));
    }
    let Some(ctx) = test_context() else { return };
    let seeding = Seeding::new(&ctx);
    for (min_density, cpu) in results {
        assert_eq!(seeding.both(&ctx, &points, &s(min_density)), cpu);
    }
}

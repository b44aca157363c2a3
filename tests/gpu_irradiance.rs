//! Irradiance interpolation on the GPU (`gpu::irradiance`) equals its CPU twin
//! (`cpu::gather::IrradianceCache::irradiance`) on samples over a plane and a sphere, with 0 and
//! 1 samples, and with queries at samples, between them, facing away and far away; the
//! weighting behaves (a sample's own irradiance at the sample, nothing for a normal facing away
//! from every sample, monotone interpolation along a ramp); and broken inputs fail loudly.
//!
//! How close the GPU must be: the neighbours and the multiply-add-proof parts of Ward's error
//! are the CPU's bit for bit, but a GPU need not round square roots and divisions correctly. So
//! each query's tolerance is 10⁻⁵ of its value plus what a change of `ETA` (relative) in every
//! sample's error can move the weighted mean; a query with an error within `ETA` of the
//! accuracy `a` (where the `ε < a` decision itself could go either way) is counted and left out
//! of the comparison (at most 1% of the queries may be). The samples carry random gradients,
//! whose dot products with the query's offset add their own roundoff (`ETA` of `|d|·|∇E|`).

mod support;

use caustica::accel::kdtree::KD_LEAF;
use caustica::accel::knn::knn;
use caustica::cpu::gather::IrradianceCache;
use caustica::gpu::encoder::Encoder;
use caustica::gpu::irradiance::{IrradianceKernels, IrradianceParams};
use caustica::gpu::kdtree::GpuKdTree;
use caustica::gpu::kernel::{storage_buffer, Checks};
use caustica::gpu::upload::{GpuIrradianceSample, GpuShadingPoint};
use caustica::gpu::{test_context, GpuContext};
use caustica::render::gather::{
    exact_dot, extrapolated_irradiance, ward_error, IrradianceSample, INTERPOLATION_ACCURACY,
    INTERPOLATION_NEIGHBOURS,
};
use glam::Vec3;
use support::LcgRng;

/// The relative change in Ward's error a GPU's square roots and divisions may make (about 17
/// units of roundoff, generous for implementations within a few).
const ETA: f32 = 2e-6;

fn sample(position: Vec3, normal: Vec3, irradiance: Vec3, radius: f32) -> IrradianceSample {
    IrradianceSample {
        position,
        normal,
        irradiance,
        radius,
        gradient: [Vec3::ZERO; 3],
    }
}

/// `s` with a random gradient per channel in its tangent plane, each up to twice its irradiance
/// over its radius (so that the extrapolation reaches zero inside the radius, and the clamp).
fn with_gradient(mut s: IrradianceSample, rng: &mut LcgRng) -> IrradianceSample {
    let scale = 2.0 * s.irradiance.max_element() / s.radius;
    for g in &mut s.gradient {
        let v = rng.unit_vector();
        *g = (v - s.normal * v.dot(s.normal)) * scale * rng.f32();
    }
    s
}

fn to_gpu(samples: &[IrradianceSample]) -> Vec<GpuIrradianceSample> {
    samples.iter().map(GpuIrradianceSample::from).collect()
}

fn point(position: Vec3, normal: Vec3) -> GpuShadingPoint {
    GpuShadingPoint {
        position: position.to_array(),
        pixel: 0,
        normal: normal.to_array(),
        node: 0,
    }
}

/// Which branch of the interpolation answered a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// Samples with Ward's error below the accuracy.
    Near,
    /// None of those, but samples facing the query's side.
    Fallback,
    /// Neither: no indirect light.
    Nothing,
}

/// The CPU's answer at one query and how far from it a GPU may be.
struct Expected {
    value: Vec3,
    tolerance: f32,
    /// An error within `ETA` of the accuracy: the `ε < a` decision is not robust.
    on_boundary: bool,
    path: Path,
}

/// `cache.irradiance(x, n)`, with the tolerance of the module docs: the weighted mean
/// `Σ wᵢEᵢ / Σ wᵢ` moves by at most `Σ |Δwᵢ|·|Eᵢ − mean| / Σ wᵢ`.
fn expected(cache: &IrradianceCache, x: Vec3, n: Vec3) -> Expected {
    let value = cache.irradiance(x, n);
    let near = knn(
        &cache.tree.words,
        &cache.points,
        x,
        INTERPOLATION_NEIGHBOURS,
        f32::INFINITY,
    );
    let a = INTERPOLATION_ACCURACY;
    let errors: Vec<(f32, &IrradianceSample)> = near
        .iter()
        .map(|nb| {
            let s = &cache.samples[nb.index as usize];
            (ward_error(s, x, n), s)
        })
        .collect();
    let on_boundary = errors.iter().any(|(e, _)| (e - a).abs() <= ETA * e.max(a));
    let spread = |s: &IrradianceSample| (extrapolated_irradiance(s, x) - value).abs().max_element();
    // The roundoff of the offset's dot product with the gradient.
    let rounding = |s: &IrradianceSample| {
        let d = (x - s.position).length();
        ETA * d * s.gradient.iter().fold(0.0f32, |m, g| m.max(g.length()))
    };
    let (mut total, mut moved) = (0.0f32, 0.0f32);
    let near = errors.iter().any(|(e, _)| *e < a);
    if near {
        for &(e, s) in errors.iter().filter(|(e, _)| *e < a) {
            total += 1.0 - e / a;
            // w = 1 − e/a: Δw = Δe / a.
            moved += ETA * e / a * spread(s) + (1.0 - e / a) * rounding(s);
        }
    } else {
        for &(e, s) in errors.iter().filter(|(_, s)| exact_dot(n, s.normal) > 0.0) {
            let w = 1.0 / (e + 1e-3);
            total += w;
            // w = 1/(e + 10⁻³): |Δw|/w = Δe/(e + 10⁻³), plus the division's own rounding.
            moved += w * ((ETA * e / (e + 1e-3) + ETA) * spread(s) + rounding(s));
        }
    }
    let tolerance = if total > 0.0 {
        1e-5 * value.abs().max_element() + moved / total
    } else {
        0.0
    };
    let path = if near {
        Path::Near
    } else if total > 0.0 {
        Path::Fallback
    } else {
        Path::Nothing
    };
    Expected {
        value,
        tolerance,
        on_boundary,
        path,
    }
}

/// What [`compare`] saw.
#[derive(Debug, Default)]
struct Comparison {
    /// Queries compared (not on a boundary), and of them bit-exact.
    compared: usize,
    exact: usize,
    /// Queries left out on a decision boundary.
    boundary: usize,
    /// Compared queries by path: near, fallback, nothing.
    paths: [usize; 3],
}

/// Compares the GPU's answers with the CPU's at every query, as the module docs say.
fn compare(
    what: &str,
    samples: &[IrradianceSample],
    queries: &[(Vec3, Vec3)],
    got: &[Vec3],
) -> Comparison {
    assert_eq!(got.len(), queries.len(), "{what}: one answer per query");
    let cache = IrradianceCache::new(samples.to_vec());
    let mut seen = Comparison::default();
    for (q, (&(x, n), &g)) in queries.iter().zip(got).enumerate() {
        let want = expected(&cache, x, n);
        if want.on_boundary {
            seen.boundary += 1;
            continue;
        }
        seen.compared += 1;
        seen.exact += usize::from(g == want.value);
        seen.paths[want.path as usize] += 1;
        if want.path == Path::Nothing {
            assert_eq!(
                g,
                Vec3::ZERO,
                "{what}, query {q} at {x} normal {n}: no light"
            );
        }
        let diff = (g - want.value).abs().max_element();
        assert!(
            diff <= want.tolerance,
            "{what}, query {q} at {x} normal {n}: GPU {g}, CPU {} (difference {diff:e}, tolerance {:e})",
            want.value,
            want.tolerance
        );
    }
    assert!(
        seen.boundary * 100 <= queries.len(),
        "{what}: {} of {} queries on a decision boundary",
        seen.boundary,
        queries.len()
    );
    seen
}

/// Random samples on the plane z = 0 over [0, 1]², normals within about 15° of +z, radii from
/// 0.01 to 0.2 and irradiance from 0 to 10 per channel.
fn plane_samples(n: usize, rng: &mut LcgRng) -> Vec<IrradianceSample> {
    (0..n)
        .map(|_| {
            let position = Vec3::new(rng.f32(), rng.f32(), 0.0);
            let normal = (Vec3::Z + 0.25 * rng.unit_vector() * rng.f32()).normalize();
            let irradiance = 10.0 * Vec3::new(rng.f32(), rng.f32(), rng.f32());
            let s = sample(position, normal, irradiance, rng.range(0.01, 0.2));
            with_gradient(s, rng)
        })
        .collect()
}

/// Random samples on the unit sphere with outward normals (one in eight inward), radii from
/// 0.05 to 0.5 and irradiance from 0 to 10 per channel.
fn sphere_samples(n: usize, rng: &mut LcgRng) -> Vec<IrradianceSample> {
    (0..n)
        .map(|i| {
            let position = rng.unit_vector();
            let normal = if i % 8 == 7 { -position } else { position };
            let irradiance = 10.0 * Vec3::new(rng.f32(), rng.f32(), rng.f32());
            let s = sample(position, normal, irradiance, rng.range(0.05, 0.5));
            with_gradient(s, rng)
        })
        .collect()
}

/// Queries of every kind for `samples`: at each of the first samples (its own position and
/// normal), near a random sample with its normal, near one with a normal turned 60-120° away
/// (fallbacks), near one with the opposite normal (nothing facing, or fallbacks), and far away.
fn queries_for(samples: &[IrradianceSample], count: usize, rng: &mut LcgRng) -> Vec<(Vec3, Vec3)> {
    let mut queries = Vec::new();
    if samples.is_empty() {
        for _ in 0..count {
            queries.push((
                rng.in_box(Vec3::splat(-2.0), Vec3::splat(2.0)),
                rng.unit_vector(),
            ));
        }
        return queries;
    }
    let pick =
        |rng: &mut LcgRng| samples[(rng.f32() * samples.len() as f32) as usize % samples.len()];
    for s in samples.iter().take(count / 5) {
        queries.push((s.position, s.normal));
    }
    while queries.len() < count {
        let s = pick(rng);
        let jitter = rng.unit_vector() * s.radius * rng.f32();
        let kind = queries.len() % 4;
        let query = match kind {
            0 => (s.position + jitter, s.normal),
            1 => {
                // A normal 60° to 120° from the sample's.
                let side = s.normal.any_orthonormal_vector();
                let angle = rng.range(60.0, 120.0).to_radians();
                (
                    s.position + jitter,
                    angle.cos() * s.normal + angle.sin() * side,
                )
            }
            2 => (s.position + jitter, -s.normal),
            _ => (s.position + 20.0 * rng.unit_vector(), rng.unit_vector()),
        };
        queries.push(query);
    }
    queries
}

fn run_gpu(
    ctx: &GpuContext,
    kernels: &IrradianceKernels,
    samples: &[IrradianceSample],
    queries: &[(Vec3, Vec3)],
) -> Vec<Vec3> {
    let points: Vec<GpuShadingPoint> = queries.iter().map(|&(x, n)| point(x, n)).collect();
    kernels
        .interpolate_vec(ctx, &to_gpu(samples), &points)
        .expect("the GPU interpolates")
}

#[test]
fn gpu_equals_the_cpu_on_a_plane_and_a_sphere_with_either_kernel_variant() {
    let Some(ctx) = test_context() else { return };
    let mut rng = LcgRng(0x5eed_0001);
    let sets = [
        ("plane", plane_samples(2000, &mut rng)),
        ("sphere", sphere_samples(2000, &mut rng)),
    ];
    for checks in [Checks::Checked, Checks::Unchecked] {
        let kernels = IrradianceKernels::with_checks(&ctx, checks).unwrap();
        for (name, samples) in &sets {
            let queries = queries_for(samples, 3000, &mut rng);
            let got = run_gpu(&ctx, &kernels, samples, &queries);
            let seen = compare(&format!("{name} ({checks:?})"), samples, &queries, &got);
            eprintln!("{} {name} ({checks:?}): {seen:?}", ctx.info.name);
            // Every branch was taken, many times.
            assert!(seen.paths.iter().all(|&p| p >= 100), "{name}: {seen:?}");
            // lavapipe rounds square roots and divisions correctly (LLVM on the CPU), so there the
            // same neighbours in the same order with the same arithmetic give the same bits,
            // but for a rare contraction of a weighted sum into a fused multiply-add.
            if ctx.info.name.contains("llvmpipe") {
                assert!(seen.exact * 100 >= seen.compared * 99, "{name}: {seen:?}");
            }
        }
    }
}

#[test]
fn gpu_equals_the_cpu_with_zero_and_one_samples() {
    let Some(ctx) = test_context() else { return };
    let kernels = IrradianceKernels::new(&ctx).unwrap();
    let mut rng = LcgRng(0x5eed_0002);
    // No samples: zero everywhere, on both sides.
    let queries = queries_for(&[], 64, &mut rng);
    let got = run_gpu(&ctx, &kernels, &[], &queries);
    assert!(got.iter().all(|&g| g == Vec3::ZERO), "{got:?}");
    compare("no samples", &[], &queries, &got);
    // One sample: its irradiance wherever it is close or faces the query, else zero.
    let one = [sample(
        Vec3::new(0.5, -0.25, 1.0),
        Vec3::new(0.0, 0.6, 0.8),
        Vec3::new(1.0, 2.0, 3.0),
        0.3,
    )];
    let queries = queries_for(&one, 64, &mut rng);
    let got = run_gpu(&ctx, &kernels, &one, &queries);
    compare("one sample", &one, &queries, &got);
    // Facing the sample, a query gets its irradiance (close by or as the fallback); facing
    // away, Ward's error is at least 1, so it gets nothing.
    for (&(x, n), &g) in queries.iter().zip(&got) {
        if exact_dot(n, one[0].normal) > 0.0 {
            let diff = (g - one[0].irradiance).abs().max_element();
            assert!(diff <= 1e-6 * 3.0, "at {x} with normal {n}: {g}");
        } else {
            assert_eq!(g, Vec3::ZERO, "at {x} with normal {n}");
        }
    }
    // No shading points: nothing to do.
    assert!(kernels
        .interpolate_vec(&ctx, &to_gpu(&one), &[])
        .unwrap()
        .is_empty());
}

/// Samples on a unit grid of the plane z = 0 with radius 1: every other sample's Ward error at
/// a sample is at least 1, so only the sample itself counts there.
#[test]
fn a_query_at_a_sample_returns_that_samples_irradiance() {
    let mut rng = LcgRng(0x5eed_0003);
    let samples: Vec<IrradianceSample> = (0..64)
        .map(|i| {
            let position = Vec3::new((i % 8) as f32, (i / 8) as f32, 0.0);
            let irradiance = Vec3::new(rng.f32(), rng.f32(), rng.f32()) * 5.0;
            sample(position, Vec3::Z, irradiance, 1.0)
        })
        .collect();
    let queries: Vec<(Vec3, Vec3)> = samples.iter().map(|s| (s.position, s.normal)).collect();
    let cache = IrradianceCache::new(samples.clone());
    let cpu: Vec<Vec3> = queries
        .iter()
        .map(|&(x, n)| cache.irradiance(x, n))
        .collect();
    let mut answers = vec![("CPU", cpu)];
    if let Some(ctx) = test_context() {
        let kernels = IrradianceKernels::new(&ctx).unwrap();
        answers.push(("GPU", run_gpu(&ctx, &kernels, &samples, &queries)));
    }
    for (side, got) in answers {
        for (s, g) in samples.iter().zip(&got) {
            assert!(
                (*g - s.irradiance).abs().max_element() <= 1e-6 * s.irradiance.max_element(),
                "{side}: at {} got {g}, the sample has {}",
                s.position,
                s.irradiance
            );
        }
    }
}

/// Samples on the plane z = 0 with normal +z; queries with normals pointing below the plane or
/// lying in it (`n·nᵢ = 0` does not face).
#[test]
fn a_query_whose_normal_faces_away_from_every_sample_gets_zero() {
    let mut rng = LcgRng(0x5eed_0004);
    let samples: Vec<IrradianceSample> = (0..500)
        .map(|_| {
            let position = Vec3::new(rng.f32(), rng.f32(), 0.0);
            sample(position, Vec3::Z, Vec3::splat(1.0 + rng.f32()), 0.2)
        })
        .collect();
    let queries: Vec<(Vec3, Vec3)> = (0..200)
        .map(|i| {
            let x = if i % 2 == 0 {
                samples[i].position
            } else {
                Vec3::new(rng.f32(), rng.f32(), rng.range(-1.0, 1.0))
            };
            let mut n = rng.unit_vector();
            // Below the plane, or (one in four) in it: at right angles to every sample's normal.
            n.z = if i % 4 == 1 { 0.0 } else { -n.z.abs() };
            (x, n.normalize())
        })
        .collect();
    let cache = IrradianceCache::new(samples.clone());
    let cpu: Vec<Vec3> = queries
        .iter()
        .map(|&(x, n)| cache.irradiance(x, n))
        .collect();
    let mut answers = vec![("CPU", cpu)];
    if let Some(ctx) = test_context() {
        let kernels = IrradianceKernels::new(&ctx).unwrap();
        answers.push(("GPU", run_gpu(&ctx, &kernels, &samples, &queries)));
    }
    for (side, got) in answers {
        for (&(x, n), g) in queries.iter().zip(&got) {
            assert_eq!(*g, Vec3::ZERO, "{side}: at {x} with normal {n}");
        }
    }
}

/// Samples every unit along the x axis with radius 4 (so those within 2 count, with tent
/// weights that sum to 2 on the grid), irradiance rising along x; queries in between. The
/// interpolation rises with x, stays within the irradiance of the samples that count, and
/// reproduces the linear channel.
#[test]
fn a_ramp_of_samples_interpolates_between_neighbours_monotonically() {
    let samples: Vec<IrradianceSample> = (0..=20)
        .map(|i| {
            let x = i as f32;
            let irradiance = Vec3::new(x, x * x, x.sqrt() + 1.0);
            sample(Vec3::new(x, 0.0, 0.0), Vec3::Z, irradiance, 4.0)
        })
        .collect();
    let queries: Vec<(Vec3, Vec3)> = (0..280)
        .map(|i| (Vec3::new(3.025 + i as f32 * 0.05, 0.0, 0.0), Vec3::Z))
        .collect();
    let cache = IrradianceCache::new(samples.clone());
    let cpu: Vec<Vec3> = queries
        .iter()
        .map(|&(x, n)| cache.irradiance(x, n))
        .collect();
    let mut answers = vec![("CPU", cpu)];
    if let Some(ctx) = test_context() {
        let kernels = IrradianceKernels::new(&ctx).unwrap();
        let got = run_gpu(&ctx, &kernels, &samples, &queries);
        compare("ramp", &samples, &queries, &got);
        answers.push(("GPU", got));
    }
    for (side, got) in answers {
        for (w, pair) in got.windows(2).enumerate() {
            assert!(
                pair[1].cmpgt(pair[0]).all(),
                "{side}: not rising from x = {} ({}) to the next ({})",
                queries[w].0.x,
                pair[0],
                pair[1]
            );
        }
        for (&(x, _), g) in queries.iter().zip(&got) {
            let counted = samples
                .iter()
                .filter(|s| (s.position - x).length() < 2.0)
                .map(|s| s.irradiance);
            let lo = counted.clone().fold(Vec3::INFINITY, Vec3::min);
            let hi = counted.fold(Vec3::NEG_INFINITY, Vec3::max);
            let slack = 1e-5 * hi;
            assert!(
                g.cmpge(lo - slack).all() && g.cmple(hi + slack).all(),
                "{side}: at {x} got {g}, outside {lo}..{hi}"
            );
            assert!((g.x - x.x).abs() <= 1e-5 * x.x, "{side}: at {x} got {g}");
        }
    }
}

#[test]
fn exact_dot_is_within_a_few_roundoffs_of_the_dot_product() {
    let mut rng = LcgRng(0x5eed_0005);
    for _ in 0..100_000 {
        let a = rng.unit_vector();
        let b = rng.unit_vector();
        let exact = a.x as f64 * b.x as f64 + a.y as f64 * b.y as f64 + a.z as f64 * b.z as f64;
        let got = exact_dot(a, b) as f64;
        assert!(
            (got - exact).abs() <= 4.0 * f32::EPSILON as f64,
            "{a} · {b}: {got} vs {exact}"
        );
    }
    assert_eq!(exact_dot(Vec3::Z, Vec3::Z), 1.0);
    assert_eq!(exact_dot(Vec3::X, Vec3::Y), 0.0);
}

/// A point index with no sample, and malformed tree words, are errors, not images.
#[test]
fn broken_inputs_give_an_error_on_the_gpu() {
    let Some(ctx) = test_context() else { return };
    let kernels = IrradianceKernels::new(&ctx).unwrap();
    let samples = to_gpu(&[sample(Vec3::ZERO, Vec3::Z, Vec3::ONE, 1.0)]);
    let queries = [point(Vec3::ZERO, Vec3::Z)];
    let run = |words: &[u32], positions: &[[f32; 4]]| {
        let sample_buffer = storage_buffer(&ctx, "samples", &samples).unwrap();
        let tree = GpuKdTree::upload(&ctx, words, positions).unwrap();
        let query_buffer = storage_buffer(&ctx, "queries", &queries).unwrap();
        let mut encoder = Encoder::new(&ctx);
        let output =
            kernels.interpolate(&ctx, &mut encoder, &sample_buffer, &tree, &query_buffer, 1)?;
        ctx.submit([encoder.finish()]);
        output.check(&ctx)
    };
    let two = [[0.0f32; 4], [0.5, 0.0, 0.0, 0.0]];
    // A well-formed tree over one point works.
    run(&[KD_LEAF | 1, 0], &two[..1]).expect("a valid tree");
    // Two positions but one sample: point 1 has no sample.
    let err = run(&[KD_LEAF | 2, 0, 1], &two).expect_err("point without a sample");
    assert!(err.to_string().contains("no irradiance sample"), "{err}");
    // A leaf longer than the words, and a right child pointing back at the root.
    for words in [
        &[KD_LEAF | 9, 0][..],
        &[0, 0.0f32.to_bits(), KD_LEAF | 1, 0][..],
    ] {
        let err = run(words, &two[..1]).expect_err("malformed");
        assert!(err.to_string().contains("malformed"), "{words:?}: {err}");
    }
    // Queries past the end of the query buffer are refused before anything runs.
    let sample_buffer = storage_buffer(&ctx, "samples", &samples).unwrap();
    let tree = GpuKdTree::upload(&ctx, &[KD_LEAF | 1, 0], &two[..1]).unwrap();
    let query_buffer = storage_buffer(&ctx, "queries", &queries).unwrap();
    let mut encoder = Encoder::new(&ctx);
    let refused = kernels.interpolate(&ctx, &mut encoder, &sample_buffer, &tree, &query_buffer, 2);
    assert!(refused.is_err());
}

/// One leaf of 300 000 samples: 75 000 iterations of the search loop per query. Where a driver
/// caps loops (lavapipe: 65535 per invocation group) the interpolation reports an error;
/// elsewhere it answers as the CPU does. It is never silently wrong.
#[test]
fn searches_longer_than_a_drivers_loop_limit_fail_loudly_or_answer_correctly() {
    let Some(ctx) = test_context() else { return };
    let kernels = IrradianceKernels::new(&ctx).unwrap();
    let mut rng = LcgRng(0x5eed_0006);
    let n = 300_000u32;
    let samples: Vec<IrradianceSample> = (0..n)
        .map(|_| {
            let position = rng.in_box(Vec3::ZERO, Vec3::ONE);
            sample(position, Vec3::Z, Vec3::splat(rng.f32()), 0.05)
        })
        .collect();
    let positions: Vec<[f32; 4]> = samples
        .iter()
        .map(|s| [s.position.x, s.position.y, s.position.z, 0.0])
        .collect();
    let mut words = vec![KD_LEAF | n];
    words.extend(0..n);
    let queries: Vec<(Vec3, Vec3)> = (0..16)
        .map(|_| (rng.in_box(Vec3::ZERO, Vec3::ONE), Vec3::Z))
        .collect();
    let points: Vec<GpuShadingPoint> = queries.iter().map(|&(x, n)| point(x, n)).collect();
    let sample_buffer = storage_buffer(&ctx, "samples", &to_gpu(&samples)).unwrap();
    let tree = GpuKdTree::upload(&ctx, &words, &positions).unwrap();
    let query_buffer = storage_buffer(&ctx, "queries", &points).unwrap();
    let mut encoder = Encoder::new(&ctx);
    let output = kernels
        .interpolate(
            &ctx,
            &mut encoder,
            &sample_buffer,
            &tree,
            &query_buffer,
            queries.len() as u32,
        )
        .unwrap();
    ctx.submit([encoder.finish()]);
    match output.check(&ctx) {
        Ok(()) => {
            let got: Vec<[f32; 4]> =
                caustica::gpu::kernel::read_buffer(&ctx, &output.irradiance, queries.len())
                    .unwrap();
            let got: Vec<Vec3> = got.iter().map(|v| Vec3::new(v[0], v[1], v[2])).collect();
            compare("one long leaf", &samples, &queries, &got);
            eprintln!("{}: long searches answered", ctx.info.name);
        }
        Err(e) => {
            assert!(
                e.to_string().contains("stopped a kNN search loop early"),
                "{e}"
            );
            eprintln!("{}: {e}", ctx.info.name);
        }
    }
}

/// `IrradianceParams` has the size and member offsets naga gives its WGSL twin (the shared
/// structs are checked in tests/gpu_layout.rs).
#[test]
fn irradiance_structs_match_their_wgsl_twins() {
    use std::mem::{offset_of, size_of};
    let twins: Vec<support::Twin> = vec![(
        "IrradianceParams",
        size_of::<IrradianceParams>(),
        vec![
            ("query_count", offset_of!(IrradianceParams, query_count)),
            ("_pad0", offset_of!(IrradianceParams, _pad0)),
            ("_pad1", offset_of!(IrradianceParams, _pad1)),
            ("_pad2", offset_of!(IrradianceParams, _pad2)),
        ],
    )];
    support::assert_wgsl_twins("irradiance/interpolate.wgsl", twins);
}

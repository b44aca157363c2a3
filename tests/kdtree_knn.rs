//! k-nearest-neighbour queries over point kd-trees give the brute-force answer, as full sorted
//! (squared distance, index) lists, on the CPU and on the GPU: random, clustered and degenerate
//! point sets (none, one, all equal, a plane, many duplicates), k of 1, 8, 64 and 128, with and
//! without a radius, queries at, near and far from the points. The photon density estimate
//! agrees between CPU and GPU, finds a uniform disc's flux density with every filter, and
//! ignores photons that arrive from behind.

mod support;

use std::mem::{offset_of, size_of};

use caustica::accel::kdtree::{build_point_kdtree, validate_point_kdtree, KD_LEAF};
use caustica::accel::knn::{knn, knn_brute_force, Neighbour};
use caustica::accel::photon_estimate::{
    octahedral_decode, octahedral_decode_l1, octahedral_encode, photon_flux_density,
    EstimateFilter, PhotonRecord,
};
use caustica::gpu::encoder::Encoder;
use caustica::gpu::kdtree::{GpuKdTree, KdTreeBuilder};
use caustica::gpu::kernel::{read_buffer, run_deferred_checks, storage_buffer, Checks};
use caustica::gpu::knn::{KnnParams, KnnQueries};
use caustica::gpu::{test_context, GpuBuffer, GpuContext};
use glam::Vec3;
use support::LcgRng;

const KS: [usize; 4] = [1, 8, 64, 128];

/// A standard normal sample (Box-Muller).
fn gaussian(rng: &mut LcgRng) -> f32 {
    let u1 = rng.f32().max(1e-7);
    let u2 = rng.f32();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

fn point(v: Vec3) -> [f32; 4] {
    [v.x, v.y, v.z, 0.0]
}

fn uniform_points(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut rng = LcgRng(seed);
    (0..n)
        .map(|_| point(rng.in_box(Vec3::splat(-1.0), Vec3::ONE)))
        .collect()
}

/// Gaussian blobs of very unequal densities: (count, sigma) per blob.
fn clustered_points(seed: u64) -> Vec<[f32; 4]> {
    let mut rng = LcgRng(seed);
    let blobs = [
        (12_000, 0.002f32),
        (5_000, 0.05),
        (2_500, 0.4),
        (500, 0.0001),
    ];
    let mut out = Vec::new();
    for (count, sigma) in blobs {
        let centre = rng.in_box(Vec3::splat(-1.0), Vec3::ONE);
        for _ in 0..count {
            let d = Vec3::new(gaussian(&mut rng), gaussian(&mut rng), gaussian(&mut rng));
            out.push(point(centre + sigma * d));
        }
    }
    // Interleave the blobs so that index order says nothing about position.
    let mut order: Vec<(u32, usize)> = (0..out.len())
        .map(|i| ((rng.f32() * 1e6) as u32, i))
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| out[i]).collect()
}

/// The point sets every query test runs on, by name.
fn point_sets() -> Vec<(&'static str, Vec<[f32; 4]>)> {
    let mut rng = LcgRng(7);
    let plane: Vec<[f32; 4]> = (0..4_000)
        .map(|_| {
            let v = rng.in_box(Vec3::splat(-1.0), Vec3::ONE);
            point(Vec3::new(v.x, 0.25, v.z))
        })
        .collect();
    let few: Vec<[f32; 4]> = (0..12)
        .map(|_| point(rng.in_box(Vec3::splat(-1.0), Vec3::ONE)))
        .collect();
    let duplicates: Vec<[f32; 4]> = (0..3_000).map(|i| few[(i * 7) % few.len()]).collect();
    vec![
        ("uniform", uniform_points(20_000, 1)),
        ("clustered", clustered_points(2)),
        ("empty", Vec::new()),
        ("one point", vec![[0.5, -0.25, 0.125, 0.0]]),
        ("all equal", vec![[0.3, 0.3, 0.3, 0.0]; 700]),
        ("plane", plane),
        ("duplicates", duplicates),
    ]
}

/// Queries at points, near points (jittered by a small fraction of the extent), and far outside.
fn queries_for(points: &[[f32; 4]], count: usize, seed: u64) -> Vec<Vec3> {
    let mut rng = LcgRng(seed);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let base = if points.is_empty() {
            rng.in_box(Vec3::splat(-1.0), Vec3::ONE)
        } else {
            let p = points[(rng.f32() * points.len() as f32) as usize % points.len()];
            Vec3::new(p[0], p[1], p[2])
        };
        out.push(match i % 3 {
            0 => base,
            1 => base + 0.002 * rng.in_box(Vec3::splat(-1.0), Vec3::ONE),
            _ => base + 5.0 * rng.unit_vector(),
        });
    }
    out
}

/// The brute-force answer for `k` and `max_dist2`, from the sorted 128 nearest with no radius:
/// the first `k` of those within the radius (the same list, since the order is total).
fn expected(all: &[Neighbour], k: usize, max_dist2: f32) -> Vec<Neighbour> {
    all.iter()
        .copied()
        .filter(|n| n.dist2 <= max_dist2)
        .take(k)
        .collect()
}

/// Radii for a set: none, one around the 4th neighbour (fewer than k for most k) and one around
/// the 32nd (fewer than 64 or 128 for many queries); from the median over queries.
fn radii(all: &[Vec<Neighbour>]) -> Vec<f32> {
    let mut out = vec![f32::INFINITY];
    for rank in [3usize, 31] {
        let mut d: Vec<f32> = all
            .iter()
            .filter_map(|l| l.get(rank).map(|n| n.dist2))
            .collect();
        d.sort_by(f32::total_cmp);
        out.push(d.get(d.len() / 2).copied().unwrap_or(0.01));
    }
    out
}

/// The first difference between two lists of answers, for a readable failure.
fn first_difference(
    got: &[Vec<Neighbour>],
    want: &[Vec<Neighbour>],
    queries: &[Vec3],
) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} answers for {} queries", got.len(), want.len()));
    }
    (0..got.len()).find_map(|q| {
        (got[q] != want[q]).then(|| {
            format!(
                "query {q} at {}: got {:?}\nwant {:?}",
                queries[q], got[q], want[q]
            )
        })
    })
}

#[test]
fn cpu_tree_queries_equal_brute_force_on_every_point_set() {
    for (name, points) in point_sets() {
        let tree = build_point_kdtree(&points);
        validate_point_kdtree(&tree.words, &points).unwrap_or_else(|e| panic!("{name}: {e}"));
        let queries = queries_for(&points, 900, 11);
        let all: Vec<Vec<Neighbour>> = queries
            .iter()
            .map(|&q| knn_brute_force(&points, q, 128, f32::INFINITY))
            .collect();
        for max_dist2 in radii(&all) {
            for k in KS {
                let got: Vec<Vec<Neighbour>> = queries
                    .iter()
                    .map(|&q| knn(&tree.words, &points, q, k, max_dist2))
                    .collect();
                let want: Vec<Vec<Neighbour>> =
                    all.iter().map(|a| expected(a, k, max_dist2)).collect();
                if let Some(d) = first_difference(&got, &want, &queries) {
                    panic!("{name}, k = {k}, max_dist2 = {max_dist2}: {d}");
                }
            }
        }
    }
}

#[test]
fn brute_force_keeps_the_smallest_indices_among_equal_points_and_respects_the_radius() {
    let points = vec![[0.3, 0.3, 0.3, 0.0]; 700];
    let found = knn_brute_force(&points, Vec3::splat(0.3), 64, f32::INFINITY);
    let indices: Vec<u32> = found.iter().map(|n| n.index).collect();
    assert_eq!(indices, (0..64).collect::<Vec<u32>>());
    assert!(knn_brute_force(&points, Vec3::ZERO, 8, 0.26).is_empty());
    assert_eq!(knn_brute_force(&points, Vec3::ZERO, 8, 0.28).len(), 8);
}

#[test]
fn cpu_queries_take_any_k_beyond_the_gpu_heap() {
    let points = uniform_points(3_000, 5);
    let tree = build_point_kdtree(&points);
    for q in queries_for(&points, 30, 6) {
        let want = knn_brute_force(&points, q, 500, f32::INFINITY);
        assert_eq!(want.len(), 500);
        assert_eq!(knn(&tree.words, &points, q, 500, f32::INFINITY), want);
    }
}

/// GPU answers on trees built on the CPU, for every set, k and radius.
#[test]
fn gpu_queries_equal_brute_force_on_every_point_set() {
    let Some(ctx) = test_context() else { return };
    let variants = [
        KnnQueries::with_checks(&ctx, Checks::Checked).expect("the checked kernels build"),
        KnnQueries::with_checks(&ctx, Checks::Unchecked).expect("the unchecked kernels build"),
    ];
    for (name, points) in point_sets() {
        let tree = build_point_kdtree(&points);
        let gpu_tree = GpuKdTree::upload(&ctx, &tree.words, &points).unwrap();
        let queries = queries_for(&points, 2_000, 12);
        let all: Vec<Vec<Neighbour>> = queries
            .iter()
            .map(|&q| knn_brute_force(&points, q, 128, f32::INFINITY))
            .collect();
        for max_dist2 in radii(&all) {
            for k in KS {
                let want: Vec<Vec<Neighbour>> =
                    all.iter().map(|a| expected(a, k, max_dist2)).collect();
                // The unchecked variant on the first quarter of the queries (lavapipe is slow).
                for (variant, knn_gpu, n) in [
                    ("checked", &variants[0], queries.len()),
                    ("unchecked", &variants[1], queries.len() / 4),
                ] {
                    let got = knn_gpu
                        .knn_vec(&ctx, &gpu_tree, &queries[..n], k as u32, max_dist2)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    if let Some(d) = first_difference(&got, &want[..n], &queries) {
                        panic!("GPU ({variant}), {name}, k = {k}, max_dist2 = {max_dist2}: {d}");
                    }
                }
            }
        }
    }
}

/// Trees from the GPU builder, queried where they lie (GPU buffers) and read back (CPU), give
/// the brute-force answers.
#[test]
fn trees_from_the_gpu_builder_give_the_same_answers() {
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let builder = KdTreeBuilder::new(&ctx).expect("the kd-tree builder kernels build");
    let sets = point_sets();
    for (name, points) in sets
        .iter()
        .filter(|(name, _)| ["uniform", "clustered", "duplicates", "one point"].contains(name))
    {
        let point_buffer = storage_buffer(&ctx, "points", points).unwrap();
        let tree = builder
            .build(&ctx, &point_buffer, points.len() as u32)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let count = tree.counts(&ctx).unwrap().word_count as usize;
        let words: Vec<u32> = read_buffer(&ctx, &tree.words, count).unwrap();
        validate_point_kdtree(&words, points).unwrap_or_else(|e| panic!("{name}: {e}"));
        let queries = queries_for(points, 1_000, 13);
        for (k, max_dist2) in [(8usize, f32::INFINITY), (64, 0.01)] {
            let want: Vec<Vec<Neighbour>> = queries
                .iter()
                .map(|&q| knn_brute_force(points, q, k, max_dist2))
                .collect();
            let cpu: Vec<Vec<Neighbour>> = queries
                .iter()
                .map(|&q| knn(&words, points, q, k, max_dist2))
                .collect();
            if let Some(d) = first_difference(&cpu, &want, &queries) {
                panic!("CPU on the GPU-built tree, {name}, k = {k}: {d}");
            }
            let gpu = knn_gpu
                .knn_vec(&ctx, &tree, &queries, k as u32, max_dist2)
                .unwrap();
            if let Some(d) = first_difference(&gpu, &want, &queries) {
                panic!("GPU on the GPU-built tree, {name}, k = {k}: {d}");
            }
        }
    }
}

#[test]
fn gpu_refuses_k_of_zero_or_above_128() {
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let points = uniform_points(100, 3);
    let tree = build_point_kdtree(&points);
    let gpu_tree = GpuKdTree::upload(&ctx, &tree.words, &points).unwrap();
    let q = [Vec3::ZERO];
    for k in [0, 129, 1000] {
        let err = knn_gpu
            .knn_vec(&ctx, &gpu_tree, &q, k, f32::INFINITY)
            .expect_err("k out of range");
        assert!(err.to_string().contains("k from 1 to 128"), "{err}");
    }
    assert_eq!(
        knn_gpu
            .knn_vec(&ctx, &gpu_tree, &q, 128, f32::INFINITY)
            .unwrap()[0]
            .len(),
        100
    );
}

/// A chain of 100 internal nodes, each with a one-point leaf on its left: a query beyond the
/// chain's end pushes every left leaf, more than the GPU's stack of 64 holds.
#[test]
fn a_tree_deeper_than_the_gpu_stack_is_refused_and_the_cpu_still_answers() {
    let depth = 100u32;
    let points: Vec<[f32; 4]> = (0..=depth).map(|i| [i as f32, 0.0, 0.0, 0.0]).collect();
    let mut words = Vec::new();
    for i in 0..depth {
        let at = words.len() as u32;
        words.extend([at + 4, (i as f32 + 0.5).to_bits(), KD_LEAF | 1, i]);
    }
    words.extend([KD_LEAF | 1, depth]);
    let q = Vec3::new(1000.0, 0.0, 0.0);
    assert_eq!(
        knn(&words, &points, q, 3, f32::INFINITY),
        knn_brute_force(&points, q, 3, f32::INFINITY)
    );
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let gpu_tree = GpuKdTree::upload(&ctx, &words, &points).unwrap();
    let err = knn_gpu
        .knn_vec(&ctx, &gpu_tree, &[q], 3, f32::INFINITY)
        .expect_err("the stack overflows");
    assert!(
        err.to_string().contains("deeper than the GPU query stack"),
        "{err}"
    );
    // A query at the chain's start prunes every far leaf once it has its 3 neighbours.
    let near = Vec3::new(-1.0, 0.0, 0.0);
    let got = knn_gpu
        .knn_vec(&ctx, &gpu_tree, &[near], 3, f32::INFINITY)
        .unwrap();
    assert_eq!(got[0], knn_brute_force(&points, near, 3, f32::INFINITY));
}

#[test]
fn malformed_tree_words_give_an_error_on_the_gpu() {
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let points = uniform_points(4, 9);
    let bad_trees: [&[u32]; 3] = [
        // The right child points back at the root.
        &[0, 0.0f32.to_bits(), KD_LEAF | 1, 0],
        // A leaf longer than the words.
        &[KD_LEAF | 9, 0, 1],
        // A point index past the points.
        &[KD_LEAF | 2, 0, 17],
    ];
    for words in bad_trees {
        let tree = GpuKdTree::upload(&ctx, words, &points).unwrap();
        let err = knn_gpu
            .knn_vec(&ctx, &tree, &[Vec3::ZERO], 4, f32::INFINITY)
            .expect_err("malformed");
        assert!(err.to_string().contains("malformed"), "{words:?}: {err}");
    }
}

/// The frame defers its searches' status words to one read at its end: a density search over
/// a malformed tree still fails there, with the search's message, and a sound one passes.
#[test]
fn a_deferred_status_check_reports_a_malformed_tree_at_the_frames_end() {
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let (points, photon_buffer, query_buffer, n) = uploaded_photons(&ctx, 64, 5);
    let sound = build_point_kdtree(&points).words;
    // A leaf longer than the words.
    let malformed = vec![KD_LEAF | 9, 0, 1];
    for (words, fails) in [(sound, false), (malformed, true)] {
        let tree = GpuKdTree::upload(&ctx, &words, &points).unwrap();
        let (dispatch, out) = knn_gpu
            .prepare_density(
                &ctx,
                &tree,
                &photon_buffer,
                &query_buffer,
                0,
                n,
                8,
                f32::INFINITY,
                EstimateFilter::None,
                None,
            )
            .unwrap();
        let mut encoder = Encoder::new(&ctx);
        dispatch.record(&mut encoder, None);
        ctx.submit([encoder.finish()]);
        ctx.defer_status_check(&out.status, caustica::gpu::knn::status_error);
        let result = run_deferred_checks(&ctx);
        match (fails, result) {
            (false, Ok(())) => {}
            (true, Err(e)) => assert!(e.to_string().contains("malformed"), "{e}"),
            (fails, result) => panic!("malformed tree: {fails}, deferred checks: {result:?}"),
        }
        // The checks ran once: none is left for the next frame.
        assert!(ctx.take_deferred_checks().is_empty());
    }
}

/// Far queries with no radius over many points visit most of the tree. Wherever a driver caps
/// loops (lavapipe stops every loop after 65535 iterations per invocation group) the search
/// reports it as an error; everywhere else it answers. It is never silently wrong.
#[test]
fn searches_longer_than_a_drivers_loop_limit_fail_loudly_or_answer_correctly() {
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let points = uniform_points(200_000, 61);
    let tree = build_point_kdtree(&points);
    let gpu_tree = GpuKdTree::upload(&ctx, &tree.words, &points).unwrap();
    let mut rng = LcgRng(62);
    let queries: Vec<Vec3> = (0..16).map(|_| 5.0 * rng.unit_vector()).collect();
    match knn_gpu.knn_vec(&ctx, &gpu_tree, &queries, 128, f32::INFINITY) {
        Ok(got) => {
            for (q, g) in queries.iter().zip(&got) {
                assert_eq!(g, &knn_brute_force(&points, *q, 128, f32::INFINITY));
            }
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

// ---- The photon density estimate ----

/// Random photons in a slab with random directions (about half arriving from below) and
/// powers, and queries with random normals (both hemispheres).
fn random_photons(n: usize, seed: u64) -> (Vec<PhotonRecord>, Vec<(Vec3, Vec3)>) {
    let mut rng = LcgRng(seed);
    let photons: Vec<PhotonRecord> = (0..n)
        .map(|_| PhotonRecord {
            position: rng
                .in_box(Vec3::new(-1.0, -1.0, -0.05), Vec3::new(1.0, 1.0, 0.05))
                .to_array(),
            direction: octahedral_encode(rng.unit_vector()),
            power: [
                rng.range(0.1, 1.0),
                rng.range(0.1, 1.0),
                rng.range(0.1, 1.0),
            ],
            flags: 0,
        })
        .collect();
    let queries = (0..1_500)
        .map(|i| {
            let x = if i % 2 == 0 {
                Vec3::from(photons[(rng.f32() * n as f32) as usize % n].position)
            } else {
                rng.in_box(Vec3::new(-1.2, -1.2, -0.1), Vec3::new(1.2, 1.2, 0.1))
            };
            (x, rng.unit_vector())
        })
        .collect();
    (photons, queries)
}

fn positions(photons: &[PhotonRecord]) -> Vec<[f32; 4]> {
    photons
        .iter()
        .map(|p| [p.position[0], p.position[1], p.position[2], 0.0])
        .collect()
}

const FILTERS: [EstimateFilter; 3] = [
    EstimateFilter::None,
    EstimateFilter::Cone { k: 1.1 },
    EstimateFilter::Epanechnikov,
];

fn relative_difference(a: Vec3, b: Vec3) -> f32 {
    (a - b).abs().max_element() / a.abs().max_element().max(b.abs().max_element()).max(1e-30)
}

#[test]
fn gpu_density_estimates_equal_the_cpu_twin_on_random_photons() {
    let Some(ctx) = test_context() else { return };
    let variants = [
        KnnQueries::with_checks(&ctx, Checks::Checked).unwrap(),
        KnnQueries::with_checks(&ctx, Checks::Unchecked).unwrap(),
    ];
    let (photons, queries) = random_photons(20_000, 21);
    let points = positions(&photons);
    let tree = build_point_kdtree(&points);
    let gpu_tree = GpuKdTree::upload(&ctx, &tree.words, &points).unwrap();
    let photon_buffer = storage_buffer(&ctx, "photons", &photons).unwrap();
    for (filter, knn_gpu) in FILTERS
        .iter()
        .copied()
        .flat_map(|f| variants.iter().map(move |v| (f, v)))
    {
        for (k, max_dist2) in [(8, f32::INFINITY), (64, 0.002), (128, f32::INFINITY)] {
            let gpu = knn_gpu
                .flux_density_vec(
                    &ctx,
                    &gpu_tree,
                    &photon_buffer,
                    &queries,
                    k as u32,
                    max_dist2,
                    filter,
                )
                .unwrap();
            let mut nonzero = 0;
            for (i, &(x, n)) in queries.iter().enumerate() {
                let cpu =
                    photon_flux_density(&tree.words, &points, &photons, x, n, k, max_dist2, filter);
                assert!(
                    relative_difference(cpu, gpu[i]) <= 1e-5,
                    "{filter:?}, k = {k}, max_dist2 = {max_dist2}, query {i}: CPU {cpu} GPU {}",
                    gpu[i]
                );
                nonzero += usize::from(cpu != Vec3::ZERO);
            }
            assert!(
                nonzero > queries.len() / 2,
                "{filter:?}, k = {k}: {nonzero}"
            );
        }
    }
}

/// `n` random photons uploaded as a density search reads them: their positions (the tree's
/// points), the records' buffer, the (position, normal) queries' buffer and the number of
/// queries.
fn uploaded_photons(
    ctx: &GpuContext,
    n: usize,
    seed: u64,
) -> (Vec<[f32; 4]>, GpuBuffer, GpuBuffer, u32) {
    let (photons, queries) = random_photons(n, seed);
    let points = positions(&photons);
    let pairs: Vec<[f32; 4]> = queries
        .iter()
        .flat_map(|(x, n)| [[x.x, x.y, x.z, 0.0], [n.x, n.y, n.z, 0.0]])
        .collect();
    (
        points,
        storage_buffer(ctx, "photons", &photons).unwrap(),
        storage_buffer(ctx, "queries", &pairs).unwrap(),
        queries.len() as u32,
    )
}

/// A density dispatch that takes its queries in their Morton order (as the frame's caustic
/// estimate does) writes each estimate at the query's own slot, bit for bit what it writes
/// taking them in order.
#[test]
fn density_estimates_taken_in_morton_order_equal_those_taken_in_order() {
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let prims = caustica::gpu::prims::Primitives::new(&ctx).unwrap();
    let (points, photon_buffer, query_buffer, n) = uploaded_photons(&ctx, 20_000, 23);
    let tree = build_point_kdtree(&points);
    let gpu_tree = GpuKdTree::upload(&ctx, &tree.words, &points).unwrap();
    let mut encoder = Encoder::new(&ctx);
    let order = prims
        .morton_order(
            &ctx,
            &mut encoder,
            &query_buffer,
            2,
            n,
            (Vec3::splat(-1.0), 2.0),
        )
        .unwrap();
    let mut densities = Vec::new();
    for order in [None, Some(&order)] {
        let (dispatch, out) = knn_gpu
            .prepare_density(
                &ctx,
                &gpu_tree,
                &photon_buffer,
                &query_buffer,
                0,
                n,
                64,
                f32::INFINITY,
                EstimateFilter::Cone { k: 1.1 },
                order,
            )
            .unwrap();
        dispatch.record(&mut encoder, None);
        densities.push(out);
    }
    ctx.submit([encoder.finish()]);
    let read = |i: usize| -> Vec<[f32; 4]> {
        caustica::gpu::knn::check_status(&ctx, &densities[i].status).unwrap();
        read_buffer(&ctx, &densities[i].density, n as usize).unwrap()
    };
    let (in_order, morton) = (read(0), read(1));
    assert!(in_order.iter().filter(|d| d[0] != 0.0).count() > n as usize / 2);
    assert!(in_order == morton, "the Morton-ordered estimates differ");
    let sorted: Vec<u32> = read_buffer(&ctx, &order, n as usize).unwrap();
    assert!(
        sorted.iter().enumerate().any(|(i, &q)| q != i as u32),
        "the order is the identity"
    );
}

/// Photons spread uniformly over a unit disc in the plane z = 0, all arriving from above
/// (travelling along −z), with total flux (1, 2, 3): the flux density is that over π.
fn uniform_disc(n: usize, seed: u64, direction: Vec3) -> Vec<PhotonRecord> {
    let mut rng = LcgRng(seed);
    let code = octahedral_encode(direction);
    let power = [1.0 / n as f32, 2.0 / n as f32, 3.0 / n as f32];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let (x, y) = (rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
        if x * x + y * y <= 1.0 {
            out.push(PhotonRecord {
                position: [x, y, 0.0],
                direction: code,
                power,
                flags: 0,
            });
        }
    }
    out
}

/// The average estimate over query points well inside the disc (up) on the CPU.
fn disc_average(
    photons: &[PhotonRecord],
    k: usize,
    max_dist2: f32,
    filter: EstimateFilter,
    n: Vec3,
) -> Vec3 {
    let points = positions(photons);
    let tree = build_point_kdtree(&points);
    let mut rng = LcgRng(99);
    let count = 400;
    let mut sum = Vec3::ZERO;
    for _ in 0..count {
        let r = 0.7 * rng.f32().sqrt();
        let a = std::f32::consts::TAU * rng.f32();
        let x = Vec3::new(r * a.cos(), r * a.sin(), 0.0);
        sum += photon_flux_density(&tree.words, &points, photons, x, n, k, max_dist2, filter);
    }
    sum / count as f32
}

#[test]
fn every_filter_estimates_a_uniform_discs_flux_density_within_three_percent() {
    let photons = uniform_disc(60_000, 31, -Vec3::Z);
    let exact = Vec3::new(1.0, 2.0, 3.0) / std::f32::consts::PI;
    for filter in FILTERS {
        // k nearest (r from the k-th), and a fixed radius that finds fewer than k (r = radius:
        // about 60 000 · 0.03² ≈ 54 photons).
        for (k, max_dist2) in [(128, f32::INFINITY), (128, 0.03f32 * 0.03)] {
            let estimate = disc_average(&photons, k, max_dist2, filter, Vec3::Z);
            assert!(
                relative_difference(estimate, exact) < 0.03,
                "{filter:?}, k = {k}, max_dist2 = {max_dist2}: {estimate} vs {exact}"
            );
        }
    }
}

#[test]
fn photons_arriving_from_behind_are_ignored() {
    // Travelling up (+z): they arrive at the side −z faces.
    let from_below = uniform_disc(20_000, 41, Vec3::Z);
    let exact = Vec3::new(1.0, 2.0, 3.0) / std::f32::consts::PI;
    for filter in FILTERS {
        assert_eq!(
            disc_average(&from_below, 64, f32::INFINITY, filter, Vec3::Z),
            Vec3::ZERO
        );
        let seen = disc_average(&from_below, 64, f32::INFINITY, filter, -Vec3::Z);
        assert!(
            relative_difference(seen, exact) < 0.05,
            "{filter:?}: {seen}"
        );
    }
    // Front photons plus, at the same places, back photons of a thousand times the power: the
    // estimate stays the front photons' density.
    let front = uniform_disc(20_000, 43, -Vec3::Z);
    let mut mixed = front.clone();
    mixed.extend(front.iter().map(|p| PhotonRecord {
        direction: octahedral_encode(Vec3::new(0.3, 0.1, 1.0)),
        power: p.power.map(|c| c * 1000.0),
        ..*p
    }));
    let estimate = disc_average(&mixed, 128, f32::INFINITY, EstimateFilter::None, Vec3::Z);
    assert!(
        relative_difference(estimate, exact) < 0.05,
        "{estimate} vs {exact}"
    );
}

#[test]
fn gpu_octahedral_code_matches_the_cpu() {
    let Some(ctx) = test_context() else { return };
    let knn_gpu = KnnQueries::new(&ctx).unwrap();
    let mut rng = LcgRng(51);
    let mut directions: Vec<Vec3> = (0..20_000).map(|_| rng.unit_vector()).collect();
    directions.extend([
        Vec3::X,
        -Vec3::X,
        Vec3::Y,
        -Vec3::Y,
        Vec3::Z,
        -Vec3::Z,
        Vec3::ZERO,
    ]);
    let codes: Vec<u32> = (0..20_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .chain([0, 0xffff, 0xffff_0000, 0xffff_ffff, 0x8000_7fff])
        .collect();
    let gpu = knn_gpu
        .octahedral_check_vec(&ctx, &directions, &codes)
        .unwrap();
    assert_eq!(gpu.encoded.len(), directions.len());
    assert_eq!(gpu.decoded.len(), codes.len());
    for (d, &e) in directions.iter().zip(&gpu.encoded) {
        // Division and rounding may differ from the CPU's by one grid step per coordinate.
        let cpu = octahedral_encode(*d);
        let step = |c: u32, s: u32| ((c >> s) & 0xffff) as i32;
        assert!(
            (step(cpu, 0) - step(e, 0)).abs() <= 1 && (step(cpu, 16) - step(e, 16)).abs() <= 1,
            "{d}: CPU {cpu:#x} GPU {e:#x}"
        );
    }
    for ((&c, &l1), &unit) in codes.iter().zip(&gpu.decoded_l1).zip(&gpu.decoded) {
        assert_eq!(l1, octahedral_decode_l1(c), "{c:#x}");
        assert!((unit - octahedral_decode(c)).length() < 1e-6, "{c:#x}");
    }
}

/// `KnnParams` and `PhotonRecord` have the size and member offsets naga gives their WGSL twins.
#[test]
fn knn_structs_match_their_wgsl_twins() {
    let twins: Vec<support::Twin> = vec![
        (
            "KnnParams",
            size_of::<KnnParams>(),
            vec![
                ("query_count", offset_of!(KnnParams, query_count)),
                ("first_query", offset_of!(KnnParams, first_query)),
                ("k", offset_of!(KnnParams, k)),
                ("max_dist2", offset_of!(KnnParams, max_dist2)),
                ("filter_code", offset_of!(KnnParams, filter_code)),
                ("cone_k", offset_of!(KnnParams, cone_k)),
                ("ordered", offset_of!(KnnParams, ordered)),
                ("_pad1", offset_of!(KnnParams, _pad1)),
            ],
        ),
        (
            "PhotonRecord",
            size_of::<PhotonRecord>(),
            vec![
                ("position", offset_of!(PhotonRecord, position)),
                ("direction", offset_of!(PhotonRecord, direction)),
                ("power", offset_of!(PhotonRecord, power)),
                ("flags", offset_of!(PhotonRecord, flags)),
            ],
        ),
    ];
    support::assert_wgsl_twins("kdtree/knn_density.wgsl", twins);
}

/// `MortonParams`, of the Morton order the frame's searches take their queries in, has the size
/// and member offsets naga gives its WGSL twin.
#[test]
fn morton_params_match_their_wgsl_twin() {
    use caustica::gpu::prims::morton::MortonParams;
    let twins: Vec<support::Twin> = vec![(
        "MortonParams",
        size_of::<MortonParams>(),
        vec![
            ("n", offset_of!(MortonParams, n)),
            ("stride", offset_of!(MortonParams, stride)),
            ("_pad0", offset_of!(MortonParams, _pad)),
            ("_pad1", offset_of!(MortonParams, _pad) + 4),
            ("lo", offset_of!(MortonParams, lo)),
            ("scale", offset_of!(MortonParams, scale)),
        ],
    )];
    support::assert_wgsl_twins("prims/morton_codes.wgsl", twins);
}

//! The binned-SAH builder and its hybrid with the LBVH (paper 003 chapter 4): the CPU twin
//! `accel::sah_build::build_sah` makes well-formed trees whose closest hits equal brute force,
//! on awkward inputs too (no, one, two primitives, equal, empty, flat, nested and repeated
//! boxes), and the GPU builder `gpu::sah_build` writes the very same records and primitive
//! order, bit for bit, every time, through both its stages (the large levels and the small
//! subtrees).

mod bvh_support;

use caustica::accel::aabb::{Aabb, SlabRay};
use caustica::accel::bvh::{BinaryBvh, BinaryNodeKind, BinaryNodeRecord};
use caustica::accel::primitives::intersect_triangle;
use caustica::accel::sah_build::{
    build_sah, sah_large_levels, SahVariant, SAH_MAX_DEPTH, SAH_SMALL,
};
use caustica::gpu::prims::Primitives;
use caustica::gpu::sah_build::SahBuilder;
use caustica::gpu::{test_context, GpuContext};
use glam::Vec3;

use bvh_support::{
    assert_gpu_tree_equals_cpu, assert_leaves_in_order, assert_links_ranges_and_boxes,
    closest_brute_force, odd_box_sets, random_boxes, random_ray, random_triangles, triangle_box,
    words, Random,
};

const VARIANTS: [SahVariant; 2] = [SahVariant::Sah, SahVariant::Hybrid];

/// The deepest a tree over `n` primitives may be (root at depth 1): the large levels, or
/// the depth from which every node splits at its middle, then the middle splits of a small
/// node.
fn depth_bound(n: u32) -> usize {
    (sah_large_levels(n).max(SAH_MAX_DEPTH) + SAH_SMALL.ilog2() + 2) as usize
}

/// The shape every builder's tree has, with leaf `k` at place `k`, within the depth bound.
/// Returns the depth.
fn assert_well_formed(bvh: &BinaryBvh, bounds: &[Aabb]) -> usize {
    let depth = assert_links_ranges_and_boxes(bvh, bounds);
    assert_leaves_in_order(bvh, bounds);
    assert!(depth <= depth_bound(bounds.len() as u32), "depth {depth}");
    depth
}

#[test]
fn sah_trees_hold_every_primitive_once_and_nest_their_boxes_and_ranges() {
    let mut rng = Random(7);
    for variant in VARIANTS {
        for n in [1, 2, 3, 4, 5, 17, 32, 33, 64, 1000, 4097] {
            let bounds = random_boxes(&mut rng, n);
            assert_well_formed(&build_sah(&bounds, variant), &bounds);
        }
    }
}

#[test]
fn sah_closest_hits_on_random_triangles_and_boxes_equal_brute_force() {
    let mut rng = Random(11);
    let triangles = random_triangles(&mut rng, 3000);
    let tri_bounds: Vec<Aabb> = triangles.iter().map(triangle_box).collect();
    let boxes = random_boxes(&mut rng, 2000);
    for variant in VARIANTS {
        let bvh = build_sah(&tri_bounds, variant);
        assert_well_formed(&bvh, &tri_bounds);
        let mut hits = 0;
        for _ in 0..1500 {
            let (origin, dir) = random_ray(&mut rng, -1.0, 11.0);
            let intersect = |p: u32, t_max: f32| {
                let [a, b, c] = triangles[p as usize];
                intersect_triangle(origin, dir, a, b, c, 0.0, f32::INFINITY)
                    .map(|(t, _, _)| t)
                    .filter(|&t| t <= t_max)
            };
            let expected = closest_brute_force(triangles.len(), intersect);
            let got = bvh.closest_hit(&SlabRay::new(origin, dir), 0.0, f32::INFINITY, intersect);
            assert_eq!(got, expected, "{variant:?}: ray {origin} {dir}");
            hits += got.is_some() as u32;
        }
        assert!(hits > 400, "only {hits} rays hit: the test says little");
        let bvh = build_sah(&boxes, variant);
        let mut hits = 0;
        for _ in 0..1000 {
            let (origin, dir) = random_ray(&mut rng, -60.0, 60.0);
            let ray = SlabRay::new(origin, dir);
            let intersect = |p: u32, t_max: f32| ray.entry_box(&boxes[p as usize], 0.0, t_max);
            let expected = closest_brute_force(boxes.len(), intersect);
            assert_eq!(
                bvh.closest_hit(&ray, 0.0, f32::INFINITY, intersect),
                expected
            );
            hits += expected.is_some() as u32;
        }
        assert!(hits > 200, "only {hits} rays hit: the test says little");
    }
}

#[test]
fn sah_of_no_primitives_has_no_nodes_and_of_one_is_a_lone_leaf() {
    for variant in VARIANTS {
        let bvh = build_sah(&[], variant);
        assert!(bvh.nodes.is_empty() && bvh.prim_order.is_empty());
        let b = Aabb::new(Vec3::new(1.0, 2.0, 3.0), Vec3::new(4.0, 5.0, 6.0));
        let bvh = build_sah(&[b], variant);
        assert_eq!(bvh.prim_order, vec![0]);
        assert_eq!(
            bvh.nodes[0].kind,
            BinaryNodeKind::Leaf { first: 0, count: 1 }
        );
    }
}

#[test]
fn sah_splits_equal_boxes_into_a_balanced_tree_and_keeps_empty_and_flat_sets_well_formed() {
    let b = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
    for variant in VARIANTS {
        for n in [2, 3, 37, 1000, 1024] {
            let bounds = vec![b; n];
            let depth = assert_well_formed(&build_sah(&bounds, variant), &bounds);
            let balanced = (n as f64).log2().ceil() as usize + 1;
            assert_eq!(depth, balanced, "{n} equal boxes");
        }
        let mut rng = Random(17);
        let mut bounds = random_boxes(&mut rng, 200);
        for i in (0..bounds.len()).step_by(3) {
            bounds[i] = Aabb::EMPTY;
        }
        assert_well_formed(&build_sah(&bounds, variant), &bounds);
        let all_empty = vec![Aabb::EMPTY; 5];
        let bvh = build_sah(&all_empty, variant);
        assert_well_formed(&bvh, &all_empty);
        assert_eq!(bvh.nodes[0].bounds, Aabb::EMPTY);
        let flat = flat_boxes(&mut rng, 500);
        assert_well_formed(&build_sah(&flat, variant), &flat);
    }
}

fn flat_boxes(rng: &mut Random, n: usize) -> Vec<Aabb> {
    (0..n)
        .map(|_| {
            let (x, y) = (rng.range(0.0, 10.0), rng.range(0.0, 10.0));
            Aabb::new(Vec3::new(x, 2.0, y), Vec3::new(x + 0.1, 2.0, y + 0.1))
        })
        .collect()
}

/// Boxes each holding the one before, their centroids all at the origin but one axis: the SAH
/// finds few planes, and the middle splits bound the depth.
fn nested_boxes(n: usize) -> Vec<Aabb> {
    (0..n)
        .map(|i| {
            let s = i as f32 + 1.0;
            Aabb::new(Vec3::new(-s, -s, 0.0), Vec3::new(s, s, 2.0 * s))
        })
        .collect()
}

#[test]
fn sah_keeps_nested_boxes_within_the_depth_bound() {
    for variant in VARIANTS {
        let bounds = nested_boxes(3000);
        assert_well_formed(&build_sah(&bounds, variant), &bounds);
    }
}

// ---- GPU against the CPU twin ----

/// The adapter's own primitives and the SAH kernels.
fn gpu() -> Option<(GpuContext, Primitives, SahBuilder)> {
    let ctx = test_context()?;
    let prims = Primitives::new(&ctx).expect("the primitive kernels build");
    let sah = SahBuilder::new(&ctx).expect("the SAH kernels build");
    Some((ctx, prims, sah))
}

/// The GPU's records and order equal the CPU twin's, every word, for both variants.
fn assert_gpu_equals_cpu(
    (ctx, prims, sah): &(GpuContext, Primitives, SahBuilder),
    what: &str,
    bounds: &[Aabb],
) -> Vec<Vec<BinaryNodeRecord>> {
    VARIANTS
        .iter()
        .map(|&variant| {
            let gpu = |b: &[Aabb]| {
                sah.build_vec(ctx, prims, b, variant)
                    .expect("the GPU build runs")
            };
            let cpu = |b: &[Aabb]| build_sah(b, variant);
            assert_gpu_tree_equals_cpu(&format!("{what} ({variant:?})"), bounds, gpu, cpu)
        })
        .collect()
}

#[test]
fn gpu_sah_equals_the_cpu_twin_bit_for_bit_on_random_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(23);
    for n in [0, 1, 2, 3, 5, 32, 33, 64, 400, 1000, 20_011] {
        let bounds = random_boxes(&mut rng, n);
        assert_gpu_equals_cpu(&gpu, &format!("{n} random boxes"), &bounds);
    }
}

#[test]
fn gpu_sah_equals_the_cpu_twin_on_equal_empty_flat_nested_and_odd_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(29);
    for (what, bounds) in odd_box_sets(&mut rng) {
        assert_gpu_equals_cpu(&gpu, what, &bounds);
    }
    assert_gpu_equals_cpu(&gpu, "nested boxes", &nested_boxes(3000));
}

#[test]
fn gpu_sah_builds_the_same_records_every_time() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(37);
    let bounds = random_boxes(&mut rng, 30_011);
    let first = assert_gpu_equals_cpu(&gpu, "first build", &bounds);
    let second = assert_gpu_equals_cpu(&gpu, "second build", &bounds);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(words(a), words(b));
    }
}

/// A mesh-sized build; slow on lavapipe, so only on request (`--ignored`) or on a real GPU.
#[test]
#[ignore = "large: run with --ignored on a real GPU"]
fn gpu_sah_equals_the_cpu_twin_on_871k_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(41);
    let bounds = random_boxes(&mut rng, 871_306);
    assert_gpu_equals_cpu(&gpu, "871K boxes", &bounds);
}

//! The PLOC builder (Meister & Bittner 2018): the CPU twin `accel::ploc::build_ploc` makes
//! well-formed trees whose closest hits equal brute force, on awkward inputs too (no, one, two
//! or three primitives, equal boxes, empty boxes, a flat set, nested boxes that merge one pair
//! a round), and the GPU builder `gpu::ploc` writes the very same records and primitive order,
//! bit for bit, every time.

mod bvh_support;

use caustica::accel::aabb::{Aabb, SlabRay};
use caustica::accel::bvh::{BinaryBvh, BinaryNodeKind, BinaryNodeRecord};
use caustica::accel::lbvh::morton_order;
use caustica::accel::ploc::{build_ploc, ploc_natural_rounds, ploc_rounds};
use caustica::accel::primitives::intersect_triangle;
use caustica::gpu::ploc::PlocBuilder;
use caustica::gpu::prims::Primitives;
use caustica::gpu::{test_context, GpuContext};
use glam::Vec3;

use bvh_support::{
    assert_gpu_tree_equals_cpu, assert_links_ranges_and_boxes, closest_brute_force, odd_box_sets,
    random_boxes, random_ray, random_triangles, triangle_box, words, Random,
};

fn bits(b: &Aabb) -> [u32; 6] {
    let [a, c] = [b.min.to_array(), b.max.to_array()];
    [a[0], a[1], a[2], c[0], c[1], c[2]].map(f32::to_bits)
}

/// The shape every builder's tree has, leaf `k` (node `n - 1 + k`) holding the `k`-th
/// primitive of the Morton order and its box at its place in the order, and a depth within
/// what the rounds allow. Returns the depth.
fn assert_well_formed(bvh: &BinaryBvh, bounds: &[Aabb]) -> usize {
    let depth = assert_links_ranges_and_boxes(bvh, bounds);
    let n = bounds.len();
    if n == 0 {
        return 0;
    }
    let (morton, _) = morton_order(bounds);
    for (k, &p) in morton.iter().enumerate() {
        let leaf = &bvh.nodes[n - 1 + k];
        let BinaryNodeKind::Leaf { first, count } = leaf.kind else {
            panic!("node {} is not a leaf", n - 1 + k);
        };
        assert_eq!(count, 1);
        assert_eq!(bvh.prim_order[first as usize], p, "leaf {k}'s place");
        assert_eq!(bits(&leaf.bounds), bits(&bounds[p as usize]));
    }
    assert!(depth <= ploc_rounds(n as u32) as usize + 1, "depth {depth}");
    depth
}

#[test]
fn ploc_trees_hold_every_primitive_once_and_nest_their_boxes_and_ranges() {
    let mut rng = Random(7);
    for n in [1, 2, 3, 4, 5, 17, 64, 1000, 4097] {
        let bounds = random_boxes(&mut rng, n);
        assert_well_formed(&build_ploc(&bounds), &bounds);
    }
}

#[test]
fn ploc_closest_hits_on_random_triangles_equal_brute_force() {
    let mut rng = Random(11);
    let triangles = random_triangles(&mut rng, 3000);
    let bounds: Vec<Aabb> = triangles.iter().map(triangle_box).collect();
    let bvh = build_ploc(&bounds);
    assert_well_formed(&bvh, &bounds);
    let mut hits = 0;
    for _ in 0..2000 {
        let (origin, dir) = random_ray(&mut rng, -1.0, 11.0);
        let intersect = |p: u32, t_max: f32| {
            let [a, b, c] = triangles[p as usize];
            intersect_triangle(origin, dir, a, b, c, 0.0, f32::INFINITY)
                .map(|(t, _, _)| t)
                .filter(|&t| t <= t_max)
        };
        let expected = closest_brute_force(triangles.len(), intersect);
        let got = bvh.closest_hit(&SlabRay::new(origin, dir), 0.0, f32::INFINITY, intersect);
        assert_eq!(got, expected, "ray {origin} {dir}");
        hits += got.is_some() as u32;
    }
    assert!(hits > 500, "only {hits} rays hit: the test says little");
}

#[test]
fn ploc_closest_hits_on_random_boxes_equal_brute_force() {
    let mut rng = Random(13);
    let bounds = random_boxes(&mut rng, 2000);
    let bvh = build_ploc(&bounds);
    let mut hits = 0;
    for _ in 0..1000 {
        let (origin, dir) = random_ray(&mut rng, -60.0, 60.0);
        let ray = SlabRay::new(origin, dir);
        let intersect = |p: u32, t_max: f32| ray.entry_box(&bounds[p as usize], 0.0, t_max);
        let expected = closest_brute_force(bounds.len(), intersect);
        assert_eq!(
            bvh.closest_hit(&ray, 0.0, f32::INFINITY, intersect),
            expected
        );
        hits += expected.is_some() as u32;
    }
    assert!(hits > 200, "only {hits} rays hit: the test says little");
}

#[test]
fn ploc_of_no_primitives_has_no_nodes_and_of_one_is_a_lone_leaf() {
    let bvh = build_ploc(&[]);
    assert!(bvh.nodes.is_empty() && bvh.prim_order.is_empty());
    let b = Aabb::new(Vec3::new(1.0, 2.0, 3.0), Vec3::new(4.0, 5.0, 6.0));
    let bvh = build_ploc(&[b]);
    assert_eq!(bvh.prim_order, vec![0]);
    assert_eq!(bvh.nodes.len(), 1);
    assert_eq!(
        bvh.nodes[0].kind,
        BinaryNodeKind::Leaf { first: 0, count: 1 }
    );
}

#[test]
fn ploc_pairs_equal_boxes_into_a_balanced_tree() {
    let b = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
    for n in [2, 3, 37, 1000, 1024] {
        let bounds = vec![b; n];
        let depth = assert_well_formed(&build_ploc(&bounds), &bounds);
        let balanced = (n as f64).log2().ceil() as usize + 1;
        assert_eq!(depth, balanced, "{n} equal boxes");
    }
}

#[test]
fn ploc_keeps_empty_boxes_and_flat_sets_in_well_formed_trees() {
    let mut rng = Random(17);
    let mut bounds = random_boxes(&mut rng, 200);
    for i in (0..bounds.len()).step_by(3) {
        bounds[i] = Aabb::EMPTY;
    }
    bounds[1] = Aabb::new(Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 1.0));
    assert_well_formed(&build_ploc(&bounds), &bounds);
    let all_empty = vec![Aabb::EMPTY; 5];
    let bvh = build_ploc(&all_empty);
    assert_well_formed(&bvh, &all_empty);
    assert_eq!(bvh.nodes[0].bounds, Aabb::EMPTY);
    let flat: Vec<Aabb> = (0..500)
        .map(|_| {
            let (x, y) = (rng.range(0.0, 10.0), rng.range(0.0, 10.0));
            Aabb::new(Vec3::new(x, y, 2.0), Vec3::new(x + 0.1, y + 0.1, 2.0))
        })
        .collect();
    let bvh = build_ploc(&flat);
    assert_well_formed(&bvh, &flat);
    assert_eq!(bvh.nodes[0].bounds.min.z, 2.0);
}

/// Boxes each holding the one before merge one pair a round while the rounds search; the
/// paired rounds then finish the tree within its depth bound.
fn nested_boxes(n: usize) -> Vec<Aabb> {
    (0..n)
        .map(|i| Aabb::new(Vec3::splat(-(i as f32) - 1.0), Vec3::splat(i as f32 + 1.0)))
        .collect()
}

#[test]
fn ploc_finishes_nested_boxes_with_paired_rounds_within_the_depth_bound() {
    let bounds = nested_boxes(2000);
    let depth = assert_well_formed(&build_ploc(&bounds), &bounds);
    assert!(depth > ploc_natural_rounds(2000) as usize, "depth {depth}");
}

// ---- GPU against the CPU twin ----

/// The adapter's own primitives and the PLOC kernels.
fn gpu() -> Option<(GpuContext, Primitives, PlocBuilder)> {
    let ctx = test_context()?;
    let prims = Primitives::new(&ctx).expect("the primitive kernels build");
    let ploc = PlocBuilder::new(&ctx).expect("the PLOC kernels build");
    Some((ctx, prims, ploc))
}

/// The GPU's records and order equal the CPU twin's, every word.
fn assert_gpu_equals_cpu(
    (ctx, prims, ploc): &(GpuContext, Primitives, PlocBuilder),
    what: &str,
    bounds: &[Aabb],
) -> Vec<BinaryNodeRecord> {
    let gpu = |b: &[Aabb]| ploc.build_vec(ctx, prims, b).expect("the GPU build runs");
    assert_gpu_tree_equals_cpu(what, bounds, gpu, build_ploc)
}

#[test]
fn gpu_ploc_equals_the_cpu_twin_bit_for_bit_on_random_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(23);
    for n in [0, 1, 2, 3, 5, 64, 1000, 100_003] {
        let bounds = random_boxes(&mut rng, n);
        assert_gpu_equals_cpu(&gpu, &format!("{n} random boxes"), &bounds);
    }
}

#[test]
fn gpu_ploc_equals_the_cpu_twin_on_equal_empty_flat_nested_and_odd_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(29);
    for (what, bounds) in odd_box_sets(&mut rng) {
        assert_gpu_equals_cpu(&gpu, what, &bounds);
    }
    assert_gpu_equals_cpu(&gpu, "nested boxes", &nested_boxes(700));
    let mut bounds = random_boxes(&mut rng, 500);
    bounds[10].min.y = f32::NAN;
    bounds[20].max.x = f32::from_bits(0x7fc0_1234);
    assert_gpu_equals_cpu(&gpu, "NaN coordinates", &bounds);
}

#[test]
fn gpu_ploc_builds_the_same_records_every_time() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(37);
    let bounds = random_boxes(&mut rng, 30_011);
    let first = assert_gpu_equals_cpu(&gpu, "first build", &bounds);
    let second = assert_gpu_equals_cpu(&gpu, "second build", &bounds);
    assert_eq!(words(&first), words(&second));
}

#[test]
fn gpu_ploc_equals_the_cpu_twin_when_its_workgroups_loop_over_the_blocks() {
    let Some((ctx, prims, ploc)) = gpu() else {
        return;
    };
    let gpu = (ctx, prims, ploc.with_max_groups(3));
    let mut rng = Random(47);
    let bounds = random_boxes(&mut rng, 5000);
    assert_gpu_equals_cpu(&gpu, "5000 boxes, 3 workgroups a dispatch", &bounds);
}

/// A mesh-sized build; slow on lavapipe, so only on request (`--ignored`) or on a real GPU.
#[test]
#[ignore = "large: run with --ignored on a real GPU"]
fn gpu_ploc_equals_the_cpu_twin_on_871k_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(41);
    let bounds = random_boxes(&mut rng, 871_306);
    assert_gpu_equals_cpu(&gpu, "871K boxes", &bounds);
}

/// More than 4096 workgroups' worth of clusters: the round kernels loop over the blocks.
#[test]
#[ignore = "large: run with --ignored on a real GPU with 2 GB bindings"]
fn gpu_ploc_equals_the_cpu_twin_on_4m_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(43);
    let bounds = random_boxes(&mut rng, 4_194_319);
    assert_gpu_equals_cpu(&gpu, "4M boxes", &bounds);
}

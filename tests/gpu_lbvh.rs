//! The LBVH builder (Karras 2012): the CPU twin `accel::lbvh::build_lbvh` makes well-formed trees
//! whose closest hits equal brute force, on awkward inputs too (no, one, two or three
//! primitives, equal centroids, empty boxes, a flat set), and the GPU builder `gpu::lbvh` writes
//! the very same records and primitive order, bit for bit, every time.

mod bvh_support;

use std::time::Instant;

use caustica::accel::aabb::{Aabb, SlabRay};
use caustica::accel::bvh::{BinaryBvh, BinaryNodeKind, BinaryNodeRecord, NO_NODE};
use caustica::accel::lbvh::{build_lbvh, lbvh_centroid, lbvh_code, lbvh_frame};
use caustica::accel::primitives::intersect_triangle;
use caustica::gpu::encoder::Encoder;
use caustica::gpu::kernel::storage_buffer;
use caustica::gpu::lbvh::LbvhBuilder;
use caustica::gpu::prims::Primitives;
use caustica::gpu::{test_context, GpuContext};
use glam::Vec3;

use bvh_support::{
    assert_gpu_tree_equals_cpu, assert_leaves_in_order, assert_links_ranges_and_boxes,
    closest_brute_force, odd_box_sets, random_boxes, random_ray, random_triangles, triangle_box,
    words, Random,
};

/// The primitives' order is by Morton code, then by index.
fn assert_sorted_by_code_then_index(bvh: &BinaryBvh, bounds: &[Aabb]) {
    let frame = lbvh_frame(bounds);
    let key = |p: u32| (lbvh_code(lbvh_centroid(&bounds[p as usize]), &frame), p);
    for w in bvh.prim_order.windows(2) {
        assert!(key(w[0]) < key(w[1]), "order {} then {}", w[0], w[1]);
    }
}

/// The shape every builder's tree has, with leaf `k` at place `k`.
fn assert_well_formed(bvh: &BinaryBvh, bounds: &[Aabb]) {
    assert_links_ranges_and_boxes(bvh, bounds);
    assert_leaves_in_order(bvh, bounds);
}

#[test]
fn lbvh_trees_hold_every_primitive_once_and_nest_their_boxes_and_ranges() {
    let mut rng = Random(7);
    for n in [4, 5, 17, 64, 1000, 4097] {
        let bounds = random_boxes(&mut rng, n);
        let bvh = build_lbvh(&bounds);
        assert_well_formed(&bvh, &bounds);
        assert_sorted_by_code_then_index(&bvh, &bounds);
    }
}

#[test]
fn lbvh_closest_hits_on_random_triangles_equal_brute_force() {
    let mut rng = Random(11);
    let triangles = random_triangles(&mut rng, 3000);
    let bounds: Vec<Aabb> = triangles.iter().map(triangle_box).collect();
    let bvh = build_lbvh(&bounds);
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
fn lbvh_closest_hits_on_random_boxes_equal_brute_force() {
    let mut rng = Random(13);
    let bounds = random_boxes(&mut rng, 2000);
    let bvh = build_lbvh(&bounds);
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
fn no_primitives_give_no_nodes() {
    let bvh = build_lbvh(&[]);
    assert!(bvh.nodes.is_empty());
    assert!(bvh.prim_order.is_empty());
    assert!(bvh.to_records().is_empty());
}

#[test]
fn one_primitive_is_one_leaf_and_the_root() {
    let b = Aabb::new(Vec3::new(1.0, 2.0, 3.0), Vec3::new(4.0, 5.0, 6.0));
    let bvh = build_lbvh(&[b]);
    assert_eq!(bvh.prim_order, vec![0]);
    assert_eq!(bvh.nodes.len(), 1);
    assert_eq!(bvh.nodes[0].bounds, b);
    assert_eq!(
        bvh.nodes[0].kind,
        BinaryNodeKind::Leaf { first: 0, count: 1 }
    );
    assert_eq!(bvh.to_records()[0].parent, NO_NODE);
}

#[test]
fn two_and_three_primitives_make_a_root_over_their_leaves() {
    let b = |x: f32| Aabb::new(Vec3::splat(x), Vec3::splat(x + 1.0));
    let two = vec![b(9.0), b(0.0)];
    let bvh = build_lbvh(&two);
    assert_well_formed(&bvh, &two);
    assert_eq!(bvh.prim_order, vec![1, 0]);
    assert_eq!(
        bvh.nodes[0].kind,
        BinaryNodeKind::Inner { left: 1, right: 2 }
    );
    assert_eq!(
        bvh.nodes[0].bounds,
        Aabb::new(Vec3::ZERO, Vec3::splat(10.0))
    );

    let three = vec![b(0.0), b(1.0), b(9.0)];
    let bvh = build_lbvh(&three);
    assert_well_formed(&bvh, &three);
    assert_eq!(bvh.prim_order, vec![0, 1, 2]);
    // The two near boxes share the longer prefix: the root splits off the far one.
    assert_eq!(
        bvh.nodes[0].kind,
        BinaryNodeKind::Inner { left: 1, right: 4 }
    );
    assert_eq!(
        bvh.nodes[1].kind,
        BinaryNodeKind::Inner { left: 2, right: 3 }
    );
}

#[test]
fn equal_centroids_keep_index_order_and_split_by_index_bits() {
    let b = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
    for n in [2, 3, 37, 1024, 1000] {
        let bounds = vec![b; n];
        let bvh = build_lbvh(&bounds);
        assert_well_formed(&bvh, &bounds);
        assert_eq!(bvh.prim_order, (0..n as u32).collect::<Vec<_>>());
        // Splits at the highest differing bit of the positions: a balanced tree.
        let balanced = (n as f64).log2().ceil() as usize + 1;
        assert_eq!(bvh.depth(), balanced, "{n} equal boxes");
    }
}

#[test]
fn empty_boxes_stay_in_the_tree_with_their_centroid_at_the_origin() {
    let mut rng = Random(17);
    let mut bounds = random_boxes(&mut rng, 200);
    for i in (0..bounds.len()).step_by(3) {
        bounds[i] = Aabb::EMPTY;
    }
    // Empty on one axis only.
    bounds[1] = Aabb::new(Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 1.0));
    let bvh = build_lbvh(&bounds);
    assert_well_formed(&bvh, &bounds);
    assert_sorted_by_code_then_index(&bvh, &bounds);
    assert_eq!(lbvh_centroid(&bounds[0]), Vec3::ZERO);
    let all_empty = vec![Aabb::EMPTY; 5];
    let bvh = build_lbvh(&all_empty);
    assert_well_formed(&bvh, &all_empty);
    assert_eq!(bvh.nodes[0].bounds, Aabb::EMPTY);
}

#[test]
fn a_flat_set_gets_no_cells_on_its_flat_axis() {
    let mut rng = Random(19);
    let bounds: Vec<Aabb> = (0..500)
        .map(|_| {
            let (x, y) = (rng.range(0.0, 10.0), rng.range(0.0, 10.0));
            Aabb::new(Vec3::new(x, y, 2.0), Vec3::new(x + 0.1, y + 0.1, 2.0))
        })
        .collect();
    let frame = lbvh_frame(&bounds);
    assert_eq!(frame.scale.z, 0.0);
    assert!(frame.scale.x > 0.0 && frame.scale.y > 0.0);
    let bvh = build_lbvh(&bounds);
    assert_well_formed(&bvh, &bounds);
    assert_sorted_by_code_then_index(&bvh, &bounds);
    assert_eq!(bvh.nodes[0].bounds.min.z, 2.0);
    assert_eq!(bvh.nodes[0].bounds.max.z, 2.0);
}

// ---- GPU against the CPU twin ----

/// The adapter's own primitives and the LBVH kernels.
fn gpu() -> Option<(GpuContext, Primitives, LbvhBuilder)> {
    let ctx = test_context()?;
    let prims = Primitives::new(&ctx).expect("the primitive kernels build");
    let lbvh = LbvhBuilder::new(&ctx).expect("the LBVH kernels build");
    Some((ctx, prims, lbvh))
}

/// The GPU's records and order equal the CPU twin's, every word.
fn assert_gpu_equals_cpu(
    (ctx, prims, lbvh): &(GpuContext, Primitives, LbvhBuilder),
    what: &str,
    bounds: &[Aabb],
) -> Vec<BinaryNodeRecord> {
    let gpu = |b: &[Aabb]| lbvh.build_vec(ctx, prims, b).expect("the GPU build runs");
    assert_gpu_tree_equals_cpu(what, bounds, gpu, build_lbvh)
}

#[test]
fn gpu_lbvh_equals_the_cpu_twin_bit_for_bit_on_random_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(23);
    for n in [0, 1, 2, 3, 5, 64, 1000, 100_003] {
        let bounds = random_boxes(&mut rng, n);
        assert_gpu_equals_cpu(&gpu, &format!("{n} random boxes"), &bounds);
    }
}

#[test]
fn gpu_lbvh_equals_the_cpu_twin_on_equal_empty_flat_and_odd_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(29);
    for (what, bounds) in odd_box_sets(&mut rng) {
        assert_gpu_equals_cpu(&gpu, what, &bounds);
    }
}

#[test]
fn gpu_lbvh_keeps_nan_bounds_bit_for_bit_and_survives_boxes_holding_its_pending_bits() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(31);
    let mut bounds = random_boxes(&mut rng, 500);
    bounds[10].min.y = f32::NAN;
    bounds[20].max.x = f32::from_bits(0x7fc0_1234);
    assert_gpu_equals_cpu(&gpu, "NaN coordinates", &bounds);
    // The bits the bounds kernel marks unwritten words with, in a real box: it waits, then
    // joins the leaves itself.
    let mut bounds = random_boxes(&mut rng, 100);
    bounds[42].min.x = f32::from_bits(0xff8a_5a5a);
    assert_gpu_equals_cpu(&gpu, "pending bits in a box", &bounds);
}

#[test]
fn gpu_lbvh_builds_the_same_records_every_time() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(37);
    let bounds = random_boxes(&mut rng, 30_011);
    let first = assert_gpu_equals_cpu(&gpu, "first build", &bounds);
    let second = assert_gpu_equals_cpu(&gpu, "second build", &bounds);
    assert_eq!(words(&first), words(&second));
}

/// A mesh-sized build (871K triangles' boxes, as the bunny scenes have); slow on lavapipe, so
/// only on request (`--ignored`) or on a real GPU.
#[test]
#[ignore = "large: run with --ignored on a real GPU"]
fn gpu_lbvh_equals_the_cpu_twin_on_871k_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(41);
    let bounds = random_boxes(&mut rng, 871_306);
    assert_gpu_equals_cpu(&gpu, "871K boxes", &bounds);
    report_build_times(&gpu, &bounds);
}

/// Prints the device time of builds over `bounds` (the boxes uploaded once; each build recorded,
/// submitted and waited for, nothing read back).
fn report_build_times((ctx, prims, lbvh): &(GpuContext, Primitives, LbvhBuilder), bounds: &[Aabb]) {
    let words: Vec<[f32; 4]> = bounds
        .iter()
        .flat_map(|b| [b.min.extend(0.0).to_array(), b.max.extend(0.0).to_array()])
        .collect();
    let boxes = storage_buffer(ctx, "boxes", &words).expect("the boxes upload");
    let frame = lbvh_frame(bounds);
    let mut times = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        let mut encoder = Encoder::new(ctx);
        let built = lbvh
            .record_build(
                ctx,
                &mut encoder,
                prims,
                &boxes,
                bounds.len() as u32,
                &frame,
            )
            .expect("the build records");
        let index = ctx.submit([encoder.finish()]);
        ctx.wait_for(index).expect("the build runs");
        times.push(start.elapsed().as_secs_f64() * 1e3);
        drop(built);
        ctx.recycle_buffers().expect("the pool recycles");
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "{} primitives: build {:.2} ms (median of 7, fastest {:.2} ms)",
        bounds.len(),
        times[3],
        times[0]
    );
}

/// 16M boxes: the grid spills into y (65536 workgroups of 256 exceed one dimension).
#[test]
#[ignore = "large: run with --ignored on a real GPU with 2 GB bindings"]
fn gpu_lbvh_equals_the_cpu_twin_on_16m_boxes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = Random(43);
    let bounds = random_boxes(&mut rng, 16_777_259);
    assert_gpu_equals_cpu(&gpu, "16M boxes", &bounds);
    report_build_times(&gpu, &bounds);
}

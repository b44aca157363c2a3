//! The two-level grid's GPU build (`gpu::grid`, paper 001's Algorithm 1 on the device) gives
//! the words of its CPU twin `accel::grid::build_grid`, word for word, on random boxes of
//! several sizes, a teapot in a stadium, boxes with empty and non-finite ones among them, a
//! flat set and an empty one, and the same `GridTooLarge` error where the references would
//! exceed the limit.

mod bvh_support;

use caustica::accel::aabb::Aabb;
use caustica::accel::grid::{build_grid, refs_limit, GridTooLarge};
use caustica::gpu::grid::{GpuGridBuild, GridBuilder};
use caustica::gpu::prims::Primitives;
use caustica::gpu::{test_context, GpuContext};
use glam::Vec3;

use bvh_support::{random_boxes, Random};

fn setup() -> Option<(GpuContext, Primitives, GridBuilder)> {
    let ctx = test_context()?;
    let prims = Primitives::new(&ctx).expect("the primitive kernels build");
    let grid = GridBuilder::new(&ctx).expect("the grid kernels build");
    Some((ctx, prims, grid))
}

fn gpu_build(
    (ctx, prims, grid): &(GpuContext, Primitives, GridBuilder),
    boxes: &[Aabb],
) -> Result<GpuGridBuild, GridTooLarge> {
    grid.build_vec(ctx, prims, boxes)
        .expect("the GPU build runs")
}

/// The GPU build's references, or its error (not its words: a failure prints little).
fn gpu_refs(
    gpu: &(GpuContext, Primitives, GridBuilder),
    boxes: &[Aabb],
) -> Result<usize, GridTooLarge> {
    gpu_build(gpu, boxes).map(|b| b.refs)
}

/// The GPU's words equal the CPU twin's, every one (the first difference is named).
fn assert_gpu_equals_cpu(gpu: &(GpuContext, Primitives, GridBuilder), what: &str, boxes: &[Aabb]) {
    let cpu = build_grid(boxes).unwrap_or_else(|e| panic!("{what}: the CPU build fails: {e:?}"));
    let got =
        gpu_build(gpu, boxes).unwrap_or_else(|e| panic!("{what}: the GPU build fails: {e:?}"));
    assert_eq!(got.refs, cpu.refs, "{what}: references");
    assert_eq!(got.words.len(), cpu.words.len(), "{what}: words");
    if let Some(at) = (0..cpu.words.len()).find(|&i| got.words[i] != cpu.words[i]) {
        panic!(
            "{what}: word {at} of {} is {} on the GPU, {} on the CPU (header {:?})",
            cpu.words.len(),
            got.words[at],
            cpu.words[at],
            &cpu.words[..16]
        );
    }
    // The builds say something: references in leaves of more than one cell.
    if cpu.top_pairs > 0 {
        assert!(
            cpu.leaves > 0 && cpu.refs >= cpu.top_pairs,
            "{what}: {cpu:?}"
        );
    }
}

#[test]
fn two_level_grid_gpu_words_equal_the_cpu_twins_on_random_boxes() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(17);
    for n in [1, 2, 7, 1000, 20000] {
        let boxes = random_boxes(&mut rng, n);
        assert_gpu_equals_cpu(&gpu, &format!("{n} random boxes"), &boxes);
    }
    // Tiny boxes packed densely: several primitives per leaf, leaves of many cells.
    let boxes: Vec<Aabb> = (0..5000)
        .map(|_| {
            let c = rng.point(0.0, 1.0);
            Aabb::new(c, c + Vec3::splat(0.002))
        })
        .collect();
    assert_gpu_equals_cpu(&gpu, "dense tiny boxes", &boxes);
}

#[test]
fn two_level_grid_gpu_words_equal_the_cpu_twins_on_a_teapot_in_a_stadium() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(23);
    // A few boxes across the whole stadium, thousands of tiny ones in one corner.
    let mut boxes: Vec<Aabb> = (0..4)
        .map(|i| {
            let lo = Vec3::splat(-1000.0 + i as f32);
            Aabb::new(lo, lo + Vec3::new(2000.0, 2000.0 - 3.0 * i as f32, 2000.0))
        })
        .collect();
    boxes.extend((0..6000).map(|_| {
        let c = rng.point(990.0, 1000.0);
        Aabb::new(c, c + Vec3::splat(rng.range(0.001, 0.05)))
    }));
    // The huge ones interleaved with the small ones too, not only first.
    boxes.insert(3000, Aabb::new(Vec3::splat(-999.0), Vec3::splat(999.0)));
    let cpu = build_grid(&boxes).expect("the CPU build");
    let dense_cells = (0..cpu.top_cells)
        .filter(|&c| cpu.words[16 + 2 * c + 1] & 0xff > 4)
        .count();
    assert!(dense_cells >= 1, "no top cell was divided finely");
    assert_gpu_equals_cpu(&gpu, "teapot in a stadium", &boxes);
}

#[test]
fn two_level_grid_gpu_skips_empty_and_non_finite_boxes_as_the_cpu_twin_does() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(29);
    let mut boxes = random_boxes(&mut rng, 600);
    let odd = [
        Aabb::EMPTY,
        Aabb::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ONE),
        Aabb::new(Vec3::ZERO, Vec3::new(1.0, f32::NAN, 1.0)),
        Aabb::new(Vec3::ZERO, Vec3::new(1.0, 1.0, f32::INFINITY)),
        Aabb::new(Vec3::splat(f32::NEG_INFINITY), Vec3::ZERO),
        Aabb::new(Vec3::new(2.0, 0.0, 0.0), Vec3::new(1.0, 1.0, 1.0)),
        // Flat and point boxes are placed; -0 and +0 are equal, not empty.
        Aabb::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(-0.0, 1.0, 1.0)),
        Aabb::new(Vec3::splat(3.0), Vec3::splat(3.0)),
        // A subnormal lower corner above a zero upper one: empty on the host.
        Aabb::new(Vec3::new(1e-40, 0.0, 0.0), Vec3::new(0.0, 1.0, 1.0)),
    ];
    for (k, b) in odd.iter().enumerate() {
        boxes.insert(k * 60, *b);
        boxes.push(*b);
    }
    assert_gpu_equals_cpu(&gpu, "boxes with odd ones", &boxes);
    // Nothing placeable, and nothing at all: a grid of one empty cell.
    assert_gpu_equals_cpu(&gpu, "odd boxes only", &odd[..6]);
    assert_gpu_equals_cpu(&gpu, "no boxes", &[]);
}

#[test]
fn two_level_grid_gpu_words_equal_the_cpu_twins_on_a_flat_set() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(31);
    let boxes: Vec<Aabb> = (0..3000)
        .map(|_| {
            let c = rng.point(-20.0, 20.0);
            let lo = Vec3::new(c.x, c.y, 5.0);
            Aabb::new(
                lo,
                lo + Vec3::new(rng.range(0.0, 0.6), rng.range(0.0, 0.6), 0.0),
            )
        })
        .collect();
    let cpu = build_grid(&boxes).expect("the CPU build");
    assert_eq!(cpu.words[8], 1, "one top cell along z");
    assert!(
        cpu.words[6] > 4 && cpu.words[7] > 4,
        "{:?}",
        &cpu.words[6..9]
    );
    assert_gpu_equals_cpu(&gpu, "flat set", &boxes);
}

#[test]
fn two_level_grid_gpu_refuses_what_the_cpu_twin_refuses_with_the_same_error() {
    let Some(gpu) = setup() else { return };
    // Thin boxes that each span the grid along x and y: every top cell holds every box, far
    // more top pairs than the limit.
    let slabs: Vec<Aabb> = (0..3000)
        .map(|i| {
            let t = i as f32 / 3000.0;
            Aabb::new(Vec3::new(0.0, 0.0, t), Vec3::new(1.0, 1.0, t + 1e-4))
        })
        .collect();
    let cpu = build_grid(&slabs).expect_err("too many top pairs");
    assert_eq!(cpu.limit, refs_limit(3000));
    assert_eq!(gpu_refs(&gpu, &slabs), Err(cpu), "slabs");
    // Top pairs within the limit, references beyond it: a few boxes over the whole grid in
    // top cells that many small boxes divide finely.
    let mut rng = Random(37);
    let mut boxes: Vec<Aabb> = (0..2000)
        .map(|_| {
            let c = rng.point(0.0, 100.0);
            Aabb::new(c, c + Vec3::splat(0.01))
        })
        .collect();
    let mut refused = None;
    for _ in 0..40 {
        boxes.push(Aabb::new(Vec3::splat(0.0), Vec3::splat(100.0)));
        if let Err(e) = build_grid(&boxes) {
            refused = Some(e);
            break;
        }
    }
    let cpu = refused.expect("some number of whole-grid boxes exceeds the limit");
    assert_eq!(gpu_refs(&gpu, &boxes), Err(cpu), "whole-grid boxes");
    // One box fewer is built, and equal.
    boxes.pop();
    assert_gpu_equals_cpu(&gpu, "one whole-grid box fewer", &boxes);
}

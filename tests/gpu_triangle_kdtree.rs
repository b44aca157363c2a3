//! The triangle kd-tree's GPU build (`gpu::tri_kdtree`, paper 002's two stages on the device)
//! gives the words of its CPU twin `accel::tri_kdtree::build_kdtree`, word for word, on random
//! boxes of several sizes, a teapot in a stadium, boxes with empty and non-finite ones among
//! them, a flat set, coincident boxes and the bunny's triangles.

mod accel_support;
mod bvh_support;

use caustica::accel::aabb::Aabb;
use caustica::accel::tri_kdtree::{build_kdtree, KdBuild};
use caustica::gpu::prims::Primitives;
use caustica::gpu::test_context;
use caustica::gpu::tri_kdtree::{GpuKdBuild, KdTreeBuilder, SmallLogs};
use caustica::gpu::GpuContext;
use glam::Vec3;

use bvh_support::{random_boxes, Random};

fn setup() -> Option<(GpuContext, Primitives, KdTreeBuilder)> {
    let ctx = test_context()?;
    let prims = Primitives::new(&ctx).expect("the primitive kernels build");
    let kd = KdTreeBuilder::new(&ctx).expect("the kd-tree kernels build");
    Some((ctx, prims, kd))
}

/// The GPU's words equal the CPU twin's, every one (the first difference is named), with the
/// small stage's logs in the default pool, where every small root is replayed; returns the
/// twin's build.
fn assert_gpu_equals_cpu(
    gpu: &(GpuContext, Primitives, KdTreeBuilder),
    what: &str,
    boxes: &[Aabb],
) -> KdBuild {
    let (cpu, got) = assert_gpu_equals_cpu_with(gpu, what, boxes, SmallLogs::Pooled);
    assert_eq!(
        (got.replayed_roots as usize, got.measured_again_roots),
        (cpu.small_roots, 0),
        "{what}: every small root replays its log"
    );
    cpu
}

/// The GPU's words, built with the small stage's logs in `logs`, equal the CPU twin's.
fn assert_gpu_equals_cpu_with(
    (ctx, prims, kd): &(GpuContext, Primitives, KdTreeBuilder),
    what: &str,
    boxes: &[Aabb],
    logs: SmallLogs,
) -> (KdBuild, GpuKdBuild) {
    let cpu = build_kdtree(boxes).unwrap_or_else(|e| panic!("{what}: the CPU build fails: {e:?}"));
    let got = kd
        .build_vec_with(ctx, prims, boxes, logs)
        .expect("the GPU build runs")
        .unwrap_or_else(|e| panic!("{what}: the GPU build fails: {e:?}"));
    assert_eq!(
        got.words.len(),
        cpu.words.len(),
        "{what}: words (header {:?})",
        &cpu.words[..16]
    );
    if let Some(at) = (0..cpu.words.len()).find(|&i| got.words[i] != cpu.words[i]) {
        panic!(
            "{what}: word {at} of {} is {:#x} on the GPU, {:#x} on the CPU (header {:?})",
            cpu.words.len(),
            got.words[at],
            cpu.words[at],
            &cpu.words[..16]
        );
    }
    assert_eq!(got.depth, cpu.depth, "{what}: depth");
    (cpu, got)
}

#[test]
fn triangle_kdtree_gpu_words_equal_the_cpu_twins_on_random_boxes() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(17);
    for n in [1, 2, 7, 64, 65, 1000, 20000] {
        let boxes = random_boxes(&mut rng, n);
        let cpu = assert_gpu_equals_cpu(&gpu, &format!("{n} random boxes"), &boxes);
        if n > 64 {
            assert!(cpu.large_nodes > 1 && cpu.small_roots > 1, "{n}: {cpu:?}");
        }
    }
    // Tiny boxes packed densely: deep subtrees of the exact SAH.
    let boxes: Vec<Aabb> = (0..5000)
        .map(|_| {
            let c = rng.point(0.0, 1.0);
            Aabb::new(c, c + Vec3::splat(0.002))
        })
        .collect();
    assert_gpu_equals_cpu(&gpu, "dense tiny boxes", &boxes);
}

#[test]
fn triangle_kdtree_gpu_words_equal_the_cpu_twins_on_a_teapot_in_a_stadium() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(23);
    // A few boxes across the whole stadium, thousands of tiny ones in one corner: empty-space
    // cuts, then medians.
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
    boxes.insert(3000, Aabb::new(Vec3::splat(-999.0), Vec3::splat(999.0)));
    assert_gpu_equals_cpu(&gpu, "teapot in a stadium", &boxes);
}

#[test]
fn triangle_kdtree_gpu_skips_empty_and_non_finite_boxes_as_the_cpu_twin_does() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(29);
    let mut boxes = random_boxes(&mut rng, 600);
    let odd = [
        Aabb::EMPTY,
        Aabb::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ONE),
        Aabb::new(Vec3::ZERO, Vec3::new(1.0, 1.0, f32::INFINITY)),
        Aabb::new(Vec3::new(2.0, 0.0, 0.0), Vec3::new(1.0, 1.0, 1.0)),
        // Flat and point boxes are placed; -0 and +0 are equal, not empty.
        Aabb::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(-0.0, 1.0, 1.0)),
        Aabb::new(Vec3::splat(3.0), Vec3::splat(3.0)),
    ];
    for (k, b) in odd.iter().enumerate() {
        boxes.insert(k * 60, *b);
        boxes.push(*b);
    }
    assert_gpu_equals_cpu(&gpu, "boxes with odd ones", &boxes);
    assert_gpu_equals_cpu(&gpu, "odd boxes only", &odd[..4]);
    assert_gpu_equals_cpu(&gpu, "no boxes", &[]);
}

#[test]
fn triangle_kdtree_gpu_words_equal_the_cpu_twins_on_flat_and_coincident_sets() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(31);
    // A floor of 3000 small quads' boxes in one plane.
    let flat: Vec<Aabb> = (0..3000)
        .map(|_| {
            let c = Vec3::new(rng.range(-5.0, 5.0), 0.0, rng.range(-5.0, 5.0));
            Aabb::new(c, c + Vec3::new(0.05, 0.0, 0.05))
        })
        .collect();
    assert_gpu_equals_cpu(&gpu, "a flat set", &flat);
    // 500 copies of one box, among 500 others: leaves of more than 64 where no split helps.
    let mut same: Vec<Aabb> = (0..500).map(|_| Aabb::new(Vec3::ZERO, Vec3::ONE)).collect();
    same.extend(random_boxes(&mut rng, 500));
    let cpu = assert_gpu_equals_cpu(&gpu, "coincident boxes", &same);
    assert!(cpu.refs >= 1000, "{cpu:?}");
}

#[test]
fn triangle_kdtree_gpu_words_equal_the_cpu_twins_on_the_bunny() {
    let Some(bunny) = accel_support::bunny() else {
        return;
    };
    let Some(gpu) = setup() else { return };
    let p = |i: u32| bunny.positions[i as usize];
    let boxes: Vec<Aabb> = bunny
        .triangles
        .iter()
        .map(|t| Aabb::from_points([p(t[0]), p(t[1]), p(t[2])]))
        .collect();
    assert_gpu_equals_cpu(&gpu, "the bunny", &boxes);
}

#[test]
fn triangle_kdtree_gpu_roots_without_a_log_are_measured_again_to_the_same_words() {
    let Some(gpu) = setup() else { return };
    let mut rng = Random(37);
    let boxes = random_boxes(&mut rng, 20000);
    let (cpu, none) = assert_gpu_equals_cpu_with(&gpu, "no pool", &boxes, SmallLogs::Words(0));
    assert!(cpu.small_roots > 100, "{cpu:?}");
    assert_eq!(
        (none.replayed_roots, none.measured_again_roots as usize),
        (0, cpu.small_roots)
    );
    // A pool of a few words: the first roots to finish are replayed, the rest measured again.
    let (_, some) = assert_gpu_equals_cpu_with(&gpu, "a small pool", &boxes, SmallLogs::Words(300));
    assert!(
        some.replayed_roots > 0 && some.measured_again_roots > 0,
        "{} replayed, {} measured again",
        some.replayed_roots,
        some.measured_again_roots
    );
    assert_eq!(
        (some.replayed_roots + some.measured_again_roots) as usize,
        cpu.small_roots
    );
}

#[test]
fn triangle_kdtree_gpu_words_without_subgroups_equal_the_cpu_twins() {
    let Some((ctx, prims, _)) = setup() else {
        return;
    };
    let kd = KdTreeBuilder::with_subgroups(&ctx, false).expect("the kd-tree kernels build");
    let gpu = (ctx, prims, kd);
    let mut rng = Random(41);
    for n in [65, 5000] {
        let boxes = random_boxes(&mut rng, n);
        assert_gpu_equals_cpu(&gpu, &format!("{n} random boxes, no subgroups"), &boxes);
        assert_gpu_equals_cpu_with(
            &gpu,
            &format!("{n} random boxes, no subgroups, measured again"),
            &boxes,
            SmallLogs::Words(0),
        );
    }
}

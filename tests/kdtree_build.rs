//! The point kd-tree builders (CPU twin and GPU, with and without subgroups) write valid trees
//! (every split separates its children, every point sits in exactly one leaf inside its box)
//! on random, clustered, flat and degenerate point sets, the validator rejects broken trees,
//! and the GPU writes the same words as the CPU twin, run after run.

use caustica::accel::kdtree::{
    build_point_kdtree, validate_point_kdtree, KdTreeShape, PointKdTree, KD_INDEX_MASK, KD_LEAF,
    KD_SMALL_NODE,
};

/// A small deterministic generator (64-bit LCG, upper bits).
struct Random(u64);

impl Random {
    fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }
    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f32 {
        let u = self.unit().max(1e-7);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }
}

fn uniform(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut r = Random(seed);
    (0..n)
        .map(|_| {
            [
                r.unit() * 10.0 - 5.0,
                r.unit() * 4.0,
                r.unit() * 2.0 + 1.0,
                0.0,
            ]
        })
        .collect()
}

/// Gaussian blobs of very different sizes in a large, mostly empty box.
fn clustered(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut r = Random(seed);
    let centres: Vec<([f32; 3], f32)> = (0..12)
        .map(|i| {
            let c = [r.unit() * 100.0, r.unit() * 100.0, r.unit() * 100.0];
            (c, 0.01 * 4f32.powi(i % 4))
        })
        .collect();
    (0..n)
        .map(|_| {
            let (c, s) = centres[(r.next_u32() % 12) as usize];
            [
                c[0] + s * r.normal(),
                c[1] + s * r.normal(),
                c[2] + s * r.normal(),
                1.0,
            ]
        })
        .collect()
}

/// Points on the plane y = 2 (and a tilted copy on x + z = 1).
fn planar(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut r = Random(seed);
    (0..n)
        .map(|i| {
            let (u, v) = (r.unit(), r.unit());
            if i % 2 == 0 {
                [u, 2.0, v, 0.0]
            } else {
                [u, v, 1.0 - u, 0.0]
            }
        })
        .collect()
}

/// Points on one line along the diagonal.
fn linear(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut r = Random(seed);
    (0..n)
        .map(|_| {
            let t = r.unit();
            [t, 2.0 * t, -t, 0.0]
        })
        .collect()
}

/// Many copies of a few points (and a handful of distinct ones).
fn duplicates(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut r = Random(seed);
    let few = uniform(5, seed + 1);
    (0..n)
        .map(|i| {
            if i % 97 == 0 {
                [r.unit(), r.unit(), r.unit(), 0.0]
            } else {
                few[(r.next_u32() % 5) as usize]
            }
        })
        .collect()
}

fn all_equal(n: usize) -> Vec<[f32; 4]> {
    vec![[0.5, -1.25, 3.0, 0.0]; n]
}

/// The named point sets every builder is checked on; `large` adds the 200k-point set.
fn point_sets(large: bool) -> Vec<(String, Vec<[f32; 4]>)> {
    let t = KD_SMALL_NODE as usize;
    let mut sets = vec![
        ("0 points".to_string(), Vec::new()),
        ("1 point".to_string(), uniform(1, 1)),
        ("2 points".to_string(), uniform(2, 2)),
        ("2 equal points".to_string(), all_equal(2)),
        (format!("T = {t} points"), uniform(t, 3)),
        (format!("T + 1 = {} points", t + 1), uniform(t + 1, 4)),
        ("T + 1 equal points".to_string(), all_equal(t + 1)),
        ("1000 uniform".to_string(), uniform(1000, 5)),
        ("10k uniform".to_string(), uniform(10_000, 6)),
        ("10k clustered".to_string(), clustered(10_000, 7)),
        ("5000 on planes".to_string(), planar(5000, 8)),
        ("5000 on a line".to_string(), linear(5000, 9)),
        ("3000 equal".to_string(), all_equal(3000)),
        ("8000 duplicates".to_string(), duplicates(8000, 10)),
    ];
    if large {
        sets.push(("200k uniform".to_string(), uniform(200_000, 11)));
        sets.push(("200k clustered".to_string(), clustered(200_000, 12)));
    }
    sets
}

/// Validates `tree` over `points` and checks that its recorded shape agrees with the walk.
fn check_valid(name: &str, tree: &PointKdTree, points: &[[f32; 4]]) -> KdTreeShape {
    let shape = validate_point_kdtree(&tree.words, points)
        .unwrap_or_else(|e| panic!("{name}: invalid tree: {e}"));
    assert_eq!(tree.point_count as usize, points.len(), "{name}");
    assert_eq!(tree.node_count, shape.node_count, "{name}: node count");
    assert_eq!(tree.leaf_count, shape.leaf_count, "{name}: leaf count");
    assert_eq!(
        tree.max_branch_depth, shape.max_branch_depth,
        "{name}: branch depth"
    );
    shape
}

#[test]
fn cpu_trees_are_valid_on_every_point_set() {
    for (name, points) in point_sets(true) {
        let tree = build_point_kdtree(&points);
        let shape = check_valid(&name, &tree, &points);
        if points.len() > KD_SMALL_NODE as usize && name.contains("uniform") {
            // A balanced tree over uniform points: median splits above, VVH leaves below.
            let bound = (points.len() as f64).log2().ceil() as u32 + 2;
            assert!(shape.max_branch_depth <= bound, "{name}: {shape:?}");
            assert!(shape.max_leaf_size <= KD_SMALL_NODE, "{name}: {shape:?}");
        }
    }
}

#[test]
fn cpu_tree_over_equal_points_is_one_leaf_holding_all_of_them() {
    let points = all_equal(3000);
    let tree = build_point_kdtree(&points);
    let shape = check_valid("equal", &tree, &points);
    assert_eq!(shape.max_leaf_size, 3000);
    assert_eq!(shape.max_branch_depth, 0);
}

#[test]
fn cpu_tree_over_no_points_is_one_empty_leaf() {
    let tree = build_point_kdtree(&[]);
    assert_eq!(tree.words, vec![KD_LEAF]);
    check_valid("empty", &tree, &[]);
}

#[test]
fn cpu_tree_cuts_empty_space_off_clustered_points() {
    let points = clustered(10_000, 13);
    let tree = build_point_kdtree(&points);
    let shape = check_valid("clustered", &tree, &points);
    assert!(shape.empty_leaf_count > 0, "{shape:?}");
}

#[test]
fn cpu_tree_is_the_same_on_every_run() {
    let points = clustered(20_000, 14);
    assert_eq!(build_point_kdtree(&points), build_point_kdtree(&points));
}

#[test]
fn cpu_tree_stays_valid_with_non_finite_coordinates() {
    let mut points = uniform(500, 15);
    points[3] = [f32::NAN, 0.0, 0.0, 0.0];
    points[7] = [f32::INFINITY, f32::NEG_INFINITY, 1.0, 0.0];
    points[9] = [-0.0, 1e-42, f32::MAX, 0.0];
    let tree = build_point_kdtree(&points);
    check_valid("non-finite", &tree, &points);
}

/// The validator is known to bite: every kind of damage to a good tree is rejected.
#[test]
fn validator_rejects_corrupted_trees() {
    let points = uniform(2000, 16);
    let tree = build_point_kdtree(&points);
    assert!(validate_point_kdtree(&tree.words, &points).is_ok());
    let root_axis = tree.words[0] >> 30;
    assert_ne!(root_axis, 3, "the root of 2000 points is internal");
    let first_leaf = tree
        .words
        .iter()
        .position(|&w| w >> 30 == 3 && w & KD_INDEX_MASK > 1)
        .expect("a leaf with two points");

    let mut damaged: Vec<(&str, Vec<u32>)> = Vec::new();
    // The root's split moved so that it no longer separates its children.
    let mut w = tree.words.clone();
    let split = f32::from_bits(w[1]);
    w[1] = (split - 1.0).to_bits();
    damaged.push(("split moved", w));
    // The right child index off by one.
    let mut w = tree.words.clone();
    w[0] += 1;
    damaged.push(("right child moved", w));
    // A point index duplicated (and so another one missing).
    let mut w = tree.words.clone();
    w[first_leaf + 2] = w[first_leaf + 1];
    damaged.push(("index duplicated", w));
    // An index out of range.
    let mut w = tree.words.clone();
    w[first_leaf + 1] = points.len() as u32;
    damaged.push(("index out of range", w));
    // A trailing word, and a missing last word.
    let mut w = tree.words.clone();
    w.push(KD_LEAF);
    damaged.push(("trailing word", w));
    let mut w = tree.words.clone();
    w.pop();
    damaged.push(("truncated", w));
    // Two leaves' points swapped across the root split.
    let mut w = tree.words.clone();
    let right_leaf = (w[0] & KD_INDEX_MASK) as usize
        + w[(w[0] & KD_INDEX_MASK) as usize..]
            .iter()
            .position(|&x| x >> 30 == 3 && x & KD_INDEX_MASK > 0)
            .expect("a leaf on the right");
    w.swap(first_leaf + 1, right_leaf + 1);
    damaged.push(("points swapped across a split", w));
    // A leaf made oversized by merging: the root becomes one leaf over all points that are
    // not all equal.
    let mut w = vec![KD_LEAF | points.len() as u32];
    w.extend(0..points.len() as u32);
    damaged.push(("oversized leaf", w));
    for (what, words) in damaged {
        assert!(
            validate_point_kdtree(&words, &points).is_err(),
            "the validator accepted a tree with {what}"
        );
    }
    // Too deep: a chain of 65 branching nodes over 66 points on a line.
    let line: Vec<[f32; 4]> = (0..66).map(|i| [i as f32, 0.0, 0.0, 0.0]).collect();
    let mut chain = Vec::new();
    for i in 0..65u32 {
        let right = chain.len() as u32 + 4;
        chain.extend([right, (i as f32).to_bits(), KD_LEAF | 1, i]);
    }
    chain.extend([KD_LEAF | 1, 65]);
    let err = validate_point_kdtree(&chain, &line).expect_err("65 deep");
    assert!(err.contains("deep"), "{err}");
}

/// Every build kernel assembles and validates with naga, with and without subgroups (the
/// crate-wide shader test covers this too; this one fails on a kd-tree file alone).
#[test]
fn every_kdtree_build_kernel_validates_with_and_without_subgroups() {
    use caustica::gpu::shader;
    let kernels: Vec<_> = shader::kernel_files()
        .filter(|p| p.starts_with("kdtree/build_"))
        .collect();
    assert!(kernels.len() >= 7, "{kernels:?}");
    for path in kernels {
        for defines in [&[][..], &["SUBGROUPS"][..]] {
            let source = shader::assemble(path, defines).unwrap_or_else(|e| panic!("{e}"));
            shader::validate(path, &source).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

mod gpu {
    use super::*;
    use caustica::gpu::kdtree::{KdTreeBuilder, SmallStage};
    use caustica::gpu::{test_context, GpuContext, GpuError};

    /// Both kernel variants the context can run: with subgroups when it has them, and without.
    fn builders(ctx: &GpuContext) -> Vec<(&'static str, KdTreeBuilder)> {
        let mut out = vec![(
            "shared memory",
            KdTreeBuilder::new_without_subgroups(ctx).expect("kernels build"),
        )];
        if ctx.info.features.subgroups {
            out.push(("subgroups", KdTreeBuilder::new(ctx).expect("kernels build")));
        }
        out
    }

    fn check_identical_to_cpu(ctx: &GpuContext, sets: &[(String, Vec<[f32; 4]>)]) {
        for (variant, builder) in builders(ctx) {
            assert_eq!(builder.uses_subgroups, variant == "subgroups");
            for (name, points) in sets {
                let name = format!("{name} ({variant})");
                let gpu = builder
                    .build_vec(ctx, points)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                check_valid(&name, &gpu, points);
                let cpu = build_point_kdtree(points);
                if gpu.words != cpu.words {
                    let first = gpu
                        .words
                        .iter()
                        .zip(&cpu.words)
                        .position(|(g, c)| g != c)
                        .unwrap_or(gpu.words.len().min(cpu.words.len()));
                    panic!(
                        "{name}: GPU and CPU trees differ at word {first} of {} / {}",
                        gpu.words.len(),
                        cpu.words.len()
                    );
                }
                assert_eq!(gpu, cpu, "{name}");
            }
        }
    }

    /// Beside the words the build writes each leaf entry's point and index (what the searches
    /// read), as `leaf_points_of` finds them from the words and the points.
    #[test]
    fn gpu_builds_write_each_leaf_entrys_point_and_index_beside_the_words() {
        let Some(ctx) = test_context() else { return };
        let builder = KdTreeBuilder::new(&ctx).expect("kernels build");
        for (name, points) in point_sets(false) {
            let buffer = caustica::gpu::kernel::storage_buffer(&ctx, "points", &points).unwrap();
            let tree = builder
                .build(&ctx, &buffer, points.len() as u32)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let count = tree.counts(&ctx).unwrap().word_count as usize;
            let words: Vec<u32> =
                caustica::gpu::kernel::read_buffer(&ctx, &tree.words, count).unwrap();
            let got: Vec<[f32; 4]> =
                caustica::gpu::kernel::read_buffer(&ctx, &tree.leaf_points, count).unwrap();
            let (want, _, _) = caustica::gpu::kdtree::leaf_points_of(&words, &points);
            // Compared as bits (the index lives in w's bits; NaN coordinates are kept).
            let bits = |v: [f32; 4]| v.map(f32::to_bits);
            let (mut w, mut entries) = (0usize, 0usize);
            while w < count {
                if words[w] >> 30 != 3 {
                    w += 2;
                    continue;
                }
                let n = (words[w] & KD_INDEX_MASK) as usize;
                for e in w + 1..w + 1 + n {
                    let i = words[e];
                    let p = points[i as usize];
                    let expected = bits([p[0], p[1], p[2], f32::from_bits(i)]);
                    assert_eq!(bits(got[e]), expected, "{name}: GPU, word {e}");
                    assert_eq!(bits(want[e]), expected, "{name}: CPU twin, word {e}");
                    entries += 1;
                }
                w += 1 + n;
            }
            assert_eq!(entries, points.len(), "{name}: every point in one leaf");
        }
    }

    #[test]
    fn gpu_trees_are_valid_and_identical_to_the_cpu_twin_with_and_without_subgroups() {
        let Some(ctx) = test_context() else { return };
        check_identical_to_cpu(&ctx, &point_sets(false));
    }

    #[test]
    fn gpu_trees_over_200k_points_are_valid_and_identical_to_the_cpu_twin() {
        let Some(ctx) = test_context() else { return };
        let sets = vec![
            ("200k uniform".to_string(), uniform(200_000, 11)),
            ("200k clustered".to_string(), clustered(200_000, 12)),
        ];
        check_identical_to_cpu(&ctx, &sets);
    }

    #[test]
    fn gpu_trees_with_non_finite_coordinates_are_valid_and_identical_to_the_cpu_twin() {
        let Some(ctx) = test_context() else { return };
        let mut points = uniform(500, 15);
        points[3] = [f32::NAN, 0.0, 0.0, 0.0];
        points[7] = [f32::INFINITY, f32::NEG_INFINITY, 1.0, 0.0];
        points[9] = [-0.0, 1e-42, f32::MAX, 0.0];
        check_identical_to_cpu(&ctx, &[("non-finite".to_string(), points)]);
    }

    /// The partition's chained scan works out any block count that is not published yet, so
    /// its blocks may run in any order: taken last to first, every walk back meets unpublished
    /// blocks, and the words are still the CPU twin's.
    #[test]
    fn gpu_trees_are_identical_to_the_cpu_twin_when_partition_blocks_run_last_to_first() {
        let Some(ctx) = test_context() else { return };
        let builder = KdTreeBuilder::new_with_reversed_blocks(&ctx).expect("kernels build");
        let mut sets = point_sets(false);
        sets.push(("30k clustered".to_string(), clustered(30_000, 13)));
        for (name, points) in &sets {
            let gpu = builder
                .build_vec(&ctx, points)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            check_valid(name, &gpu, points);
            assert!(
                gpu.words == build_point_kdtree(points).words,
                "{name}: the GPU words differ from the CPU twin's"
            );
        }
    }

    /// The small stage's two kernels, an invocation per small root and a workgroup per small
    /// root, write the CPU twin's words (the default picks one by the point count, so most
    /// test builds would run only the workgroup one).
    #[test]
    fn gpu_trees_are_identical_to_the_cpu_twin_with_either_small_stage_kernel() {
        let Some(ctx) = test_context() else { return };
        let mut sets = point_sets(false);
        sets.push(("30k clustered".to_string(), clustered(30_000, 19)));
        for stage in [SmallStage::PerRoot, SmallStage::PerGroup] {
            let builder = KdTreeBuilder::new(&ctx)
                .expect("kernels build")
                .with_small_stage(stage);
            for (name, points) in &sets {
                let gpu = builder
                    .build_vec(&ctx, points)
                    .unwrap_or_else(|e| panic!("{stage:?}, {name}: {e}"));
                check_valid(name, &gpu, points);
                assert!(
                    gpu.words == build_point_kdtree(points).words,
                    "{stage:?}, {name}: the GPU words differ from the CPU twin's"
                );
            }
        }
    }

    /// The builder runs its last levels a workgroup per node exactly when the adapter has the
    /// workgroup memory for it: lavapipe's 32 KiB and the lent GPUs' 48 KiB do, so the tests
    /// above run that stage there.
    #[test]
    fn the_last_levels_run_a_workgroup_per_node_where_the_adapter_has_the_memory() {
        let Some(ctx) = test_context() else { return };
        let enough = ctx.info.max_compute_workgroup_storage_size as u64
            >= caustica::gpu::kdtree::MEDIUM_WORKGROUP_BYTES;
        for (variant, builder) in builders(&ctx) {
            assert_eq!(builder.has_medium_stage(), enough, "{variant}");
        }
    }

    #[test]
    fn gpu_build_is_bit_identical_across_runs() {
        let Some(ctx) = test_context() else { return };
        let points = clustered(30_000, 17);
        for (variant, builder) in builders(&ctx) {
            let first = builder.build_vec(&ctx, &points).expect("build");
            for _ in 0..2 {
                let again = builder.build_vec(&ctx, &points).expect("build");
                assert_eq!(first, again, "{variant}");
            }
        }
    }

    /// The GPU tree over the first n points of a longer buffer covers exactly those points.
    #[test]
    fn gpu_build_over_a_prefix_of_the_buffer_uses_only_the_first_n_points() {
        let Some(ctx) = test_context() else { return };
        let points = uniform(5000, 18);
        let buffer =
            caustica::gpu::kernel::storage_buffer(&ctx, "points", &points).expect("upload");
        let builder = KdTreeBuilder::new(&ctx).expect("kernels build");
        let tree = builder.build(&ctx, &buffer, 3000).expect("build");
        let count = tree.counts(&ctx).expect("counts").word_count as usize;
        let words: Vec<u32> =
            caustica::gpu::kernel::read_buffer(&ctx, &tree.words, count).expect("read back");
        validate_point_kdtree(&words, &points[..3000]).expect("valid over the prefix");
        assert_eq!(words, build_point_kdtree(&points[..3000]).words);
    }

    #[test]
    fn gpu_build_refuses_what_it_cannot_hold() {
        let Some(ctx) = test_context() else { return };
        let builder = KdTreeBuilder::new(&ctx).expect("kernels build");
        let small = caustica::gpu::kernel::storage_buffer(&ctx, "points", &uniform(10, 19))
            .expect("upload");
        // More points than the buffer holds.
        assert!(matches!(
            builder.build(&ctx, &small, 11),
            Err(GpuError::Device(_))
        ));
        // More points than a tree may hold.
        assert!(builder.build(&ctx, &small, u32::MAX).is_err());
        // A points buffer larger than one storage binding: refused with the binding error,
        // not a panic (the build binds the whole buffer).
        let limit = ctx.info.max_storage_buffer_binding_size;
        if limit + 4 <= ctx.info.max_buffer_size {
            let big = caustica::gpu::GpuBuffer::unpooled(ctx.device.create_buffer(
                &wgpu::BufferDescriptor {
                    label: Some("points over the binding limit"),
                    size: limit + 4,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                },
            ));
            let err = builder.build(&ctx, &big, 10).err();
            assert!(
                matches!(err, Some(GpuError::BufferTooLarge { .. })),
                "{err:?}"
            );
        }
    }
}

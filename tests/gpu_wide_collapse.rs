//! The GPU collapse of a binary BVH into the 8-wide compressed layout makes the tree the CPU
//! collapse makes (the same nodes, slots, grids, planes and leaf references, walked from the
//! root; only the order of nodes within a level may differ), for trees whose nodes come in any
//! order, for every leaf size, for empty, single, degenerate and deep inputs, and for many trees
//! collapsed in one batch.

use caustica::accel::aabb::Aabb;
use caustica::accel::bvh::{
    build_binary_bvh, BinaryBvh, BinaryNode, BinaryNodeKind, BuildSettings,
};
use caustica::accel::wide::{collapse_to_cwbvh, WideTree, WIDE_CHILDREN, WIDE_LEAF_MAX};
use caustica::gpu::test_context;
use caustica::gpu::wide_collapse::{collapse_capacity, WideCollapse};
use glam::Vec3;

struct Random(u64);

impl Random {
    fn unit(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

/// `n` boxes: small ones scattered over a large range, some long thin ones, and every 97th
/// empty.
fn boxes(n: usize, seed: u64) -> Vec<Aabb> {
    let mut r = Random(seed);
    (0..n)
        .map(|i| {
            if i % 97 == 96 {
                return Aabb::EMPTY;
            }
            let c = Vec3::new(
                r.unit() * 200.0 - 100.0,
                r.unit() * 5.0 + 1e3,
                r.unit() * 1e-2,
            );
            let h = if i % 13 == 0 {
                Vec3::new(r.unit() * 50.0, 1e-3, 0.0)
            } else {
                Vec3::new(r.unit(), r.unit() * 0.1, r.unit() * 1e-4)
            };
            Aabb::new(c - h, c + h)
        })
        .collect()
}

fn sah(bounds: &[Aabb], leaf: usize) -> BinaryBvh {
    build_binary_bvh(
        bounds,
        &BuildSettings {
            max_leaf_size: leaf,
            ..BuildSettings::default()
        },
    )
}

/// The same tree with its nodes renumbered at random (the root stays node 0), so that children
/// may come before their parents, as the LBVH numbers them.
fn shuffled(bvh: &BinaryBvh, seed: u64) -> BinaryBvh {
    let n = bvh.nodes.len();
    let mut r = Random(seed);
    let mut perm: Vec<u32> = (0..n as u32).collect();
    for i in (2..n).rev() {
        let j = 1 + ((r.unit() * i as f32) as usize).min(i - 1);
        perm.swap(i, j);
    }
    let mut nodes = bvh.nodes.clone();
    for (old, node) in bvh.nodes.iter().enumerate() {
        let mut node = *node;
        if let BinaryNodeKind::Inner { left, right } = node.kind {
            node.kind = BinaryNodeKind::Inner {
                left: perm[left as usize],
                right: perm[right as usize],
            };
        }
        nodes[perm[old] as usize] = node;
    }
    BinaryBvh {
        nodes,
        prim_order: bvh.prim_order.clone(),
    }
}

/// Walks both trees from their roots and fails at the first difference; returns the number of
/// references their leaf children hold.
fn assert_same_tree(cpu: &WideTree, gpu: &WideTree) -> usize {
    assert_eq!(cpu.nodes.len(), gpu.nodes.len(), "node count");
    assert_eq!(cpu.depth, gpu.depth, "depth");
    if cpu.nodes.is_empty() {
        return 0;
    }
    let mut stack = vec![(0u32, 0u32)];
    let mut visited = 0;
    let mut held = 0;
    while let Some((a, b)) = stack.pop() {
        visited += 1;
        let (x, y) = (&cpu.nodes[a as usize], &gpu.nodes[b as usize]);
        assert_eq!(
            x.origin.map(f32::to_bits),
            y.origin.map(f32::to_bits),
            "origin of {a}"
        );
        assert_eq!(x.exps_imask, y.exps_imask, "exponents and mask of {a}");
        assert_eq!(x.meta, y.meta, "meta of {a}");
        assert_eq!(x.q, y.q, "planes of {a}");
        for s in 0..WIDE_CHILDREN {
            if x.meta_of(s) == 0 {
                continue;
            }
            if x.is_inner(s) {
                stack.push((x.inner_child(s), y.inner_child(s)));
            } else {
                let ((fa, ca), (fb, cb)) = (x.leaf_prims(s), y.leaf_prims(s));
                assert_eq!(ca, cb);
                assert_eq!(
                    cpu.prim_order[fa as usize..(fa + ca) as usize],
                    gpu.prim_order[fb as usize..(fb + cb) as usize],
                    "references of slot {s} of node {a}"
                );
                held += ca;
            }
        }
    }
    assert_eq!(visited, cpu.nodes.len(), "every node reached from the root");
    held as usize
}

/// [`assert_same_tree`] for a GPU tree, which holds every reference it wrote.
fn assert_gpu_tree(cpu: &WideTree, gpu: &WideTree) {
    let held = assert_same_tree(cpu, gpu);
    assert_eq!(
        held,
        gpu.prim_order.len(),
        "every reference the GPU wrote is held"
    );
}

#[test]
fn gpu_collapse_makes_the_cpu_collapses_tree_for_every_leaf_size() {
    let Some(ctx) = test_context() else { return };
    let collapse = WideCollapse::new(&ctx).expect("kernels");
    for (n, seed) in [
        (2usize, 1u64),
        (3, 2),
        (9, 3),
        (100, 4),
        (1000, 5),
        (20_011, 6),
    ] {
        let bounds = boxes(n, seed);
        for leaf in 1..=WIDE_LEAF_MAX {
            let bvh = sah(&bounds, leaf);
            let cpu = collapse_to_cwbvh(&bvh, leaf);
            let (gpu, state) = collapse.collapse_vec(&ctx, &bvh, leaf).expect("collapse");
            assert!(state.nodes <= collapse_capacity(n as u32, leaf as u32));
            assert_gpu_tree(&cpu, &gpu);
        }
    }
}

#[test]
fn both_collapses_make_the_same_tree_whatever_the_order_of_the_binary_nodes() {
    let Some(ctx) = test_context() else { return };
    let collapse = WideCollapse::new(&ctx).expect("kernels");
    let bounds = boxes(5000, 11);
    let bvh = sah(&bounds, WIDE_LEAF_MAX);
    let reference = collapse_to_cwbvh(&bvh, WIDE_LEAF_MAX);
    for seed in [1, 2] {
        let mixed = shuffled(&bvh, seed);
        assert_ne!(mixed.nodes, bvh.nodes);
        assert_same_tree(&reference, &collapse_to_cwbvh(&mixed, WIDE_LEAF_MAX));
        let (gpu, _) = collapse
            .collapse_vec(&ctx, &mixed, WIDE_LEAF_MAX)
            .expect("collapse");
        assert_gpu_tree(&reference, &gpu);
    }
}

#[test]
fn gpu_collapse_of_empty_single_and_coincident_boxes() {
    let Some(ctx) = test_context() else { return };
    let collapse = WideCollapse::new(&ctx).expect("kernels");
    let point = Aabb::new(Vec3::splat(0.5), Vec3::splat(0.5));
    let denormal = Aabb::new(Vec3::splat(-1e-39), Vec3::new(1e-39, 1.0, 2.0));
    let cases: Vec<Vec<Aabb>> = vec![
        vec![],
        vec![Aabb::EMPTY; 4],
        vec![point],
        vec![point; 50],
        vec![denormal; 7],
        (0..40)
            .map(|i| Aabb::new(Vec3::new(i as f32, 0.0, 0.0), Vec3::new(i as f32, 0.0, 0.0)))
            .collect(),
    ];
    for bounds in cases {
        let bvh = sah(&bounds, WIDE_LEAF_MAX);
        let cpu = collapse_to_cwbvh(&bvh, WIDE_LEAF_MAX);
        let (gpu, _) = collapse
            .collapse_vec(&ctx, &bvh, WIDE_LEAF_MAX)
            .expect("collapse");
        assert_gpu_tree(&cpu, &gpu);
    }
}

/// A caterpillar of `n` leaves: inner node `i` holds leaf `i` and the rest of the chain, whose
/// box is wider than the leaf's, so each wide node opens the chain until it has seven leaves and
/// the chain: about `n / 7` levels. Leaf `k` is node `n - 1 + k`.
fn caterpillar(n: usize) -> BinaryBvh {
    let leaf_box = |k: usize| {
        Aabb::new(
            Vec3::new(k as f32, 0.0, 0.0),
            Vec3::new(k as f32 + 0.5, 1.0, 1.0),
        )
    };
    let mut nodes = vec![
        BinaryNode {
            bounds: Aabb::EMPTY,
            kind: BinaryNodeKind::Leaf { first: 0, count: 0 },
        };
        2 * n - 1
    ];
    for k in 0..n {
        nodes[n - 1 + k] = BinaryNode {
            bounds: leaf_box(k),
            kind: BinaryNodeKind::Leaf {
                first: k as u32,
                count: 1,
            },
        };
    }
    for i in (0..n - 1).rev() {
        let right = if i == n - 2 { 2 * n - 2 } else { i + 1 };
        nodes[i] = BinaryNode {
            bounds: leaf_box(i).union(nodes[right].bounds),
            kind: BinaryNodeKind::Inner {
                left: (n - 1 + i) as u32,
                right: right as u32,
            },
        };
    }
    BinaryBvh {
        nodes,
        prim_order: (0..n as u32).collect(),
    }
}

#[test]
fn a_tree_of_many_levels_collapses_like_the_cpu_collapse() {
    let Some(ctx) = test_context() else { return };
    let collapse = WideCollapse::new(&ctx).expect("kernels");
    let bvh = caterpillar(120);
    let cpu = collapse_to_cwbvh(&bvh, 1);
    assert!(cpu.depth > 12, "depth {}", cpu.depth);
    let (gpu, state) = collapse.collapse_vec(&ctx, &bvh, 1).expect("collapse");
    assert_eq!(state.depth as usize, cpu.depth);
    assert_gpu_tree(&cpu, &gpu);
}

#[test]
fn one_batch_collapses_each_of_its_trees_as_the_cpu_collapses_it_alone() {
    let Some(ctx) = test_context() else { return };
    let collapse = WideCollapse::new(&ctx).expect("kernels");
    // Trees of many sizes side by side in one chain of levels: empty ones, a single box, a
    // deep caterpillar, and trees whose nodes come in any order.
    let sizes_seeds = [
        (0usize, 1u64),
        (1, 2),
        (700, 3),
        (0, 4),
        (9, 5),
        (5000, 6),
        (64, 7),
    ];
    let mut bvhs: Vec<BinaryBvh> = sizes_seeds
        .iter()
        .map(|&(n, seed)| sah(&boxes(n, seed), 1))
        .collect();
    bvhs.push(caterpillar(60));
    bvhs.push(shuffled(&sah(&boxes(3000, 8), 1), 9));
    let refs: Vec<&BinaryBvh> = bvhs.iter().collect();
    let gpu = collapse.collapse_many(&ctx, &refs, 1).expect("collapse");
    assert_eq!(gpu.len(), bvhs.len());
    for (bvh, (tree, _)) in bvhs.iter().zip(&gpu) {
        assert_gpu_tree(&collapse_to_cwbvh(bvh, 1), tree);
    }
}

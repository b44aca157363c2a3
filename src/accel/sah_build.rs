//! The binned-SAH builder of paper 003 chapter 4 (Wald 2007's binning, split breadth-first on
//! the GPU) and its hybrid with the LBVH (section 4.7.1: the top levels split by Morton code,
//! the rest by the SAH). This is the plain CPU twin of the GPU builder in `gpu::sah_build`
//! (`shaders/bvh/sah_*.wgsl`), which writes the very same records.
//!
//! A node over the positions `first..first + count` of the primitive order (`count >= 2`) is
//! split in one of three ways, the first that applies:
//! - **Morton** (hybrid only): at depth below [`HYBRID_MORTON_DEPTH`], where the node's Morton
//!   codes differ, at the first position whose code has the highest differing bit set (the
//!   order starts as [`morton_order`], and Morton splits keep it, so the codes are sorted).
//! - **Middle**: at depth [`SAH_MAX_DEPTH`] or deeper, or with more than [`SAH_SMALL`]
//!   primitives at depth [`SAH_LARGE_MAX_DEPTH`] or deeper, or when the SAH finds no plane: the
//!   first `count / 2` positions go left. This bounds the GPU's level-by-level stage to
//!   [`sah_large_levels`] levels and the tree's depth, whatever the input.
//! - **Binned SAH**: [`SAH_BINS`] bins per axis over the node's centroid box; the plane after
//!   bin `k` of an axis costs `area(left) · n_left + area(right) · n_right`; the cheapest plane
//!   with primitives on both sides wins (the first of equal ones, axes in x, y, z order), and a
//!   stable partition puts the primitives of bins `0..=k` first.
//!
//! Rules both sides follow, so that the trees agree to the bit:
//! - Every value the SAH computes is flushed to +0 when its magnitude is below the smallest
//!   normal float ([`flush`]), box corners and centroids ([`lbvh_centroid`]) included, since
//!   GPUs may flush subnormals.
//! - No `fma`: WGSL lets it round twice, as lavapipe did in a test here. Every multiply and add is rounded
//!   on its own, in a fixed order, and the flush between them (on the bits, in the kernels)
//!   keeps compilers from fusing them.
//! - A bin is the count of the edges `flush(flush(extent · j / 16) + lo)`, `j = 1..16`, that
//!   the centroid reaches: compares only, no division.
//! - Areas and costs ([`sah_area`], [`sah_cost`]) are compared as [`cost_key`]s (NaN last).
//! - Boxes are joined with [`union_exact`], so the bins' boxes and the nodes' bounds do not
//!   depend on the order the GPU's atomics meet.
//!
//! Numbering (independent of the order nodes are split in): leaf `k` is `nodes[n - 1 + k]` and
//! holds `prim_order[k]`; an internal node that splits between positions `g` and `g + 1` (its
//! gap `g`) is node 0 when it is the root, `g + 1` when `g` is below the root's gap, else `g`.
//! Every gap `0..n - 1` is split by exactly one node, so the internal nodes are `0..n - 1`.

use super::aabb::Aabb;
use super::bvh::{BinaryBvh, BinaryNode, BinaryNodeKind};
use super::lbvh::{flush, flush3, lbvh_centroid, morton_order, union_exact};

/// Bins per axis.
pub const SAH_BINS: usize = 16;
/// Nodes of at most this many primitives are built whole by one GPU invocation; larger ones
/// level by level.
pub const SAH_SMALL: u32 = 16;
/// The depth from which nodes of more than [`SAH_SMALL`] primitives split at their middle.
pub const SAH_LARGE_MAX_DEPTH: u32 = 24;
/// The depth from which every node splits at its middle.
pub const SAH_MAX_DEPTH: u32 = 32;
/// Levels the hybrid splits by Morton code.
pub const HYBRID_MORTON_DEPTH: u32 = 8;

/// Which of the two builders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SahVariant {
    /// Binned SAH from the root, over the primitives in index order.
    Sah,
    /// Morton splits for the first [`HYBRID_MORTON_DEPTH`] levels, binned SAH below, over the
    /// primitives in Morton order.
    Hybrid,
}

/// The levels of the GPU's level-by-level stage for `n` primitives: none when the root is
/// small, else [`SAH_LARGE_MAX_DEPTH`] plus the middle splits that bring `n` down to
/// [`SAH_SMALL`] (after which every node is small).
pub fn sah_large_levels(n: u32) -> u32 {
    if n <= SAH_SMALL {
        return 0;
    }
    let mut k = 0;
    while ((SAH_SMALL as u64) << k) < n as u64 {
        k += 1;
    }
    SAH_LARGE_MAX_DEPTH + k
}

/// Half the surface area of `b` (0 when empty): `(dx · dy + dy · dz) + dz · dx` of the
/// flushed corners, every step rounded and flushed.
pub fn sah_area(b: &Aabb) -> f32 {
    if b.is_empty() {
        return 0.0;
    }
    let d = flush3(flush3(b.max) - flush3(b.min));
    flush(flush(flush(d.x * d.y) + flush(d.y * d.z)) + flush(d.z * d.x))
}

/// The cost of a plane: `area_left · n_left + area_right · n_right`, every step rounded and
/// flushed.
pub fn sah_cost(area_left: f32, n_left: u32, area_right: f32, n_right: u32) -> f32 {
    flush(flush(area_left * n_left as f32) + flush(area_right * n_right as f32))
}

/// The order costs are compared in: the float's bits (costs are never negative), NaN last.
pub fn cost_key(cost: f32) -> u32 {
    if cost.is_nan() {
        u32::MAX
    } else {
        cost.to_bits()
    }
}

/// The bin of centroid coordinate `c` on an axis whose centroids start at `lo` and span
/// `extent`: how many of the edges `flush(flush(extent · j / 16) + lo)`, `j = 1..16`, it
/// reaches.
pub fn sah_bin(c: f32, lo: f32, extent: f32) -> u32 {
    (1..SAH_BINS)
        .filter(|&j| c >= flush(flush(extent * (j as f32 * (1.0 / SAH_BINS as f32))) + lo))
        .count() as u32
}

/// Whether an axis of the centroid box, `extent` long, has planes to bin: a normal, finite
/// extent.
pub fn axis_open(extent: f32) -> bool {
    extent >= f32::MIN_POSITIVE && extent.is_finite()
}

/// The cheapest binned plane of the primitives `prims` (their boxes in `bounds`): the axis, the
/// last bin on the left, and the primitives on the left; `None` when no plane has primitives on
/// both sides. Also gives the centroid box's low corner and extent the bins were made over.
pub fn sah_best_plane(bounds: &[Aabb], prims: &[u32]) -> Option<SahPlane> {
    let centroids = prims.iter().fold(Aabb::EMPTY, |b, &p| {
        let c = lbvh_centroid(&bounds[p as usize]);
        union_exact(b, Aabb { min: c, max: c })
    });
    let lo = centroids.min;
    let extent = flush3(centroids.max - lo);
    let mut best: Option<(u32, SahPlane)> = None;
    for axis in 0..3 {
        if !axis_open(extent[axis]) {
            continue;
        }
        let mut counts = [0u32; SAH_BINS];
        let mut boxes = [Aabb::EMPTY; SAH_BINS];
        for &p in prims {
            let b = bounds[p as usize];
            let bin = sah_bin(lbvh_centroid(&b)[axis], lo[axis], extent[axis]) as usize;
            counts[bin] += 1;
            boxes[bin] = union_exact(boxes[bin], b);
        }
        // Areas and counts right of each plane.
        let mut right_area = [0f32; SAH_BINS];
        let mut right_count = [0u32; SAH_BINS];
        let (mut rb, mut rc) = (Aabb::EMPTY, 0u32);
        for k in (1..SAH_BINS).rev() {
            rb = union_exact(rb, boxes[k]);
            rc += counts[k];
            right_area[k - 1] = sah_area(&rb);
            right_count[k - 1] = rc;
        }
        let (mut lb, mut lc) = (Aabb::EMPTY, 0u32);
        for k in 0..SAH_BINS - 1 {
            lb = union_exact(lb, boxes[k]);
            lc += counts[k];
            if lc == 0 || right_count[k] == 0 {
                continue;
            }
            let key = cost_key(sah_cost(sah_area(&lb), lc, right_area[k], right_count[k]));
            if best.is_none_or(|(b, _)| key < b) {
                best = Some((
                    key,
                    SahPlane {
                        axis: axis as u32,
                        bin: k as u32,
                        left: lc,
                        lo: lo[axis],
                        extent: extent[axis],
                    },
                ));
            }
        }
    }
    best.map(|(_, plane)| plane)
}

/// A binned plane: primitives whose centroid falls in bins `0..=bin` of `axis` go left.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SahPlane {
    pub axis: u32,
    pub bin: u32,
    /// Primitives on the left.
    pub left: u32,
    /// The centroid box's low corner and extent on `axis`.
    pub lo: f32,
    pub extent: f32,
}

/// Where the first of the sorted `codes` (which differ) whose highest differing bit is set
/// lies: the Morton split of the hybrid.
pub fn morton_split(codes: &[u32]) -> u32 {
    let (a, b) = (codes[0], codes[codes.len() - 1]);
    let bit = 31 - (a ^ b).leading_zeros();
    codes.partition_point(|&c| c & (1 << bit) == 0) as u32
}

/// The node number of an internal node whose split gap is `gap`, with the root's gap
/// `root_gap` (the module's numbering).
pub fn inner_index(gap: u32, root_gap: u32, is_root: bool) -> u32 {
    if is_root {
        0
    } else if gap < root_gap {
        gap + 1
    } else {
        gap
    }
}

/// How many of the node's `count` primitives go left and, for a binned plane, how: the split
/// the module's rules choose for a node at `depth`. `codes` are the node's Morton codes (the
/// hybrid only).
pub fn choose_split(
    bounds: &[Aabb],
    prims: &[u32],
    codes: Option<&[u32]>,
    depth: u32,
) -> (u32, Option<SahPlane>) {
    let count = prims.len() as u32;
    if let Some(codes) = codes {
        if depth < HYBRID_MORTON_DEPTH && codes[0] != codes[codes.len() - 1] {
            return (morton_split(codes), None);
        }
    }
    if depth >= SAH_MAX_DEPTH || (count > SAH_SMALL && depth >= SAH_LARGE_MAX_DEPTH) {
        return (count / 2, None);
    }
    match sah_best_plane(bounds, prims) {
        Some(plane) => (plane.left, Some(plane)),
        None => (count / 2, None),
    }
}

/// Builds the binned-SAH (or hybrid) tree over `bounds`: `2n − 1` nodes numbered as the module
/// says, one primitive per leaf.
///
/// # Panics
///
/// With more than `u32::MAX / 2` boxes (the node indices would overflow `u32`).
pub fn build_sah(bounds: &[Aabb], variant: SahVariant) -> BinaryBvh {
    let n = bounds.len();
    if n == 0 {
        return BinaryBvh::default();
    }
    assert!(
        n <= u32::MAX as usize / 2,
        "a SAH tree over {n} primitives has more nodes than u32 indices address"
    );
    let (mut order, codes) = match variant {
        SahVariant::Sah => ((0..n as u32).collect::<Vec<u32>>(), None),
        SahVariant::Hybrid => {
            let (order, codes) = morton_order(bounds);
            (order, Some(codes))
        }
    };
    let mut inner = Vec::with_capacity(n - 1);
    if n >= 2 {
        let ctx = Build {
            bounds,
            codes: codes.as_deref(),
            n: n as u32,
        };
        ctx.split(&mut order, 0, 0, None, &mut inner);
    }
    let mut nodes = vec![
        BinaryNode {
            bounds: Aabb::EMPTY,
            kind: BinaryNodeKind::Leaf { first: 0, count: 1 },
        };
        2 * n - 1
    ];
    for (index, node) in inner {
        nodes[index as usize] = node;
    }
    for (k, &p) in order.iter().enumerate() {
        nodes[n - 1 + k] = BinaryNode {
            bounds: bounds[p as usize],
            kind: BinaryNodeKind::Leaf {
                first: k as u32,
                count: 1,
            },
        };
    }
    BinaryBvh {
        nodes,
        prim_order: order,
    }
}

/// Nodes of at least this many primitives split their two children on two threads.
const PARALLEL_MIN: usize = 4096;

/// What every node's split reads.
struct Build<'a> {
    bounds: &'a [Aabb],
    codes: Option<&'a [u32]>,
    n: u32,
}

impl Build<'_> {
    /// Splits the node over `order` (the positions `first..first + order.len()`, at least two)
    /// at `depth`, then its subtrees, appending the internal nodes as (number, node) to `out`;
    /// `root_gap` is the root's gap (`None`: this is the root). Returns the node's number.
    fn split(
        &self,
        order: &mut [u32],
        first: u32,
        depth: u32,
        root_gap: Option<u32>,
        out: &mut Vec<(u32, BinaryNode)>,
    ) -> u32 {
        let count = order.len() as u32;
        let codes = self
            .codes
            .map(|c| &c[first as usize..(first + count) as usize]);
        let (left, plane) = choose_split(self.bounds, order, codes, depth);
        if let Some(plane) = plane {
            // Stable partition: bins 0..=bin first.
            let goes_left = |p: &u32| {
                let c = lbvh_centroid(&self.bounds[*p as usize])[plane.axis as usize];
                sah_bin(c, plane.lo, plane.extent) <= plane.bin
            };
            let (l, r): (Vec<u32>, Vec<u32>) = order.iter().partition(|p| goes_left(p));
            order[..l.len()].copy_from_slice(&l);
            order[l.len()..].copy_from_slice(&r);
        }
        let gap = first + left - 1;
        let root_gap_below = root_gap.unwrap_or(gap);
        let index = inner_index(gap, root_gap_below, root_gap.is_none());
        let bounds = order
            .iter()
            .fold(Aabb::EMPTY, |b, &p| union_exact(b, self.bounds[p as usize]));
        let (lo, hi) = order.split_at_mut(left as usize);
        let right_first = first + left;
        let child = |order: &mut [u32], first: u32, out: &mut Vec<(u32, BinaryNode)>| {
            if order.len() == 1 {
                self.n - 1 + first
            } else {
                self.split(order, first, depth + 1, Some(root_gap_below), out)
            }
        };
        let (l, r) = if (count as usize) >= PARALLEL_MIN {
            let mut right_out = Vec::new();
            let (l, r) = rayon::join(
                || child(lo, first, out),
                || child(hi, right_first, &mut right_out),
            );
            out.append(&mut right_out);
            (l, r)
        } else {
            let l = child(lo, first, out);
            (l, child(hi, right_first, out))
        };
        out.push((
            index,
            BinaryNode {
                bounds,
                kind: BinaryNodeKind::Inner { left: l, right: r },
            },
        ));
        index
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::*;

    fn boxes(n: usize, seed: u64) -> Vec<Aabb> {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32) / (1u64 << 24) as f32
        };
        (0..n)
            .map(|_| {
                let c = Vec3::new(next(), next(), next()) * 100.0 - 50.0;
                let h = Vec3::new(next(), next(), next());
                Aabb::new(c - h, c + h)
            })
            .collect()
    }

    /// Every internal node's children, walked from the root, cover its range in two parts, its
    /// bounds are its leaves' union, and every node is reached once.
    fn check_tree(bvh: &BinaryBvh, bounds: &[Aabb]) -> u32 {
        let n = bounds.len();
        let mut seen = vec![false; bvh.nodes.len()];
        let mut depth_max = 0;
        let mut stack = vec![(0u32, 0u32, n as u32, 1u32)];
        while let Some((i, first, count, depth)) = stack.pop() {
            assert!(!seen[i as usize], "node {i} reached twice");
            seen[i as usize] = true;
            depth_max = depth_max.max(depth);
            let node = bvh.nodes[i as usize];
            let want = bvh.prim_order[first as usize..(first + count) as usize]
                .iter()
                .fold(Aabb::EMPTY, |b, &p| union_exact(b, bounds[p as usize]));
            assert_eq!(node.bounds, want, "node {i}");
            match node.kind {
                BinaryNodeKind::Leaf { first: f, count: c } => {
                    assert_eq!((f, c, count), (first, 1, 1));
                    assert_eq!(i, n as u32 - 1 + first);
                }
                BinaryNodeKind::Inner { left, right } => {
                    let lc = if left >= n as u32 - 1 {
                        1
                    } else {
                        // The left child's range ends where the right one's starts.
                        let mut l = 0;
                        let mut s = vec![left];
                        while let Some(j) = s.pop() {
                            match bvh.nodes[j as usize].kind {
                                BinaryNodeKind::Leaf { .. } => l += 1,
                                BinaryNodeKind::Inner { left, right } => {
                                    s.push(left);
                                    s.push(right);
                                }
                            }
                        }
                        l
                    };
                    stack.push((left, first, lc, depth + 1));
                    stack.push((right, first + lc, count - lc, depth + 1));
                }
            }
        }
        assert!(seen.iter().all(|&s| s), "every node is in the tree");
        let mut sorted = bvh.prim_order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
        depth_max
    }

    #[test]
    fn both_variants_make_complete_trees_with_exact_bounds() {
        for variant in [SahVariant::Sah, SahVariant::Hybrid] {
            for n in [1, 2, 3, 17, 33, 100, 2000] {
                let b = boxes(n, n as u64);
                let bvh = build_sah(&b, variant);
                assert_eq!(bvh.nodes.len(), 2 * n - 1);
                check_tree(&bvh, &b);
            }
        }
    }

    #[test]
    fn two_clusters_are_split_apart_at_the_root() {
        let mut b = boxes(40, 3);
        for (i, bx) in b.iter_mut().enumerate() {
            let shift = Vec3::X * if i % 2 == 0 { -1000.0 } else { 1000.0 };
            *bx = Aabb::new(bx.min * 0.01 + shift, bx.max * 0.01 + shift);
        }
        let bvh = build_sah(&b, SahVariant::Sah);
        let root_left: Vec<u32> = bvh.prim_order[..20].to_vec();
        assert!(root_left.iter().all(|p| p % 2 == 0), "{root_left:?}");
    }

    #[test]
    fn equal_boxes_split_at_the_middle_and_stay_within_the_depth_bound() {
        let b = vec![Aabb::new(Vec3::ZERO, Vec3::ONE); 5000];
        let bvh = build_sah(&b, SahVariant::Sah);
        let depth = check_tree(&bvh, &b);
        assert_eq!(bvh.prim_order, (0..5000).collect::<Vec<u32>>());
        assert!(depth <= 14, "depth {depth}");
    }

    #[test]
    fn nested_boxes_keep_the_depth_bounded() {
        // Each box's centroid is near one end: the SAH would peel one primitive a level.
        let b: Vec<Aabb> = (0..3000)
            .map(|i| {
                let x = (1.5f32).powi(i % 60);
                Aabb::new(Vec3::splat(x), Vec3::splat(x * 1.01))
            })
            .collect();
        let bvh = build_sah(&b, SahVariant::Sah);
        let depth = check_tree(&bvh, &b);
        let bound = sah_large_levels(3000).max(SAH_MAX_DEPTH) + SAH_SMALL.ilog2() + 2;
        assert!(depth <= bound, "depth {depth}, bound {bound}");
    }

    #[test]
    fn large_levels_bring_every_node_down_to_the_small_size() {
        let s = SAH_SMALL;
        assert_eq!(sah_large_levels(s), 0);
        assert_eq!(sah_large_levels(s + 1), SAH_LARGE_MAX_DEPTH + 1);
        assert_eq!(sah_large_levels(2 * s), SAH_LARGE_MAX_DEPTH + 1);
        assert_eq!(sah_large_levels(2 * s + 1), SAH_LARGE_MAX_DEPTH + 2);
        // 871,306 / 2^k <= SAH_SMALL for the first k = ⌈log2(871,306 / SAH_SMALL)⌉.
        let k = (871_306f64 / s as f64).log2().ceil() as u32;
        assert_eq!(sah_large_levels(871_306), SAH_LARGE_MAX_DEPTH + k);
    }

    #[test]
    fn the_hybrid_splits_its_top_levels_by_morton_code() {
        let b = boxes(500, 9);
        let bvh = build_sah(&b, SahVariant::Hybrid);
        let (_, codes) = morton_order(&b);
        // The root splits where the top differing bit of the sorted codes turns on.
        let split = morton_split(&codes);
        let BinaryNodeKind::Inner { left, .. } = bvh.nodes[0].kind else {
            panic!("the root is inner")
        };
        let left_count = if left >= 499 {
            1
        } else {
            bvh.to_records()[left as usize].count
        };
        assert_eq!(left_count, split);
    }

    #[test]
    fn bins_are_counted_by_compares_and_subnormals_are_flushed() {
        assert_eq!(sah_bin(0.0, 0.0, 16.0), 0);
        assert_eq!(sah_bin(1.0, 0.0, 16.0), 1);
        assert_eq!(sah_bin(15.99, 0.0, 16.0), 15);
        assert_eq!(sah_bin(16.0, 0.0, 16.0), 15);
        assert_eq!(flush(1e-40), 0.0);
        assert_eq!(flush(-1e-40).to_bits(), 0);
        assert!(!axis_open(1e-40));
        assert!(!axis_open(f32::INFINITY));
        assert_eq!(cost_key(f32::NAN), u32::MAX);
    }
}

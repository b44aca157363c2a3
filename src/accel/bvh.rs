//! The binned-SAH binary BVH builder over a list of AABBs (shared by the middle and top levels).
//!
//! The builder bins primitive centroids along all three axes (Wald 2007), picks the split with
//! the lowest surface-area-heuristic cost, and stops at a leaf when splitting costs more than
//! intersecting (and the leaf is small enough). Large ranges are binned in parallel and the two
//! halves of a split are built with `rayon::join`. Below [`MAX_SAH_DEPTH`] a range is split at
//! its object median instead, which bounds the depth of the tree (and so the traversal stack).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use rayon::prelude::*;

use super::aabb::{Aabb, SlabRay};

/// Settings of one build.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildSettings {
    /// Number of bins per axis (clamped to 2..=64).
    pub bins: usize,
    /// Largest number of primitives in a leaf; larger ranges are always split.
    pub max_leaf_size: usize,
    /// SAH cost of visiting an inner node, relative to `intersection_cost`.
    pub traversal_cost: f32,
    /// SAH cost of intersecting one primitive.
    pub intersection_cost: f32,
}

impl Default for BuildSettings {
    fn default() -> Self {
        BuildSettings {
            bins: 16,
            max_leaf_size: 4,
            traversal_cost: 1.0,
            intersection_cost: 1.0,
        }
    }
}

/// Depth below which ranges are split at the object median rather than by the SAH, so that
/// the tree depth stays below `MAX_SAH_DEPTH + log2(n)`.
pub const MAX_SAH_DEPTH: usize = 32;

/// Ranges at least this large are built as two parallel tasks.
const PARALLEL_BUILD_THRESHOLD: usize = 4096;
/// Ranges at least this large are binned in parallel chunks.
const PARALLEL_BINNING_THRESHOLD: usize = 64 * 1024;
const BINNING_CHUNK: usize = 16 * 1024;

/// One node of a binary BVH.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinaryNode {
    pub bounds: Aabb,
    pub kind: BinaryNodeKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BinaryNodeKind {
    /// `count` primitives at `prim_order[first..first + count]`.
    Leaf { first: u32, count: u32 },
    /// Indices of the two children in [`BinaryBvh::nodes`].
    Inner { left: u32, right: u32 },
}

/// A binary BVH: the root is `nodes[0]` (no nodes for no primitives); leaves refer to ranges of
/// `prim_order`, which holds the input primitive indices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BinaryBvh {
    pub nodes: Vec<BinaryNode>,
    pub prim_order: Vec<u32>,
}

/// `left`/`right`/`parent` of a [`BinaryNodeRecord`] that has none.
pub const NO_NODE: u32 = u32::MAX;

/// One node of a binary BVH as the GPU builders write it and the GPU collapse reads it; 48
/// bytes. `first`/`count` are the node's whole subtree's range of `prim_order` (a subtree's
/// primitives are one range for every builder here), for inner nodes too; a leaf has
/// `left == right == NO_NODE`; the root (node 0) has `parent == NO_NODE`.
///
/// WGSL twin: `struct BinaryNodeRecord` in `shaders/shared/bvh_build.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BinaryNodeRecord {
    pub lo: [f32; 3],
    pub left: u32,
    pub hi: [f32; 3],
    pub right: u32,
    pub first: u32,
    pub count: u32,
    pub parent: u32,
    pub _pad: u32,
}

impl BinaryBvh {
    /// The tree as GPU records (node `i` is record `i`), with every subtree's range and parent.
    pub fn to_records(&self) -> Vec<BinaryNodeRecord> {
        let mut records: Vec<BinaryNodeRecord> = self
            .nodes
            .iter()
            .map(|n| {
                let (left, right, first, count) = match n.kind {
                    BinaryNodeKind::Leaf { first, count } => (NO_NODE, NO_NODE, first, count),
                    BinaryNodeKind::Inner { left, right } => (left, right, 0, 0),
                };
                BinaryNodeRecord {
                    lo: n.bounds.min.to_array(),
                    left,
                    hi: n.bounds.max.to_array(),
                    right,
                    first,
                    count,
                    parent: NO_NODE,
                    _pad: 0,
                }
            })
            .collect();
        // Ranges and parents bottom up, in any node order: a post-order walk from the root.
        let mut stack = Vec::new();
        if !records.is_empty() {
            stack.push((0u32, false));
        }
        while let Some((i, children_done)) = stack.pop() {
            let r = records[i as usize];
            if r.left == NO_NODE {
                continue;
            }
            if children_done {
                let (l, rr) = (records[r.left as usize], records[r.right as usize]);
                let node = &mut records[i as usize];
                node.first = l.first.min(rr.first);
                node.count = l.count + rr.count;
            } else {
                records[r.left as usize].parent = i;
                records[r.right as usize].parent = i;
                stack.push((i, true));
                stack.push((r.left, false));
                stack.push((r.right, false));
            }
        }
        records
    }

    /// The tree that GPU records describe (the inverse of [`BinaryBvh::to_records`]).
    pub fn from_records(records: &[BinaryNodeRecord], prim_order: Vec<u32>) -> BinaryBvh {
        let nodes = records
            .iter()
            .map(|r| BinaryNode {
                bounds: Aabb {
                    min: Vec3::from_array(r.lo),
                    max: Vec3::from_array(r.hi),
                },
                kind: if r.left == NO_NODE {
                    BinaryNodeKind::Leaf {
                        first: r.first,
                        count: r.count,
                    }
                } else {
                    BinaryNodeKind::Inner {
                        left: r.left,
                        right: r.right,
                    }
                },
            })
            .collect();
        BinaryBvh { nodes, prim_order }
    }
}

/// Builds a binary BVH over `bounds` (one box per primitive). Empty boxes are kept (they are
/// never hit); the result refers to every input index exactly once.
pub fn build_binary_bvh(bounds: &[Aabb], settings: &BuildSettings) -> BinaryBvh {
    if bounds.is_empty() {
        return BinaryBvh::default();
    }
    let centroids: Vec<Vec3> = bounds
        .par_iter()
        .map(|b| {
            if b.is_empty() {
                Vec3::ZERO
            } else {
                b.centroid()
            }
        })
        .collect();
    let mut prim_order: Vec<u32> = (0..bounds.len() as u32).collect();
    let settings = BuildSettings {
        bins: settings.bins.clamp(2, 64),
        max_leaf_size: settings.max_leaf_size.max(1),
        ..*settings
    };
    let ctx = BuildContext {
        bounds,
        centroids: &centroids,
        settings,
    };
    let nodes = build_subtree(&ctx, &mut prim_order, 0, 0);
    BinaryBvh { nodes, prim_order }
}

struct BuildContext<'a> {
    bounds: &'a [Aabb],
    centroids: &'a [Vec3],
    settings: BuildSettings,
}

/// Builds the subtree over `prims` (which start at `base` in the full order) into a fresh
/// vector whose element 0 is the subtree's root.
fn build_subtree(
    ctx: &BuildContext,
    prims: &mut [u32],
    base: u32,
    depth: usize,
) -> Vec<BinaryNode> {
    let mut nodes = Vec::with_capacity(2 * prims.len() / ctx.settings.max_leaf_size + 1);
    build_into(ctx, &mut nodes, prims, base, depth);
    nodes
}

/// Appends the subtree over `prims` to `nodes` and returns the index of its root.
fn build_into(
    ctx: &BuildContext,
    nodes: &mut Vec<BinaryNode>,
    prims: &mut [u32],
    base: u32,
    depth: usize,
) -> u32 {
    let (bounds, centroid_bounds) = range_bounds(ctx, prims);
    let index = nodes.len() as u32;
    let leaf = BinaryNode {
        bounds,
        kind: BinaryNodeKind::Leaf {
            first: base,
            count: prims.len() as u32,
        },
    };
    nodes.push(leaf);
    if prims.len() <= 1 {
        return index;
    }
    let mid = match choose_split(ctx, prims, &bounds, &centroid_bounds, depth) {
        SplitChoice::Leaf => return index,
        SplitChoice::Plane {
            axis,
            bin,
            bin_count,
        } => {
            let lo = centroid_bounds.min[axis];
            let scale = bin_scale(lo, centroid_bounds.max[axis], bin_count);
            let mid = partition(prims, |p| {
                bin_index(ctx.centroids[p as usize][axis], lo, scale, bin_count) <= bin
            });
            if mid == 0 || mid == prims.len() {
                median_split(ctx, prims, &centroid_bounds)
            } else {
                mid
            }
        }
        SplitChoice::Median => median_split(ctx, prims, &centroid_bounds),
    };
    let (left_prims, right_prims) = prims.split_at_mut(mid);
    let right_base = base + mid as u32;
    let (left, right) = if left_prims.len() + right_prims.len() >= PARALLEL_BUILD_THRESHOLD {
        let (left_nodes, right_nodes) = rayon::join(
            || build_subtree(ctx, left_prims, base, depth + 1),
            || build_subtree(ctx, right_prims, right_base, depth + 1),
        );
        let left = append_subtree(nodes, left_nodes);
        let right = append_subtree(nodes, right_nodes);
        (left, right)
    } else {
        let left = build_into(ctx, nodes, left_prims, base, depth + 1);
        let right = build_into(ctx, nodes, right_prims, right_base, depth + 1);
        (left, right)
    };
    nodes[index as usize].kind = BinaryNodeKind::Inner { left, right };
    index
}

/// Appends a subtree built on its own, shifting its child indices; returns its root's index.
fn append_subtree(nodes: &mut Vec<BinaryNode>, subtree: Vec<BinaryNode>) -> u32 {
    let offset = nodes.len() as u32;
    nodes.extend(subtree.into_iter().map(|mut n| {
        if let BinaryNodeKind::Inner { left, right } = n.kind {
            n.kind = BinaryNodeKind::Inner {
                left: left + offset,
                right: right + offset,
            };
        }
        n
    }));
    offset
}

/// Bounds of the primitives and of their centroids.
fn range_bounds(ctx: &BuildContext, prims: &[u32]) -> (Aabb, Aabb) {
    let fold = |acc: (Aabb, Aabb), &p: &u32| {
        (
            acc.0.union(ctx.bounds[p as usize]),
            acc.1.grow_point(ctx.centroids[p as usize]),
        )
    };
    if prims.len() >= PARALLEL_BINNING_THRESHOLD {
        prims
            .par_chunks(BINNING_CHUNK)
            .map(|chunk| chunk.iter().fold((Aabb::EMPTY, Aabb::EMPTY), fold))
            .reduce(
                || (Aabb::EMPTY, Aabb::EMPTY),
                |a, b| (a.0.union(b.0), a.1.union(b.1)),
            )
    } else {
        prims.iter().fold((Aabb::EMPTY, Aabb::EMPTY), fold)
    }
}

enum SplitChoice {
    Leaf,
    /// Primitives whose centroid falls in bins `0..=bin` of `axis` go left.
    Plane {
        axis: usize,
        bin: usize,
        bin_count: usize,
    },
    Median,
}

#[derive(Clone, Copy)]
struct Bin {
    bounds: Aabb,
    count: u32,
}

const EMPTY_BIN: Bin = Bin {
    bounds: Aabb::EMPTY,
    count: 0,
};

/// Per-axis bins of a range.
#[derive(Clone)]
struct Bins {
    axes: [Vec<Bin>; 3],
}

impl Bins {
    fn new(bin_count: usize) -> Bins {
        Bins {
            axes: [
                vec![EMPTY_BIN; bin_count],
                vec![EMPTY_BIN; bin_count],
                vec![EMPTY_BIN; bin_count],
            ],
        }
    }

    fn merge(mut self, other: Bins) -> Bins {
        for (mine, theirs) in self.axes.iter_mut().zip(other.axes.iter()) {
            for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                a.bounds = a.bounds.union(b.bounds);
                a.count += b.count;
            }
        }
        self
    }
}

fn bin_scale(lo: f32, hi: f32, bin_count: usize) -> f32 {
    let extent = hi - lo;
    if extent > 0.0 {
        bin_count as f32 / extent
    } else {
        0.0
    }
}

#[inline]
fn bin_index(c: f32, lo: f32, scale: f32, bin_count: usize) -> usize {
    // `as usize` saturates (and maps NaN to 0), so this never indexes out of range.
    (((c - lo) * scale) as usize).min(bin_count - 1)
}

fn choose_split(
    ctx: &BuildContext,
    prims: &[u32],
    bounds: &Aabb,
    centroid_bounds: &Aabb,
    depth: usize,
) -> SplitChoice {
    let s = &ctx.settings;
    let n = prims.len();
    if depth >= MAX_SAH_DEPTH {
        return if n <= s.max_leaf_size {
            SplitChoice::Leaf
        } else {
            SplitChoice::Median
        };
    }
    let bin_count = s.bins;
    let lo = centroid_bounds.min;
    let scales = [0, 1, 2].map(|a| bin_scale(lo[a], centroid_bounds.max[a], bin_count));
    let bin_chunk = |chunk: &[u32]| {
        let mut bins = Bins::new(bin_count);
        for &p in chunk {
            let c = ctx.centroids[p as usize];
            let b = ctx.bounds[p as usize];
            for axis in 0..3 {
                let bin =
                    &mut bins.axes[axis][bin_index(c[axis], lo[axis], scales[axis], bin_count)];
                bin.bounds = bin.bounds.union(b);
                bin.count += 1;
            }
        }
        bins
    };
    let bins = if n >= PARALLEL_BINNING_THRESHOLD {
        prims
            .par_chunks(BINNING_CHUNK)
            .map(bin_chunk)
            .reduce(|| Bins::new(bin_count), Bins::merge)
    } else {
        bin_chunk(prims)
    };

    // Costs are kept unnormalised (multiplied by the parent's area) so flat boxes need no division.
    let mut best: Option<(f32, usize, usize)> = None;
    let mut right_area = vec![0.0f32; bin_count];
    let mut right_count = vec![0u32; bin_count];
    for (axis, axis_bins) in bins.axes.iter().enumerate() {
        if scales[axis] == 0.0 {
            continue;
        }
        let mut acc = Aabb::EMPTY;
        let mut count = 0;
        for i in (1..bin_count).rev() {
            acc = acc.union(axis_bins[i].bounds);
            count += axis_bins[i].count;
            right_area[i] = acc.half_area();
            right_count[i] = count;
        }
        let mut acc = Aabb::EMPTY;
        let mut count = 0;
        for i in 0..bin_count - 1 {
            acc = acc.union(axis_bins[i].bounds);
            count += axis_bins[i].count;
            if count == 0 || right_count[i + 1] == 0 {
                continue;
            }
            let cost =
                acc.half_area() * count as f32 + right_area[i + 1] * right_count[i + 1] as f32;
            if best.is_none_or(|(c, _, _)| cost < c) {
                best = Some((cost, axis, i));
            }
        }
    }
    let area = bounds.half_area();
    let leaf_cost = area * n as f32 * s.intersection_cost;
    match best {
        Some((cost, axis, bin)) => {
            let split_cost = area * s.traversal_cost + cost * s.intersection_cost;
            if n <= s.max_leaf_size && leaf_cost <= split_cost {
                SplitChoice::Leaf
            } else {
                SplitChoice::Plane {
                    axis,
                    bin,
                    bin_count,
                }
            }
        }
        None if n <= s.max_leaf_size => SplitChoice::Leaf,
        None => SplitChoice::Median,
    }
}

/// Splits at the middle index after ordering by the centroid along the widest centroid axis.
fn median_split(ctx: &BuildContext, prims: &mut [u32], centroid_bounds: &Aabb) -> usize {
    let extent = centroid_bounds.max - centroid_bounds.min;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let mid = prims.len() / 2;
    prims.select_nth_unstable_by(mid, |&a, &b| {
        ctx.centroids[a as usize][axis].total_cmp(&ctx.centroids[b as usize][axis])
    });
    mid
}

/// Moves the elements satisfying `goes_left` to the front; returns how many there are.
fn partition(prims: &mut [u32], goes_left: impl Fn(u32) -> bool) -> usize {
    let mut left = 0;
    let mut right = prims.len();
    while left < right {
        if goes_left(prims[left]) {
            left += 1;
        } else {
            right -= 1;
            prims.swap(left, right);
        }
    }
    left
}

impl BinaryBvh {
    /// Depth of the tree (1 for a single leaf, 0 for no nodes).
    pub fn depth(&self) -> usize {
        fn depth_of(nodes: &[BinaryNode], i: u32) -> usize {
            match nodes[i as usize].kind {
                BinaryNodeKind::Leaf { .. } => 1,
                BinaryNodeKind::Inner { left, right } => {
                    1 + depth_of(nodes, left).max(depth_of(nodes, right))
                }
            }
        }
        if self.nodes.is_empty() {
            0
        } else {
            depth_of(&self.nodes, 0)
        }
    }

    /// Closest-hit traversal of the binary tree (front-to-back, with a plain stack), used to
    /// check the builder on its own. `intersect(prim, t_max)` returns the hit distance of
    /// primitive `prim` if it is at most `t_max`. Returns `(t, prim)` of the closest hit (ties go
    /// to the lower primitive index).
    pub fn closest_hit(
        &self,
        ray: &SlabRay,
        t_min: f32,
        t_max: f32,
        mut intersect: impl FnMut(u32, f32) -> Option<f32>,
    ) -> Option<(f32, u32)> {
        let mut best: Option<(f32, u32)> = None;
        let mut limit = t_max;
        let mut stack = Vec::with_capacity(64);
        if self.nodes.is_empty() || ray.entry_box(&self.nodes[0].bounds, t_min, limit).is_none() {
            return None;
        }
        stack.push(0u32);
        while let Some(i) = stack.pop() {
            let node = &self.nodes[i as usize];
            if ray.entry_box(&node.bounds, t_min, limit).is_none() {
                continue;
            }
            match node.kind {
                BinaryNodeKind::Leaf { first, count } => {
                    for &p in &self.prim_order[first as usize..(first + count) as usize] {
                        if let Some(t) = intersect(p, limit) {
                            if t < limit || best.is_some_and(|(bt, bp)| t == bt && p < bp) {
                                best = Some((t, p));
                                limit = t;
                            }
                        }
                    }
                }
                BinaryNodeKind::Inner { left, right } => {
                    let tl = ray.entry_box(&self.nodes[left as usize].bounds, t_min, limit);
                    let tr = ray.entry_box(&self.nodes[right as usize].bounds, t_min, limit);
                    match (tl, tr) {
                        (Some(a), Some(b)) if a <= b => stack.extend([right, left]),
                        (Some(_), Some(_)) => stack.extend([left, right]),
                        (Some(_), None) => stack.push(left),
                        (None, Some(_)) => stack.push(right),
                        (None, None) => {}
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(n: usize) -> Vec<Aabb> {
        (0..n)
            .map(|i| {
                let x = (i as f32 * 0.618).fract() * 10.0;
                let y = (i as f32 * 0.414).fract() * 10.0;
                let z = (i as f32 * 0.732).fract() * 10.0;
                Aabb::new(Vec3::new(x, y, z), Vec3::new(x + 0.1, y + 0.2, z + 0.1))
            })
            .collect()
    }

    fn check_tree(bvh: &BinaryBvh, bounds: &[Aabb], max_leaf: usize) {
        let mut seen = vec![0u32; bounds.len()];
        for node in &bvh.nodes {
            match node.kind {
                BinaryNodeKind::Leaf { first, count } => {
                    assert!(count as usize <= max_leaf);
                    for &p in &bvh.prim_order[first as usize..(first + count) as usize] {
                        seen[p as usize] += 1;
                        assert!(node.bounds.contains_box(&bounds[p as usize]));
                    }
                }
                BinaryNodeKind::Inner { left, right } => {
                    assert!(node.bounds.contains_box(&bvh.nodes[left as usize].bounds));
                    assert!(node.bounds.contains_box(&bvh.nodes[right as usize].bounds));
                }
            }
        }
        assert!(
            seen.iter().all(|&c| c == 1),
            "every primitive is in exactly one leaf"
        );
    }

    #[test]
    fn leaves_partition_the_primitives_and_nodes_enclose_their_children() {
        for n in [1, 2, 5, 100, 10_000] {
            let b = boxes(n);
            let bvh = build_binary_bvh(&b, &BuildSettings::default());
            check_tree(&bvh, &b, 4);
        }
    }

    #[test]
    fn identical_boxes_are_split_at_the_median_and_stay_shallow() {
        let b = vec![Aabb::new(Vec3::ZERO, Vec3::ONE); 1000];
        let bvh = build_binary_bvh(&b, &BuildSettings::default());
        check_tree(&bvh, &b, 4);
        assert!(bvh.depth() <= 12, "depth {}", bvh.depth());
    }

    #[test]
    fn no_primitives_give_no_nodes() {
        let bvh = build_binary_bvh(&[], &BuildSettings::default());
        assert!(bvh.nodes.is_empty() && bvh.prim_order.is_empty());
        assert_eq!(bvh.depth(), 0);
    }
}

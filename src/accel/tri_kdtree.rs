//! The SAH kd-tree over triangles of paper 002 (Chang, Seo and Ihm, after Zhou et al. 2008), a
//! middle-level structure for the meshes of `--accel kdtree`: the CPU twin of the GPU build
//! and of `shaders/shared/traverse_kdtree.wgsl`.
//!
//! Every primitive's box is first grown by the grid's margin ([`super::grid::box_margin`]), so
//! that the walk's rounding never loses a primitive (as for the grid), and every box then has a
//! positive extent on every axis. A node is a cell (a box of space) and the primitives whose
//! boxes, clipped to the cell, it holds. The build has paper 002's two stages:
//!
//! 1. **Large nodes** (more than [`SMALL_NODE`] primitives), level by level, every node of a
//!    level deciding at once:
//!    - the tight box `T` of its primitives' clipped boxes;
//!    - an empty-space cut: the first side (x-min, x-max, y-min, y-max, z-min, z-max) whose gap
//!      between `T` and the cell exceeds [`EMPTY_CUT_FRACTION`] of the cell's extent on that
//!      axis is cut off at `T`'s side, as an empty leaf beside a child that holds everything;
//!    - otherwise the spatial median of `T`'s longest axis (ties: the lowest axis);
//!    - a leaf instead where the median is not strictly inside `T`, where neither child would
//!      hold fewer primitives than the node, or at depth [`MAX_DEPTH`].
//!
//!    A primitive goes left when its clipped box starts before the plane and right when it ends
//!    after it (both when it straddles it); each child's boxes are clipped to its cell. If a
//!    level's children would hold more than [`refs_limit`] pairs, that level's nodes become
//!    leaves instead, so a build always ends in bounded room.
//! 2. **Small nodes** (1 to [`SMALL_NODE`] primitives, in ascending order): the exact SAH over
//!    the candidate planes at the sides of the primitives' boxes clipped to the small root's
//!    cell, with one `u64` mask per candidate for each side and popcounts for the counts. The
//!    candidates are taken in the order axis, primitive, side (min, max); one is valid when the
//!    node holds its primitive and its plane lies strictly inside the node's cell. The node is
//!    split at the first strict minimum of `S = N_L·A_L + N_R·A_R` when
//!    `TRAVERSAL_COST·A + S < N·A` (areas of cells; see [`sah_area`] for how they are made the
//!    on both backends), or becomes a leaf.
//!
//! A node with no primitives is an empty leaf.
//!
//! # Words
//!
//! ```text
//!  0..3   the root cell's lower corner    3..6   its upper corner (f32 bits)
//!  6      nodes                           7      nodes of the large stage
//!  8      where the references start      9      references
//! 10      small roots                    11      leaves
//! 12      the margin (f32)               13..16  0
//! 16..    nodes, two words each:
//!           internal: axis << 30 | left child (the right child follows it), the plane (f32)
//!           leaf:     3 << 30 | first reference, the number of references
//! refs    primitive indices, leaf by leaf, each leaf's ascending
//! ```
//!
//! Node order: the large stage's nodes level by level, the root first and every internal
//! node's two children side by side at the end of the next level; then, for each small root in
//! node order, the nodes of its subtree below it, in the order the subtree's depth-first build
//! made them (children side by side). Reference order: the large stage's leaves in node order,
//! then each small root's leaves (the root itself when it stays a leaf), the roots in node
//! order and each subtree's leaves in the order its build finished them.

use glam::Vec3;
use rayon::prelude::*;

use super::grid::{box_margin, guarded_inverse, placeable, refs_limit};
use super::Aabb;

/// Words before the nodes.
pub const HEADER_WORDS: usize = 16;
/// Nodes with at most this many primitives are small: split by the exact SAH with `u64` masks.
pub const SMALL_NODE: usize = 64;
/// A side of a large node whose empty gap to its cell exceeds this share of the cell's extent
/// along the axis is cut off as an empty leaf (paper 002, after Zhou et al.).
pub const EMPTY_CUT_FRACTION: f32 = 0.25;
/// The SAH cost of visiting a node, in units of one primitive test. A power of two, so that
/// An integer, as the costs are (see [`sah_area`]).
pub const TRAVERSAL_COST: u32 = 1;
/// The deepest node, in internal nodes from the root (both stages).
pub const MAX_DEPTH: u32 = 64;
/// The tag of a leaf in bits 30–31 of its first word.
pub const LEAF: u32 = 3 << 30;
/// The child index, first reference or axis field's index bits.
pub const INDEX_MASK: u32 = (1 << 30) - 1;
/// The entries of the walk's short stack (Horn et al. 2007): a walk whose stack overflows drops
/// the farthest entry and restarts from the root where it has got to.
pub const SHORT_STACK: usize = 8;

/// Why a tree was not built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdTreeTooLarge {
    /// Words the tree would need.
    pub words: u64,
    /// The most one tree may hold (30-bit indices).
    pub limit: u64,
}

/// What a build made, beside its words.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KdBuild {
    pub words: Vec<u32>,
    pub nodes: usize,
    pub large_nodes: usize,
    pub small_roots: usize,
    pub leaves: usize,
    pub refs: usize,
    /// The deepest leaf, in internal nodes from the root.
    pub depth: u32,
}

/// A primitive's box clipped to a node's cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Item {
    pub prim: u32,
    pub lo: [f32; 3],
    pub hi: [f32; 3],
}

/// A cell: lower and upper corners.
pub type Cell = ([f32; 3], [f32; 3]);

/// A small root waiting for its subtree.
struct Pending {
    slot: u32,
    cell: Cell,
    items: Vec<Item>,
    depth: u32,
}

/// What a large node's kernels decide before its children are counted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    Leaf,
    Small,
    Split { axis: usize, plane: f32 },
}

/// The power of two by which a small root's extents are scaled: `2^-e` for the exponent `e` of
/// its largest extent, made from bits (1 for a cell of no extent, a subnormal one or one of
/// 2^127 or more).
pub fn sah_scale(cell: &Cell) -> f32 {
    let e = (0..3).map(|a| cell.1[a] - cell.0[a]).fold(0.0f32, f32::max);
    let exponent = (e.to_bits() >> 23) & 0xff;
    if exponent == 0 || exponent >= 254 {
        1.0
    } else {
        f32::from_bits((254 - exponent) << 23)
    }
}

/// A cell's extent as the SAH measures it: in fixed point, 14 fractional bits of the extent
/// scaled by [`sah_scale`] (below 2, so below 2^15), 0 for a subnormal or empty extent. Integers,
/// so that both backends compare the very same costs (a GPU may fuse or reorder float sums).
#[inline]
pub fn sah_extent(e: f32, scale: f32) -> u32 {
    // NaN too.
    if e.partial_cmp(&f32::MIN_POSITIVE).is_none_or(|o| o.is_lt()) {
        return 0;
    }
    ((e * scale * 16384.0).floor() as u32).min(32767)
}

/// The half surface area of a box of fixed-point extents `e` (from [`sah_extent`]): each
/// product shifted right by 7 bits, so that a cost (two areas times counts of at most 64) fits
/// in 32 bits (the twin of `kt_area` in `kdtree_tri/small.wgsl`).
#[inline]
pub fn sah_area(e: [u32; 3]) -> u32 {
    ((e[0] * e[1]) >> 7) + ((e[1] * e[2]) >> 7) + ((e[2] * e[0]) >> 7)
}

/// The tight box of `items` (in the order of the GPU's atomics on ordered keys).
fn tight_box(items: &[Item]) -> Cell {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    // In the order of f32::total_cmp (-0 before +0), as the GPU's atomics on ordered keys.
    for it in items {
        for a in 0..3 {
            if it.lo[a].total_cmp(&lo[a]).is_lt() {
                lo[a] = it.lo[a];
            }
            if it.hi[a].total_cmp(&hi[a]).is_gt() {
                hi[a] = it.hi[a];
            }
        }
    }
    (lo, hi)
}

/// The decision of a large node (the module's stage 1) from its tight box, before the counts
/// of its children are known (the twin of `kdtree_tri/decide.wgsl`).
pub fn decide_large(cell: &Cell, tight: &Cell, count: u32, depth: u32) -> Decision {
    if count == 0 || depth >= MAX_DEPTH {
        return Decision::Leaf;
    }
    if count as usize <= SMALL_NODE {
        return Decision::Small;
    }
    let (lo, hi) = *tight;
    let (clo, chi) = *cell;
    for a in 0..3 {
        let quarter = EMPTY_CUT_FRACTION * (chi[a] - clo[a]);
        if lo[a] - clo[a] > quarter {
            return Decision::Split {
                axis: a,
                plane: lo[a],
            };
        }
        if chi[a] - hi[a] > quarter {
            return Decision::Split {
                axis: a,
                plane: hi[a],
            };
        }
    }
    let ext = [0, 1, 2].map(|a| hi[a] - lo[a]);
    let axis = if ext[0] >= ext[1] && ext[0] >= ext[2] {
        0
    } else if ext[1] >= ext[2] {
        1
    } else {
        2
    };
    let plane = lo[axis] * 0.5 + hi[axis] * 0.5;
    if !(lo[axis] < plane && plane < hi[axis]) {
        return Decision::Leaf;
    }
    Decision::Split { axis, plane }
}

/// A node of the large stage's current level, as its bookkeeping sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelNode {
    pub slot: u32,
    pub cell: Cell,
    pub count: u32,
    pub depth: u32,
}

/// What becomes of a node of the large stage's level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fate {
    Leaf,
    Small,
    /// Split at `plane` along `axis`; its children are the level's next nodes `child` and
    /// `child + 1` (in [`LevelPlan::next`]).
    Split {
        axis: usize,
        plane: f32,
        child: u32,
    },
}

/// One level's bookkeeping: each node's fate and the next level's nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelPlan {
    pub fates: Vec<Fate>,
    pub next: Vec<LevelNode>,
}

/// The bookkeeping of one large-stage level, shared by the CPU twin and the GPU build's host:
/// `found` holds each node's decision and its children's counts. A split neither of whose
/// children holds fewer primitives than the node becomes a leaf; when the children of the
/// level's splits would hold more than `limit` pairs, every split becomes a leaf. Writes the
/// split nodes' words into `nodes` and appends their children's (leaf placeholders).
pub fn plan_level(
    nodes: &mut Vec<[u32; 2]>,
    level: &[LevelNode],
    found: &[(Decision, u32, u32)],
    limit: u64,
) -> LevelPlan {
    let decisions: Vec<Decision> = level
        .iter()
        .zip(found)
        .map(|(node, &(d, l, r))| match d {
            Decision::Split { .. } if l == node.count && r == node.count => Decision::Leaf,
            d => d,
        })
        .collect();
    let children: u64 = decisions
        .iter()
        .zip(found)
        .filter(|(d, _)| matches!(d, Decision::Split { .. }))
        .map(|(_, &(_, l, r))| u64::from(l) + u64::from(r))
        .sum();
    let refuse = children > limit;
    let mut plan = LevelPlan {
        fates: Vec::with_capacity(level.len()),
        next: Vec::new(),
    };
    for ((node, decision), &(_, l, r)) in level.iter().zip(decisions).zip(found) {
        let fate = match decision {
            Decision::Split { axis, plane } if !refuse => {
                let left = nodes.len() as u32;
                nodes[node.slot as usize] = [(axis as u32) << 30 | left, plane.to_bits()];
                nodes.push([LEAF, 0]);
                nodes.push([LEAF, 0]);
                let (lc, rc) = split_cells(&node.cell, axis, plane);
                let child = plan.next.len() as u32;
                for (slot, cell, count) in [(left, lc, l), (left + 1, rc, r)] {
                    plan.next.push(LevelNode {
                        slot,
                        cell,
                        count,
                        depth: node.depth + 1,
                    });
                }
                Fate::Split { axis, plane, child }
            }
            Decision::Small => Fate::Small,
            _ => Fate::Leaf,
        };
        plan.fates.push(fate);
    }
    plan
}

/// The children of `items` split at `plane` along `axis`, each clipped to its cell.
fn split_items(items: &[Item], axis: usize, plane: f32) -> (Vec<Item>, Vec<Item>) {
    let mut left = Vec::new();
    let mut right = Vec::new();
    for it in items {
        // Clipped by comparisons (not min and max, which may pick either of -0 and +0).
        if it.lo[axis] < plane {
            let mut c = *it;
            if c.hi[axis] > plane {
                c.hi[axis] = plane;
            }
            left.push(c);
        }
        if it.hi[axis] > plane {
            let mut c = *it;
            if c.lo[axis] < plane {
                c.lo[axis] = plane;
            }
            right.push(c);
        }
    }
    (left, right)
}

/// The cells of the children of `cell` split at `plane` along `axis`.
pub fn split_cells(cell: &Cell, axis: usize, plane: f32) -> (Cell, Cell) {
    let (mut left, mut right) = (*cell, *cell);
    left.1[axis] = plane;
    right.0[axis] = plane;
    (left, right)
}

/// One node of a small root's subtree, in the subtree's own numbering (0: the root).
#[derive(Clone, Debug, PartialEq)]
enum SmallNode {
    Leaf(u64),
    Inner { axis: usize, plane: f32, left: u32 },
}

/// A small root's subtree: its nodes, its leaves in the order the build finished them (the
/// order of their references), and its depth below the root.
struct SmallTree {
    nodes: Vec<SmallNode>,
    leaf_order: Vec<u32>,
    depth: u32,
}

/// The SAH subtree of a small root (the module's stage 2). The nodes are taken depth first
/// from a stack, the left child before the right; a node that splits gets its two children
/// at the end of the subtree's nodes, side by side (the GPU build, one workgroup per small
/// root, keeps the same stack).
fn build_small(items: &[Item], cell: Cell, depth: u32) -> SmallTree {
    let n = items.len();
    debug_assert!((1..=SMALL_NODE).contains(&n));
    // The candidates, in the order axis, primitive, side, with the primitives left and right
    // of each.
    let mut candidates: Vec<(usize, u32, f32, u64, u64)> = Vec::with_capacity(6 * n);
    for a in 0..3 {
        for (i, it) in items.iter().enumerate() {
            for plane in [it.lo[a], it.hi[a]] {
                let mut left = 0u64;
                let mut right = 0u64;
                for (j, other) in items.iter().enumerate() {
                    if other.lo[a] < plane {
                        left |= 1 << j;
                    }
                    if other.hi[a] > plane {
                        right |= 1 << j;
                    }
                }
                candidates.push((a, i as u32, plane, left, right));
            }
        }
    }
    let scale = sah_scale(&cell);
    let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    let mut nodes = vec![SmallNode::Leaf(all)];
    let mut leaf_order = Vec::new();
    let mut stack: Vec<(u32, u64, Cell, u32)> = vec![(0, all, cell, depth)];
    let mut deepest = 0;
    while let Some((index, mask, cell, d)) = stack.pop() {
        deepest = deepest.max(d - depth);
        let count = mask.count_ones();
        let ext = |c: &Cell| [0, 1, 2].map(|a| sah_extent(c.1[a] - c.0[a], scale));
        let area = sah_area(ext(&cell));
        let mut best: Option<(u32, usize)> = None;
        if count > 0 && d < MAX_DEPTH {
            for (k, &(a, i, plane, left, right)) in candidates.iter().enumerate() {
                if mask >> i & 1 == 0 || !(cell.0[a] < plane && plane < cell.1[a]) {
                    continue;
                }
                let (lc, rc) = split_cells(&cell, a, plane);
                let cost = (mask & left).count_ones() * sah_area(ext(&lc))
                    + (mask & right).count_ones() * sah_area(ext(&rc));
                if best.is_none_or(|(b, _)| cost < b) {
                    best = Some((cost, k));
                }
            }
        }
        match best {
            Some((cost, k)) if TRAVERSAL_COST * area + cost < count * area => {
                let (a, _, plane, left, right) = candidates[k];
                let first = nodes.len() as u32;
                nodes[index as usize] = SmallNode::Inner {
                    axis: a,
                    plane,
                    left: first,
                };
                let (lc, rc) = split_cells(&cell, a, plane);
                nodes.push(SmallNode::Leaf(mask & left));
                nodes.push(SmallNode::Leaf(mask & right));
                stack.push((first + 1, mask & right, rc, d + 1));
                stack.push((first, mask & left, lc, d + 1));
            }
            _ => leaf_order.push(index),
        }
    }
    SmallTree {
        nodes,
        leaf_order,
        depth: deepest,
    }
}

/// A device that builds the kd-tree over a mesh's boxes to [`build_kdtree`]'s words (a GPU
/// backend's `gpu::tri_kdtree`), which `Prepared::build_cached_on` asks instead of the twin.
pub trait KdTreeDevice: Sync {
    /// The words of `build_kdtree(boxes)` or its [`KdTreeTooLarge`]; `Err` with the reason
    /// when the device could not build.
    fn build_kdtree_words(
        &self,
        boxes: &[Aabb],
    ) -> Result<Result<Vec<u32>, KdTreeTooLarge>, String>;
}

/// The most words a tree may take: every index fits in 30 bits.
pub const MAX_WORDS: u64 = 1 << 30;

/// The root cell, the margin and the root's items: every placeable box (finite, not empty)
/// grown by the margin, in primitive order. What both builds start from.
pub fn root_items(boxes: &[Aabb]) -> (Cell, f32, Vec<Item>) {
    let placed = boxes.iter().filter(|b| placeable(b));
    let whole = placed.fold(Aabb::EMPTY, |a, b| a.union(*b));
    let (lo, hi) = if whole.is_empty() {
        (Vec3::ZERO, Vec3::ZERO)
    } else {
        (whole.min, whole.max)
    };
    let margin = box_margin(lo, hi);
    let grow = Vec3::splat(margin);
    let root_cell: Cell = ((lo - grow).to_array(), (hi + grow).to_array());
    let items = boxes
        .iter()
        .enumerate()
        .filter(|(_, b)| placeable(b))
        .map(|(prim, b)| Item {
            prim: prim as u32,
            lo: (b.min - grow).to_array(),
            hi: (b.max + grow).to_array(),
        })
        .collect();
    (root_cell, margin, items)
}

/// The sixteen header words (the module's layout).
#[allow(clippy::too_many_arguments)]
pub fn header(
    root_cell: &Cell,
    margin: f32,
    nodes: u32,
    large_nodes: u32,
    refs_at: u32,
    refs: u32,
    small_roots: u32,
    leaves: u32,
) -> [u32; HEADER_WORDS] {
    let mut words = [0u32; HEADER_WORDS];
    for a in 0..3 {
        words[a] = root_cell.0[a].to_bits();
        words[3 + a] = root_cell.1[a].to_bits();
    }
    words[6..13].copy_from_slice(&[
        nodes,
        large_nodes,
        refs_at,
        refs,
        small_roots,
        leaves,
        margin.to_bits(),
    ]);
    words
}

/// Builds the kd-tree over one box per primitive (empty and non-finite boxes are left out).
pub fn build_kdtree(boxes: &[Aabb]) -> Result<KdBuild, KdTreeTooLarge> {
    let (root_cell, margin, items) = root_items(boxes);
    let prims = items.len() as u32;
    let limit = refs_limit(prims);

    // Stage 1: the large nodes, level by level. `nodes` holds each node's two words.
    let mut nodes: Vec<[u32; 2]> = vec![[LEAF, 0]];
    let mut leaf_items: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut small_roots: Vec<Pending> = Vec::new();
    let mut level = vec![LevelNode {
        slot: 0,
        cell: root_cell,
        count: items.len() as u32,
        depth: 0,
    }];
    let mut level_items = vec![items];
    let mut depth = 0;
    while !level.is_empty() {
        let found: Vec<(Decision, u32, u32)> = level
            .par_iter()
            .zip(&level_items)
            .map(|(node, items)| {
                let decision = decide_large(&node.cell, &tight_box(items), node.count, node.depth);
                let (l, r) = match decision {
                    Decision::Split { axis, plane } => (
                        items.iter().filter(|it| it.lo[axis] < plane).count() as u32,
                        items.iter().filter(|it| it.hi[axis] > plane).count() as u32,
                    ),
                    _ => (0, 0),
                };
                (decision, l, r)
            })
            .collect();
        let plan = plan_level(&mut nodes, &level, &found, limit);
        let mut next_items = vec![Vec::new(); plan.next.len()];
        for ((node, items), fate) in level.iter().zip(level_items).zip(&plan.fates) {
            depth = depth.max(node.depth);
            match *fate {
                Fate::Split { axis, plane, child } => {
                    let (li, ri) = split_items(&items, axis, plane);
                    next_items[child as usize] = li;
                    next_items[child as usize + 1] = ri;
                }
                Fate::Small => small_roots.push(Pending {
                    slot: node.slot,
                    cell: node.cell,
                    items,
                    depth: node.depth,
                }),
                Fate::Leaf => {
                    leaf_items.push((node.slot, items.iter().map(|it| it.prim).collect()))
                }
            }
        }
        level = plan.next;
        level_items = next_items;
    }
    let large_nodes = nodes.len();

    // Stage 2: every small root's subtree, the roots in node order. Their leaves' references
    // follow the large stage's leaves', root by root.
    small_roots.sort_by_key(|r| r.slot);
    leaf_items.sort_by_key(|(slot, _)| *slot);
    let subtrees: Vec<SmallTree> = small_roots
        .par_iter()
        .map(|r| build_small(&r.items, r.cell, r.depth))
        .collect();
    for (root, sub) in small_roots.iter().zip(&subtrees) {
        depth = depth.max(root.depth + sub.depth);
        // The subtree's node k > 0 goes to `base + k - 1`.
        let base = nodes.len() as u32;
        let place = |k: u32| if k == 0 { root.slot } else { base + k - 1 };
        nodes.resize(nodes.len() + sub.nodes.len() - 1, [LEAF, 0]);
        for (k, node) in sub.nodes.iter().enumerate() {
            if let SmallNode::Inner { axis, plane, left } = node {
                nodes[place(k as u32) as usize] =
                    [(*axis as u32) << 30 | place(*left), plane.to_bits()];
            }
        }
        for &k in &sub.leaf_order {
            let SmallNode::Leaf(mask) = sub.nodes[k as usize] else {
                unreachable!("a finished leaf")
            };
            let prims = (0..SMALL_NODE)
                .filter(|&j| mask >> j & 1 != 0)
                .map(|j| root.items[j].prim)
                .collect();
            leaf_items.push((place(k), prims));
        }
    }

    // The references, leaf by leaf in that order.
    let refs: u64 = leaf_items.iter().map(|(_, p)| p.len() as u64).sum();
    let words_needed = (HEADER_WORDS + 2 * nodes.len()) as u64 + refs;
    if words_needed > MAX_WORDS {
        return Err(KdTreeTooLarge {
            words: words_needed,
            limit: MAX_WORDS,
        });
    }
    let refs_at = HEADER_WORDS + 2 * nodes.len();
    let mut words = Vec::with_capacity(words_needed as usize);
    words.extend(header(
        &root_cell,
        margin,
        nodes.len() as u32,
        large_nodes as u32,
        refs_at as u32,
        refs as u32,
        small_roots.len() as u32,
        leaf_items.len() as u32,
    ));
    let mut first = 0u32;
    for (slot, prims) in &leaf_items {
        nodes[*slot as usize] = [LEAF | first, prims.len() as u32];
        first += prims.len() as u32;
    }
    words.extend(nodes.iter().flatten());
    for (_, prims) in &leaf_items {
        words.extend(prims);
    }
    Ok(KdBuild {
        words,
        nodes: nodes.len(),
        large_nodes,
        small_roots: small_roots.len(),
        leaves: leaf_items.len(),
        refs: refs as usize,
        depth,
    })
}

/// Walks the tree `words` along `origin + t·dir` from `t_min`, calling `test(prim, limit)` for
/// the references of every leaf the ray passes, nearest first, until the closest hit so far
/// (`limit`, which the test lowers) lies before the leaf's far side or the ray leaves the root
/// cell. Returns true when a test returned true (an any-hit search's hit). The stack holds
/// [`SHORT_STACK`] entries; when it overflows the farthest entry is dropped, and when it runs
/// empty after a drop the walk restarts from the root at the far side of the last leaf.
pub fn walk(
    words: &[u32],
    origin: Vec3,
    dir: Vec3,
    t_min: f32,
    limit: &mut f32,
    test: &mut dyn FnMut(u32, &mut f32) -> bool,
) -> bool {
    walk_counting(words, origin, dir, t_min, limit, test, &mut 0)
}

/// [`walk`], counting its restarts from the root in `restarts`.
#[inline]
fn walk_counting(
    words: &[u32],
    origin: Vec3,
    dir: Vec3,
    t_min: f32,
    limit: &mut f32,
    test: &mut dyn FnMut(u32, &mut f32) -> bool,
    restarts: &mut u32,
) -> bool {
    let fw = |i: usize| f32::from_bits(words[i]);
    let lo = Vec3::new(fw(0), fw(1), fw(2));
    let hi = Vec3::new(fw(3), fw(4), fw(5));
    let refs_at = words[8] as usize;
    let inv = guarded_inverse(dir);
    let t_lo = (lo - origin) * inv;
    let t_hi = (hi - origin) * inv;
    let t_enter = t_lo.min(t_hi).max_element().max(t_min);
    let t_exit = t_lo.max(t_hi).min_element().min(*limit);
    // Also false for NaN (a ray of NaN or infinite components).
    if t_enter.partial_cmp(&t_exit).is_none_or(|o| o.is_gt()) {
        return false;
    }
    let (o, d, inv) = (origin.to_array(), dir.to_array(), inv.to_array());
    // The stack as a ring of SHORT_STACK entries: `top` entries on it, the oldest dropped.
    let mut stack = [(0u32, 0.0f32, 0.0f32); SHORT_STACK];
    let (mut top, mut at) = (0usize, 0usize);
    let mut dropped = false;
    let (mut node, mut tn, mut tf) = (0u32, t_enter, t_exit);
    loop {
        let w = HEADER_WORDS + 2 * node as usize;
        let (w0, w1) = (words[w], words[w + 1]);
        if w0 >> 30 != 3 {
            let a = (w0 >> 30) as usize;
            let plane = f32::from_bits(w1);
            let left = w0 & INDEX_MASK;
            let left_first = o[a] < plane || (o[a] == plane && d[a] <= 0.0);
            let (near, far) = if left_first {
                (left, left + 1)
            } else {
                (left + 1, left)
            };
            if d[a] == 0.0 {
                node = near;
                continue;
            }
            let ts = (plane - o[a]) * inv[a];
            if ts <= 0.0 || ts >= tf {
                node = near;
            } else if ts <= tn {
                node = far;
            } else {
                stack[at] = (far, ts, tf);
                at = (at + 1) % SHORT_STACK;
                if top == SHORT_STACK {
                    dropped = true;
                } else {
                    top += 1;
                }
                node = near;
                tf = ts;
            }
            continue;
        }
        let (first, count) = ((w0 & INDEX_MASK) as usize, w1 as usize);
        for k in first..first + count {
            if test(words[refs_at + k], limit) {
                return true;
            }
        }
        if *limit <= tf {
            return false;
        }
        if top > 0 {
            at = (at + SHORT_STACK - 1) % SHORT_STACK;
            top -= 1;
            (node, tn, tf) = stack[at];
        } else if dropped && tf < t_exit {
            *restarts += 1;
            dropped = false;
            (node, tn, tf) = (0, tf, t_exit);
        } else {
            return false;
        }
    }
}

/// What one tree holds, read off its words (for `--stats` and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdWordsShape {
    pub nodes: u32,
    pub refs: u32,
    pub leaves: u32,
}

/// The counts in the header of the tree `words`.
pub fn shape(words: &[u32]) -> KdWordsShape {
    KdWordsShape {
        nodes: words[6],
        refs: words[9],
        leaves: words[11],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cube(c: Vec3, r: f32) -> Aabb {
        Aabb {
            min: c - Vec3::splat(r),
            max: c + Vec3::splat(r),
        }
    }

    #[test]
    fn sah_areas_are_fixed_point_half_surfaces_and_the_largest_cost_fits_in_32_bits() {
        let cell: Cell = ([0.0; 3], [1.0, 0.5, 0.25]);
        let scale = sah_scale(&cell);
        assert_eq!(scale, 1.0);
        let e = [0, 1, 2].map(|a| sah_extent(cell.1[a] - cell.0[a], scale));
        assert_eq!(e, [16384, 8192, 4096]);
        // (1·0.5 + 0.5·0.25 + 0.25·1) · 2^28 / 2^7
        assert_eq!(sah_area(e), (0.875 * f64::from(1 << 21)) as u32);
        let most = sah_area([32767; 3]);
        assert!(u64::from(most) * 128 + u64::from(most) < 1 << 32);
        assert_eq!(
            sah_extent(f32::from_bits(1), 1.0),
            0,
            "subnormal extents are 0"
        );
    }

    #[test]
    fn a_tree_over_no_boxes_is_one_empty_leaf_and_a_walk_finds_nothing() {
        let build = build_kdtree(&[Aabb::EMPTY]).unwrap();
        assert_eq!((build.nodes, build.leaves, build.refs), (1, 1, 0));
        let mut limit = f32::INFINITY;
        let found = walk(
            &build.words,
            Vec3::ZERO,
            Vec3::X,
            0.0,
            &mut limit,
            &mut |_, _| panic!("no reference to test"),
        );
        assert!(!found);
    }

    #[test]
    fn every_primitive_is_in_some_leaf_and_small_leaves_list_primitives_in_ascending_order() {
        let boxes: Vec<Aabb> = (0..2000)
            .map(|i| {
                let f = i as f32;
                cube(
                    Vec3::new((f * 0.37).sin() * 10.0, (f * 0.11).cos() * 3.0, f * 0.01),
                    0.05,
                )
            })
            .collect();
        let build = build_kdtree(&boxes).unwrap();
        let refs_at = build.words[8] as usize;
        let mut seen = vec![false; boxes.len()];
        for node in 0..build.nodes {
            let w = HEADER_WORDS + 2 * node;
            if build.words[w] >> 30 == 3 {
                let first = (build.words[w] & INDEX_MASK) as usize;
                let leaf =
                    &build.words[refs_at + first..refs_at + first + build.words[w + 1] as usize];
                assert!(
                    leaf.windows(2).all(|p| p[0] < p[1]),
                    "leaf {node} not ascending"
                );
                for &p in leaf {
                    seen[p as usize] = true;
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert!(build.large_nodes > 1 && build.small_roots > 1);
    }

    /// The restart path: a ray down a line of thousands of boxes overflows the short stack,
    /// restarts, and still tests every box it passes.
    #[test]
    fn a_walk_whose_short_stack_overflows_restarts_and_tests_every_box_it_passes() {
        let boxes: Vec<Aabb> = (0..4096)
            .map(|i| {
                let f = i as f32;
                cube(
                    Vec3::new(f, (f * 0.7).sin() * 0.1, 0.0),
                    0.2 + 0.1 * (f * 1.3).cos(),
                )
            })
            .collect();
        let build = build_kdtree(&boxes).unwrap();
        let mut restarts = 0;
        let mut tested = Vec::new();
        let mut limit = f32::INFINITY;
        let dir = Vec3::new(1.0, 1e-4, 1e-5);
        walk_counting(
            &build.words,
            Vec3::new(-3.0, 0.0, 0.0),
            dir,
            0.0,
            &mut limit,
            &mut |p, _| {
                tested.push(p);
                false
            },
            &mut restarts,
        );
        assert!(restarts > 0, "depth {}, no restart", build.depth);
        // Boxes overlap the leaves around them, so each is tested a few times, not more:
        // restarts do not walk the line again.
        assert!(tested.len() < 3 * 4096, "{} tests", tested.len());
        let mut unique = tested.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique,
            (0..4096).collect::<Vec<u32>>(),
            "every box on the line is tested"
        );
    }

    #[test]
    fn a_walk_visits_leaves_nearest_first_and_stops_behind_the_closest_hit() {
        // Boxes along x; a ray down the x axis tests them in order and stops after the first hit.
        let boxes: Vec<Aabb> = (0..500)
            .map(|i| cube(Vec3::new(i as f32, 0.0, 0.0), 0.25))
            .collect();
        let build = build_kdtree(&boxes).unwrap();
        let mut tested = Vec::new();
        let mut limit = f32::INFINITY;
        walk(
            &build.words,
            Vec3::new(-5.0, 0.0, 0.0),
            Vec3::X,
            0.0,
            &mut limit,
            &mut |p, limit| {
                tested.push(p);
                if p == 7 {
                    *limit = 12.0 - 0.25;
                }
                false
            },
        );
        assert!(tested.contains(&7));
        assert!(tested.iter().all(|&p| p <= 8), "tested {tested:?}");
        let mut sorted = tested.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, (0..=sorted[sorted.len() - 1]).collect::<Vec<_>>());
    }
}

//! The 4-wide BVH (QBVH) with consecutive siblings, its collapse from a binary BVH, and the
//! compact 32-bit traversal stack of paper 004.
//!
//! Layout: every node stores its own bounds; the children of an inner node are 2 to 4
//! consecutive nodes starting at `first`, so the node needs only `first` and a count. A leaf
//! refers to `count` consecutive primitive references starting at `first`. Node indices are
//! local to one tree (one mesh, or the top level), and the root is node 0.
//!
//! The stack stores, in one 32-bit entry, the first child index (26 bits) and up to three 2-bit
//! sibling offsets still to visit, nearest first. [`CompactEntry::pop`] returns the next sibling
//! and tells whether the entry is used up; that happens when the next offset equals the
//! current one (offsets never repeat, so the encoder pads with the last offset).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::aabb::{Aabb, SlabRay};
use super::bvh::{BinaryBvh, BinaryNodeKind};

/// Bit of [`QbvhNode::meta`] marking a leaf.
pub const QBVH_LEAF_BIT: u32 = 1 << 31;

/// Number of bits of a node index in a compact stack entry.
pub const NODE_INDEX_BITS: u32 = 26;
/// Mask of the node-index part of a compact stack entry.
pub const NODE_INDEX_MASK: u32 = (1 << NODE_INDEX_BITS) - 1;
/// Largest number of nodes a tree may have: every index, and the first-child index of every
/// entry, stays below `NODE_INDEX_MASK`, so `u32::MAX` is free to mark "return to world space".
pub const MAX_TREE_NODES: usize = NODE_INDEX_MASK as usize;

/// One QBVH node; 32 bytes, two vec4s.
///
/// ```text
/// offset  0: bounds_min: vec3<f32>
/// offset 12: first: u32      inner: index of the first child node (local to the tree)
///                            leaf:  index of the first primitive reference (local to the tree)
/// offset 16: bounds_max: vec3<f32>
/// offset 28: meta: u32       bit 31: leaf flag; bits 0..31: child count (2..=4) or primitive count
/// ```
/// WGSL twin: `struct QbvhNode { bounds_min: vec3<f32>, first: u32, bounds_max: vec3<f32>, meta: u32 }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct QbvhNode {
    pub bounds_min: [f32; 3],
    pub first: u32,
    pub bounds_max: [f32; 3],
    pub meta: u32,
}

impl QbvhNode {
    pub fn inner(bounds: &Aabb, first_child: u32, child_count: u32) -> QbvhNode {
        QbvhNode {
            bounds_min: bounds.min.to_array(),
            first: first_child,
            bounds_max: bounds.max.to_array(),
            meta: child_count,
        }
    }

    pub fn leaf(bounds: &Aabb, first_prim: u32, prim_count: u32) -> QbvhNode {
        QbvhNode {
            bounds_min: bounds.min.to_array(),
            first: first_prim,
            bounds_max: bounds.max.to_array(),
            meta: QBVH_LEAF_BIT | prim_count,
        }
    }

    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.meta & QBVH_LEAF_BIT != 0
    }

    /// Child count of an inner node, primitive count of a leaf.
    #[inline]
    pub fn count(&self) -> u32 {
        self.meta & !QBVH_LEAF_BIT
    }

    pub fn bounds(&self) -> Aabb {
        Aabb::new(
            Vec3::from_array(self.bounds_min),
            Vec3::from_array(self.bounds_max),
        )
    }

    /// The slab test against this node's own bounds.
    #[inline]
    pub fn entry(&self, ray: &SlabRay, t_min: f32, t_max: f32) -> Option<f32> {
        ray.entry(
            Vec3::from_array(self.bounds_min),
            Vec3::from_array(self.bounds_max),
            t_min,
            t_max,
        )
    }
}

/// Collapses a binary BVH into a QBVH in breadth-first order. Each inner node takes the two
/// children of its binary node and repeatedly opens the inner child of largest surface area
/// until it has four children or only leaves. Leaves keep their ranges of `bvh.prim_order`.
pub fn collapse_to_qbvh(bvh: &BinaryBvh) -> Vec<QbvhNode> {
    collapse_to_wide(bvh, 4)
}

/// [`collapse_to_qbvh`] with at most `max_children` (2..=4) children per node. With 2 it lays
/// the binary BVH out in the same node format (siblings stored together), so the same traversal
/// code measures a binary BVH against the QBVH.
pub fn collapse_to_wide(bvh: &BinaryBvh, max_children: usize) -> Vec<QbvhNode> {
    let max_children = max_children.clamp(2, 4);
    if bvh.nodes.is_empty() {
        return Vec::new();
    }
    let mut out = vec![QbvhNode::default()];
    // (binary node, QBVH slot), visited in breadth-first order so that siblings are consecutive.
    let mut queue = std::collections::VecDeque::from([(0u32, 0usize)]);
    while let Some((b, slot)) = queue.pop_front() {
        let node = &bvh.nodes[b as usize];
        match node.kind {
            BinaryNodeKind::Leaf { first, count } => {
                out[slot] = QbvhNode::leaf(&node.bounds, first, count)
            }
            BinaryNodeKind::Inner { left, right } => {
                let mut children = Vec::with_capacity(4);
                children.extend([left, right]);
                while children.len() < max_children {
                    let widest_inner = children
                        .iter()
                        .enumerate()
                        .filter(|(_, &c)| {
                            matches!(bvh.nodes[c as usize].kind, BinaryNodeKind::Inner { .. })
                        })
                        .max_by(|(_, &a), (_, &c)| {
                            bvh.nodes[a as usize]
                                .bounds
                                .half_area()
                                .total_cmp(&bvh.nodes[c as usize].bounds.half_area())
                        })
                        .map(|(i, _)| i);
                    let Some(i) = widest_inner else { break };
                    if let BinaryNodeKind::Inner { left, right } =
                        bvh.nodes[children[i] as usize].kind
                    {
                        children[i] = left;
                        children.push(right);
                    }
                }
                let first = out.len();
                out[slot] = QbvhNode::inner(&node.bounds, first as u32, children.len() as u32);
                for (k, &c) in children.iter().enumerate() {
                    out.push(QbvhNode::default());
                    queue.push_back((c, first + k));
                }
            }
        }
    }
    out
}

/// Number of levels of a QBVH (0 for no nodes, 1 for a single leaf).
pub fn qbvh_depth(nodes: &[QbvhNode]) -> usize {
    if nodes.is_empty() {
        return 0;
    }
    let mut depth = 0;
    let mut stack = vec![(0u32, 1usize)];
    while let Some((i, d)) = stack.pop() {
        depth = depth.max(d);
        let n = &nodes[i as usize];
        if !n.is_leaf() {
            stack.extend((n.first..n.first + n.count()).map(|c| (c, d + 1)));
        }
    }
    depth
}

/// One entry of the compact traversal stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactEntry(pub u32);

impl CompactEntry {
    /// The entry for the siblings `first_child + offsets[i]`, to be visited in the order given
    /// (1 to 3 offsets, each in 0..4, no repeats). `first_child` must fit in 26 bits.
    pub fn new(first_child: u32, offsets: &[u32]) -> CompactEntry {
        debug_assert!(first_child <= NODE_INDEX_MASK && (1..=3).contains(&offsets.len()));
        let o0 = offsets[0] & 3;
        let o1 = offsets.get(1).map_or(o0, |o| o & 3);
        let o2 = offsets.get(2).map_or(o1, |o| o & 3);
        CompactEntry(first_child | (o0 | o1 << 2 | o2 << 4) << NODE_INDEX_BITS)
    }

    pub fn first_child(self) -> u32 {
        self.0 & NODE_INDEX_MASK
    }

    /// The pop rule of paper 004: returns the node to visit next and the entry that stays on
    /// the stack, or `None` when this was its last sibling.
    #[inline]
    pub fn pop(self) -> (u32, Option<CompactEntry>) {
        let first = self.0 & NODE_INDEX_MASK;
        let mut offsets = self.0 >> NODE_INDEX_BITS;
        let current = offsets & 3;
        offsets >>= 2;
        let rest = if offsets & 3 == current {
            None
        } else {
            // Shift the offsets down one slot and repeat the last one in the top slot.
            Some(CompactEntry(
                first | (offsets | ((offsets << 2) & 0x30)) << NODE_INDEX_BITS,
            ))
        };
        (first + current, rest)
    }
}

/// A fixed-size stack of compact entries (and the marker for leaving an instance).
pub struct CompactStack<const N: usize> {
    entries: [u32; N],
    len: usize,
}

impl<const N: usize> Default for CompactStack<N> {
    fn default() -> Self {
        CompactStack {
            entries: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> CompactStack<N> {
    /// Pushes a raw entry. The builder bounds the tree depths so that this never overflows
    /// (see `prepared::TRAVERSAL_STACK_SIZE`); an overflow is a bug, so it panics.
    #[inline]
    pub fn push(&mut self, raw: u32) {
        self.entries[self.len] = raw;
        self.len += 1;
    }

    /// The raw top entry, without removing it.
    #[inline]
    pub fn top(&self) -> Option<u32> {
        self.len.checked_sub(1).map(|i| self.entries[i])
    }

    /// Removes the top entry.
    #[inline]
    pub fn drop_top(&mut self) {
        self.len = self.len.saturating_sub(1);
    }

    /// Pops the next node of the top compact entry (which must not be a marker), leaving the
    /// entry's remaining siblings on the stack.
    #[inline]
    pub fn pop_node(&mut self) -> Option<u32> {
        let top = self.top()?;
        let (node, rest) = CompactEntry(top).pop();
        match rest {
            Some(rest) => self.entries[self.len - 1] = rest.0,
            None => self.len -= 1,
        }
        Some(node)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Sorts up to four children by entry distance (`f32::INFINITY` for a miss or a missing child)
/// with the 5-comparator network; returns the offsets and distances, nearest first.
#[inline]
pub fn sort_children(mut dist: [f32; 4]) -> ([u32; 4], [f32; 4]) {
    let mut order = [0u32, 1, 2, 3];
    let mut swap_if = |a: usize, b: usize, order: &mut [u32; 4]| {
        if dist[b] < dist[a] {
            dist.swap(a, b);
            order.swap(a, b);
        }
    };
    swap_if(0, 1, &mut order);
    swap_if(2, 3, &mut order);
    swap_if(0, 2, &mut order);
    swap_if(1, 3, &mut order);
    swap_if(1, 2, &mut order);
    (order, dist)
}

/// Tests the children of `node` and descends: returns the nearest hit child and pushes the
/// other hit children (nearest first) as one compact entry, or returns `None` if no child is hit.
#[inline]
pub fn visit_children<const N: usize>(
    nodes: &[QbvhNode],
    node: &QbvhNode,
    ray: &SlabRay,
    t_min: f32,
    t_max: f32,
    stack: &mut CompactStack<N>,
) -> Option<u32> {
    visit_siblings(
        node.first,
        node.count(),
        |c| nodes[c as usize].entry(ray, t_min, t_max),
        stack,
    )
}

/// [`visit_children`] for any tree whose siblings are consecutive: `entry(node)` is the ray's
/// entry distance into the bounds of `node`, or `None` on a miss.
#[inline]
pub fn visit_siblings<const N: usize>(
    first: u32,
    count: u32,
    entry: impl Fn(u32) -> Option<f32>,
    stack: &mut CompactStack<N>,
) -> Option<u32> {
    let mut dist = [f32::INFINITY; 4];
    for (k, d) in dist.iter_mut().enumerate().take(count.min(4) as usize) {
        if let Some(t) = entry(first + k as u32) {
            *d = t;
        }
    }
    let (order, dist) = sort_children(dist);
    if dist[0] == f32::INFINITY {
        return None;
    }
    let more = dist[1..]
        .iter()
        .take_while(|&&d| d != f32::INFINITY)
        .count();
    if more > 0 {
        stack.push(CompactEntry::new(first, &order[1..1 + more]).0);
    }
    Some(first + order[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_entry_pops_siblings_in_push_order_then_disappears() {
        let first = 12345;
        // Every ordered choice of 1..=3 distinct offsets.
        for a in 0..4u32 {
            for b in 0..4u32 {
                for c in 0..4u32 {
                    for len in 1..=3 {
                        let offsets = &[a, b, c][..len];
                        let distinct = (0..len).all(|i| (0..i).all(|j| offsets[i] != offsets[j]));
                        if !distinct {
                            continue;
                        }
                        let mut entry = Some(CompactEntry::new(first, offsets));
                        let mut popped = Vec::new();
                        while let Some(e) = entry {
                            assert_eq!(e.first_child(), first);
                            let (node, rest) = e.pop();
                            popped.push(node - first);
                            entry = rest;
                            assert!(popped.len() <= 3);
                        }
                        assert_eq!(popped, offsets, "offsets {offsets:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn sorting_network_orders_children_by_distance() {
        let (order, dist) = sort_children([3.0, f32::INFINITY, 1.0, 2.0]);
        assert_eq!(order, [2, 3, 0, 1]);
        assert_eq!(dist, [1.0, 2.0, 3.0, f32::INFINITY]);
    }

    #[test]
    fn stack_pop_node_walks_every_sibling_of_the_top_entry() {
        let mut stack = CompactStack::<8>::default();
        stack.push(CompactEntry::new(40, &[2]).0);
        stack.push(CompactEntry::new(8, &[3, 0, 1]).0);
        let nodes: Vec<u32> = std::iter::from_fn(|| stack.pop_node()).collect();
        assert_eq!(nodes, [11, 8, 9, 42]);
        assert!(stack.is_empty());
    }
}

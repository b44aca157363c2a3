//! The PLOC builder (Meister & Bittner 2018, "Parallel Locally-Ordered Clustering for Bounding
//! Volume Hierarchy Construction"): the primitives sorted along the Morton curve (as the LBVH
//! sorts them, [`morton_order`]) are clusters; in each round every cluster finds its nearest
//! neighbour among the `PLOC_RADIUS` clusters on either side of it by the area of their union,
//! mutual nearest neighbours merge into a new node that takes the lower one's place, and the
//! rest keep theirs, until one cluster is left. This is the plain CPU twin of the GPU builder in
//! `gpu::ploc` (`shaders/bvh/ploc_*.wgsl`), which writes the very same records.
//!
//! Rules that both sides follow, so that the trees agree to the bit:
//! - The distance is [`collapse_area`] of [`union_exact`] (fused sums, order-independent
//!   joins), compared in `f32::total_cmp`'s order. Among equal distances a cluster prefers its
//!   partner `i ^ 1`, then the nearer position, then the lower one, so that runs of equal boxes
//!   pair off two by two instead of one pair a round.
//! - The first [`ploc_natural_rounds`] rounds search; every later round pairs clusters `2k` and
//!   `2k + 1` outright. A round raises the tree's depth by at most one and a paired round halves
//!   the clusters, so the rounds, and the depth, stay within [`ploc_rounds`] whatever the input
//!   (nested boxes, say, which merge one pair a round).
//!
//! Numbering: with `n` primitives, leaf `k` (`nodes[n - 1 + k]`) holds the `k`-th primitive of
//! the Morton order; internal nodes are numbered down from `n - 2` as they are made (a round's
//! merges in the order of their positions), so the root is 0 and a parent comes before its
//! children. The leaves' `first` is their place in the tree's depth-first order (left child
//! first), which is the order of `prim_order`, so that every subtree's primitives are
//! consecutive, as the wide collapse needs.

use rayon::prelude::*;

use super::aabb::Aabb;
use super::bvh::{BinaryBvh, BinaryNode, BinaryNodeKind};
use super::lbvh::{morton_order, union_exact};
use super::wide::collapse_area;

/// Clusters searched on either side of a cluster for its nearest neighbour.
pub const PLOC_RADIUS: u32 = 16;

/// Rounds that search for nearest neighbours in a build over `n` primitives, before the rest
/// pair clusters outright: `4 ⌈log2 n⌉ + 8`. A round merges about a sixth of the clusters
/// (the dragon's 871K triangles take 66 rounds, its bound 88), so only inputs that merge
/// far slower, as nested boxes do, reach the paired rounds.
pub fn ploc_natural_rounds(n: u32) -> u32 {
    4 * ceil_log2(n) + 8
}

fn ceil_log2(n: u32) -> u32 {
    32 - n.saturating_sub(1).leading_zeros()
}

/// The most rounds a build over `n` primitives takes: the searching rounds and enough paired
/// rounds to halve what is left down to one cluster.
pub fn ploc_rounds(n: u32) -> u32 {
    ploc_natural_rounds(n) + ceil_log2(n)
}

/// [`collapse_area`] of the union of `a` and `b` as a key in `f32::total_cmp`'s order, with
/// every NaN the largest key and areas below `f32::MIN_POSITIVE` zero (a GPU may flush them),
/// so that both sides compare the same keys. Twin of `ploc_distance` in
/// `shaders/bvh/ploc_common.wgsl`.
pub fn ploc_distance(a: Aabb, b: Aabb) -> i32 {
    let area = collapse_area(&union_exact(a, b));
    if area.is_nan() {
        return i32::MAX;
    }
    let area = if area.abs() < f32::MIN_POSITIVE {
        0.0
    } else {
        area
    };
    let bits = area.to_bits() as i32;
    bits ^ (((bits >> 31) as u32) >> 1) as i32
}

/// The key by which cluster `i` compares candidate `j` ([`ploc_distance`] first, then
/// `j != i ^ 1`, then `|i - j|`, then `j`; smaller is better).
fn candidate_key(i: u32, j: u32, distance: i32) -> (i32, bool, u32, u32) {
    (distance, j != (i ^ 1), i.abs_diff(j), j)
}

/// The nearest neighbour of every cluster in round `round` of a build over `n` primitives
/// (`boxes` are the clusters' boxes in position order); a cluster without a partner (the last
/// of an odd number in a paired round) is its own.
pub fn ploc_neighbours(boxes: &[Aabb], round: u32, n: u32) -> Vec<u32> {
    let c = boxes.len() as u32;
    let paired = round >= ploc_natural_rounds(n);
    (0..c)
        .into_par_iter()
        .map(|i| {
            if paired {
                return if (i ^ 1) < c { i ^ 1 } else { i };
            }
            let lo = i.saturating_sub(PLOC_RADIUS);
            let hi = (i + PLOC_RADIUS).min(c - 1);
            (lo..=hi)
                .filter(|&j| j != i)
                .map(|j| {
                    let d = ploc_distance(boxes[i as usize], boxes[j as usize]);
                    (candidate_key(i, j, d), j)
                })
                .min()
                .map_or(i, |(_, j)| j)
        })
        .collect()
}

/// Builds the PLOC tree over `bounds` (one box per primitive): `2n - 1` nodes numbered as the
/// module says, one primitive per leaf.
///
/// # Panics
///
/// With more than `u32::MAX / 2` boxes (the node indices would overflow `u32`).
pub fn build_ploc(bounds: &[Aabb]) -> BinaryBvh {
    let n = bounds.len();
    if n == 0 {
        return BinaryBvh::default();
    }
    assert!(
        n <= u32::MAX as usize / 2,
        "a PLOC tree over {n} primitives has more nodes than u32 indices address"
    );
    let (order, _) = morton_order(bounds);
    let mut nodes = vec![
        BinaryNode {
            bounds: Aabb::EMPTY,
            kind: BinaryNodeKind::Leaf { first: 0, count: 1 },
        };
        2 * n - 1
    ];
    let mut counts = vec![1u32; 2 * n - 1];
    let mut clusters: Vec<u32> = (0..n as u32).map(|k| n as u32 - 1 + k).collect();
    let mut boxes: Vec<Aabb> = order.iter().map(|&p| bounds[p as usize]).collect();
    for (k, b) in boxes.iter().enumerate() {
        nodes[n - 1 + k].bounds = *b;
    }
    // The next internal node's number, counting down (wrapping below 0 only at the end).
    let mut next = n as u32 - 1;
    let mut round = 0;
    while clusters.len() > 1 {
        let nn = ploc_neighbours(&boxes, round, n as u32);
        let mut kept = Vec::with_capacity(clusters.len());
        let mut kept_boxes = Vec::with_capacity(clusters.len());
        for (i, &j) in nn.iter().enumerate() {
            let i = i as u32;
            let mutual = j != i && nn[j as usize] == i;
            if mutual && j < i {
                continue;
            }
            if mutual {
                next -= 1;
                let (a, b) = (clusters[i as usize], clusters[j as usize]);
                let joined = union_exact(boxes[i as usize], boxes[j as usize]);
                nodes[next as usize] = BinaryNode {
                    bounds: joined,
                    kind: BinaryNodeKind::Inner { left: a, right: b },
                };
                counts[next as usize] = counts[a as usize] + counts[b as usize];
                kept.push(next);
                kept_boxes.push(joined);
            } else {
                kept.push(clusters[i as usize]);
                kept_boxes.push(boxes[i as usize]);
            }
        }
        clusters = kept;
        boxes = kept_boxes;
        round += 1;
    }
    debug_assert_eq!(clusters, vec![0]);
    // Depth-first places: the left subtree's primitives first.
    let mut prim_order = vec![0u32; n];
    let mut stack = vec![(0u32, 0u32)];
    while let Some((node, first)) = stack.pop() {
        match nodes[node as usize].kind {
            BinaryNodeKind::Inner { left, right } => {
                stack.push((right, first + counts[left as usize]));
                stack.push((left, first));
            }
            BinaryNodeKind::Leaf { .. } => {
                nodes[node as usize].kind = BinaryNodeKind::Leaf { first, count: 1 };
                prim_order[first as usize] = order[node as usize + 1 - n];
            }
        }
    }
    BinaryBvh { nodes, prim_order }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::*;

    fn unit(x: f32) -> Aabb {
        Aabb::new(Vec3::new(x, 0.0, 0.0), Vec3::new(x + 1.0, 1.0, 1.0))
    }

    #[test]
    fn the_two_nearest_boxes_merge_first() {
        // 0 and 1 touch, 10 is far: (0, 1) merge, then the pair with 10.
        let bvh = build_ploc(&[unit(10.0), unit(0.0), unit(1.0)]);
        assert_eq!(bvh.nodes.len(), 5);
        let BinaryNodeKind::Inner { left, right } = bvh.nodes[0].kind else {
            panic!("the root is a leaf");
        };
        assert_eq!(
            bvh.nodes[left as usize].kind,
            BinaryNodeKind::Inner { left: 2, right: 3 }
        );
        assert_eq!(right, 4);
        assert_eq!(bvh.prim_order, vec![1, 2, 0]);
        assert_eq!(
            bvh.nodes[0].bounds,
            Aabb::new(Vec3::ZERO, Vec3::new(11.0, 1.0, 1.0))
        );
    }

    #[test]
    fn equal_boxes_pair_off_two_by_two() {
        let boxes = vec![unit(0.0); 64];
        let nn = ploc_neighbours(&boxes, 0, 64);
        assert!(nn.iter().enumerate().all(|(i, &j)| j == i as u32 ^ 1));
        // Six rounds of halving: depth 7 counting the leaves.
        let bvh = build_ploc(&boxes);
        let records = bvh.to_records();
        let depth = |mut node: u32| {
            let mut d = 1;
            while records[node as usize].parent != crate::accel::bvh::NO_NODE {
                node = records[node as usize].parent;
                d += 1;
            }
            d
        };
        assert!((63..127).all(|leaf| depth(leaf) == 7));
    }

    #[test]
    fn nested_boxes_stay_within_the_rounds_depth_bound() {
        // Each box holds the one before: the search merges one pair a round, so the tree
        // leans, until the paired rounds take over.
        let n = 300u32;
        let boxes: Vec<Aabb> = (0..n)
            .map(|i| Aabb::new(Vec3::splat(-(i as f32) - 1.0), Vec3::splat(i as f32 + 1.0)))
            .collect();
        let bvh = build_ploc(&boxes);
        let records = bvh.to_records();
        let mut deepest = 0;
        for leaf in n - 1..2 * n - 1 {
            let (mut node, mut d) = (leaf, 0);
            while node != crate::accel::bvh::NO_NODE {
                node = records[node as usize].parent;
                d += 1;
            }
            deepest = deepest.max(d);
        }
        assert!(deepest <= ploc_rounds(n) + 1, "depth {deepest}");
        assert!(deepest > ploc_natural_rounds(n), "depth {deepest}");
        let mut order = bvh.prim_order.clone();
        order.sort_unstable();
        assert_eq!(order, (0..n).collect::<Vec<_>>());
    }
}

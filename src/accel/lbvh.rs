//! The LBVH builder (Karras 2012, "Maximizing Parallelism in the Construction of BVHs, Octrees,
//! and k-d Trees"): primitives sorted by the Morton code of their box's centroid, a binary radix
//! tree over the sorted codes, and bounds from the leaves up. This is the plain CPU twin of the
//! GPU builder in `gpu::lbvh` (`shaders/bvh/lbvh_*.wgsl`), which writes the very same records.
//!
//! Numbering: with `n` primitives, internal node `k` (`k < n - 1`, the root is 0) is `nodes[k]`
//! and leaf `k` is `nodes[n - 1 + k]`, holding the `k`-th primitive of the sorted order
//! (`prim_order[k]`, one primitive per leaf). A child may come before its parent.
//!
//! Morton convention: 10 bits an axis, interleaved with x in the highest bit of every triple
//! (bit 29 is x's top bit), as in the paper. This differs from `accel::knn::morton_code` (x in
//! the lowest bit, one scale for all axes), so only its bit spreading is mirrored here.
//!
//! Bounds are joined with [`union_exact`]: the component-wise minimum and maximum in the total
//! order of `f32::total_cmp`, which is order-independent bit for bit (for the sign of zero and
//! NaNs too), so that the GPU's joins, made in whatever order its invocations meet, give the
//! same bits. For boxes without NaNs or negative zeros it is [`Aabb::union`].

use glam::Vec3;

use super::aabb::Aabb;
use super::bvh::{BinaryBvh, BinaryNode, BinaryNodeKind};

/// Cells of the Morton grid per axis.
pub const LBVH_CELLS: u32 = 1024;

/// The Morton grid over the primitives' centroids: the cell of centroid `c` on axis `a` is
/// `floor((c[a] - lo[a]) * scale[a])`, clamped to `0..=1023`. Made on the host
/// ([`lbvh_frame`]) and given to the GPU as a uniform.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LbvhFrame {
    /// The centroids' low corner.
    pub lo: Vec3,
    /// Cells per unit length on each axis: `1024 / extent`, or 0 where the extent is zero or not
    /// finite (every centroid then falls in cell 0 of that axis).
    pub scale: Vec3,
}

/// The centroid of a primitive's box, `(min + max) * 0.5` per axis of the corners with
/// subnormals flushed, flushed ([`flush`]: GPUs may flush subnormals, so no value either side
/// computes with is one); `(0, 0, 0)` for an empty box (as the SAH builder has it).
pub fn lbvh_centroid(b: &Aabb) -> Vec3 {
    if b.is_empty() {
        Vec3::ZERO
    } else {
        flush3((flush3(b.min) + flush3(b.max)) * 0.5)
    }
}

/// `x`, or +0 when `|x|` is below the smallest normal float (its exponent field is zero).
/// Twin of `flush` in `shaders/bvh/lbvh_common.wgsl`.
pub fn flush(x: f32) -> f32 {
    if x.to_bits() & 0x7f80_0000 == 0 {
        0.0
    } else {
        x
    }
}

/// [`flush`] of each coordinate.
pub fn flush3(v: Vec3) -> Vec3 {
    Vec3::new(flush(v.x), flush(v.y), flush(v.z))
}

/// The Morton frame of `bounds`: the box of their centroids (NaN coordinates are left out) and
/// 1024 cells per axis over it. No boxes give `lo = 0`, `scale = 0`.
pub fn lbvh_frame(bounds: &[Aabb]) -> LbvhFrame {
    if bounds.is_empty() {
        return LbvhFrame {
            lo: Vec3::ZERO,
            scale: Vec3::ZERO,
        };
    }
    let (lo, hi) = bounds
        .iter()
        .map(lbvh_centroid)
        .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), c| {
            (lo.min(c), hi.max(c))
        });
    let extent = hi - lo;
    let scale = Vec3::from_array(extent.to_array().map(|e| {
        if e > 0.0 && e.is_finite() {
            LBVH_CELLS as f32 / e
        } else {
            0.0
        }
    }));
    LbvhFrame { lo, scale }
}

/// The 10 low bits of `v` spread to every third bit (bit `i` goes to bit `3i`).
fn spread_bits(v: u32) -> u32 {
    let mut x = v & 0x3ff;
    x = (x | (x << 16)) & 0x0300_00ff;
    x = (x | (x << 8)) & 0x0300_f00f;
    x = (x | (x << 4)) & 0x030c_30c3;
    (x | (x << 2)) & 0x0924_9249
}

/// The cell of coordinate `c` on an axis of the frame: `floor((c - lo) * scale)` in `f32`,
/// clamped to `0..=1023`, with NaN in cell 0. Twin of `lbvh_cell` in
/// `shaders/bvh/lbvh_codes.wgsl`.
fn lbvh_cell(c: f32, lo: f32, scale: f32) -> u32 {
    let t = ((c - lo) * scale).floor();
    if t >= (LBVH_CELLS - 1) as f32 {
        LBVH_CELLS - 1
    } else if t > 0.0 {
        t as u32
    } else {
        0
    }
}

/// The 30-bit Morton code of `centroid` in `frame`, x in the highest bit of every triple.
/// Twin of `shaders/bvh/lbvh_codes.wgsl`.
pub fn lbvh_code(centroid: Vec3, frame: &LbvhFrame) -> u32 {
    let cell = |a: usize| lbvh_cell(centroid[a], frame.lo[a], frame.scale[a]);
    (spread_bits(cell(0)) << 2) | (spread_bits(cell(1)) << 1) | spread_bits(cell(2))
}

/// The smaller of `a` and `b` in the total order of `f32::total_cmp`.
fn total_min(a: f32, b: f32) -> f32 {
    if b.total_cmp(&a).is_lt() {
        b
    } else {
        a
    }
}

/// The larger of `a` and `b` in the total order of `f32::total_cmp`.
fn total_max(a: f32, b: f32) -> f32 {
    if b.total_cmp(&a).is_gt() {
        b
    } else {
        a
    }
}

/// The union of two boxes by component-wise minimum and maximum in the total order of
/// `f32::total_cmp`: commutative and associative bit for bit, so any order of joins gives the
/// same box. Twin of `union_words` in `shaders/bvh/lbvh_common.wgsl`.
pub fn union_exact(a: Aabb, b: Aabb) -> Aabb {
    let min = |a: Vec3, b: Vec3| {
        Vec3::new(
            total_min(a.x, b.x),
            total_min(a.y, b.y),
            total_min(a.z, b.z),
        )
    };
    let max = |a: Vec3, b: Vec3| {
        Vec3::new(
            total_max(a.x, b.x),
            total_max(a.y, b.y),
            total_max(a.z, b.z),
        )
    };
    Aabb {
        min: min(a.min, b.min),
        max: max(a.max, b.max),
    }
}

/// The length of the common prefix of the sorted keys at positions `i` and `j`, where a key is
/// the 30-bit code followed by the 32-bit position (so that equal codes still differ); -1 when
/// `j` is outside `0..n`. Karras's δ; twin of `delta` in `shaders/bvh/lbvh_hierarchy.wgsl`.
fn delta(codes: &[u32], i: i64, j: i64) -> i32 {
    if j < 0 || j >= codes.len() as i64 {
        return -1;
    }
    let (ci, cj) = (codes[i as usize], codes[j as usize]);
    if ci != cj {
        (ci ^ cj).leading_zeros() as i32
    } else {
        32 + ((i as u32) ^ (j as u32)).leading_zeros() as i32
    }
}

/// One internal node of the radix tree: its children and its range of sorted positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LbvhInner {
    /// Node indices (in the numbering of this module) of the two children.
    pub left: u32,
    pub right: u32,
    /// The node covers the sorted positions `first..=last`.
    pub first: u32,
    pub last: u32,
}

/// Internal node `i` of the radix tree over the sorted `codes` (`i < n - 1`). Karras 2012,
/// figure 4; twin of `shaders/bvh/lbvh_hierarchy.wgsl`.
pub fn lbvh_internal_node(codes: &[u32], i: u32) -> LbvhInner {
    let n = codes.len() as i64;
    let i = i as i64;
    // The direction of the range: towards the neighbour sharing the longer prefix.
    let d: i64 = if delta(codes, i, i + 1) > delta(codes, i, i - 1) {
        1
    } else {
        -1
    };
    // An upper bound of the range's length, then the other end by binary search.
    let delta_min = delta(codes, i, i - d);
    let mut l_max: i64 = 2;
    while delta(codes, i, i + l_max * d) > delta_min {
        l_max *= 2;
    }
    let mut l: i64 = 0;
    let mut t = l_max / 2;
    while t >= 1 {
        if delta(codes, i, i + (l + t) * d) > delta_min {
            l += t;
        }
        t /= 2;
    }
    let j = i + l * d;
    // The split: the last position (from i) sharing more than the range's common prefix.
    let delta_node = delta(codes, i, j);
    let mut s: i64 = 0;
    let mut t = l;
    loop {
        t = (t + 1) / 2;
        if delta(codes, i, i + (s + t) * d) > delta_node {
            s += t;
        }
        if t <= 1 {
            break;
        }
    }
    let gamma = i + s * d + d.min(0);
    let (first, last) = (i.min(j), i.max(j));
    let leaf = |k: i64| (n - 1 + k) as u32;
    let left = if first == gamma {
        leaf(gamma)
    } else {
        gamma as u32
    };
    let right = if last == gamma + 1 {
        leaf(gamma + 1)
    } else {
        (gamma + 1) as u32
    };
    LbvhInner {
        left,
        right,
        first: first as u32,
        last: last as u32,
    }
}

/// The primitives of `bounds` sorted by the Morton code of their centroids in
/// [`lbvh_frame`]'s grid (stably: equal codes keep the order of their indices), and the sorted
/// codes. The GPU's twin is the codes kernel and the radix sort of `gpu::lbvh`.
pub fn morton_order(bounds: &[Aabb]) -> (Vec<u32>, Vec<u32>) {
    let frame = lbvh_frame(bounds);
    let codes: Vec<u32> = bounds
        .iter()
        .map(|b| lbvh_code(lbvh_centroid(b), &frame))
        .collect();
    let mut order: Vec<u32> = (0..bounds.len() as u32).collect();
    order.sort_by_key(|&p| codes[p as usize]);
    let sorted = order.iter().map(|&p| codes[p as usize]).collect();
    (order, sorted)
}

/// Builds the LBVH over `bounds` (one box per primitive): `2n - 1` nodes numbered as the module
/// says, one primitive per leaf. Empty boxes are kept (their centroid is the origin).
///
/// # Panics
///
/// With more than `u32::MAX / 2` boxes (the node indices would overflow `u32`).
pub fn build_lbvh(bounds: &[Aabb]) -> BinaryBvh {
    let n = bounds.len();
    if n == 0 {
        return BinaryBvh::default();
    }
    assert!(
        n <= u32::MAX as usize / 2,
        "an LBVH over {n} primitives has more nodes than u32 indices address"
    );
    let (prim_order, sorted) = morton_order(bounds);

    let inner = n - 1;
    let mut nodes: Vec<BinaryNode> = Vec::with_capacity(2 * n - 1);
    let mut ranges = Vec::with_capacity(inner);
    for i in 0..inner as u32 {
        let node = lbvh_internal_node(&sorted, i);
        nodes.push(BinaryNode {
            bounds: Aabb::EMPTY,
            kind: BinaryNodeKind::Inner {
                left: node.left,
                right: node.right,
            },
        });
        ranges.push((i, node.last - node.first));
    }
    for (k, &p) in prim_order.iter().enumerate() {
        nodes.push(BinaryNode {
            bounds: bounds[p as usize],
            kind: BinaryNodeKind::Leaf {
                first: k as u32,
                count: 1,
            },
        });
    }
    // A child covers fewer primitives than its parent, so taking the inner nodes by the size of
    // their range meets both children of each node before the node itself.
    ranges.sort_by_key(|&(_, size)| size);
    for (i, _) in ranges {
        if let BinaryNodeKind::Inner { left, right } = nodes[i as usize].kind {
            nodes[i as usize].bounds =
                union_exact(nodes[left as usize].bounds, nodes[right as usize].bounds);
        }
    }
    BinaryBvh { nodes, prim_order }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_put_x_in_the_highest_bit_of_every_triple() {
        let frame = LbvhFrame {
            lo: Vec3::ZERO,
            scale: Vec3::ONE,
        };
        assert_eq!(lbvh_code(Vec3::new(1.0, 0.0, 0.0), &frame), 0b100);
        assert_eq!(lbvh_code(Vec3::new(0.0, 1.0, 0.0), &frame), 0b010);
        assert_eq!(lbvh_code(Vec3::new(0.0, 0.0, 1.0), &frame), 0b001);
        assert_eq!(lbvh_code(Vec3::splat(1023.9), &frame), (1 << 30) - 1);
        assert_eq!(lbvh_code(Vec3::splat(5000.0), &frame), (1 << 30) - 1);
        assert_eq!(lbvh_code(Vec3::splat(-3.0), &frame), 0);
        assert_eq!(lbvh_code(Vec3::splat(f32::NAN), &frame), 0);
    }

    #[test]
    fn two_primitives_make_a_root_over_two_leaves() {
        let b = |x: f32| Aabb::new(Vec3::splat(x), Vec3::splat(x + 1.0));
        let bvh = build_lbvh(&[b(5.0), b(0.0)]);
        assert_eq!(bvh.prim_order, vec![1, 0]);
        assert_eq!(bvh.nodes.len(), 3);
        assert_eq!(
            bvh.nodes[0].kind,
            BinaryNodeKind::Inner { left: 1, right: 2 }
        );
        assert_eq!(bvh.nodes[0].bounds, Aabb::new(Vec3::ZERO, Vec3::splat(6.0)));
    }

    #[test]
    fn the_exact_union_does_not_depend_on_the_order_of_signed_zeros() {
        let a = Aabb::new(Vec3::splat(0.0), Vec3::splat(0.0));
        let b = Aabb::new(Vec3::splat(-0.0), Vec3::splat(-0.0));
        let ab = union_exact(a, b);
        let ba = union_exact(b, a);
        assert_eq!(ab.min.x.to_bits(), ba.min.x.to_bits());
        assert_eq!(ab.max.x.to_bits(), ba.max.x.to_bits());
        assert_eq!(ab.min.x.to_bits(), (-0.0f32).to_bits());
        assert_eq!(ab.max.x.to_bits(), 0.0f32.to_bits());
    }
}

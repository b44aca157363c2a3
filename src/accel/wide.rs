//! The 8-wide compressed BVH (Ylitie, Karras and Laine 2017, "Efficient incoherent ray traversal
//! on GPUs through compressed wide BVHs"): its 80-byte node, the collapse from a binary BVH with
//! the children placed in slots by ray octant, and the node test that both traversals share.
//!
//! A node holds up to eight children. Their boxes are quantized to 8 bits per plane on a grid
//! whose origin is the node's `origin` and whose step on each axis is a power of two (`exps`).
//! A child box decodes as `origin + q · 2^e` on each plane, which is exact whatever the
//! arithmetic (the product of a byte and a power of two is exact, so a fused multiply-add and
//! a multiply then an add give the same rounding); the builder checks that every decoded box
//! holds its child, so the ordinary slab test of [`super::aabb`] runs on boxes that are at
//! least as large as the children; the node test ([`WideNode::intersect_children`]) measures
//! the planes as the paper does, with slack for its rounding. Closest hits are then the same as
//! any other layout's.
//!
//! Inner children are stored consecutively from `child_base`, in slot order; the primitives of
//! a node's leaf children consecutively from `prim_base` (at most 24, at most
//! [`WIDE_LEAF_MAX`] per leaf child). Each slot has a meta byte:
//! - `0`: empty;
//! - inner child: `0b001_11sss`, `24 + s` for slot `s`;
//! - leaf child: the primitive count in unary in the top three bits (`0b001`, `0b011`,
//!   `0b111`) and its first primitive's offset from `prim_base` (0..24) in the low five.
//!
//! A node's test gives two groups, a pair of words each, as in the paper:
//! - the node group `[child_base, hits << 24 | imask]`: bit `24 + (s ^ oct_inv)` for each inner
//!   child hit, where `oct_inv` is `7 ^` the ray's octant, so that taking the highest bit first
//!   visits slot `octant` first, the child the builder placed nearest along that octant;
//! - the primitive group `[prim_base, bits]`: one bit per primitive of the leaf children hit.

use std::cmp::Ordering;

use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use rayon::prelude::*;

use super::aabb::Aabb;
use super::bvh::{BinaryBvh, BinaryNodeKind};

/// Children per node.
pub const WIDE_CHILDREN: usize = 8;
/// Primitives per leaf child of the middle level (three bits of unary count).
pub const WIDE_LEAF_MAX: usize = 3;
/// Primitives one node's leaf children hold together (the primitive group's 24 bits).
pub const WIDE_NODE_PRIMS: usize = 24;
/// Entries of the wide traversal stack (pairs of words): the top level's depth, two entries
/// and a marker for the instance being entered, and the middle level's depth.
pub const WIDE_STACK_SIZE: usize = 32;
/// The stack entry that means "leave the instance and return to world space": no group that
/// is pushed has a zero second word.
pub const WIDE_RETURN_TO_WORLD: [u32; 2] = [0, 0];

/// Meta byte bits: the low five bits of an inner child's meta byte are `24 + slot`.
const INNER_META: u32 = 0b001_00000 | 24;

/// One node of the wide BVH; 80 bytes, five `vec4<u32>`.
///
/// ```text
/// offset  0: origin: vec3<f32>          the quantization grid's origin (the node box's min)
/// offset 12: exps_imask: u32            biased exponents of the x, y, z steps (bytes 0..3),
///                                       the inner-child mask by slot (byte 3)
/// offset 16: child_base: u32            first inner child (local to the tree)
/// offset 20: prim_base: u32             first primitive reference of the leaf children
/// offset 24: meta: [u32; 2]             one byte per slot
/// offset 32: lo_x, lo_y, lo_z: [u32; 2] each: one byte per slot, the box's low planes
/// offset 56: hi_x, hi_y, hi_z: [u32; 2] the high planes
/// ```
/// WGSL twin: five consecutive `vec4<u32>` of `mesh_nodes` / `top_nodes` when the scene's layout
/// is wide (`shaders/shared/traverse_wide.wgsl`, `load_wide`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WideNode {
    pub origin: [f32; 3],
    pub exps_imask: u32,
    pub child_base: u32,
    pub prim_base: u32,
    pub meta: [u32; 2],
    /// lo_x, lo_y, lo_z, then hi_x, hi_y, hi_z.
    pub q: [[u32; 2]; 6],
}

/// The byte of slot `slot` in a pair of words.
#[inline]
fn byte(words: &[u32; 2], slot: usize) -> u32 {
    (words[slot / 4] >> (8 * (slot % 4))) & 0xff
}

#[inline]
fn set_byte(words: &mut [u32; 2], slot: usize, value: u32) {
    words[slot / 4] |= (value & 0xff) << (8 * (slot % 4));
}

/// `2^e` for a biased exponent byte (`e + 127`, in 1..=254): a normal float.
#[inline]
fn step_of(biased: u32) -> f32 {
    f32::from_bits(biased << 23)
}

impl WideNode {
    /// The inner-child mask (bit `s` for an inner child in slot `s`).
    #[inline]
    pub fn imask(&self) -> u32 {
        self.exps_imask >> 24
    }

    #[inline]
    pub fn meta_of(&self, slot: usize) -> u32 {
        byte(&self.meta, slot)
    }

    /// Whether slot `slot` holds an inner child.
    #[inline]
    pub fn is_inner(&self, slot: usize) -> bool {
        self.imask() & (1 << slot) != 0
    }

    /// The grid step of each axis.
    #[inline]
    pub fn steps(&self) -> Vec3 {
        Vec3::new(
            step_of(self.exps_imask & 0xff),
            step_of((self.exps_imask >> 8) & 0xff),
            step_of((self.exps_imask >> 16) & 0xff),
        )
    }

    /// The decoded box of slot `slot` (as large as the child's or larger): `origin + q · step`
    /// per plane, each an exact product and one rounded sum.
    #[inline]
    pub fn child_box(&self, slot: usize) -> (Vec3, Vec3) {
        let o = Vec3::from_array(self.origin);
        let s = self.steps();
        let q = |k: usize| byte(&self.q[k], slot) as f32;
        let lo = Vec3::new(q(0), q(1), q(2));
        let hi = Vec3::new(q(3), q(4), q(5));
        (o + lo * s, o + hi * s)
    }

    /// Number of children (used slots).
    pub fn child_count(&self) -> usize {
        (0..WIDE_CHILDREN).filter(|&s| self.meta_of(s) != 0).count()
    }

    /// The inner child of slot `slot` (which must be inner): `child_base` plus the inner
    /// children in lower slots.
    #[inline]
    pub fn inner_child(&self, slot: usize) -> u32 {
        self.child_base + (self.imask() & ((1 << slot) - 1)).count_ones()
    }

    /// The primitives `(first, count)` of leaf slot `slot`, relative to the tree's references.
    #[inline]
    pub fn leaf_prims(&self, slot: usize) -> (u32, u32) {
        let m = self.meta_of(slot);
        (self.prim_base + (m & 0x1f), (m >> 5).count_ones())
    }

    /// The node test: the node group and the primitive group of the children whose boxes the
    /// ray enters within `[t_min, t_max]` (see the module docs), as the paper computes a plane's
    /// distance, `fma(q, step · inv, (origin − ray origin) · inv)`, one fused rounding on top of
    /// the grid-origin term's two. That term's rounding is an absolute error (up to about
    /// `ε · |(origin − ray origin) · inv|`), so each box grows by twice that on both ends, and
    /// the far distance by [`WIDE_FAR_SLACK`] for the relative errors, as in Ize 2013: no box
    /// that the ray enters is missed. An empty node group is `[0, 0]`.
    #[inline]
    pub fn intersect_children(
        &self,
        ray: &WideRay,
        oct_inv: u32,
        t_min: f32,
        t_max: f32,
    ) -> ([u32; 2], [u32; 2]) {
        let steps = self.steps();
        let origin = Vec3::from_array(self.origin);
        let adj_s = (steps * ray.inv).clamp(Vec3::splat(-f32::MAX), Vec3::splat(f32::MAX));
        let adj_o = (origin - ray.origin) * ray.inv;
        let slack = adj_o.abs().max_element() * WIDE_ABS_SLACK;
        // The low planes are the near ones along an axis the ray goes up.
        let near: [usize; 3] = std::array::from_fn(|a| if ray.neg[a] { 3 + a } else { a });
        let far: [usize; 3] = std::array::from_fn(|a| if ray.neg[a] { a } else { 3 + a });
        let imask = self.imask();
        let mut hits = 0u32;
        let mut prims = 0u32;
        for slot in 0..WIDE_CHILDREN {
            let m = self.meta_of(slot);
            if m == 0 {
                // An empty slot (the GPU tests it and drops the result).
                continue;
            }
            let t = |k: usize, a: usize| fma_f32(byte(&self.q[k], slot) as f32, adj_s[a], adj_o[a]);
            let t_near = t(near[0], 0).max(t(near[1], 1)).max(t(near[2], 2)) - slack;
            let t_far = t(far[0], 0).min(t(far[1], 1)).min(t(far[2], 2));
            let entry = t_near.max(t_min);
            let exit = fma_f32(t_far, WIDE_FAR_SLACK, slack).min(t_max);
            // As the GPU's `entry <= exit`: a NaN distance (a degenerate ray) is a miss.
            if !matches!(
                entry.partial_cmp(&exit),
                Some(Ordering::Less | Ordering::Equal)
            ) {
                continue;
            }
            if imask & (1 << slot) != 0 {
                hits |= 1 << (slot as u32 ^ oct_inv);
            } else {
                prims |= (m >> 5) << (m & 0x1f);
            }
        }
        let node_group = if hits == 0 {
            [0, 0]
        } else {
            [self.child_base, hits << 24 | imask]
        };
        (node_group, [self.prim_base, prims])
    }
}

/// A ray prepared for the wide node test: its origin, `1/dir` with components smaller than
/// 2^-80 taken as ±2^-80 (so that no inverse is infinite and no plane distance is NaN), and
/// which axes it goes down.
#[derive(Clone, Copy, Debug)]
pub struct WideRay {
    pub origin: Vec3,
    pub inv: Vec3,
    pub neg: [bool; 3],
}

/// Smallest direction component the node test divides by (raybench's and the paper's guard).
const TINY_DIR: f32 = 8.271806e-25; // 2^-80

/// Relative slack of a box's far distance: the inverse direction's rounding (up to 2.5 ulp on
/// a GPU), the fused plane distance's and the slack arithmetic's, with room to spare.
pub const WIDE_FAR_SLACK: f32 = 1.0 + 8.0 * f32::EPSILON;
/// The absolute slack per unit of `|(grid origin − ray origin) · inv|`: twice the rounding of
/// that term.
pub const WIDE_ABS_SLACK: f32 = 2.0 * f32::EPSILON;

impl WideRay {
    pub fn new(origin: Vec3, dir: Vec3) -> WideRay {
        let neg = [dir.x < 0.0, dir.y < 0.0, dir.z < 0.0];
        let guard = |d: f32, n: bool| {
            if d.abs() < TINY_DIR {
                if n {
                    -TINY_DIR
                } else {
                    TINY_DIR
                }
            } else {
                d
            }
        };
        let d = Vec3::new(
            guard(dir.x, neg[0]),
            guard(dir.y, neg[1]),
            guard(dir.z, neg[2]),
        );
        WideRay {
            origin,
            inv: Vec3::ONE / d,
            neg,
        }
    }
}

/// `a · b + c` rounded once, as a GPU's `fma` rounds it, without a call into the C library on
/// machines whose Rust target has no fused multiply-add (Boldo and Melquiond's emulation: the
/// product is exact in f64, the sum is rounded to odd, and rounding that to f32 is then exact).
#[inline]
pub fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let p = a as f64 * b as f64;
    let c = c as f64;
    let s = p + c;
    // The sum's rounding error (Knuth's two-sum).
    let back = s - p;
    let err = (p - (s - back)) + (c - back);
    let odd = if err != 0.0 && s.is_finite() && s.to_bits() & 1 == 0 {
        // One ulp towards the exact sum: its magnitude is larger when the error has s's sign.
        let bits = s.to_bits();
        f64::from_bits(if (err > 0.0) == (s > 0.0) {
            bits + 1
        } else {
            bits - 1
        })
    } else {
        s
    };
    odd as f32
}

/// `7 ^` the octant of `dir` (bit 2: x < 0, bit 1: y < 0, bit 0: z < 0).
#[inline]
pub fn octant_inv(dir: Vec3) -> u32 {
    7 ^ ((((dir.x < 0.0) as u32) << 2) | (((dir.y < 0.0) as u32) << 1) | (dir.z < 0.0) as u32)
}

/// The node group that visits the root (node 0) first: its one hit bit is the highest, and
/// the inner mask makes that bit's slot map to child 0.
#[inline]
pub fn root_group(oct_inv: u32) -> [u32; 2] {
    [0, 1 << 31 | 1 << (7 ^ oct_inv)]
}

/// Takes the highest hit of a node group (which must have one): the child node to visit.
#[inline]
pub fn take_child(group: &mut [u32; 2], oct_inv: u32) -> u32 {
    let bit = 31 - group[1].leading_zeros();
    group[1] &= !(1 << bit);
    let slot = (bit - 24) ^ oct_inv;
    group[0] + (group[1] & 0xff & ((1 << slot) - 1)).count_ones()
}

/// Whether a node group still has a child to visit.
#[inline]
pub fn has_children(group: &[u32; 2]) -> bool {
    group[1] & 0xff00_0000 != 0
}

/// Takes the lowest primitive of a primitive group (which must have one): its reference index.
#[inline]
pub fn take_prim(group: &mut [u32; 2]) -> u32 {
    let bit = group[1].trailing_zeros();
    group[1] &= group[1] - 1;
    group[0] + bit
}

/// The traversal stack of the wide layout: groups and the instance marker.
pub struct WideStack {
    entries: [[u32; 2]; WIDE_STACK_SIZE],
    len: usize,
}

impl Default for WideStack {
    fn default() -> Self {
        WideStack {
            entries: [[0; 2]; WIDE_STACK_SIZE],
            len: 0,
        }
    }
}

impl WideStack {
    /// Pushes an entry. The builder bounds the trees' depths so that this never overflows
    /// (`prepared` checks the scene against [`WIDE_STACK_SIZE`]); an overflow is a bug, so it
    /// panics.
    #[inline]
    pub fn push(&mut self, entry: [u32; 2]) {
        self.entries[self.len] = entry;
        self.len += 1;
    }

    #[inline]
    pub fn pop(&mut self) -> Option<[u32; 2]> {
        self.len = self.len.checked_sub(1)?;
        Some(self.entries[self.len])
    }
}

/// A wide tree: its nodes (root = 0; none for a tree without a primitive that can be hit), its
/// primitive references in the order the nodes' leaf children hold them (references to
/// primitives with empty boxes, which nothing can hit, come last and no node holds them), and
/// its depth in nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WideTree {
    pub nodes: Vec<WideNode>,
    pub prim_order: Vec<u32>,
    pub depth: usize,
}

/// The prims `(first, count)` of every binary node in `bvh.prim_order` (a subtree's primitives
/// are one range, as every builder partitions them in place), whatever the order of the nodes.
fn subtree_ranges(bvh: &BinaryBvh) -> Vec<(u32, u32)> {
    bvh.to_records()
        .iter()
        .map(|r| (r.first, r.count))
        .collect()
}

/// A box as the collapse measures it: a denormal coordinate moves outwards to zero or to the
/// smallest normal float (`±f32::MIN_POSITIVE`), decided on the bits, so that a GPU that flushes
/// denormals to zero (NVIDIA's does) measures, places and quantizes the same boxes as the CPU
/// (`normal_lo`/`normal_hi` in `shaders/bvh/collapse_node.wgsl`). The box still holds its
/// primitives. (Extents that are themselves denormal, boxes narrower than 1e-38, can still
/// differ between the two.)
pub fn normal_box(b: &Aabb) -> Aabb {
    let denormal = |v: f32| v != 0.0 && v.abs() < f32::MIN_POSITIVE && v.is_finite();
    let lo = b.min.to_array().map(|v| {
        if !denormal(v) {
            v
        } else if v < 0.0 {
            -f32::MIN_POSITIVE
        } else {
            0.0
        }
    });
    let hi = b.max.to_array().map(|v| {
        if !denormal(v) {
            v
        } else if v > 0.0 {
            f32::MIN_POSITIVE
        } else {
            0.0
        }
    });
    Aabb::new(Vec3::from_array(lo), Vec3::from_array(hi))
}

/// The area the collapse opens children by: half the surface area with its sums fused in a
/// fixed order (`fma(dx, dy, fma(dy, dz, dz · dx))`), so that the GPU collapse
/// (`shaders/bvh/collapse_node.wgsl`) measures the same value to the bit; zero for an empty box.
pub fn collapse_area(b: &Aabb) -> f32 {
    if b.is_empty() {
        return 0.0;
    }
    let d = b.max - b.min;
    d.x.mul_add(d.y, d.y.mul_add(d.z, d.z * d.x))
}

/// Assigns up to eight children to slots: slot `s` should hold the child met first by rays of
/// octant `s` (their direction's signs), so each (child, slot) pair costs the child's centroid
/// offset from the parent's along the octant's diagonal, and the cheapest pairs are taken
/// first (the greedy form of the paper's assignment).
fn assign_slots(parent: &Aabb, children: &[Aabb]) -> [Option<usize>; WIDE_CHILDREN] {
    let centre = parent.centroid();
    let mut costs = Vec::with_capacity(children.len() * WIDE_CHILDREN);
    for (c, b) in children.iter().enumerate() {
        let offset = b.centroid() - centre;
        for s in 0..WIDE_CHILDREN {
            let diagonal = Vec3::new(
                if s & 4 != 0 { -1.0 } else { 1.0 },
                if s & 2 != 0 { -1.0 } else { 1.0 },
                if s & 1 != 0 { -1.0 } else { 1.0 },
            );
            costs.push((offset.dot(diagonal), c, s));
        }
    }
    costs.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut slots = [None; WIDE_CHILDREN];
    let mut placed = vec![false; children.len()];
    for (_, c, s) in costs {
        if !placed[c] && slots[s].is_none() {
            slots[s] = Some(c);
            placed[c] = true;
        }
    }
    slots
}

/// The grid of a node box: origin and the biased exponent of each axis's step, the smallest
/// power of two `2^e` (`e` in -126..=127, a normal float) whose 255th plane, `origin + 255 · 2^e`
/// rounded to f32, is at or above the box's max, found by bisection (the plane grows with `e`),
/// as the GPU collapse finds it.
fn quantization_grid(bounds: &Aabb) -> (Vec3, [u32; 3]) {
    // The box is a union of `normal_box`es: its origin is never denormal.
    let origin = bounds.min.to_array();
    let exps = [0, 1, 2].map(|a| {
        let covers = |e: i32| origin[a] + 255.0 * step_of((e + 127) as u32) >= bounds.max[a];
        // The smallest e in -126..=127 that covers (127 if none does), by bisection.
        let (mut lo, mut hi) = (-126i32, 127i32);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if covers(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        (lo + 127) as u32
    });
    (Vec3::from_array(origin), exps)
}

/// The grid planes of a child box: the largest `lo` whose plane is at or below the box's min
/// (0 if none is), the smallest `hi` whose plane is at or above its max (255 if none is), in the
/// f32 arithmetic of [`WideNode::child_box`], by bisection (a plane grows with its index), so
/// the GPU collapse finds the same planes in as few steps.
fn quantize(origin: f32, step: f32, lo: f32, hi: f32) -> (u32, u32) {
    let plane = |q: u32| origin + q as f32 * step;
    let (mut a, mut b) = (0u32, 255u32);
    while a < b {
        let mid = a + (b - a).div_ceil(2);
        if plane(mid) <= lo {
            a = mid;
        } else {
            b = mid - 1;
        }
    }
    let qlo = a;
    let (mut a, mut b) = (0u32, 255u32);
    while a < b {
        let mid = a + (b - a) / 2;
        if plane(mid) >= hi {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    (qlo, a)
}

/// One child of a wide node while collapsing: a binary node opened into inner children, or a
/// subtree that becomes a leaf child.
#[derive(Clone, Copy)]
struct Child {
    binary: u32,
    leaf: bool,
}

/// A wide node planned from its binary node: its words but `child_base` and `prim_base`, its
/// children in slot order, and how many are inner and how many references its leaves hold.
struct NodePlan {
    node: WideNode,
    placed: Vec<Child>,
    inner: u32,
    prims: u32,
}

/// Collapses a binary BVH into a wide tree. A wide node takes its binary node's two children
/// and opens the inner child of largest surface area until it has eight children; a subtree
/// of at most `leaf_max` (1..=[`WIDE_LEAF_MAX`]) primitives is a leaf child, and the binary
/// BVH's leaves must hold at most `leaf_max` primitives. Children with empty boxes are left
/// out. Nodes are laid out breadth first.
pub fn collapse_to_cwbvh(bvh: &BinaryBvh, leaf_max: usize) -> WideTree {
    let leaf_max = leaf_max.clamp(1, WIDE_LEAF_MAX) as u32;
    if bvh.nodes.is_empty() || normal_box(&bvh.nodes[0].bounds).is_empty() {
        return WideTree {
            prim_order: bvh.prim_order.clone(),
            ..WideTree::default()
        };
    }
    let ranges = subtree_ranges(bvh);
    // The boxes the collapse measures, without denormal coordinates (see `normal_box`).
    let bounds: Vec<Aabb> = bvh.nodes.iter().map(|n| normal_box(&n.bounds)).collect();
    let is_leaf_child = |b: u32| {
        matches!(bvh.nodes[b as usize].kind, BinaryNodeKind::Leaf { .. })
            || ranges[b as usize].1 <= leaf_max
    };
    // A node's children, slots and grid depend on its binary node alone; where its children
    // and references go depends on the nodes before it. So each level (breadth first, as a
    // queue would take them) is planned in parallel, then numbered in order, then written.
    let plan = |b: u32| -> NodePlan {
        let mut children: Vec<Child> = match bvh.nodes[b as usize].kind {
            BinaryNodeKind::Inner { left, right } if !is_leaf_child(b) => [left, right]
                .map(|c| Child {
                    binary: c,
                    leaf: is_leaf_child(c),
                })
                .to_vec(),
            _ => vec![Child {
                binary: b,
                leaf: true,
            }],
        };
        while children.len() < WIDE_CHILDREN {
            let widest = children
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.leaf)
                .max_by(|(_, a), (_, c)| {
                    let area = |x: &Child| collapse_area(&bounds[x.binary as usize]);
                    area(a).total_cmp(&area(c))
                })
                .map(|(i, _)| i);
            let Some(i) = widest else { break };
            if let BinaryNodeKind::Inner { left, right } =
                bvh.nodes[children[i].binary as usize].kind
            {
                children[i] = Child {
                    binary: left,
                    leaf: is_leaf_child(left),
                };
                children.push(Child {
                    binary: right,
                    leaf: is_leaf_child(right),
                });
            }
        }
        children.retain(|c| !bounds[c.binary as usize].is_empty());
        let boxes: Vec<Aabb> = children.iter().map(|c| bounds[c.binary as usize]).collect();
        let parent = boxes.iter().fold(Aabb::EMPTY, |a, b| a.union(*b));
        let (origin, exps) = quantization_grid(&parent);
        let steps = exps.map(step_of);
        let slots = assign_slots(&parent, &boxes);
        let mut node = WideNode {
            origin: origin.to_array(),
            exps_imask: exps[0] | exps[1] << 8 | exps[2] << 16,
            ..WideNode::default()
        };
        let mut placed = Vec::new();
        let (mut inner, mut prims) = (0u32, 0u32);
        for (s, c) in slots.iter().enumerate() {
            let Some(c) = *c else { continue };
            let child = children[c];
            let b = &boxes[c];
            for axis in 0..3 {
                let (lo, hi) = quantize(origin[axis], steps[axis], b.min[axis], b.max[axis]);
                set_byte(&mut node.q[axis], s, lo);
                set_byte(&mut node.q[3 + axis], s, hi);
            }
            if child.leaf {
                let count = ranges[child.binary as usize].1.min(leaf_max);
                set_byte(&mut node.meta, s, ((1 << count) - 1) << 5 | prims);
                prims += count;
            } else {
                set_byte(&mut node.meta, s, INNER_META + s as u32);
                node.exps_imask |= 1 << (24 + s);
                inner += 1;
            }
            placed.push(child);
        }
        NodePlan {
            node,
            placed,
            inner,
            prims,
        }
    };
    let mut nodes = Vec::new();
    let mut prim_order = Vec::with_capacity(bvh.prim_order.len());
    let mut depth = 0;
    let mut level = vec![0u32];
    while !level.is_empty() {
        depth += 1;
        let plans: Vec<NodePlan> = level.par_iter().map(|&b| plan(b)).collect();
        // The next level's nodes follow this level's, in order; so do the references.
        let mut child_base = (nodes.len() + level.len()) as u32;
        let mut next = Vec::new();
        for mut p in plans {
            p.node.child_base = child_base;
            p.node.prim_base = prim_order.len() as u32;
            child_base += p.inner;
            for c in &p.placed {
                if c.leaf {
                    let (first, count) = ranges[c.binary as usize];
                    let count = count.min(leaf_max);
                    prim_order.extend_from_slice(
                        &bvh.prim_order[first as usize..(first + count) as usize],
                    );
                } else {
                    next.push(c.binary);
                }
            }
            debug_assert_eq!(prim_order.len() as u32, p.node.prim_base + p.prims);
            nodes.push(p.node);
        }
        level = next;
    }
    // The references no leaf child holds (primitives whose boxes are empty) go last.
    let mut held = vec![false; bvh.prim_order.len()];
    for &p in &prim_order {
        held[p as usize] = true;
    }
    prim_order.extend(bvh.prim_order.iter().filter(|&&p| !held[p as usize]));
    WideTree {
        nodes,
        prim_order,
        depth,
    }
}

/// The SAH cost of a wide tree whose root is `nodes[0]`, walked from the root (room the
/// nodes of other trees or unused slots take is not counted): every node costs one box test per
/// unit of area, every primitive of a leaf child one intersection per unit of its child box's
/// area, the areas relative to the root's box (the union of its children's decoded boxes).
/// Builders are compared by this number (docs/performance.md).
pub fn wide_sah_cost(nodes: &[WideNode]) -> f64 {
    let Some(root) = nodes.first() else {
        return 0.0;
    };
    let area = |(lo, hi): (Vec3, Vec3)| {
        let d = (hi - lo).max(Vec3::ZERO).as_dvec3();
        d.x * d.y + d.y * d.z + d.z * d.x
    };
    let root_box = (0..WIDE_CHILDREN)
        .filter(|&s| root.meta_of(s) != 0)
        .map(|s| root.child_box(s))
        .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), (l, h)| {
            (lo.min(l), hi.max(h))
        });
    let root_area = area(root_box).max(f64::MIN_POSITIVE);
    let mut cost = 1.0;
    let mut stack = vec![0u32];
    while let Some(n) = stack.pop() {
        let node = &nodes[n as usize];
        for s in 0..WIDE_CHILDREN {
            if node.meta_of(s) == 0 {
                continue;
            }
            let a = area(node.child_box(s)) / root_area;
            if node.is_inner(s) {
                cost += a;
                stack.push(node.inner_child(s));
            } else {
                cost += a * node.leaf_prims(s).1 as f64;
            }
        }
    }
    cost
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accel::bvh::{build_binary_bvh, BuildSettings};

    fn boxes(n: usize, seed: u32) -> Vec<Aabb> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(1664525).wrapping_add(1013904223);
            (state >> 8) as f32 / (1u32 << 24) as f32
        };
        (0..n)
            .map(|_| {
                let c = Vec3::new(next() * 100.0 - 50.0, next() * 3.0 + 1000.0, next() * 1e-3);
                let h = Vec3::new(next(), next() * 0.01, next() * 1e-5);
                Aabb::new(c - h, c + h)
            })
            .collect()
    }

    fn settings() -> BuildSettings {
        BuildSettings {
            max_leaf_size: WIDE_LEAF_MAX,
            ..BuildSettings::default()
        }
    }

    #[test]
    fn emulated_fma_rounds_once_like_the_hardware_one() {
        let mut state = 99u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Random bits give every exponent and sign; keep the finite values.
            f32::from_bits((state >> 32) as u32)
        };
        let mut checked = 0;
        while checked < 200_000 {
            let (a, b, c) = (next(), next(), next());
            if !(a.is_finite() && b.is_finite() && c.is_finite()) {
                continue;
            }
            // Near cancellations are where double rounding would show: make some.
            let c = if checked % 3 == 0 {
                -(a * b) * (1.0 + f32::EPSILON * next().signum())
            } else {
                c
            };
            let (want, got) = (a.mul_add(b, c), fma_f32(a, b, c));
            assert!(
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "{a} {b} {c}: {want} vs {got}"
            );
            checked += 1;
        }
        // Halfway cases of the f32 rounding after an inexact f64 sum.
        for (a, b, c) in [
            (1.0f32, 1.0, f32::EPSILON / 2.0 + 1e-30),
            (3.0, 1.0 / 3.0, -1.0),
        ] {
            assert_eq!(a.mul_add(b, c).to_bits(), fma_f32(a, b, c).to_bits());
        }
    }

    #[test]
    fn node_is_eighty_bytes() {
        assert_eq!(std::mem::size_of::<WideNode>(), 80);
    }

    #[test]
    fn every_decoded_box_holds_every_primitive_below_it() {
        let bounds = boxes(3000, 7);
        let bvh = build_binary_bvh(&bounds, &settings());
        let tree = collapse_to_cwbvh(&bvh, WIDE_LEAF_MAX);
        // Walk the tree with the box each child decodes to, checking every primitive. (A
        // child's decoded box need not lie inside its parent's: each node has its own grid.)
        let mut stack = vec![0u32];
        let mut seen = 0;
        while let Some(n) = stack.pop() {
            let node = &tree.nodes[n as usize];
            for s in 0..WIDE_CHILDREN {
                if node.meta_of(s) == 0 {
                    continue;
                }
                let (lo, hi) = node.child_box(s);
                let decoded = Aabb::new(lo, hi);
                if node.is_inner(s) {
                    stack.push(node.inner_child(s));
                } else {
                    let (first, count) = node.leaf_prims(s);
                    assert!((1..=WIDE_LEAF_MAX as u32).contains(&count));
                    for &p in &tree.prim_order[first as usize..(first + count) as usize] {
                        assert!(decoded.contains_box(&bounds[p as usize]), "prim {p}");
                        seen += 1;
                    }
                }
            }
        }
        assert_eq!(seen, bounds.len());
    }

    #[test]
    fn collapse_keeps_every_reference_once_and_nodes_hold_at_most_twenty_four() {
        let mut bounds = boxes(500, 3);
        bounds[17] = Aabb::EMPTY;
        let bvh = build_binary_bvh(&bounds, &settings());
        let tree = collapse_to_cwbvh(&bvh, WIDE_LEAF_MAX);
        let mut sorted = tree.prim_order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..500).collect::<Vec<u32>>());
        for node in &tree.nodes {
            let prims: u32 = (0..WIDE_CHILDREN)
                .filter(|&s| node.meta_of(s) != 0 && !node.is_inner(s))
                .map(|s| node.leaf_prims(s).1)
                .sum();
            assert!(prims as usize <= WIDE_NODE_PRIMS);
            assert!(node.child_count() >= 1);
        }
        assert!(tree.depth >= 2 && tree.depth < 12, "depth {}", tree.depth);
        // A tree of nothing but empty boxes has no nodes and keeps every reference.
        let empty = build_binary_bvh(&[Aabb::EMPTY; 5], &settings());
        let tree = collapse_to_cwbvh(&empty, WIDE_LEAF_MAX);
        assert!(tree.nodes.is_empty());
        assert_eq!(tree.prim_order.len(), 5);
    }

    #[test]
    fn slots_put_the_child_nearest_along_each_octant_first() {
        // Eight unit boxes at the corners of a cube: slot s must hold the corner a ray of
        // octant s meets first, the one at the low end of each axis the ray goes up along.
        let corners: Vec<Aabb> = (0..8)
            .map(|i| {
                let c = Vec3::new(
                    if i & 4 != 0 { 5.0 } else { -5.0 },
                    if i & 2 != 0 { 5.0 } else { -5.0 },
                    if i & 1 != 0 { 5.0 } else { -5.0 },
                );
                Aabb::new(c - 1.0, c + 1.0)
            })
            .collect();
        let parent = corners.iter().fold(Aabb::EMPTY, |a, b| a.union(*b));
        let slots = assign_slots(&parent, &corners);
        for (s, slot) in slots.iter().enumerate() {
            // Octant s has x < 0 when bit 2 is set: its first box is at +x, index bit 2 set.
            assert_eq!(slot.unwrap(), s, "slot {s}");
        }
    }

    #[test]
    fn taking_children_follows_the_octant_order_and_maps_slots_to_nodes() {
        // Inner children in slots 1, 4 and 6: child_base + rank among them.
        let node = WideNode {
            child_base: 10,
            exps_imask: (0b0101_0010) << 24,
            ..WideNode::default()
        };
        for oct_inv in 0..8u32 {
            let mut group = [node.child_base, 0];
            for s in [1u32, 4, 6] {
                group[1] |= 1 << (24 + (s ^ oct_inv));
            }
            group[1] |= node.imask();
            let mut order = Vec::new();
            while has_children(&group) {
                order.push(take_child(&mut group, oct_inv));
            }
            // Highest (s ^ oct_inv) first.
            let mut expected: Vec<(u32, u32)> = [(1u32, 10u32), (4, 11), (6, 12)]
                .iter()
                .map(|&(s, c)| (s ^ oct_inv, c))
                .collect();
            expected.sort_by_key(|e| std::cmp::Reverse(e.0));
            assert_eq!(order, expected.iter().map(|e| e.1).collect::<Vec<_>>());
        }
        let mut root = root_group(3);
        assert_eq!(take_child(&mut root, 3), 0);
        assert!(!has_children(&root));
    }

    #[test]
    fn quantized_planes_hold_the_box_in_f32_arithmetic() {
        for (origin, lo, hi) in [
            (1000.0f32, 1000.3f32, 1001.7f32),
            (-3.0, -3.0, 2.5),
            (0.1, 0.1, 0.1),
        ] {
            let b = Aabb::new(Vec3::splat(origin), Vec3::splat(hi.max(origin + 2.0)));
            let (o, exps) = quantization_grid(&b);
            let step = step_of(exps[0]);
            let (ql, qh) = quantize(o.x, step, lo, hi);
            assert!(o.x + ql as f32 * step <= lo && o.x + qh as f32 * step >= hi);
            assert!(ql <= qh && qh <= 255);
        }
    }
}

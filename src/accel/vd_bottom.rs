//! The on-the-fly bottom-level BVH of a vector-displacement patch (paper 000 section 1.4), CPU twin.
//!
//! For one VD patch and a subdivision level `L` (chosen per patch from its rays' footprints,
//! [`lod_level`]), [`PatchBvh::build`] evaluates the displaced surface on a `(2^L + 1)²` grid of
//! patch parameters `(s, t) = (i, j) / 2^L` with [`VdSurface::displaced_point`] and builds a
//! complete 4-ary tree over the `4^L` grid cells; [`PatchBvh::intersect`] traverses it without
//! a stack through the precomputed [`LinkTable`] (Listing 1.1) and intersects the two triangles
//! of each leaf cell it reaches.
//!
//! # The surface at level `L` is the tessellation at level `L`
//!
//! A leaf box is the AABB of its cell's four displaced corners (grown by the map's `padding`).
//! It bounds the cell's two triangles, *not* the displaced surface `P(s,t)` between grid points:
//! as in the paper, the surface ray traced at level `L` is by definition the `2^L × 2^L`
//! tessellation of the patch, and the level of detail decides how close it is to `P`. The paper
//! takes a leaf box's entry distance as the hit (its cells are smaller than a pixel); we test the
//! cell's triangles `(v00, v10, v11)` and `(v00, v11, v01)` with the watertight test of
//! [`intersect_triangle`], which gives exact distances, a geometric normal and the patch
//! parameter of the hit, and keeps neighbouring cells and patches crack free. Neighbouring
//! patches share their boundary points ([`super::vd_seams`]): a patch's boundary comes from
//! [`PatchEdges`], and a cell along an edge of a finer level is the fan of triangles from its
//! centre through its corners and that edge's extra points (its box holds them too).
//!
//! # Layout (shared with the later WGSL twin)
//!
//! * **Nodes** ([`VdNode`], 20 bytes): the tree in breadth-first order. Node `k` has children
//!   `4k+1 ..= 4k+4`; level `l` of the tree holds nodes `first(l) .. first(l+1)` with
//!   `first(l) = (4^l − 1)/3` ([`first_node_of_level`]), so a tree of level `L` has
//!   `first(L+1)` nodes and its leaves are the nodes `k ≥ first(L)` (the paper's `getOffset`).
//!   Inside a level nodes are in Morton order: node `first(l) + m` covers the block of cells
//!   `(x, y) = morton_decode(m)` at resolution `2^l`, so its children (Morton codes `4m ..
//!   4m+3`) are consecutive and child `j` covers the quarter with `x` bit `j & 1`, `y` bit `j >> 1`.
//! * **Grid points** (scratch built with the nodes): `(2^L + 1)²` displaced points, row-major,
//!   point `j·(2^L+1) + i` at `(s, t) = (i, j)/2^L`; 12 bytes each here (`vec4<f32>`, 16 bytes,
//!   on the GPU). Memory per patch: `20·(4^(L+1) − 1)/3 + 12·(2^L + 1)²` bytes, e.g.
//!   27 300 + 13 068 = 39 KiB at `L = 5` (the paper's 26 KB of nodes) and 109 220 + 50 700 =
//!   156 KiB at `L = 6` ([`PatchBvh::bytes`]).
//! * **Links** ([`LinkTable`]): one `u32` per node of the tree of the largest level
//!   [`MAX_LEVEL`], shared by every patch and every level (see its docs).
//!
//! # Build in parallel-friendly form
//!
//! The build is three kinds of loops whose iterations are independent, the loops a GPU
//! workgroup runs with a barrier between them: (1) one iteration per grid point (displace it;
//! the root box is the reduction of these points), (2) one per leaf (box of its four corners,
//! quantized against the root box; normal; `(s, t)` of the cell centre), (3) for each level
//! `l = L−1 .. 0`, one per node of that level (union of the four children's quantized boxes,
//! average of their normals and parameters, read back from the packed children as the GPU will).

use std::sync::OnceLock;

use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec3};

use super::aabb::{Aabb, SlabRay};
use super::primitives::intersect_triangle;
use super::vd_patch::{complete_tree_nodes, morton_decode};
use crate::scene::vdmap::VdSurface;

/// The largest subdivision level a patch is built at: `256 × 256` cells, 87 381 nodes. The
/// shared [`LinkTable`] is built for this level; its packing holds up to level 8.
pub const MAX_LEVEL: u32 = crate::scene::VD_LEVEL_LIMIT;

/// Largest quantized coordinate (`0xffff` in the paper's equations 1.1 and 1.2).
const Q_MAX: u32 = 0xffff;

/// Index of the first node of level `l` in breadth-first order, `(4^l − 1)/3`; the nodes of a
/// tree of level `L` at or after `first_node_of_level(L)` are its leaves (`getOffset`).
pub const fn first_node_of_level(l: u32) -> u32 {
    ((1u32 << (2 * l)) - 1) / 3
}

/// Number of nodes of a tree of level `level` (`4^level` leaves).
pub fn node_count(level: u32) -> usize {
    complete_tree_nodes(level)
}

// ---------------------------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------------------------

/// One node of a patch's bottom-level tree; 20 bytes, five `u32` words on the GPU.
///
/// ```text
/// word 0: min.x | min.y << 16    quantized box minimum (u16 per axis, rounded down)
/// word 1: min.z | max.x << 16    quantized box maximum (u16 per axis, rounded up)
/// word 2: max.y | max.z << 16      (little-endian u16 pairs, so the Rust fields alias exactly)
/// word 3: normal                 octahedral unit normal, x in bits 0..16, y in 16..32, snorm16
/// word 4: st                     patch parameter (s, t) of the node's centre, unorm16 each,
///                                s in bits 0..16 (the map UV is bilinear in it, so it is not
///                                stored; a node's (s, t) is the mean of its children's)
/// ```
/// Box coordinate `q` on axis `a` decodes to `origin[a] + f32(q) * step[a]` with the patch's
/// [`QuantFrame`] (see there for why the encoding always contains the float box).
/// WGSL twin: `struct VdNode { w: array<u32, 5> }` (size 20, align 4), unpacked with
/// `extractBits` / `unpack2x16snorm` / `unpack2x16unorm`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct VdNode {
    /// Quantized box minimum, rounded down: the decoded value is `<=` the float minimum.
    pub min: [u16; 3],
    /// Quantized box maximum, rounded up: the decoded value is `>=` the float maximum.
    pub max: [u16; 3],
    /// Octahedral normal, two snorm16 (`pack2x16snorm` in WGSL): x low, y high.
    pub normal: u32,
    /// Patch parameter `(s, t)` of the node's centre, two unorm16 (`pack2x16unorm`): s low.
    pub st: u32,
}

const _: () = assert!(std::mem::size_of::<VdNode>() == 20);

impl VdNode {
    /// The unit normal (the mean of the leaf normals below, renormalised).
    pub fn normal(&self) -> Vec3 {
        oct_decode(self.normal)
    }

    /// The patch parameter of the node's centre.
    pub fn st(&self) -> Vec2 {
        unpack_unorm16x2(self.st)
    }
}

/// The frame boxes are quantized in: a patch's root box mapped to `0 ..= 0xffff` per axis
/// (paper equations 1.1–1.3, with `step = extent_root / 0xffff`).
///
/// Decoding is `origin + f32(q) * step` (one multiply, one add, not fused: WGSL must not use
/// `fma` here either). Encoding starts from the paper's formulas (`floor` for the minimum, `+1`
/// i.e. round up for the maximum) and then steps `q` down (minimum) or up (maximum) until the
/// *decoded* value bounds the float value, so the quantized box always contains the float box
/// exactly, whatever the rounding of the formulas. `step` is grown by a few ulps so that
/// `q = 0xffff` decodes to at least the root maximum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantFrame {
    pub origin: Vec3,
    pub step: Vec3,
}

impl QuantFrame {
    /// The frame of `root` (a non-empty box).
    pub fn new(root: &Aabb) -> QuantFrame {
        let origin = root.min;
        let mut step = (root.max - root.min).max(Vec3::ZERO) / Q_MAX as f32;
        for a in 0..3 {
            // Grow until the last code reaches the root maximum.
            let mut s = step[a] * (1.0 + 4.0 * f32::EPSILON);
            while origin[a] + Q_MAX as f32 * s < root.max[a] {
                s = s * (1.0 + 4.0 * f32::EPSILON) + f32::MIN_POSITIVE;
            }
            step[a] = s;
        }
        QuantFrame { origin, step }
    }

    /// The decoded coordinate of code `q` on `axis`.
    #[inline]
    pub fn decode_axis(&self, axis: usize, q: u16) -> f32 {
        self.origin[axis] + q as f32 * self.step[axis]
    }

    /// The largest code whose decoded value is `<= v` (0 when `v` is below the frame).
    pub fn quantize_down(&self, axis: usize, v: f32) -> u16 {
        if self.step[axis] <= 0.0 {
            return 0;
        }
        let guess = ((v - self.origin[axis]) / self.step[axis]).floor();
        let mut q = guess.clamp(0.0, Q_MAX as f32) as u32;
        while q > 0 && self.decode_axis(axis, q as u16) > v {
            q -= 1;
        }
        q as u16
    }

    /// The smallest code whose decoded value is `>= v` (`0xffff` when `v` is above the frame).
    pub fn quantize_up(&self, axis: usize, v: f32) -> u16 {
        if self.step[axis] <= 0.0 {
            return 0;
        }
        // The paper's `+1` after truncation, i.e. rounding up.
        let guess = ((v - self.origin[axis]) / self.step[axis]).floor() + 1.0;
        let mut q = guess.clamp(0.0, Q_MAX as f32) as u32;
        while q > 0 && self.decode_axis(axis, (q - 1) as u16) >= v {
            q -= 1;
        }
        while q < Q_MAX && self.decode_axis(axis, q as u16) < v {
            q += 1;
        }
        q as u16
    }

    /// Quantizes a box so that the decoded box contains it.
    pub fn quantize(&self, b: &Aabb) -> ([u16; 3], [u16; 3]) {
        (
            [0, 1, 2].map(|a| self.quantize_down(a, b.min[a])),
            [0, 1, 2].map(|a| self.quantize_up(a, b.max[a])),
        )
    }

    /// The decoded box of quantized bounds.
    pub fn decode(&self, min: [u16; 3], max: [u16; 3]) -> Aabb {
        Aabb::new(
            Vec3::from_array([0, 1, 2].map(|a| self.decode_axis(a, min[a]))),
            Vec3::from_array([0, 1, 2].map(|a| self.decode_axis(a, max[a]))),
        )
    }
}

/// Octahedral encoding of a unit vector as two snorm16 (x in the low half). A zero or
/// non-finite vector encodes as `+z`.
pub fn oct_encode(n: Vec3) -> u32 {
    let l1 = n.x.abs() + n.y.abs() + n.z.abs();
    if l1.is_nan() || l1 <= 0.0 || !l1.is_finite() {
        return pack_snorm16x2(Vec2::ZERO);
    }
    let p = n / l1;
    let sign = |v: f32| if v >= 0.0 { 1.0 } else { -1.0 };
    let e = if p.z >= 0.0 {
        Vec2::new(p.x, p.y)
    } else {
        Vec2::new((1.0 - p.y.abs()) * sign(p.x), (1.0 - p.x.abs()) * sign(p.y))
    };
    pack_snorm16x2(e)
}

/// The unit vector of an [`oct_encode`]d normal.
pub fn oct_decode(packed: u32) -> Vec3 {
    let e = unpack_snorm16x2(packed);
    let mut n = Vec3::new(e.x, e.y, 1.0 - e.x.abs() - e.y.abs());
    if n.z < 0.0 {
        let sign = |v: f32| if v >= 0.0 { 1.0 } else { -1.0 };
        let (x, y) = (n.x, n.y);
        n.x = (1.0 - y.abs()) * sign(x);
        n.y = (1.0 - x.abs()) * sign(y);
    }
    n.normalize()
}

/// WGSL's `pack2x16snorm`.
fn pack_snorm16x2(v: Vec2) -> u32 {
    let q = |x: f32| ((x.clamp(-1.0, 1.0) * 32767.0).round() as i16) as u16 as u32;
    q(v.x) | (q(v.y) << 16)
}

/// WGSL's `unpack2x16snorm`.
fn unpack_snorm16x2(p: u32) -> Vec2 {
    let d = |h: u32| ((h as u16 as i16) as f32 / 32767.0).max(-1.0);
    Vec2::new(d(p & 0xffff), d(p >> 16))
}

/// WGSL's `pack2x16unorm`.
fn pack_unorm16x2(v: Vec2) -> u32 {
    let q = |x: f32| (x.clamp(0.0, 1.0) * 65535.0).round() as u32;
    q(v.x) | (q(v.y) << 16)
}

/// WGSL's `unpack2x16unorm`.
fn unpack_unorm16x2(p: u32) -> Vec2 {
    Vec2::new((p & 0xffff) as f32 / 65535.0, (p >> 16) as f32 / 65535.0)
}

// ---------------------------------------------------------------------------------------------
// The shared link table
// ---------------------------------------------------------------------------------------------

/// Skip value meaning "traversal is done" (the paper's `breakIdx`).
pub const LINK_END: u32 = (1 << SKIP_BITS) - 1;
const SKIP_BITS: u32 = 17;
const CHILD_BITS: u32 = 32 - SKIP_BITS;

/// The (first child, skip) links of the complete 4-ary tree of level `max_level`, breadth first,
/// one `u32` per node: the precomputed hierarchy that every patch's nodes are traversed with
/// (`gLinks` in Listing 1.1).
///
/// **Skip** of node `k` is the node that follows `k`'s subtree in depth-first order: its next
/// sibling `k+1` when `k` is not a last child (`(k−1) % 4 != 3`), else its parent's skip; the
/// root's is [`LINK_END`]. **First child** of an inner node `k` is `4k+1`.
///
/// **One table for every level.** A complete tree's breadth-first numbering does not depend on
/// its depth, so the tree of level `L ≤ max_level` is exactly the first `first(L+1)` nodes of
/// the table, and every skip link of such a node points inside that prefix (to a node of the
/// same or a higher level) or is `LINK_END`. A traversal of a level-`L` tree therefore uses the
/// table unchanged with offset `o = first(L)`: a node `k ≥ o` is a leaf and its child link is
/// never read (Listing 1.1's `isLeaf = nodeIdx >= getOffset(lodRes)`).
///
/// **Packing.** The paper packs two 16-bit indices in 4 bytes, which holds trees up to level 7
/// (21 845 nodes). Level 8 has 87 381 nodes, so here bits `0..17` hold the skip index (17 bits,
/// `LINK_END = 0x1ffff`) and bits `17..32` the first child *group* `g` (15 bits): the first
/// child is `4g + 1` (first children are always `≡ 1 mod 4`, and inner nodes of level 8 are
/// below `2^15`). Leaves of the deepest level store `g = 0x7fff` (unused). WGSL twin: `array<u32>`,
/// `skip = link & 0x1ffffu`, `child = 4u * (link >> 17u) + 1u`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkTable {
    pub max_level: u32,
    pub links: Vec<u32>,
}

impl LinkTable {
    /// The table for trees up to level `max_level` (at most [`MAX_LEVEL`]).
    pub fn new(max_level: u32) -> LinkTable {
        assert!(
            max_level <= MAX_LEVEL,
            "the link packing holds trees up to level {MAX_LEVEL}, not {max_level}"
        );
        let n = node_count(max_level);
        let first_leaf = first_node_of_level(max_level) as usize;
        let mut skips = vec![LINK_END; n];
        // Parents come before children, so one pass in index order suffices.
        for k in 1..n {
            skips[k] = if (k - 1) % 4 != 3 {
                k as u32 + 1
            } else {
                skips[(k - 1) / 4]
            };
        }
        let links = (0..n)
            .map(|k| {
                let group = if k < first_leaf {
                    k as u32
                } else {
                    (1 << CHILD_BITS) - 1
                };
                skips[k] | (group << SKIP_BITS)
            })
            .collect();
        LinkTable { max_level, links }
    }

    /// The table for [`MAX_LEVEL`], built once and shared.
    pub fn shared() -> &'static LinkTable {
        static TABLE: OnceLock<LinkTable> = OnceLock::new();
        TABLE.get_or_init(|| LinkTable::new(MAX_LEVEL))
    }

    /// First child of node `k` (meaningful for inner nodes only).
    #[inline]
    pub fn child(&self, k: u32) -> u32 {
        4 * (self.links[k as usize] >> SKIP_BITS) + 1
    }

    /// Skip link of node `k`, or [`LINK_END`].
    #[inline]
    pub fn skip(&self, k: u32) -> u32 {
        self.links[k as usize] & LINK_END
    }

    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(self.links.as_slice())
    }
}

// ---------------------------------------------------------------------------------------------
// Level of detail
// ---------------------------------------------------------------------------------------------

/// The subdivision level for one ray (paper 000 section 1.4.2, "compute the required subdivision
/// level by comparing the extent of the root AABB to the pixel at that distance"): the smallest
/// `L` in `0 ..= max_level` whose cell size, the largest edge of `bounds` over `2^L`, is at most
/// the ray's footprint `distance · spread` (`spread`: the cone's spread angle in radians per
/// unit distance, e.g. a camera pixel's angle; `distance`: from the ray's apex to the patch).
/// `bounds` is the box the level is chosen from before the tree exists: the patch's
/// conservative middle-level bounds. A zero or invalid footprint gives `max_level`.
pub fn lod_level(bounds: &Aabb, distance: f32, spread: f32, max_level: u32) -> u32 {
    let edge = if bounds.is_empty() {
        0.0
    } else {
        (bounds.max - bounds.min).max_element()
    };
    let footprint = distance * spread;
    if footprint.is_nan() || footprint <= 0.0 || !footprint.is_finite() {
        return if edge > 0.0 { max_level } else { 0 };
    }
    let mut level = 0;
    let mut cell = edge;
    while level < max_level && cell > footprint {
        level += 1;
        cell *= 0.5;
    }
    level
}

/// The level a patch is built at: the largest [`lod_level`] over the `(distance, spread)` of
/// the rays that reach it (0 without rays).
pub fn patch_lod_level(
    bounds: &Aabb,
    rays: impl IntoIterator<Item = (f32, f32)>,
    max_level: u32,
) -> u32 {
    rays.into_iter()
        .map(|(d, spread)| lod_level(bounds, d, spread, max_level))
        .max()
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// One patch's tree
// ---------------------------------------------------------------------------------------------

/// The closest hit of a ray with a patch's tessellation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PatchHit {
    /// Ray parameter (in units of the ray's `dir`).
    pub t: f32,
    /// Patch parameter `(s, t)` of the hit (piecewise linear over the cell's triangles).
    pub st: Vec2,
    /// Unit geometric normal of the triangle hit, from its winding: on the side of
    /// `∂P/∂s × ∂P/∂t` (the base quad's normal for a flat map).
    pub normal: Vec3,
    /// Morton index of the leaf cell hit.
    pub cell: u32,
}

/// The bottom-level tree of one VD patch at one level, with its grid of displaced points.
#[derive(Clone, Debug, PartialEq)]
pub struct PatchBvh {
    /// Subdivision level `L`: `2^L × 2^L` cells.
    pub level: u32,
    /// The float root box: all grid points, grown by the map's padding.
    pub root: Aabb,
    /// The frame node boxes are quantized in (from `root`).
    pub frame: QuantFrame,
    /// `first(L+1)` nodes, breadth first, Morton order inside each level (module docs).
    pub nodes: Vec<VdNode>,
    /// `(2^L + 1)²` displaced grid points, row-major.
    pub points: Vec<Vec3>,
    /// The points of the edges whose level is finer than the patch's (the watertight rule,
    /// [`super::vd_seams`]); empty when none is.
    pub edges: PatchEdges,
}

/// The points along a patch's four edges (numbered as in [`super::vd_seams`]) at each edge's
/// level `E ≥ L`: `2^E + 1` points, running with increasing `s` (edges 0 and 2) or `t` (1 and 3).
/// The grid's boundary points are every `2^(E−L)`-th of them; a boundary cell on an edge of a
/// finer level holds `2^(E−L) − 1` more and is triangulated as a fan from its centre.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PatchEdges {
    pub levels: [u32; 4],
    pub points: [Vec<Vec3>; 4],
}

impl PatchEdges {
    /// The edges of a patch on its own, at its level: its own displaced points.
    pub fn own(corners: &[Vec3; 4], uvs: &[Vec2; 4], map: VdSurface, level: u32) -> PatchEdges {
        let n = 1u32 << level;
        let points = std::array::from_fn(|e| {
            (0..=n)
                .map(|k| {
                    let st = super::vd_seams::edge_st(e, k as f32 / n as f32);
                    map.displaced_point(corners, uvs, st.x, st.y)
                })
                .collect()
        });
        PatchEdges {
            levels: [level; 4],
            points,
        }
    }

    /// How many edge points a grid step of edge `e` spans at patch level `level`.
    fn ratio(&self, e: usize, level: u32) -> u32 {
        1 << (self.levels[e] - level)
    }
}

impl PatchBvh {
    /// Builds the tree of the patch `corners` (`v0 v1 v2 v3`, see [`crate::scene::vdmap`])
    /// displaced by `map` (a map, or what one quad reads of it,
    /// [`crate::scene::VdMap::surface`]) read at `uvs`, at `level` (at most [`MAX_LEVEL`]).
    pub fn build<'a>(
        corners: &[Vec3; 4],
        uvs: &[Vec2; 4],
        map: impl Into<VdSurface<'a>>,
        level: u32,
    ) -> PatchBvh {
        let map = map.into();
        let edges = PatchEdges::own(corners, uvs, map, level);
        PatchBvh::build_with_edges(corners, uvs, map, level, edges)
    }

    /// [`PatchBvh::build`] with the boundary given: its grid's boundary points are taken from
    /// `edges` (each edge at a level of at least `level`), and the cells along edges of a finer
    /// level keep their extra points.
    pub fn build_with_edges(
        corners: &[Vec3; 4],
        uvs: &[Vec2; 4],
        map: VdSurface,
        level: u32,
        mut edges: PatchEdges,
    ) -> PatchBvh {
        assert!(
            level <= MAX_LEVEL && edges.levels.iter().all(|&e| e >= level && e <= MAX_LEVEL),
            "VD bottom level {level} (edges {:?}) outside 0..={MAX_LEVEL}",
            edges.levels
        );
        let n = 1u32 << level;
        let row = n + 1;
        let padding = map.map.padding.max(0.0);

        // Loop 1, one iteration per grid point; the root box is their reduction (with the
        // finer edges' points).
        let points: Vec<Vec3> = (0..row * row)
            .map(|p| {
                let (i, j) = (p % row, p / row);
                let on = |e: usize, k: u32| edges.points[e][(k * edges.ratio(e, level)) as usize];
                if j == 0 {
                    on(0, i)
                } else if j == n {
                    on(2, i)
                } else if i == 0 {
                    on(3, j)
                } else if i == n {
                    on(1, j)
                } else {
                    map.displaced_point(corners, uvs, i as f32 / n as f32, j as f32 / n as f32)
                }
            })
            .collect();
        // Only the finer edges keep their points (the others are all on the grid).
        for e in 0..4 {
            if edges.levels[e] == level {
                edges.points[e] = Vec::new();
            }
        }
        let root = Aabb::from_points(points.iter().chain(edges.points.iter().flatten()).copied())
            .expanded(padding);
        let frame = QuantFrame::new(&root);
        let mut tree = PatchBvh {
            level,
            root,
            frame,
            nodes: Vec::new(),
            points,
            edges,
        };

        let mut nodes = vec![VdNode::default(); node_count(level)];
        // Loop 2, one iteration per leaf.
        let first_leaf = first_node_of_level(level) as usize;
        for m in 0..n * n {
            let (x, y) = morton_decode(m);
            let [v00, v10, v11, v01] = cell_corners(&tree.points, row, x, y);
            let b = tree.leaf_float_box(m, padding);
            let (min, max) = tree.frame.quantize(&b);
            let st = (Vec2::new(x as f32, y as f32) + Vec2::splat(0.5)) / n as f32;
            nodes[first_leaf + m as usize] = VdNode {
                min,
                max,
                normal: oct_encode((v11 - v00).cross(v01 - v10)),
                st: pack_unorm16x2(st),
            };
        }
        // Loops 3, one per level from the leaves up, one iteration per node of the level.
        for l in (0..level).rev() {
            let first = first_node_of_level(l) as usize;
            for k in first..first + (1usize << (2 * l)) {
                let children = &nodes[4 * k + 1..4 * k + 5];
                let mut min = [u16::MAX; 3];
                let mut max = [0u16; 3];
                let mut normal = Vec3::ZERO;
                let mut st = Vec2::ZERO;
                for c in children {
                    for a in 0..3 {
                        min[a] = min[a].min(c.min[a]);
                        max[a] = max[a].max(c.max[a]);
                    }
                    normal += c.normal();
                    st += c.st();
                }
                nodes[k] = VdNode {
                    min,
                    max,
                    normal: oct_encode(normal),
                    st: pack_unorm16x2(st * 0.25),
                };
            }
        }
        tree.nodes = nodes;
        tree
    }

    /// Cells per patch side, `2^L`.
    pub fn resolution(&self) -> u32 {
        1 << self.level
    }

    /// The decoded (quantized, conservative) box of node `k`.
    pub fn node_box(&self, k: usize) -> Aabb {
        let node = &self.nodes[k];
        self.frame.decode(node.min, node.max)
    }

    /// The float box of leaf `m` (Morton index) before quantization: its corners and the
    /// extra points of finer edges along it.
    pub fn leaf_float_box(&self, m: u32, padding: f32) -> Aabb {
        let (x, y) = morton_decode(m);
        let corners = cell_corners(&self.points, self.resolution() + 1, x, y);
        let mut b = Aabb::from_points(corners);
        for (e, run) in self.cell_edge_runs(x, y).into_iter().enumerate() {
            for &p in run.map_or(&[][..], |r| &self.edges.points[e][r]) {
                b = b.grow_point(p);
            }
        }
        b.expanded(padding.max(0.0))
    }

    /// For each edge finer than the patch that cell `(x, y)` lies on, the run of its points
    /// from the cell's first corner on that edge to its second (in the edge's direction).
    fn cell_edge_runs(&self, x: u32, y: u32) -> [Option<std::ops::Range<usize>>; 4] {
        let n = self.resolution();
        std::array::from_fn(|e| {
            let (on, k) = match e {
                0 => (y == 0, x),
                1 => (x == n - 1, y),
                2 => (y == n - 1, x),
                _ => (x == 0, y),
            };
            (on && !self.edges.points[e].is_empty()).then(|| {
                let r = self.edges.ratio(e, self.level);
                (k * r) as usize..((k + 1) * r + 1) as usize
            })
        })
    }

    /// Bytes of the nodes (20 each), the grid points and the finer edges' points (12 each here).
    pub fn bytes(&self) -> usize {
        let edges: usize = self
            .edges
            .points
            .iter()
            .map(|e| std::mem::size_of_val(e.as_slice()))
            .sum();
        self.node_bytes() + std::mem::size_of_val(self.points.as_slice()) + edges
    }

    pub fn node_bytes(&self) -> usize {
        std::mem::size_of_val(self.nodes.as_slice())
    }

    /// Closest hit of the ray `origin + t·dir`, `t_min < t < t_max`, through the tree with the
    /// shared [`LinkTable`].
    pub fn intersect(&self, origin: Vec3, dir: Vec3, t_min: f32, t_max: f32) -> Option<PatchHit> {
        self.intersect_with_links(LinkTable::shared(), origin, dir, t_min, t_max)
    }

    /// [`PatchBvh::intersect`] with a given link table (of level at least `self.level`):
    /// Listing 1.1 with the leaf's triangles instead of its box.
    pub fn intersect_with_links(
        &self,
        links: &LinkTable,
        origin: Vec3,
        dir: Vec3,
        t_min: f32,
        t_max: f32,
    ) -> Option<PatchHit> {
        debug_assert!(links.max_level >= self.level);
        let slab = SlabRay::new(origin, dir);
        let first_leaf = first_node_of_level(self.level);
        let row = self.resolution() + 1;
        let mut best: Option<PatchHit> = None;
        let mut limit = t_max;
        let mut k = 0u32;
        while k != LINK_END {
            let node = &self.nodes[k as usize];
            let b = self.frame.decode(node.min, node.max);
            if slab.entry(b.min, b.max, t_min, limit).is_some() {
                if k >= first_leaf {
                    let m = k - first_leaf;
                    if let Some(hit) = self.intersect_cell(row, m, origin, dir, t_min, limit) {
                        limit = hit.t;
                        best = Some(hit);
                    }
                    k = links.skip(k);
                } else {
                    k = links.child(k);
                }
            } else {
                k = links.skip(k);
            }
        }
        best
    }

    /// Closest hit tested against every cell's triangles, without the tree: the oracle.
    pub fn intersect_brute_force(
        &self,
        origin: Vec3,
        dir: Vec3,
        t_min: f32,
        t_max: f32,
    ) -> Option<PatchHit> {
        let row = self.resolution() + 1;
        let mut best: Option<PatchHit> = None;
        for m in 0..self.resolution() * self.resolution() {
            let limit = best.map_or(t_max, |h| h.t);
            if let Some(hit) = self.intersect_cell(row, m, origin, dir, t_min, limit) {
                best = Some(hit);
            }
        }
        best
    }

    /// The two watertight triangles `(v00, v10, v11)` and `(v00, v11, v01)` of leaf cell `m`.
    #[inline]
    fn intersect_cell(
        &self,
        row: u32,
        m: u32,
        origin: Vec3,
        dir: Vec3,
        t_min: f32,
        t_max: f32,
    ) -> Option<PatchHit> {
        let (x, y) = morton_decode(m);
        let [v00, v10, v11, v01] = cell_corners(&self.points, row, x, y);
        let n = self.resolution() as f32;
        let cell = Vec2::new(x as f32, y as f32);
        let runs = self.cell_edge_runs(x, y);
        if runs.iter().any(Option::is_some) {
            let cell = FanCell {
                m,
                x,
                y,
                corners: [v00, v10, v11, v01],
                runs,
            };
            return self.intersect_fan(&cell, origin, dir, t_min, t_max);
        }
        let mut best = None;
        let mut limit = t_max;
        if let Some((t, b1, b2)) = intersect_triangle(origin, dir, v00, v10, v11, t_min, limit) {
            limit = t;
            best = Some(PatchHit {
                t,
                st: (cell + Vec2::new(b1 + b2, b2)) / n,
                normal: (v10 - v00).cross(v11 - v00).normalize_or_zero(),
                cell: m,
            });
        }
        if let Some((t, b1, b2)) = intersect_triangle(origin, dir, v00, v11, v01, t_min, limit) {
            best = Some(PatchHit {
                t,
                st: (cell + Vec2::new(b1, b1 + b2)) / n,
                normal: (v11 - v00).cross(v01 - v00).normalize_or_zero(),
                cell: m,
            });
        }
        best
    }
}

/// A leaf cell along an edge finer than its patch: its Morton index and `(x, y)`, its corners
/// `v00, v10, v11, v01`, and the runs of finer edge points along it
/// ([`PatchBvh::cell_edge_runs`]).
struct FanCell {
    m: u32,
    x: u32,
    y: u32,
    corners: [Vec3; 4],
    runs: [Option<std::ops::Range<usize>>; 4],
}

impl PatchBvh {
    /// A boundary cell with finer edge points: the fan of triangles from the cell's centre (the
    /// mean of its corners) through its outline, `v00`, the bottom edge's points, `v10`, the
    /// right edge's, `v11`, the top edge's backwards, `v01`, the left edge's backwards; counter-
    /// clockwise in `(s, t)` as the two triangles of a plain cell.
    fn intersect_fan(
        &self,
        cell: &FanCell,
        origin: Vec3,
        dir: Vec3,
        t_min: f32,
        t_max: f32,
    ) -> Option<PatchHit> {
        let &FanCell {
            m, x, y, corners, ..
        } = cell;
        let outline = self.cell_outline(cell);
        let centre = (corners[0] + corners[1] + corners[2] + corners[3]) * 0.25;
        let n = self.resolution() as f32;
        let centre_st = (Vec2::new(x as f32, y as f32) + Vec2::splat(0.5)) / n;
        let mut best = None;
        let mut limit = t_max;
        for i in 0..outline.len() {
            let (a, a_st) = outline[i];
            let (b, b_st) = outline[(i + 1) % outline.len()];
            if let Some((t, b1, b2)) = intersect_triangle(origin, dir, centre, a, b, t_min, limit) {
                limit = t;
                best = Some(PatchHit {
                    t,
                    st: centre_st * (1.0 - b1 - b2) + a_st * b1 + b_st * b2,
                    normal: (a - centre).cross(b - centre).normalize_or_zero(),
                    cell: m,
                });
            }
        }
        best
    }

    /// The outline of cell `(x, y)` with the points of its finer edges, each with its `(s, t)`.
    fn cell_outline(&self, cell: &FanCell) -> Vec<(Vec3, Vec2)> {
        let FanCell {
            x,
            y,
            corners,
            runs,
            ..
        } = cell;
        let (x, y) = (*x, *y);
        let n = self.resolution();
        let corner_st = |i: u32, j: u32| Vec2::new(i as f32, j as f32) / n as f32;
        let corner_sts = [
            corner_st(x, y),
            corner_st(x + 1, y),
            corner_st(x + 1, y + 1),
            corner_st(x, y + 1),
        ];
        // Side k of the outline runs from corner k to corner k+1: bottom, right, top
        // (against edge 2's direction), left (against edge 3's).
        let mut outline = Vec::new();
        for side in 0..4 {
            outline.push((corners[side], corner_sts[side]));
            if let Some(run) = &runs[side] {
                let e = side;
                let fine = (1u32 << self.edges.levels[e]) as f32;
                let inner = run.start + 1..run.end - 1;
                let mut points: Vec<(Vec3, Vec2)> = inner
                    .map(|k| {
                        let st = super::vd_seams::edge_st(e, k as f32 / fine);
                        (self.edges.points[e][k], st)
                    })
                    .collect();
                if side >= 2 {
                    points.reverse();
                }
                outline.extend(points);
            }
        }
        outline
    }
}

/// The corners `v00, v10, v11, v01` of cell `(x, y)` of a row-major grid with `row` points a row.
#[inline]
fn cell_corners(points: &[Vec3], row: u32, x: u32, y: u32) -> [Vec3; 4] {
    let p = |i: u32, j: u32| points[(j * row + i) as usize];
    [p(x, y), p(x + 1, y), p(x + 1, y + 1), p(x, y + 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the tests.
    fn lcg(state: &mut u64) -> f32 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*state >> 40) as f32) / (1u64 << 24) as f32
    }

    #[test]
    fn node_is_twenty_bytes_without_padding() {
        assert_eq!(std::mem::size_of::<VdNode>(), 20);
        assert_eq!(std::mem::align_of::<VdNode>(), 4);
        assert_eq!(std::mem::offset_of!(VdNode, normal), 12);
        assert_eq!(std::mem::offset_of!(VdNode, st), 16);
        let node = VdNode {
            min: [1, 2, 3],
            max: [4, 5, 6],
            normal: 7,
            st: 8,
        };
        let words: [u32; 5] = bytemuck::cast(node);
        assert_eq!(words, [1 | 2 << 16, 3 | 4 << 16, 5 | 6 << 16, 7, 8]);
    }

    #[test]
    fn quantized_boxes_contain_their_float_boxes() {
        let mut rng = 1u64;
        for _ in 0..200 {
            let lo = Vec3::new(lcg(&mut rng), lcg(&mut rng), lcg(&mut rng)) * 20.0 - 10.0;
            let ext = Vec3::new(lcg(&mut rng), lcg(&mut rng), lcg(&mut rng)) * 5.0;
            let root = Aabb::new(lo, lo + ext * Vec3::new(1.0, 0.0, 1e-4));
            let frame = QuantFrame::new(&root);
            assert!(frame.decode([0; 3], [0xffff; 3]).contains_box(&root));
            for _ in 0..200 {
                let a = root.min
                    + (root.max - root.min)
                        * Vec3::new(lcg(&mut rng), lcg(&mut rng), lcg(&mut rng));
                let b = root.min
                    + (root.max - root.min)
                        * Vec3::new(lcg(&mut rng), lcg(&mut rng), lcg(&mut rng));
                let float_box = Aabb::new(a.min(b), a.max(b));
                let (qmin, qmax) = frame.quantize(&float_box);
                let decoded = frame.decode(qmin, qmax);
                assert!(
                    decoded.contains_box(&float_box),
                    "{decoded:?} vs {float_box:?}"
                );
                // Tight: one step of slack at most (plus rounding).
                let slack = (float_box.min - decoded.min).max(decoded.max - float_box.max);
                assert!(
                    slack.cmple(frame.step * 1.01 + Vec3::splat(1e-6)).all(),
                    "{slack}"
                );
            }
        }
    }

    #[test]
    fn octahedral_normals_round_trip() {
        let mut rng = 7u64;
        for _ in 0..2000 {
            let v = Vec3::new(lcg(&mut rng), lcg(&mut rng), lcg(&mut rng)) * 2.0 - 1.0;
            if v.length() < 1e-3 {
                continue;
            }
            let n = v.normalize();
            let d = oct_decode(oct_encode(n));
            assert!((n - d).length() < 1e-4, "{n} -> {d}");
        }
        assert_eq!(oct_decode(oct_encode(Vec3::ZERO)), Vec3::Z);
    }

    #[test]
    fn link_table_visits_every_node_once_in_depth_first_order() {
        for max_level in [0, 1, 3, 5, MAX_LEVEL] {
            let links = LinkTable::new(max_level);
            assert_eq!(links.links.len(), node_count(max_level));
            // The recursive preorder of the complete tree.
            let mut preorder = Vec::new();
            fn visit(k: usize, depth: u32, max: u32, out: &mut Vec<usize>) {
                out.push(k);
                if depth < max {
                    for c in 1..=4 {
                        visit(4 * k + c, depth + 1, max, out);
                    }
                }
            }
            // Every level's tree is a prefix of the table.
            for level in 0..=max_level {
                preorder.clear();
                visit(0, 0, level, &mut preorder);
                let first_leaf = first_node_of_level(level);
                let mut order = Vec::new();
                let mut k = 0u32;
                while k != LINK_END {
                    order.push(k as usize);
                    assert!((k as usize) < node_count(level));
                    k = if k >= first_leaf {
                        links.skip(k)
                    } else {
                        links.child(k)
                    };
                }
                assert_eq!(order, preorder, "level {level} of {max_level}");
            }
            // Skip of k is the node after k's subtree in the preorder of the full tree.
            preorder.clear();
            visit(0, 0, max_level, &mut preorder);
            let mut position = vec![0usize; preorder.len()];
            for (i, &k) in preorder.iter().enumerate() {
                position[k] = i;
            }
            for (k, &at) in position.iter().enumerate() {
                let depth = (0..=max_level)
                    .rev()
                    .find(|&l| k >= first_node_of_level(l) as usize)
                    .unwrap();
                let subtree = node_count(max_level - depth);
                let after = at + subtree;
                let expected = preorder.get(after).map_or(LINK_END, |&n| n as u32);
                assert_eq!(links.skip(k as u32), expected, "skip of {k}");
            }
        }
    }

    #[test]
    fn shared_links_fit_the_paper_budget() {
        let links = LinkTable::shared();
        assert_eq!(links.links.len(), 87_381);
        assert_eq!(links.bytes(), 4 * 87_381);
        assert_eq!(links.child(first_node_of_level(MAX_LEVEL) - 1), 87_377);
    }

    #[test]
    fn closer_rays_and_narrower_footprints_never_lower_the_level() {
        let b = Aabb::new(Vec3::ZERO, Vec3::new(2.0, 1.0, 0.5));
        let spread = 1e-3;
        let mut last = MAX_LEVEL;
        for i in 1..200 {
            let d = i as f32 * 0.5;
            let l = lod_level(&b, d, spread, MAX_LEVEL);
            assert!(l <= last, "farther ray raised the level");
            last = l;
            assert!(lod_level(&b, d, spread * 0.5, MAX_LEVEL) >= l);
            // The chosen cell fits the footprint unless clamped.
            assert!(l == MAX_LEVEL || 2.0 / (1u32 << l) as f32 <= d * spread);
            assert!(l == 0 || 2.0 / (1u32 << (l - 1)) as f32 > d * spread);
        }
        assert_eq!(lod_level(&b, 10.0, 1.0, MAX_LEVEL), 0);
        assert_eq!(lod_level(&b, 0.0, 1e-3, 5), 5);
        assert_eq!(
            patch_lod_level(&b, [(100.0, 1e-3), (2.0, 1e-3), (50.0, 1e-3)], MAX_LEVEL),
            lod_level(&b, 2.0, 1e-3, MAX_LEVEL)
        );
    }
}

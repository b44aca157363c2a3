//! Watertight VD patches: where neighbouring patches meet, one of them defines the surface.
//!
//! Two patches of a mesh that share an edge each displace it their own way: in tangent space
//! each builds its own frame (the frame of its own bilinear quad), and across a UV seam each
//! reads its own texels, so their displaced edges part (by up to 7.6e-5 of the object's size
//! in the tangent-space teapot). And at different subdivision levels the finer patch has edge
//! points that the coarser one lacks (T-junctions). The shared-edge rule closes both:
//!
//! * **One owner per edge and per corner.** An edge shared by patches (their corners at the same
//!   object-space positions, bit for bit: vertices split by UVs still match) belongs to the one
//!   of lowest patch index; a corner (a vertex position) to the lowest-indexed patch that touches
//!   it. Every patch evaluates the points on its boundary with its owner's surface
//!   ([`crate::scene::VdMap::displaced_point`] of the owner's quad, UVs and map, at the owner's
//!   `(s, t)`), so the points are the same bits on both sides: the same function of the same
//!   numbers (edge fractions `k / 2^E` and `1 − k / 2^E` are exact).
//! * **One level per edge.** An edge takes the finest level of the patches that share it
//!   (`edge_levels`): a coarser patch stores the finer edge points and its boundary cells are
//!   triangulated as a fan from the cell's centre through them (`vd_bottom`), so both sides
//!   have the same edge segments and the watertight triangle test leaves no gap.
//!
//! Edges are numbered in a patch's `(s, t)`: 0 bottom (`t = 0`), 1 right (`s = 1`), 2 top
//! (`t = 1`), 3 left (`s = 0`); points along an edge run with increasing `s` (bottom, top) or
//! `t` (right, left). Corners: 0 `(0,0)` = `v0`, 1 `(1,0)` = `v1`, 2 `(1,1)` = `v2`,
//! 3 `(0,1)` = `v3`. Edges whose two corners are at one position (collapsed quads) are never
//! shared. The GPU twin reads [`VdSeams`] in `shaders/vd/build_trace.wgsl`.

use std::collections::HashMap;

use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec3};

/// The two corners of each edge, in the edge's direction.
pub const EDGE_CORNERS: [[usize; 2]; 4] = [[0, 1], [1, 2], [3, 2], [0, 3]];

/// The `(s, t)` of corner `c`.
pub fn corner_st(c: usize) -> Vec2 {
    [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y][c]
}

/// The `(s, t)` of the point at fraction `f` along edge `e`.
pub fn edge_st(e: usize, f: f32) -> Vec2 {
    match e {
        0 => Vec2::new(f, 0.0),
        1 => Vec2::new(1.0, f),
        2 => Vec2::new(f, 1.0),
        _ => Vec2::new(0.0, f),
    }
}

/// Who defines a patch's boundary; 48 bytes, three `vec4<u32>` on the GPU.
///
/// ```text
/// edge_owner[e]   the patch (global index) whose surface defines edge e (itself if unshared)
/// edge_code[e]    bits 0..2: the owner's edge; bit 2: the owner runs the edge the other way;
///                 bits 3..32: the edge's id, for its level (Prepared::vd_edge_count of them)
/// corner_owner[c] owner patch << 2 | the owner's corner
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct VdSeams {
    pub edge_owner: [u32; 4],
    pub edge_code: [u32; 4],
    pub corner_owner: [u32; 4],
}

impl VdSeams {
    /// The owner's edge and whether it runs the other way.
    pub fn owner_edge(&self, e: usize) -> (usize, bool) {
        let code = self.edge_code[e];
        ((code & 3) as usize, code & 4 != 0)
    }

    pub fn edge_id(&self, e: usize) -> u32 {
        self.edge_code[e] >> 3
    }

    /// The owner patch and the owner's corner of corner `c`.
    pub fn corner(&self, c: usize) -> (u32, usize) {
        let code = self.corner_owner[c];
        (code >> 2, (code & 3) as usize)
    }

    /// The seams of patch `p` alone: it owns its edges (ids `4p ..= 4p+3`) and corners.
    pub fn alone(p: u32) -> VdSeams {
        VdSeams {
            edge_owner: [p; 4],
            edge_code: std::array::from_fn(|e| e as u32 | (4 * p + e as u32) << 3),
            corner_owner: std::array::from_fn(|c| p << 2 | c as u32),
        }
    }

    /// These seams with patch indices moved by `patches` and edge ids by `edges` (a mesh's
    /// seams placed among the scene's).
    pub fn offset(&self, patches: u32, edges: u32) -> VdSeams {
        VdSeams {
            edge_owner: self.edge_owner.map(|p| p + patches),
            edge_code: self.edge_code.map(|c| c + (edges << 3)),
            corner_owner: self.corner_owner.map(|c| c + (patches << 2)),
        }
    }
}

/// The seams of one mesh's quads (patch `q` is quad `q`), with its number of edge ids.
pub fn mesh_seams(positions: &[Vec3], quads: &[[u32; 4]]) -> (Vec<VdSeams>, u32) {
    let key = |v: u32| positions[v as usize].to_array().map(f32::to_bits);
    let mut corners: HashMap<[u32; 3], u32> = HashMap::new();
    let mut edges: HashMap<([u32; 3], [u32; 3]), (u32, u32)> = HashMap::new();
    let mut seams = vec![VdSeams::default(); quads.len()];
    // Quads in index order: the first to claim a corner or an edge owns it.
    for (q, quad) in quads.iter().enumerate() {
        let q = q as u32;
        for (c, &vertex) in quad.iter().enumerate() {
            let owner = *corners.entry(key(vertex)).or_insert(q << 2 | c as u32);
            seams[q as usize].corner_owner[c] = owner;
        }
        for (e, [a, b]) in EDGE_CORNERS.iter().enumerate() {
            let (ka, kb) = (key(quad[*a]), key(quad[*b]));
            let next_id = edges.len() as u32;
            let (owner, code) = if ka == kb {
                // A collapsed edge is its own, with an id of its own.
                edges.insert((ka, [u32::MAX, e as u32, q]), (q, e as u32 | next_id << 3));
                (q, e as u32 | next_id << 3)
            } else {
                let sorted = if ka < kb { (ka, kb) } else { (kb, ka) };
                let forward = ka < kb;
                let &mut (owner, owner_code) = edges
                    .entry(sorted)
                    .or_insert((q, e as u32 | u32::from(!forward) << 2 | next_id << 3));
                // The owner's code says how the owner runs relative to the sorted key; this
                // patch runs the other way from the owner when their directions differ.
                let owner_forward = owner_code & 4 == 0;
                let reversed = forward != owner_forward;
                (
                    owner,
                    (owner_code & 3) | u32::from(reversed) << 2 | (owner_code >> 3) << 3,
                )
            };
            seams[q as usize].edge_owner[e] = owner;
            seams[q as usize].edge_code[e] = code;
        }
    }
    (seams, edges.len() as u32)
}

/// The level of every edge id: the finest level of the patches that share it.
pub fn edge_levels(seams: &[VdSeams], levels: &[u32], edge_count: u32) -> Vec<u32> {
    let mut out = vec![0u32; edge_count as usize];
    for (s, &level) in seams.iter().zip(levels) {
        for e in 0..4 {
            let id = s.edge_id(e) as usize;
            out[id] = out[id].max(level);
        }
    }
    out
}

/// Where the point `k` of `2^level` along edge `e` of a patch comes from: the patch whose
/// surface defines it and the `(s, t)` there.
pub fn boundary_source(seams: &VdSeams, e: usize, k: u32, level: u32) -> (u32, Vec2) {
    let n = 1u32 << level;
    if k == 0 || k == n {
        let c = EDGE_CORNERS[e][usize::from(k == n)];
        let (owner, corner) = seams.corner(c);
        return (owner, corner_st(corner));
    }
    let (owner_edge, reversed) = seams.owner_edge(e);
    let along = if reversed { n - k } else { k };
    (
        seams.edge_owner[e],
        edge_st(owner_edge, along as f32 / n as f32),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two unit quads side by side sharing the edge x = 1; the second is wound the other way
    /// round, so it runs the shared edge in the opposite direction.
    #[test]
    fn a_shared_edge_has_one_owner_and_one_id_and_unshared_edges_their_own() {
        let positions = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(2.0, 1.0, 0.0),
            // Split copies of the shared vertices (as a UV seam makes them).
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
        ];
        // Quad 1: v0 = (1,1), v1 = (1,0), v2 = (2,0), v3 = (2,1): its bottom edge (v0 → v1)
        // runs down the shared edge, which quad 0's right edge (v1 → v2) runs up.
        let quads = vec![[0, 1, 2, 3], [7, 6, 4, 5]];
        let (seams, edges) = mesh_seams(&positions, &quads);
        assert_eq!(edges, 7, "eight edges, two of them one");
        assert_eq!(seams[1].edge_owner[0], 0);
        assert_eq!(seams[1].owner_edge(0), (1, true));
        assert_eq!(seams[1].edge_id(0), seams[0].edge_id(1));
        assert_eq!(seams[0].owner_edge(1), (1, false));
        assert_eq!(seams[1].edge_owner[2], 1);
        // The corner at (1, 0) is quad 0's corner 1; at (1, 1) its corner 2.
        assert_eq!(seams[1].corner(1), (0, 1));
        assert_eq!(seams[1].corner(0), (0, 2));
        assert_eq!(seams[1].corner(2), (1, 2));
        // Point k of quad 1's bottom edge is quad 0's right edge at 1 − k/n, the same numbers.
        for level in 0..4 {
            let n = 1u32 << level;
            for k in 0..=n {
                let (p, st) = boundary_source(&seams[1], 0, k, level);
                let (p0, st0) = boundary_source(&seams[0], 1, n - k, level);
                assert_eq!((p, st), (p0, st0), "level {level} point {k}");
                assert_eq!(p, 0);
            }
        }
        let levels = edge_levels(&seams, &[2, 5], edges);
        assert_eq!(levels[seams[0].edge_id(1) as usize], 5);
        assert_eq!(levels[seams[0].edge_id(0) as usize], 2);
    }
}

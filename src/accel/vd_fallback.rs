//! VD patches: their conservative middle-level bounds, and the pre-tessellated fallback that
//! renders them until the on-the-fly bottom level exists.
//!
//! [`PretessellatedVdFallback`] tessellates each patch at prepare time into an `n × n` grid of
//! cells (`(n+1)²` displaced points from [`VdMap::displaced_point`]) and stores over the cells a
//! complete 4-ary tree of AABBs, the shape of the bottom-level quad BVH of paper 000 section 1.4,
//! but built once instead of per frame. Tree nodes are in breadth-first order: node `k` has
//! children `4k+1 ..= 4k+4`, the leaves of a tree with `L = log2 n` levels below the root start
//! at `(4^L − 1)/3`, and leaf `m` (Morton code) covers cell `(x, y)` = (even bits, odd bits)
//! of `m`. Child `j` of a node covers the quarter with `x` bit `j & 1` and `y` bit `j >> 1`.

use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec3};

use super::aabb::{Aabb, SlabRay};
use super::primitives::{intersect_quad, quad_half_at};
use super::qbvh::{visit_siblings, CompactStack};
use crate::scene::VdMap;

/// Largest accepted fallback resolution (cells per patch side).
pub const MAX_VD_FALLBACK_RESOLUTION: u32 = 256;

/// One VD patch; 48 bytes, three vec4s.
///
/// ```text
/// offset  0: bounds_min: vec3<f32>   conservative object-space bounds (base quad AABB grown by
/// offset 12: tree_offset: u32          the map's largest displacement + padding): what the
/// offset 16: bounds_max: vec3<f32>     middle level holds. tree_offset: root of the patch's
/// offset 28: grid_offset: u32          tree in `tree_nodes`; grid_offset: first grid point
/// offset 32: mesh: u32               mesh index
/// offset 36: quad: u32               quad index within the mesh (prim = triangle count + quad)
/// offset 40: _pad: [u32; 2]
/// ```
/// WGSL twin: `struct VdPatch { bounds_min: vec3<f32>, tree_offset: u32, bounds_max: vec3<f32>,
/// grid_offset: u32, mesh: u32, quad: u32, _pad: vec2<u32> }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct VdPatchRecord {
    pub bounds_min: [f32; 3],
    pub tree_offset: u32,
    pub bounds_max: [f32; 3],
    pub grid_offset: u32,
    pub mesh: u32,
    pub quad: u32,
    pub _pad: [u32; 2],
}

impl VdPatchRecord {
    pub fn bounds(&self) -> Aabb {
        Aabb::new(
            Vec3::from_array(self.bounds_min),
            Vec3::from_array(self.bounds_max),
        )
    }
}

/// An AABB as two vec4s; 32 bytes.
///
/// ```text
/// offset  0: min: vec3<f32>, offset 12: _pad0: u32, offset 16: max: vec3<f32>, offset 28: _pad1: u32
/// ```
/// WGSL twin: `struct Bounds { min: vec3<f32>, _pad0: u32, max: vec3<f32>, _pad1: u32 }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BoundsRecord {
    pub min: [f32; 3],
    pub _pad0: u32,
    pub max: [f32; 3],
    pub _pad1: u32,
}

impl BoundsRecord {
    pub fn from_aabb(b: &Aabb) -> BoundsRecord {
        BoundsRecord {
            min: b.min.to_array(),
            _pad0: 0,
            max: b.max.to_array(),
            _pad1: 0,
        }
    }

    pub fn aabb(&self) -> Aabb {
        Aabb::new(Vec3::from_array(self.min), Vec3::from_array(self.max))
    }
}

/// The conservative bounds of a VD patch (paper 000 section 1.5.2): the base quad's AABB grown
/// in every direction by the map's largest displacement over the patch's UVs plus its padding.
pub fn vd_patch_bounds(map: &VdMap, corners: &[Vec3; 4], uvs: &[Vec2; 4]) -> Aabb {
    let margin = map.max_displacement(uvs) + map.padding.max(0.0);
    Aabb::from_points(corners.iter().copied()).expanded(margin)
}

/// The displaced grid and cell tree of one patch, before they are appended to the flat arrays.
pub struct TessellatedPatch {
    /// `(n+1)²` points, row-major: point `j·(n+1) + i` is at `(s, t) = (i/n, j/n)`.
    pub points: Vec<Vec3>,
    /// The complete 4-ary tree over the cells, breadth first (see the module docs).
    pub tree: Vec<Aabb>,
}

/// Pre-tessellated stand-in for the on-the-fly VD bottom level: the grids and trees of every
/// patch, as flat arrays shared by all patches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PretessellatedVdFallback {
    /// Cells per patch side `n` (a power of two).
    pub resolution: u32,
    /// `log2 n`: levels of the cell tree below its root.
    pub levels: u32,
    /// The displaced grid points of every patch (xyz, w = 1), `(n+1)²` per patch.
    pub grid_points: Vec<[f32; 4]>,
    /// The cell trees of every patch, `(4^(L+1) − 1)/3` nodes per patch.
    pub tree_nodes: Vec<BoundsRecord>,
}

/// Number of nodes of a complete 4-ary tree with `levels` levels below the root.
pub fn complete_tree_nodes(levels: u32) -> usize {
    ((1usize << (2 * (levels + 1))) - 1) / 3
}

/// Splits a Morton code into its (even bits, odd bits) as cell coordinates.
pub fn morton_decode(m: u32) -> (u32, u32) {
    fn compact(mut v: u32) -> u32 {
        v &= 0x5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333;
        v = (v | (v >> 2)) & 0x0f0f_0f0f;
        v = (v | (v >> 4)) & 0x00ff_00ff;
        (v | (v >> 8)) & 0x0000_ffff
    }
    (compact(m), compact(m >> 1))
}

impl PretessellatedVdFallback {
    /// An empty fallback at `resolution` cells per side, which must be a power of two in
    /// `1..=MAX_VD_FALLBACK_RESOLUTION` (the caller checks this).
    pub fn new(resolution: u32) -> PretessellatedVdFallback {
        PretessellatedVdFallback {
            resolution,
            levels: resolution.trailing_zeros(),
            ..Default::default()
        }
    }

    pub fn points_per_patch(&self) -> usize {
        (self.resolution as usize + 1).pow(2)
    }

    pub fn nodes_per_patch(&self) -> usize {
        complete_tree_nodes(self.levels)
    }

    /// Tessellates one patch: displaced grid points and the tree over its cells.
    pub fn tessellate(
        &self,
        map: &VdMap,
        corners: &[Vec3; 4],
        uvs: &[Vec2; 4],
    ) -> TessellatedPatch {
        let n = self.resolution;
        let row = n as usize + 1;
        let mut points = Vec::with_capacity(row * row);
        for j in 0..=n {
            for i in 0..=n {
                points.push(map.displaced_point(
                    corners,
                    uvs,
                    i as f32 / n as f32,
                    j as f32 / n as f32,
                ));
            }
        }
        let mut tree = vec![Aabb::EMPTY; self.nodes_per_patch()];
        let first_leaf = complete_tree_nodes(self.levels) - (n * n) as usize;
        for m in 0..n * n {
            let (x, y) = morton_decode(m);
            let corner = |dx: u32, dy: u32| points[(y + dy) as usize * row + (x + dx) as usize];
            tree[first_leaf + m as usize] =
                Aabb::from_points([corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)]);
        }
        for k in (0..first_leaf).rev() {
            tree[k] = (1..=4).fold(Aabb::EMPTY, |b, c| b.union(tree[4 * k + c]));
        }
        TessellatedPatch { points, tree }
    }

    /// Appends a tessellated patch; returns `(tree_offset, grid_offset)`.
    pub fn append(&mut self, patch: &TessellatedPatch) -> (u32, u32) {
        let offsets = (self.tree_nodes.len() as u32, self.grid_points.len() as u32);
        self.tree_nodes
            .extend(patch.tree.iter().map(BoundsRecord::from_aabb));
        self.grid_points
            .extend(patch.points.iter().map(|p| p.extend(1.0).to_array()));
        offsets
    }

    #[inline]
    fn grid_point(&self, patch: &VdPatchRecord, i: u32, j: u32) -> Vec3 {
        let row = self.resolution + 1;
        let p = self.grid_points[(patch.grid_offset + j * row + i) as usize];
        Vec3::new(p[0], p[1], p[2])
    }

    fn cell_corners(&self, patch: &VdPatchRecord, x: u32, y: u32) -> [Vec3; 4] {
        [
            self.grid_point(patch, x, y),
            self.grid_point(patch, x + 1, y),
            self.grid_point(patch, x + 1, y + 1),
            self.grid_point(patch, x, y + 1),
        ]
    }

    /// Intersects cell `(x, y)`; returns `t` and the patch parameter.
    #[inline]
    fn intersect_cell(
        &self,
        patch: &VdPatchRecord,
        (x, y): (u32, u32),
        origin: Vec3,
        dir: Vec3,
        t_min: f32,
        t_max: f32,
    ) -> Option<(f32, Vec2)> {
        let corners = self.cell_corners(patch, x, y);
        let n = self.resolution as f32;
        intersect_quad(origin, dir, &corners, t_min, t_max)
            .map(|(t, local)| (t, (Vec2::new(x as f32, y as f32) + local) / n))
    }

    /// Closest hit of an object-space ray with a patch through its cell tree: `t` and the
    /// patch parameter `(s, t)`.
    pub fn intersect(
        &self,
        patch: &VdPatchRecord,
        origin: Vec3,
        dir: Vec3,
        t_min: f32,
        t_max: f32,
    ) -> Option<(f32, Vec2)> {
        let slab = SlabRay::new(origin, dir);
        let tree = &self.tree_nodes
            [patch.tree_offset as usize..patch.tree_offset as usize + self.nodes_per_patch()];
        let first_leaf = (tree.len() - (self.resolution * self.resolution) as usize) as u32;
        let entry = |k: u32, limit: f32| {
            let b = &tree[k as usize];
            slab.entry(
                Vec3::from_array(b.min),
                Vec3::from_array(b.max),
                t_min,
                limit,
            )
        };
        let mut best: Option<(f32, Vec2)> = None;
        let mut limit = t_max;
        entry(0, limit)?;
        // Depth ≤ levels ≤ 8 for the largest resolution, one entry per level.
        let mut stack = CompactStack::<16>::default();
        let mut node = Some(0u32);
        while let Some(k) = node {
            if k >= first_leaf {
                let (x, y) = morton_decode(k - first_leaf);
                if let Some(hit) = self.intersect_cell(patch, (x, y), origin, dir, t_min, limit) {
                    limit = hit.0;
                    best = Some(hit);
                }
                node = stack.pop_node();
            } else {
                node = visit_siblings(4 * k + 1, 4, |c| entry(c, limit), &mut stack)
                    .or_else(|| stack.pop_node());
            }
        }
        best
    }

    /// Closest hit tested against every cell, without the tree: the oracle for tests.
    pub fn intersect_brute_force(
        &self,
        patch: &VdPatchRecord,
        origin: Vec3,
        dir: Vec3,
        t_min: f32,
        t_max: f32,
    ) -> Option<(f32, Vec2)> {
        let mut best: Option<(f32, Vec2)> = None;
        for y in 0..self.resolution {
            for x in 0..self.resolution {
                let limit = best.map_or(t_max, |b| b.0);
                if let Some(hit) = self.intersect_cell(patch, (x, y), origin, dir, t_min, limit) {
                    best = Some(hit);
                }
            }
        }
        best
    }

    /// The object-space point at patch parameter `st` on the tessellated surface, and the
    /// unnormalised normal of the grid triangle holding it.
    pub fn surface_at(&self, patch: &VdPatchRecord, st: Vec2) -> (Vec3, Vec3) {
        let n = self.resolution;
        let scaled = st.clamp(Vec2::ZERO, Vec2::ONE) * n as f32;
        let x = (scaled.x as u32).min(n - 1);
        let y = (scaled.y as u32).min(n - 1);
        let local = (scaled - Vec2::new(x as f32, y as f32)).clamp(Vec2::ZERO, Vec2::ONE);
        quad_half_at(&self.cell_corners(patch, x, y), local)
    }

    /// Bytes held by the grid points and the trees.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(self.grid_points.as_slice())
            + std::mem::size_of_val(self.tree_nodes.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_decode_visits_every_cell_once() {
        let mut seen = [[false; 8]; 8];
        for m in 0..64 {
            let (x, y) = morton_decode(m);
            assert!(!seen[y as usize][x as usize]);
            seen[y as usize][x as usize] = true;
        }
        assert_eq!(morton_decode(0b10), (0, 1));
        assert_eq!(morton_decode(0b01), (1, 0));
    }

    #[test]
    fn complete_tree_sizes() {
        assert_eq!(complete_tree_nodes(0), 1);
        assert_eq!(complete_tree_nodes(1), 5);
        assert_eq!(complete_tree_nodes(4), 341);
    }
}

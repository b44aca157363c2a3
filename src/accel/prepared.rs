//! The prepared scene: flat GPU-ready arrays of geometry, the middle-level BVH of every mesh and
//! the top-level BVH over instances in the scene's layout (the QBVH here, the wide BVH's loop in
//! `wide_traverse`), VD patches, and the fused CPU traversal of both levels.
//!
//! Every array is a `Vec` of `#[repr(C)]` `bytemuck::Pod` records with `u32` indices, uploaded
//! unchanged as a storage buffer by the GPU backend. Indices inside a mesh's QBVH (children,
//! primitive references) are local to that mesh; [`MeshRecord`] holds the global offsets.
//!
//! Traversal is one loop with one [`CompactStack`]: top-level entries, then, after descending
//! into an instance, a [`RETURN_TO_WORLD`] marker and middle-level entries in object space.
//! Popping the marker brings the ray back to world space. The WGSL kernel runs the same loop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytemuck::{Pod, Zeroable};
use glam::{Affine3A, Mat3A, Vec2, Vec3, Vec3A};
use rayon::prelude::*;

use super::aabb::{Aabb, SlabRay};
use super::bvh::{build_binary_bvh, BuildSettings};
use super::grid::{build_grid, grid_size, GridTooLarge};
use super::lbvh::build_lbvh;
use super::merge::{merge_plan, merged_boxes, merged_build_key, MergePlan};
use super::ploc::build_ploc;
use super::primitives::{
    intersect_quad, intersect_sphere, intersect_triangle, quad_half_at, sphere_uv,
};
use super::qbvh::{
    collapse_to_qbvh, collapse_to_wide, qbvh_depth, visit_children, CompactStack, QbvhNode,
    MAX_TREE_NODES,
};
use super::sah_build::{build_sah, SahVariant};
use super::tri_kdtree::{build_kdtree, KdTreeDevice, KdTreeTooLarge};
use super::vd_bottom::{lod_level, PatchBvh, PatchEdges, MAX_LEVEL};
use super::vd_frame::VdFrame;
use super::vd_patch::{vd_patch_bounds, VdPatchRecord};
use super::vd_seams::{self, mesh_seams, VdSeams};
use super::wide::{collapse_to_cwbvh, WideNode, WIDE_LEAF_MAX, WIDE_STACK_SIZE};
use super::{AccelError, BvhBuilder, BvhLayout, Hit, PrepareOptions, Ray, SurfacePoint};
use crate::scene::vdmap::{bilinear, bilinear2};
use crate::scene::vdmap::{VdImage, VdSurface};
use crate::scene::{Mesh, MeshData, MeshOrigin, Scene, VdMap};

/// Entries of the traversal stack: enough for the deepest top level, the marker and the
/// deepest middle level (the builder keeps depths below `bvh::MAX_SAH_DEPTH + 32` each).
pub const TRAVERSAL_STACK_SIZE: usize = 64;

/// Stack entry that means "leave the instance and return to world space". No compact entry
/// equals it because node indices stay below `qbvh::MAX_TREE_NODES`.
pub const RETURN_TO_WORLD: u32 = u32::MAX;

/// [`MeshRecord::flags`] bit: the mesh has per-vertex normals.
pub const MESH_HAS_NORMALS: u32 = 1;
/// [`MeshRecord::flags`] bit: the mesh has per-vertex UVs.
pub const MESH_HAS_UVS: u32 = 2;
/// [`MeshRecord::flags`] bit: the mesh's quads are VD patches.
pub const MESH_DISPLACED: u32 = 4;
/// `MeshRecord::flags`: the mesh is an analytic sphere. Its one primitive is a quad whose
/// vertex holds the radius in each coordinate; the sphere is about the origin.
pub const MESH_SPHERE: u32 = 8;
/// `MeshRecord::flags`: the mesh merges the meshes of several scene instances into one tree
/// ([`Prepared::merged_prims`]). It has no vertices of its own; its triangles and quads are
/// copies of theirs, and its `vd_patch_offset` is the first of its entries in `merged_prims`.
pub const MESH_MERGED: u32 = 16;
/// `MeshRecord::flags`: the mesh's middle level is a two-level grid (`--accel grid`,
/// [`super::grid`]): its `node_offset` and `node_count` are the place and size of its words in
/// [`Prepared::grid_cells`], and it has no `prim_refs` (the grid holds its references).
pub const MESH_GRID: u32 = 32;
/// The mesh's middle level is a kd-tree over triangles (`--accel kdtree`, [`super::tri_kdtree`]):
/// like a grid, its words are in [`Prepared::grid_cells`] at `node_offset`, `node_count` long,
/// and it has no `prim_refs`.
pub const MESH_KDTREE: u32 = 64;
/// The flags of a middle level walked by a routine of its own rather than entered as a tree.
pub const MESH_WALKED: u32 = MESH_GRID | MESH_KDTREE;

/// Middle-level build settings: SAH with up to four primitives per leaf.
const MIDDLE_SETTINGS: BuildSettings = BuildSettings {
    bins: 16,
    max_leaf_size: 4,
    traversal_cost: 1.0,
    intersection_cost: 1.0,
};
/// Middle-level build settings of the wide layout: its leaf children hold at most three.
const WIDE_MIDDLE_SETTINGS: BuildSettings = BuildSettings {
    max_leaf_size: WIDE_LEAF_MAX,
    ..MIDDLE_SETTINGS
};
/// Top-level build settings: one instance per leaf, so that a top leaf is "enter this instance".
const TOP_SETTINGS: BuildSettings = BuildSettings {
    bins: 16,
    max_leaf_size: 1,
    traversal_cost: 1.0,
    intersection_cost: 1.0,
};

/// One mesh; 48 bytes, three vec4<u32>.
///
/// ```text
/// offset  0: vertex_offset, vertex_count        into positions / normals / uvs
/// offset  8: triangle_offset, triangle_count    into triangles
/// offset 16: quad_offset, quad_count            into quads
/// offset 24: node_offset, node_count            into mesh_nodes (root = node_offset; none if 0),
///                                               or for MESH_GRID and MESH_KDTREE into grid_cells (its words)
/// offset 32: prim_ref_offset                    into prim_refs (leaf `first` is relative to it)
/// offset 36: vd_patch_offset                    patch of quad q = vd_patch_offset + q; u32::MAX if none
///                                               (MESH_MERGED: prim p stands for merged_prims[vd_patch_offset + p])
/// offset 40: flags                              MESH_HAS_NORMALS | MESH_HAS_UVS | MESH_DISPLACED | MESH_SPHERE | MESH_MERGED | MESH_GRID | MESH_KDTREE
/// offset 44: depth                              levels of the mesh's QBVH
/// ```
/// WGSL twin: `struct MeshRecord` with the same twelve `u32` fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct MeshRecord {
    pub vertex_offset: u32,
    pub vertex_count: u32,
    pub triangle_offset: u32,
    pub triangle_count: u32,
    pub quad_offset: u32,
    pub quad_count: u32,
    pub node_offset: u32,
    pub node_count: u32,
    pub prim_ref_offset: u32,
    pub vd_patch_offset: u32,
    pub flags: u32,
    pub depth: u32,
}

/// A mesh whose middle level the backend builds on the device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceBuild {
    /// Index into `Scene::meshes` and [`Prepared::meshes`].
    pub mesh: u32,
    /// One box per primitive (triangles, then quads or VD patches), in object space.
    pub boxes: Arc<Vec<Aabb>>,
    /// The hash of everything the tree is built from (the mesh's key in the
    /// [`MeshBuildCache`]): a device that holds a tree of the same key at the same offsets
    /// need not build it again.
    pub key: u128,
    /// The builder that makes the tree (one of the GPU's).
    pub builder: BvhBuilder,
}

/// One instance; 112 bytes, seven vec4s.
///
/// ```text
/// offset  0: object_to_world: 3 rows of vec4<f32>   world = row_i · (x, y, z, 1)
/// offset 48: world_to_object: 3 rows of vec4<f32>   its inverse; normals use its transpose
/// offset 96: mesh: u32, material: u32, light: u32, members: u32
/// ```
/// `light`: the area light whose surface the instance is ([`Scene::instance_area_lights`]),
/// 0xffffffff for none.
///
/// WGSL twin: `struct Instance { object_to_world: array<vec4<f32>, 3>, world_to_object:
/// array<vec4<f32>, 3>, mesh: u32, material: u32, light: u32, members: u32 }`.
/// `members`: for the record of a merged group, the first of its scene instances in
/// [`Prepared::merged_members`]; 0xffffffff for a scene instance.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct InstanceRecord {
    pub object_to_world: [[f32; 4]; 3],
    pub world_to_object: [[f32; 4]; 3],
    pub mesh: u32,
    pub material: u32,
    pub light: u32,
    pub members: u32,
}

/// The rows of a 3×4 affine matrix.
pub fn affine_to_rows(a: &Affine3A) -> [[f32; 4]; 3] {
    let m = a.matrix3;
    let t = a.translation;
    [0, 1, 2].map(|r| [m.x_axis[r], m.y_axis[r], m.z_axis[r], t[r]])
}

/// The affine matrix of three rows.
pub fn rows_to_affine(rows: &[[f32; 4]; 3]) -> Affine3A {
    let col = |c: usize| Vec3A::new(rows[0][c], rows[1][c], rows[2][c]);
    Affine3A::from_mat3_translation(
        Mat3A::from_cols(col(0), col(1), col(2)).into(),
        col(3).into(),
    )
}

#[inline]
pub(super) fn rows_point(rows: &[[f32; 4]; 3], p: Vec3) -> Vec3 {
    let r = |i: usize| rows[i][0] * p.x + rows[i][1] * p.y + rows[i][2] * p.z + rows[i][3];
    Vec3::new(r(0), r(1), r(2))
}

#[inline]
pub(super) fn rows_vector(rows: &[[f32; 4]; 3], v: Vec3) -> Vec3 {
    let r = |i: usize| rows[i][0] * v.x + rows[i][1] * v.y + rows[i][2] * v.z;
    Vec3::new(r(0), r(1), r(2))
}

/// `Mᵀ·n` for the linear part `M` of `rows`: with `rows` = world_to_object this carries an
/// object-space normal to world space (the inverse transpose of object_to_world).
#[inline]
fn rows_transpose_vector(rows: &[[f32; 4]; 3], n: Vec3) -> Vec3 {
    let c = |j: usize| rows[0][j] * n.x + rows[1][j] * n.y + rows[2][j] * n.z;
    Vec3::new(c(0), c(1), c(2))
}

/// The scene prepared for tracing.
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    /// Object-space vertex positions of every mesh (xyz, w = 1).
    pub positions: Vec<[f32; 4]>,
    /// Vertex normals (xyz, w = 0); zeros for meshes without normals.
    pub normals: Vec<[f32; 4]>,
    /// Vertex UVs; zeros for meshes without UVs.
    pub uvs: Vec<[f32; 2]>,
    /// Triangles as global vertex indices (xyz, w = 0).
    pub triangles: Vec<[u32; 4]>,
    /// Quads `v0 v1 v2 v3` as global vertex indices.
    pub quads: Vec<[u32; 4]>,
    pub meshes: Vec<MeshRecord>,
    /// The node layout of both levels: the QBVH arrays (`mesh_nodes`, `top_nodes`) or the wide
    /// ones (`mesh_wide`, `top_wide`) hold the trees, the others are empty.
    pub layout: BvhLayout,
    /// Each mesh's object-space bounds (empty for a mesh without primitives).
    pub mesh_bounds: Vec<Aabb>,
    /// The middle-level QBVHs of all meshes, each at its mesh's `node_offset`.
    pub mesh_nodes: Vec<QbvhNode>,
    /// The middle-level wide BVHs of all meshes, each at its mesh's `node_offset`.
    pub mesh_wide: Vec<WideNode>,
    /// Primitive references of the middle-level leaves: local primitive indices (triangles,
    /// then quads), each mesh's at its `prim_ref_offset`.
    pub prim_refs: Vec<u32>,
    /// The two-level grids of the [`MESH_GRID`] meshes ([`super::grid`]'s words) and the
    /// kd-trees of the [`MESH_KDTREE`] meshes ([`super::tri_kdtree`]'s), each at its
    /// mesh's `node_offset`.
    pub grid_cells: Vec<u32>,
    /// One record per scene instance, in scene order (so `Hit::instance` indexes both), then
    /// one per merged group ([`Prepared::merged_prims`]), which no hit names.
    pub instances: Vec<InstanceRecord>,
    /// How many of `instances` are the scene's.
    pub scene_instances: u32,
    /// What each primitive of a merged mesh ([`MESH_MERGED`]) stands for: (member `k`,
    /// primitive of the `k`-th mesh of the merged set), mesh after mesh. The scene instance of
    /// member `k` of the group a ray entered is `merged_members[record.members + k]`, so one
    /// merged tree serves every placement of a mesh file. The instances of one transform whose
    /// meshes only such groups place (the parts of an OBJ file, each a mesh of its own for its
    /// material, wherever the file is instanced) are traced through one tree, as if they were
    /// one mesh: a ray then walks one tree where it walked one per part. A hit still names the scene instance and
    /// its primitive, and ties go by those, so the result is the one without merging.
    pub merged_prims: Vec<[u32; 2]>,
    /// Scene instances traced through a merged mesh.
    pub merged_instances: u32,
    /// The scene instances of every merged group ([`InstanceRecord::members`]), group after
    /// group, each in the order of its set's meshes.
    pub merged_members: Vec<u32>,
    /// The top-level QBVH over instances (root = 0). Every leaf holds one reference.
    pub top_nodes: Vec<QbvhNode>,
    /// The top-level wide BVH over instances (root = 0). Every leaf child holds one reference.
    pub top_wide: Vec<WideNode>,
    /// World-space bounds of every instance that can be hit.
    pub world_box: Aabb,
    /// Instance indices referenced by the top-level leaves. Instances of empty meshes are left out.
    pub top_instance_refs: Vec<u32>,
    /// One record per VD patch, mesh after mesh (mesh `m`'s from its `vd_patch_offset`).
    pub vd_patches: Vec<VdPatchRecord>,
    /// Who defines each VD patch's boundary (the watertight rule, [`super::vd_seams`]).
    pub vd_seams: Vec<VdSeams>,
    /// How many edge ids [`Prepared::vd_seams`] uses.
    pub vd_edge_count: u32,
    /// The scene's VD maps (their images are shared, not copied), indexed by
    /// [`VdPatchRecord::map`].
    pub vd_maps: Vec<VdMap>,
    /// Deepest bottom-level subdivision (`film.vd_max_level`, at most [`MAX_LEVEL`]).
    pub vd_max_level: u32,
    /// The camera's pixel spread (radians per unit distance) the levels are chosen with.
    pub vd_pixel_spread: f32,
    /// The bottom level with every patch at its camera bound
    /// ([`Prepared::vd_camera_bound_levels`]), used by [`Prepared::intersect`] and
    /// [`Prepared::occluded`]; renderers refine the levels with the camera rays
    /// ([`Prepared::vd_levels_from_rays`]) and trace with [`Prepared::intersect_in`].
    pub vd: VdFrame,
    /// Levels of the top-level QBVH.
    pub top_depth: u32,
    /// Meshes whose middle level came from a [`MeshBuildCache`] instead of a build.
    pub meshes_reused: u32,
    /// Kd-trees (`--accel kdtree`) whose words a [`KdTreeDevice`] built, this frame or when
    /// the cache took them.
    pub kdtrees_on_device: u32,
    /// Displaced meshes built again (moved or deformed) whose patches' reaches came from the
    /// cache: only their patch bounds and tree were built.
    pub vd_reaches_reused: u32,
    /// The meshes whose middle level the backend builds on the device
    /// ([`PrepareOptions::device_builds`]): their `mesh_wide` holds zeroed room and their
    /// `prim_refs` the references in primitive order; for a grid, `grid_cells` holds zeroed
    /// room of its exact size ([`super::grid::grid_size`]).
    pub device_builds: Vec<DeviceBuild>,
    /// Wall-clock build times in milliseconds.
    pub middle_build_ms: f64,
    pub vd_levels_ms: f64,
    pub top_build_ms: f64,
    pub total_build_ms: f64,
}

/// Middle levels kept from frame to frame: a mesh whose build inputs are unchanged (its
/// positions, texture coordinates, faces, the branching factor and, for a displaced mesh, its
/// map's image and settings; compared by their 128-bit XXH3 hash) reuses its build instead of
/// building again. The cache keeps the builds of the last scene built with it.
#[derive(Default)]
pub struct MeshBuildCache {
    builds: Mutex<HashMap<u128, CachedBuild>>,
    /// The VD patches' reaches (the map's part of their bounds) by [`reach_key`]: a displaced
    /// mesh that moves or deforms keeps its quads, UVs, map and shared edges, so only its patch
    /// bounds and its tree are built again.
    reaches: Mutex<HashMap<u128, CachedReach>>,
}

/// The reach of every patch of a displaced mesh, with the images it was measured on (held for
/// the same reason as [`CachedBuild`]'s).
#[derive(Clone)]
struct CachedReach {
    reach: Arc<Vec<f32>>,
    _images: Vec<Arc<VdImage>>,
}

/// A cached build and the images its patch bounds came from (held, so that an image's address,
/// part of the key, cannot be reused by another image while the entry lives).
#[derive(Clone)]
struct CachedBuild {
    build: Arc<MeshBuild>,
    _images: Vec<Arc<VdImage>>,
}

/// The key of mesh `mesh_index`'s build: a hash of everything `build_mesh_level` reads.
fn mesh_build_key(scene: &Scene, mesh_index: usize, options: &PrepareOptions) -> u128 {
    let mesh = &scene.meshes[mesh_index];
    let d = hierarchy_data(mesh);
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&[sphere_radius(mesh).is_some() as u8]);
    for part in [
        bytemuck::cast_slice::<Vec3, u8>(&d.positions),
        bytemuck::cast_slice::<Vec2, u8>(&d.uvs),
        bytemuck::cast_slice::<[u32; 3], u8>(&d.triangles),
        bytemuck::cast_slice::<[u32; 4], u8>(&d.quads),
    ] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update(options.layout.name().as_bytes());
    h.update(options.builder.name().as_bytes());
    h.update(&[options.device_builds as u8]);
    match mesh
        .displacement
        .and_then(|id| scene.vdmaps.get(id as usize))
    {
        Some(map) => hash_map_identity(&mut h, map),
        None => h.update(&[mesh.displacement.is_some() as u8]),
    }
    h.digest128()
}

/// Hashes what a map's displacement depends on: its images (by address) and its settings.
fn hash_map_identity(h: &mut xxhash_rust::xxh3::Xxh3, map: &VdMap) {
    for image in &map.images {
        h.update(&(Arc::as_ptr(image) as usize as u64).to_le_bytes());
    }
    h.update(format!("{:?}", map.layout).as_bytes());
    h.update(&map.channels);
    for v in [map.scale, map.midlevel, map.padding] {
        h.update(&v.to_bits().to_le_bytes());
    }
    h.update(format!("{:?}", map.space).as_bytes());
}

/// The key of a displaced mesh's patch reaches: a hash of what [`seams_reach`] and the patches'
/// own largest displacements read (quads, UVs, map, shared edges), not the positions.
fn reach_key(data: &MeshData, map: &VdMap, seams: &[VdSeams]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for part in [
        bytemuck::cast_slice::<Vec2, u8>(&data.uvs),
        bytemuck::cast_slice::<[u32; 4], u8>(&data.quads),
        bytemuck::cast_slice::<VdSeams, u8>(seams),
    ] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    hash_map_identity(&mut h, map);
    h.digest128()
}

/// The radius of `mesh` when it is an analytic sphere.
fn sphere_radius(mesh: &Mesh) -> Option<f32> {
    match mesh.origin {
        MeshOrigin::AnalyticSphere { radius } => Some(radius),
        _ => None,
    }
}

/// The geometry the hierarchy holds for `mesh`: its data, or for an analytic sphere one vertex
/// holding the radius and one quad naming it ([`MESH_SPHERE`]).
fn hierarchy_data(mesh: &Mesh) -> std::borrow::Cow<'_, MeshData> {
    match sphere_radius(mesh) {
        Some(r) => std::borrow::Cow::Owned(MeshData {
            positions: vec![Vec3::splat(r)],
            quads: vec![[0; 4]],
            ..MeshData::default()
        }),
        None => std::borrow::Cow::Borrowed(&mesh.data),
    }
}

/// The middle level of one mesh before it is appended to the flat arrays.
struct MeshBuild {
    /// The QBVH (or binary) layout's nodes; empty in the wide layout.
    nodes: Vec<QbvhNode>,
    /// The wide layout's nodes; empty in the others.
    wide: Vec<WideNode>,
    /// A two-level grid's or a kd-tree's words instead of a tree (`--accel grid`, `kdtree`);
    /// empty for a tree.
    grid: Vec<u32>,
    /// [`MESH_GRID`] or [`MESH_KDTREE`] for `grid`'s words.
    walk_flag: u32,
    prim_refs: Vec<u32>,
    depth: usize,
    /// The mesh's object-space bounds.
    bounds: Aabb,
    /// Conservative bounds of the VD patches (one per quad) when the mesh is displaced.
    patch_bounds: Option<Vec<Aabb>>,
    /// Who defines each patch's boundary, with the mesh's number of edge ids.
    patch_seams: Option<(Vec<VdSeams>, u32)>,
    /// The patches' reaches ([`reach_key`], the reaches, whether they came from the cache).
    patch_reach: Option<(u128, CachedReach, bool)>,
    /// The primitives' boxes, when the backend builds this mesh's tree on the device (`wide`
    /// then holds zeroed room for it and `prim_refs` the references in primitive order).
    device_boxes: Option<Arc<Vec<Aabb>>>,
    /// Whether a [`KdTreeDevice`] built `grid`'s kd-tree words (else the CPU twin did).
    kdtree_on_device: bool,
}

/// A middle-level tree over primitive boxes: what [`build_tree`] makes.
#[derive(Default)]
struct Tree {
    nodes: Vec<QbvhNode>,
    wide: Vec<WideNode>,
    grid: Vec<u32>,
    walk_flag: u32,
    prim_refs: Vec<u32>,
    depth: usize,
    bounds: Aabb,
    device_boxes: Option<Arc<Vec<Aabb>>>,
    kdtree_on_device: bool,
}

impl From<Tree> for MeshBuild {
    /// The build of a mesh without VD patches.
    fn from(tree: Tree) -> MeshBuild {
        MeshBuild {
            nodes: tree.nodes,
            wide: tree.wide,
            grid: tree.grid,
            walk_flag: tree.walk_flag,
            prim_refs: tree.prim_refs,
            depth: tree.depth,
            bounds: tree.bounds,
            patch_bounds: None,
            patch_seams: None,
            patch_reach: None,
            device_boxes: tree.device_boxes,
            kdtree_on_device: tree.kdtree_on_device,
        }
    }
}

fn check_tree_size(tree: impl FnOnce() -> String, nodes: usize) -> Result<(), AccelError> {
    if nodes > MAX_TREE_NODES {
        return Err(AccelError::TooManyNodes {
            tree: tree(),
            nodes,
            limit: MAX_TREE_NODES,
        });
    }
    Ok(())
}

/// Checks that a tree of `nodes` nodes can be addressed by the 26-bit indices of the compact
/// traversal stack; the error names `tree`.
pub fn check_node_index_limit(tree: &str, nodes: usize) -> Result<(), AccelError> {
    check_tree_size(|| tree.to_string(), nodes)
}

fn to_u32(what: &'static str, count: usize) -> Result<u32, AccelError> {
    u32::try_from(count).map_err(|_| AccelError::TooManyElements { what, count })
}

fn build_mesh_level(
    scene: &Scene,
    mesh_index: usize,
    options: &PrepareOptions,
    reaches: &HashMap<u128, CachedReach>,
    kdtree_device: Option<&dyn KdTreeDevice>,
) -> Result<MeshBuild, AccelError> {
    let mesh = &scene.meshes[mesh_index];
    let data = hierarchy_data(mesh);
    let data: &MeshData = &data;
    data.validate().map_err(|message| AccelError::InvalidMesh {
        mesh: mesh.name.clone(),
        message,
    })?;
    to_u32("primitives in one mesh", data.face_count())?;
    let map = match mesh.displacement {
        None => None,
        Some(id) => {
            Some(
                scene
                    .vdmaps
                    .get(id as usize)
                    .ok_or_else(|| AccelError::UnknownVdMap {
                        mesh: mesh.name.clone(),
                        map: id,
                        map_count: scene.vdmaps.len(),
                    })?,
            )
        }
    };
    let p = |v: u32| data.positions[v as usize];
    let patch_seams = map.map(|_| mesh_seams(&data.positions, &data.quads));
    // The reaches depend on the quads, UVs, map and shared edges only: a mesh that moved or
    // deformed takes them from the cache.
    let patch_reach = map.zip(patch_seams.as_ref()).map(|(map, (seams, _))| {
        let key = reach_key(data, map, seams);
        match reaches.get(&key) {
            Some(cached) => (key, cached.clone(), true),
            None => {
                let reach = (0..data.quads.len())
                    .into_par_iter()
                    .map(|q| {
                        let surface_of = |o: u32| map.surface(o, &data.quad_uvs(o as usize));
                        let (surface, uvs) = surface_of(q as u32);
                        seams_reach(&seams[q], surface_of).max(surface.max_displacement(&uvs))
                    })
                    .collect();
                let cached = CachedReach {
                    reach: Arc::new(reach),
                    _images: map.images.clone(),
                };
                (key, cached, false)
            }
        }
    });
    let patch_bounds: Option<Vec<Aabb>> = map.zip(patch_reach.as_ref()).map(|(map, (_, r, _))| {
        r.reach
            .par_iter()
            .enumerate()
            .map(|(q, &reach)| vd_patch_bounds(map, &data.quad_corners(q), reach))
            .collect()
    });
    let mut bounds: Vec<Aabb> = data
        .triangles
        .par_iter()
        .map(|t| Aabb::from_points(t.map(p)))
        .collect();
    match (&patch_bounds, sphere_radius(mesh)) {
        (Some(patches), _) => bounds.extend_from_slice(patches),
        (None, Some(r)) => bounds.push(Aabb::from_points([Vec3::splat(-r), Vec3::splat(r)])),
        (None, None) => {
            bounds.par_extend(data.quads.par_iter().map(|q| Aabb::from_points(q.map(p))))
        }
    }
    // A grid holds triangles and flat quads; VD patches and spheres keep a tree.
    let options = if options.builder.is_structure()
        && (patch_bounds.is_some() || sphere_radius(mesh).is_some())
    {
        &PrepareOptions {
            builder: BvhBuilder::CpuSah,
            ..*options
        }
    } else {
        options
    };
    let tree = build_tree(bounds, options, kdtree_device, || {
        format!("mesh \"{}\"", mesh.name)
    })?;
    Ok(MeshBuild {
        patch_bounds,
        patch_seams,
        patch_reach,
        ..tree.into()
    })
}

/// The build of a mesh whose instance is traced through a merged tree: its bounds, no tree of
/// its own.
fn member_build(mesh: &Mesh) -> Result<MeshBuild, AccelError> {
    let data = &mesh.data;
    data.validate().map_err(|message| AccelError::InvalidMesh {
        mesh: mesh.name.clone(),
        message,
    })?;
    to_u32("primitives in one mesh", data.face_count())?;
    let p = |v: u32| data.positions[v as usize];
    let bounds = data
        .triangles
        .iter()
        .map(|t| Aabb::from_points(t.map(p)))
        .chain(data.quads.iter().map(|q| Aabb::from_points(q.map(p))))
        .fold(Aabb::EMPTY, |a, b| a.union(b));
    Ok(Tree {
        bounds,
        ..Tree::default()
    }
    .into())
}

/// The tree of a merged set: every mesh's triangles, then every mesh's quads, in the set's
/// order (the order of [`Prepared::merged_prims`]).
fn merged_build(
    scene: &Scene,
    set: &[u32],
    options: &PrepareOptions,
    kdtree_device: Option<&dyn KdTreeDevice>,
) -> Result<MeshBuild, AccelError> {
    let boxes = merged_boxes(scene, set);
    to_u32("primitives in one mesh", boxes.len())?;
    let tree = build_tree(boxes, options, kdtree_device, || {
        format!(
            "the merged tree of mesh \"{}\" and {} more",
            scene.meshes[set[0] as usize].name,
            set.len() - 1
        )
    })?;
    Ok(tree.into())
}

/// The tree of the layout and builder of `options` over one box per primitive; `tree` names it
/// in errors. A kd-tree comes from `kdtree_device` when there is one and it builds (the twin's
/// words), else from the CPU twin.
fn build_tree(
    bounds: Vec<Aabb>,
    options: &PrepareOptions,
    kdtree_device: Option<&dyn KdTreeDevice>,
    tree: impl Fn() -> String,
) -> Result<Tree, AccelError> {
    let layout = options.layout;
    if options.builder == BvhBuilder::Grid {
        let too_large = |e: GridTooLarge| AccelError::GridTooLarge {
            tree: tree(),
            refs: e.refs,
            limit: e.limit,
        };
        let whole = bounds.iter().fold(Aabb::EMPTY, |a, b| a.union(*b));
        if options.device_builds && !bounds.is_empty() {
            // The backend builds this grid: room for its words, counted here.
            let size = grid_size(&bounds).map_err(too_large)?;
            let words = to_u32("grid words in one mesh", size.words as usize)?;
            return Ok(Tree {
                grid: vec![0; words as usize],
                walk_flag: MESH_GRID,
                bounds: whole,
                device_boxes: Some(Arc::new(bounds)),
                ..Tree::default()
            });
        }
        let build = build_grid(&bounds).map_err(too_large)?;
        to_u32("grid words in one mesh", build.words.len())?;
        return Ok(Tree {
            grid: build.words,
            walk_flag: MESH_GRID,
            bounds: whole,
            ..Tree::default()
        });
    }
    if options.builder == BvhBuilder::Kdtree {
        let too_large = |e: KdTreeTooLarge| AccelError::KdTreeTooLarge {
            tree: tree(),
            words: e.words,
            limit: e.limit,
        };
        let on_device = match kdtree_device.filter(|_| !bounds.is_empty()) {
            Some(device) => match device.build_kdtree_words(&bounds) {
                Ok(built) => Some(built.map_err(too_large)?),
                Err(e) => {
                    log::warn!(
                        "{}: the device's kd-tree build failed ({e}); built on the CPU",
                        tree()
                    );
                    None
                }
            },
            None => None,
        };
        let kdtree_on_device = on_device.is_some();
        let words = match on_device {
            Some(words) => words,
            None => build_kdtree(&bounds).map_err(too_large)?.words,
        };
        return Ok(Tree {
            grid: words,
            walk_flag: MESH_KDTREE,
            bounds: bounds.iter().fold(Aabb::EMPTY, |a, b| a.union(*b)),
            kdtree_on_device,
            ..Tree::default()
        });
    }
    // The GPU builders number their 2n - 1 nodes in 32 bits.
    if options.builder.on_device() && bounds.len() > (u32::MAX / 2) as usize {
        return Err(AccelError::TooManyElements {
            what: "primitives in one mesh for a GPU builder",
            count: bounds.len(),
        });
    }
    let mut device_boxes = None;
    let (nodes, wide, prim_refs, depth, bounds) = match (layout, options.builder) {
        (
            BvhLayout::Qbvh | BvhLayout::Binary,
            BvhBuilder::CpuSah | BvhBuilder::Grid | BvhBuilder::Kdtree,
        ) => {
            let binary = build_binary_bvh(&bounds, &MIDDLE_SETTINGS);
            let branching = if layout == BvhLayout::Binary { 2 } else { 4 };
            let nodes = collapse_to_wide(&binary, branching);
            check_tree_size(&tree, nodes.len())?;
            let depth = qbvh_depth(&nodes);
            let bounds = binary.nodes.first().map_or(Aabb::EMPTY, |n| n.bounds);
            (nodes, Vec::new(), binary.prim_order, depth, bounds)
        }
        (BvhLayout::Qbvh | BvhLayout::Binary, builder) => {
            return Err(AccelError::BuilderLayout {
                builder: builder.name(),
                layout: layout.name(),
            })
        }
        (BvhLayout::Wide, builder)
            if builder.on_device() && options.device_builds && !bounds.is_empty() =>
        {
            // The backend builds this tree: room for the most nodes its collapse makes, and
            // the references in primitive order until it writes them.
            let room = wide_collapse_capacity(bounds.len());
            check_tree_size(&tree, room)?;
            let whole = bounds.iter().fold(Aabb::EMPTY, |a, b| a.union(*b));
            let refs = (0..bounds.len() as u32).collect();
            device_boxes = Some(Arc::new(bounds));
            (Vec::new(), vec![WideNode::default(); room], refs, 0, whole)
        }
        (BvhLayout::Wide, builder) => {
            let binary = match builder {
                BvhBuilder::CpuSah | BvhBuilder::Grid | BvhBuilder::Kdtree => {
                    build_binary_bvh(&bounds, &WIDE_MIDDLE_SETTINGS)
                }
                BvhBuilder::GpuLbvh => build_lbvh(&bounds),
                BvhBuilder::GpuPloc => build_ploc(&bounds),
                BvhBuilder::GpuSah => build_sah(&bounds, SahVariant::Sah),
                BvhBuilder::GpuHybrid => build_sah(&bounds, SahVariant::Hybrid),
            };
            let wide = collapse_to_cwbvh(&binary, WIDE_LEAF_MAX);
            check_tree_size(&tree, wide.nodes.len())?;
            let bounds = binary.nodes.first().map_or(Aabb::EMPTY, |n| n.bounds);
            (Vec::new(), wide.nodes, wide.prim_order, wide.depth, bounds)
        }
    };
    Ok(Tree {
        nodes,
        wide,
        grid: Vec::new(),
        walk_flag: 0,
        prim_refs,
        depth,
        bounds,
        device_boxes,
        kdtree_on_device: false,
    })
}

/// The most wide nodes the GPU collapse of a tree over `prims` primitives makes (the twin of
/// `gpu::wide_collapse::collapse_capacity` with leaf children of [`WIDE_LEAF_MAX`]).
pub fn wide_collapse_capacity(prims: usize) -> usize {
    let bottom = prims / (WIDE_LEAF_MAX + 1);
    bottom + (bottom + prims).div_ceil(7) + 1
}

/// The largest displacement of the points a patch's owners define on its boundary: over each
/// owner's edge (the UVs between that edge's two corners) and at each owner's corner. With the
/// patch's own largest displacement, it bounds the patch's surface (a patch's level comes from
/// these bounds too, so they are kept tight: a neighbour's displacement counts only along the
/// edge they share).
/// `surface_of(o)` is what quad `o` of the mesh reads, and at which UVs ([`VdMap::surface`]).
fn seams_reach<'a>(seams: &VdSeams, surface_of: impl Fn(u32) -> (VdSurface<'a>, [Vec2; 4])) -> f32 {
    let edges = (0..4).map(|e| {
        let (owner_edge, _) = seams.owner_edge(e);
        let [a, b] = vd_seams::EDGE_CORNERS[owner_edge];
        let (surface, uvs) = surface_of(seams.edge_owner[e]);
        surface.max_displacement_between(uvs[a], uvs[b])
    });
    let corners = (0..4).map(|c| {
        let (owner, corner) = seams.corner(c);
        let (surface, uvs) = surface_of(owner);
        surface.max_displacement_between(uvs[corner], uvs[corner])
    });
    edges.chain(corners).fold(0.0, f32::max)
}

fn elapsed_ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

impl Prepared {
    /// Builds the middle level of every mesh, the VD patch records, the top level (with rayon)
    /// and the camera-bound VD levels.
    pub fn build(scene: &Scene, options: &PrepareOptions) -> Result<Prepared, AccelError> {
        Prepared::build_cached(scene, options, &MeshBuildCache::default())
    }

    /// [`Prepared::build`], reusing the middle levels that `cache` holds from an earlier frame
    /// and keeping this scene's in it.
    pub fn build_cached(
        scene: &Scene,
        options: &PrepareOptions,
        cache: &MeshBuildCache,
    ) -> Result<Prepared, AccelError> {
        Prepared::build_cached_on(scene, options, cache, None)
    }

    /// [`Prepared::build_cached`], with the kd-trees of `--accel kdtree` built by
    /// `kdtree_device` (a GPU backend's, [`KdTreeDevice`]) where there is one: the same words
    /// as the CPU twin's, which builds a tree the device fails on.
    pub fn build_cached_on(
        scene: &Scene,
        options: &PrepareOptions,
        cache: &MeshBuildCache,
        kdtree_device: Option<&dyn KdTreeDevice>,
    ) -> Result<Prepared, AccelError> {
        let build_start = Instant::now();
        let mut out = Prepared {
            vd_maps: scene.vdmaps.clone(),
            vd_max_level: scene.film.vd_max_level.min(MAX_LEVEL),
            vd_pixel_spread: scene.camera.pixel_spread(&scene.film),
            ..Default::default()
        };

        // Middle level, one mesh per task (each build is itself parallel), unless the cache
        // has the mesh's build from an earlier frame.
        let start = Instant::now();
        let layout = options.layout;
        out.layout = layout;
        let keys: Vec<u128> = (0..scene.meshes.len())
            .into_par_iter()
            .map(|m| mesh_build_key(scene, m, options))
            .collect();
        let cached: HashMap<u128, CachedBuild> = {
            // Only poisoned if a thread panicked while swapping the map; start empty then.
            let mut builds = cache.builds.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut *builds)
        };
        let reaches: HashMap<u128, CachedReach> = {
            let mut reaches = cache.reaches.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut *reaches)
        };
        // Instances traced through one merged tree: their meshes get no tree of their own.
        let plan = if options.merge_instances {
            merge_plan(scene)
        } else {
            MergePlan::default()
        };
        let mut member = vec![false; scene.meshes.len()];
        for &m in plan.sets.iter().flatten() {
            member[m as usize] = true;
        }
        // A member's build (its bounds, no tree) is cached under a key of its own, so that a
        // mesh that leaves its set is not given a build without a tree.
        let keys: Vec<u128> = (keys.iter().zip(&member))
            .map(|(&k, &is_member)| {
                if is_member {
                    xxhash_rust::xxh3::xxh3_128(&[&k.to_le_bytes()[..], b"member"].concat())
                } else {
                    k
                }
            })
            .collect();
        let group_keys: Vec<u128> = plan
            .sets
            .iter()
            .map(|set| merged_build_key(set, &keys))
            .collect();
        let builds: Vec<CachedBuild> = (0..scene.meshes.len())
            .into_par_iter()
            .map(|m| match cached.get(&keys[m]) {
                Some(c) => Ok(c.clone()),
                None if member[m] => Ok(CachedBuild {
                    build: Arc::new(member_build(&scene.meshes[m])?),
                    _images: Vec::new(),
                }),
                None => Ok(CachedBuild {
                    build: Arc::new(build_mesh_level(
                        scene,
                        m,
                        options,
                        &reaches,
                        kdtree_device,
                    )?),
                    _images: scene.meshes[m]
                        .displacement
                        .and_then(|id| scene.vdmaps.get(id as usize))
                        .map_or_else(Vec::new, |map| map.images.clone()),
                }),
            })
            .collect::<Result<_, AccelError>>()?;
        let group_builds: Vec<CachedBuild> = plan
            .sets
            .par_iter()
            .zip(&group_keys)
            .map(|(set, key)| match cached.get(key) {
                Some(c) => Ok(c.clone()),
                None => Ok(CachedBuild {
                    build: Arc::new(merged_build(scene, set, options, kdtree_device)?),
                    _images: Vec::new(),
                }),
            })
            .collect::<Result<_, AccelError>>()?;
        out.kdtrees_on_device = (builds.iter().chain(&group_builds))
            .filter(|b| b.build.kdtree_on_device)
            .count() as u32;
        out.meshes_reused = (keys.iter().enumerate())
            .filter(|&(m, k)| !member[m] && cached.contains_key(k))
            .count() as u32
            + group_keys.iter().filter(|k| cached.contains_key(k)).count() as u32;
        out.vd_reaches_reused = keys
            .iter()
            .zip(&builds)
            .filter(|(k, b)| {
                !cached.contains_key(k) && b.build.patch_reach.as_ref().is_some_and(|r| r.2)
            })
            .count() as u32;
        {
            let mut kept = cache.builds.lock().unwrap_or_else(|e| e.into_inner());
            kept.clear();
            kept.extend(keys.iter().copied().zip(builds.iter().cloned()));
            kept.extend(group_keys.iter().copied().zip(group_builds.iter().cloned()));
            let mut kept = cache.reaches.lock().unwrap_or_else(|e| e.into_inner());
            kept.clear();
            kept.extend(
                builds
                    .iter()
                    .filter_map(|b| b.build.patch_reach.as_ref())
                    .map(|(key, reach, _)| (*key, reach.clone())),
            );
        }
        let builds: Vec<Arc<MeshBuild>> = builds.into_iter().map(|c| c.build).collect();
        out.device_builds = builds
            .iter()
            .enumerate()
            .filter_map(|(m, b)| {
                b.device_boxes.as_ref().map(|boxes| DeviceBuild {
                    mesh: m as u32,
                    boxes: boxes.clone(),
                    key: keys[m],
                    builder: options.builder,
                })
            })
            .collect();
        for (mesh, build) in scene.meshes.iter().zip(&builds) {
            out.append_mesh(&hierarchy_data(mesh), sphere_radius(mesh).is_some(), build)?;
        }
        let first_merged_mesh = out.meshes.len();
        for ((set, build), &key) in plan.sets.iter().zip(&group_builds).zip(&group_keys) {
            let mesh = out.meshes.len() as u32;
            out.append_merged(set, &build.build)?;
            if let Some(boxes) = &build.build.device_boxes {
                out.device_builds.push(DeviceBuild {
                    mesh,
                    boxes: boxes.clone(),
                    key,
                    builder: options.builder,
                });
            }
        }
        out.middle_build_ms = elapsed_ms(start);

        // The VD patch records of every displaced mesh.
        for (m, (mesh, build)) in scene.meshes.iter().zip(&builds).enumerate() {
            let (Some(map), Some(patch_bounds), Some((seams, edges))) =
                (mesh.displacement, &build.patch_bounds, &build.patch_seams)
            else {
                continue;
            };
            let first = to_u32("VD patches", out.vd_patches.len())?;
            out.meshes[m].vd_patch_offset = first;
            out.vd_seams
                .extend(seams.iter().map(|s| s.offset(first, out.vd_edge_count)));
            out.vd_edge_count = out
                .vd_edge_count
                .checked_add(*edges)
                .filter(|&n| n < 1 << 29)
                .ok_or_else(|| AccelError::TooManyVdEdges {
                    count: out.vd_edge_count as usize + *edges as usize,
                })?;
            out.vd_patches
                .extend(
                    patch_bounds
                        .iter()
                        .enumerate()
                        .map(|(q, bounds)| VdPatchRecord {
                            bounds_min: bounds.min.to_array(),
                            map,
                            bounds_max: bounds.max.to_array(),
                            mesh: m as u32,
                            quad: q as u32,
                            _pad: [0; 3],
                        }),
                );
            to_u32("VD patches", out.vd_patches.len())?;
        }

        // Top level over the instances of non-empty meshes.
        let start = Instant::now();
        to_u32("instances", scene.instances.len())?;
        let mut world_bounds = Vec::new();
        out.world_box = Aabb::EMPTY;
        let area_lights = scene.instance_area_lights();
        for (i, instance) in scene.instances.iter().enumerate() {
            let mesh = out
                .meshes
                .get(instance.mesh as usize)
                .ok_or(AccelError::UnknownMesh {
                    instance: i,
                    mesh: instance.mesh,
                    mesh_count: scene.meshes.len(),
                })?;
            let world_to_object = instance.transform.inverse();
            let invertible = instance.transform.matrix3.determinant() != 0.0
                && affine_to_rows(&world_to_object)
                    .iter()
                    .flatten()
                    .all(|x| x.is_finite())
                && affine_to_rows(&instance.transform)
                    .iter()
                    .flatten()
                    .all(|x| x.is_finite());
            if !invertible {
                return Err(AccelError::SingularTransform { instance: i });
            }
            out.instances.push(InstanceRecord {
                object_to_world: affine_to_rows(&instance.transform),
                world_to_object: affine_to_rows(&world_to_object),
                mesh: instance.mesh,
                material: instance.material,
                light: area_lights
                    .get(i)
                    .copied()
                    .flatten()
                    .map_or(u32::MAX, |(light, _)| light),
                members: u32::MAX,
            });
            let prims = mesh.triangle_count + mesh.quad_count;
            if prims > 0 {
                let root = out.mesh_bounds[instance.mesh as usize];
                let world = root.transformed(&instance.transform);
                out.world_box = out.world_box.union(world);
                // A merged mesh's member is entered through its group's record.
                if mesh.node_count > 0 {
                    world_bounds.push((i as u32, world));
                }
            }
        }
        out.scene_instances = scene.instances.len() as u32;
        for (set, group) in &plan.groups {
            let first = &out.instances[group[0] as usize];
            let mesh = (first_merged_mesh + set) as u32;
            let record = InstanceRecord {
                mesh,
                material: u32::MAX,
                light: u32::MAX,
                members: to_u32("merged instances", out.merged_members.len())?,
                ..*first
            };
            out.merged_members.extend_from_slice(group);
            let root = out.mesh_bounds[mesh as usize];
            if out.meshes[mesh as usize].node_count > 0 {
                let transform = &scene.instances[group[0] as usize].transform;
                world_bounds.push((out.instances.len() as u32, root.transformed(transform)));
            }
            out.instances.push(record);
        }
        to_u32("instances", out.instances.len())?;
        out.merged_instances = out.merged_members.len() as u32;
        let bounds: Vec<Aabb> = world_bounds.iter().map(|&(_, b)| b).collect();
        let binary = build_binary_bvh(&bounds, &TOP_SETTINGS);
        let top_order = match layout {
            BvhLayout::Qbvh | BvhLayout::Binary => {
                out.top_nodes = collapse_to_qbvh(&binary);
                check_tree_size(|| "the top level".to_string(), out.top_nodes.len())?;
                out.top_depth = qbvh_depth(&out.top_nodes) as u32;
                binary.prim_order
            }
            BvhLayout::Wide => {
                let top = collapse_to_cwbvh(&binary, 1);
                check_tree_size(|| "the top level".to_string(), top.nodes.len())?;
                out.top_wide = top.nodes;
                out.top_depth = top.depth as u32;
                top.prim_order
            }
        };
        out.top_instance_refs = top_order
            .iter()
            .map(|&k| world_bounds[k as usize].0)
            .collect();
        let deepest_mesh = out.meshes.iter().map(|m| m.depth).max().unwrap_or(0);
        // The QBVH pushes one entry per level and the marker; the wide layout one group per
        // level, and the instance's remaining siblings, its node group and the marker.
        let (needed, limit) = match layout {
            BvhLayout::Wide => ((out.top_depth + deepest_mesh + 2) as usize, WIDE_STACK_SIZE),
            _ => (
                (out.top_depth + deepest_mesh + 1) as usize,
                TRAVERSAL_STACK_SIZE,
            ),
        };
        if needed > limit {
            return Err(AccelError::TooDeep {
                tree: "the scene".into(),
                depth: needed,
                limit,
            });
        }
        out.top_build_ms = elapsed_ms(start);

        let start = Instant::now();
        out.vd = VdFrame::new(out.vd_camera_bound_levels(scene.camera.position));
        out.vd_levels_ms = elapsed_ms(start);
        out.total_build_ms = elapsed_ms(build_start);
        Ok(out)
    }

    fn append_mesh(
        &mut self,
        data: &MeshData,
        sphere: bool,
        build: &MeshBuild,
    ) -> Result<(), AccelError> {
        let vertex_offset = to_u32("vertices", self.positions.len() + data.positions.len())?
            - data.positions.len() as u32;
        let record = MeshRecord {
            vertex_offset,
            vertex_count: data.positions.len() as u32,
            triangle_offset: to_u32("triangles", self.triangles.len() + data.triangles.len())?
                - data.triangles.len() as u32,
            triangle_count: data.triangles.len() as u32,
            quad_offset: to_u32("quads", self.quads.len() + data.quads.len())?
                - data.quads.len() as u32,
            quad_count: data.quads.len() as u32,
            vd_patch_offset: u32::MAX,
            flags: (if data.normals.is_empty() {
                0
            } else {
                MESH_HAS_NORMALS
            }) | (if data.uvs.is_empty() { 0 } else { MESH_HAS_UVS })
                | (if build.patch_bounds.is_some() {
                    MESH_DISPLACED
                } else {
                    0
                })
                | (if sphere { MESH_SPHERE } else { 0 }),
            ..MeshRecord::default()
        };
        self.positions
            .extend(data.positions.iter().map(|p| p.extend(1.0).to_array()));
        if data.normals.is_empty() {
            self.normals
                .extend(std::iter::repeat_n([0.0; 4], data.positions.len()));
        } else {
            self.normals
                .extend(data.normals.iter().map(|n| n.extend(0.0).to_array()));
        }
        if data.uvs.is_empty() {
            self.uvs
                .extend(std::iter::repeat_n([0.0; 2], data.positions.len()));
        } else {
            self.uvs.extend(data.uvs.iter().map(|uv| uv.to_array()));
        }
        self.triangles.extend(data.triangles.iter().map(|t| {
            [
                t[0] + vertex_offset,
                t[1] + vertex_offset,
                t[2] + vertex_offset,
                0,
            ]
        }));
        self.quads
            .extend(data.quads.iter().map(|q| q.map(|v| v + vertex_offset)));
        self.push_mesh(record, build)
    }

    /// Appends the merged mesh of the meshes of `set` (its [`MESH_MERGED`] record, after the
    /// scene's meshes): copies of their triangles, then of their quads, and what each stands for.
    fn append_merged(&mut self, set: &[u32], build: &MeshBuild) -> Result<(), AccelError> {
        let members: Vec<MeshRecord> = set.iter().map(|&m| self.meshes[m as usize]).collect();
        let triangle_offset = to_u32("triangles", self.triangles.len())?;
        let quad_offset = to_u32("quads", self.quads.len())?;
        let merged_offset = to_u32("merged primitives", self.merged_prims.len())?;
        for (k, m) in members.iter().enumerate() {
            let first = m.triangle_offset as usize;
            self.triangles
                .extend_from_within(first..first + m.triangle_count as usize);
            self.merged_prims
                .extend((0..m.triangle_count).map(|p| [k as u32, p]));
        }
        for (k, m) in members.iter().enumerate() {
            let first = m.quad_offset as usize;
            self.quads
                .extend_from_within(first..first + m.quad_count as usize);
            self.merged_prims
                .extend((0..m.quad_count).map(|q| [k as u32, m.triangle_count + q]));
        }
        let record = MeshRecord {
            vertex_offset: 0,
            vertex_count: 0,
            triangle_offset,
            triangle_count: members.iter().map(|m| m.triangle_count).sum(),
            quad_offset,
            quad_count: members.iter().map(|m| m.quad_count).sum(),
            vd_patch_offset: merged_offset,
            flags: MESH_MERGED,
            ..MeshRecord::default()
        };
        to_u32("triangles", self.triangles.len())?;
        to_u32("quads", self.quads.len())?;
        to_u32("merged primitives", self.merged_prims.len())?;
        self.push_mesh(record, build)
    }

    /// Appends `build`'s tree and `record`, with the tree's place, size and depth filled in.
    fn push_mesh(&mut self, record: MeshRecord, build: &MeshBuild) -> Result<(), AccelError> {
        if !build.grid.is_empty() {
            let words = build.grid.len();
            let record = MeshRecord {
                node_offset: to_u32("grid words", self.grid_cells.len() + words)? - words as u32,
                node_count: words as u32,
                prim_ref_offset: to_u32("primitive references", self.prim_refs.len())?,
                // A walked structure keeps its own stack, none of the fused loop's.
                depth: 0,
                flags: record.flags | build.walk_flag,
                ..record
            };
            self.grid_cells.extend_from_slice(&build.grid);
            self.meshes.push(record);
            self.mesh_bounds.push(build.bounds);
            return Ok(());
        }
        let node_count = build.nodes.len() + build.wide.len();
        let record = MeshRecord {
            node_offset: to_u32(
                "BVH nodes",
                self.mesh_nodes.len() + self.mesh_wide.len() + node_count,
            )? - node_count as u32,
            node_count: node_count as u32,
            prim_ref_offset: to_u32(
                "primitive references",
                self.prim_refs.len() + build.prim_refs.len(),
            )? - build.prim_refs.len() as u32,
            depth: build.depth as u32,
            ..record
        };
        self.mesh_nodes.extend_from_slice(&build.nodes);
        self.mesh_wide.extend_from_slice(&build.wide);
        self.prim_refs.extend_from_slice(&build.prim_refs);
        self.meshes.push(record);
        self.mesh_bounds.push(build.bounds);
        Ok(())
    }

    #[inline]
    fn position(&self, v: u32) -> Vec3 {
        let p = self.positions[v as usize];
        Vec3::new(p[0], p[1], p[2])
    }

    fn quad_corners(&self, mesh: &MeshRecord, q: u32) -> [Vec3; 4] {
        self.quads[(mesh.quad_offset + q) as usize].map(|v| self.position(v))
    }

    /// Corners of VD patch `patch` (a global patch index), the UVs its map is read at, and what
    /// it reads ([`VdMap::surface`]: the map's window for this quad).
    pub fn vd_patch_geometry(&self, patch: u32) -> ([Vec3; 4], [Vec2; 4], VdSurface<'_>) {
        let record = &self.vd_patches[patch as usize];
        let mesh = &self.meshes[record.mesh as usize];
        let vertices = self.quads[(mesh.quad_offset + record.quad) as usize];
        let uvs = if mesh.flags & MESH_HAS_UVS != 0 {
            vertices.map(|v| Vec2::from_array(self.uvs[v as usize]))
        } else {
            [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y]
        };
        let (surface, uvs) = self.vd_maps[record.map as usize].surface(record.quad, &uvs);
        (vertices.map(|v| self.position(v)), uvs, surface)
    }

    /// The bottom-level tree of VD patch `patch` at `levels[patch]`, its edges at
    /// `edge_levels` ([`vd_seams::edge_levels`]) and evaluated by their owners (levels clamped
    /// to [`MAX_LEVEL`]).
    pub fn build_patch_tree(&self, patch: u32, levels: &[u32], edge_levels: &[u32]) -> PatchBvh {
        let (corners, uvs, map) = self.vd_patch_geometry(patch);
        let level = levels[patch as usize].min(MAX_LEVEL);
        let seams = &self.vd_seams[patch as usize];
        let edge_level_of =
            |e: usize| edge_levels[seams.edge_id(e) as usize].clamp(level, MAX_LEVEL);
        let levels: [u32; 4] = std::array::from_fn(edge_level_of);
        let points = std::array::from_fn(|e| {
            (0..=1u32 << levels[e])
                .map(|k| {
                    let (owner, st) = vd_seams::boundary_source(seams, e, k, levels[e]);
                    let (c, u, m) = self.vd_patch_geometry(owner);
                    m.displaced_point(&c, &u, st.x, st.y)
                })
                .collect()
        });
        PatchBvh::build_with_edges(&corners, &uvs, map, level, PatchEdges { levels, points })
    }

    /// The level of every VD patch edge for the patches' `levels` (the finest of the patches
    /// that share it).
    pub fn vd_edge_levels(&self, levels: &[u32]) -> Vec<u32> {
        vd_seams::edge_levels(&self.vd_seams, levels, self.vd_edge_count)
    }

    /// The camera bound of every VD patch's level (see [`super::vd_frame`]): the level a camera
    /// ray from `camera` with this scene's pixel spread would need at the nearest point of the
    /// patch's world bounds, the largest over the instances of its mesh. The footprint is carried
    /// into object space with the instance's mean scale (the cube root of the determinant).
    pub fn vd_camera_bound_levels(&self, camera: Vec3) -> Vec<u32> {
        let mut levels = vec![0u32; self.vd_patches.len()];
        for record in &self.instances {
            let mesh = &self.meshes[record.mesh as usize];
            if mesh.flags & MESH_DISPLACED == 0 {
                continue;
            }
            let to_world = rows_to_affine(&record.object_to_world);
            let scale = rows_to_affine(&record.world_to_object)
                .matrix3
                .determinant()
                .abs()
                .cbrt();
            let first = mesh.vd_patch_offset as usize;
            levels[first..first + mesh.quad_count as usize]
                .par_iter_mut()
                .zip(&self.vd_patches[first..first + mesh.quad_count as usize])
                .for_each(|(level, patch)| {
                    let bounds = patch.bounds();
                    let world = bounds.transformed(&to_world);
                    let distance = camera.clamp(world.min, world.max).distance(camera);
                    let l = lod_level(
                        &bounds,
                        distance * scale,
                        self.vd_pixel_spread,
                        self.vd_max_level,
                    );
                    *level = (*level).max(l);
                });
        }
        levels
    }

    /// The frame's VD levels from its camera rays (see [`super::vd_frame`]): for each patch
    /// that one of the `count` rays `ray(i)` reaches in the top and middle levels, the largest
    /// [`lod_level`] over those rays, at each ray's entry into the patch bounds with the
    /// footprint growing by `vd_pixel_spread · |object-space dir|` per unit of `t`; the camera
    /// bound (`self.vd.levels`) for the patches no ray reaches.
    pub fn vd_levels_from_rays(&self, count: usize, ray: impl Fn(usize) -> Ray + Sync) -> Vec<u32> {
        let patches = self.vd_patches.len();
        if patches == 0 {
            return Vec::new();
        }
        // Level + 1 of the rays that reached each patch, 0 where none did.
        let reached = (0..count)
            .into_par_iter()
            .with_min_len(1024)
            .fold(
                || vec![0u32; patches],
                |mut acc, i| {
                    self.vd_records(&ray(i), |patch, entry, dir| {
                        let bounds = self.vd_patches[patch as usize].bounds();
                        let spread = self.vd_pixel_spread * dir.length();
                        let l = lod_level(&bounds, entry, spread, self.vd_max_level) + 1;
                        let slot = &mut acc[patch as usize];
                        *slot = (*slot).max(l);
                    });
                    acc
                },
            )
            .reduce_with(|mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x = (*x).max(y);
                }
                a
            })
            .unwrap_or_else(|| vec![0u32; patches]);
        reached
            .iter()
            .zip(&self.vd.levels)
            .map(|(&r, &bound)| if r > 0 { r - 1 } else { bound })
            .collect()
    }

    /// Intersects primitive `prim` of `mesh` with an object-space ray: `t`, `st` and, for a VD
    /// patch, the unit object-space normal of the triangle hit (zero otherwise).
    /// `brute_force` tests VD patches cell by cell instead of through their trees.
    #[inline]
    pub(super) fn intersect_prim(
        &self,
        vd: &VdFrame,
        mesh: &MeshRecord,
        prim: u32,
        ray: &Ray,
        brute_force: bool,
    ) -> Option<(f32, Vec2, Vec3)> {
        if prim < mesh.triangle_count {
            let t = self.triangles[(mesh.triangle_offset + prim) as usize];
            let (p0, p1, p2) = (
                self.position(t[0]),
                self.position(t[1]),
                self.position(t[2]),
            );
            return intersect_triangle(ray.origin, ray.dir, p0, p1, p2, ray.t_min, ray.t_max)
                .map(|(t, b1, b2)| (t, Vec2::new(b1, b2), Vec3::ZERO));
        }
        let q = prim - mesh.triangle_count;
        if mesh.flags & MESH_SPHERE != 0 {
            let radius = self.positions[mesh.vertex_offset as usize][0];
            return intersect_sphere(ray.origin, ray.dir, radius, ray.t_min, ray.t_max)
                .map(|(t, st)| (t, st, Vec3::ZERO));
        }
        if mesh.flags & MESH_DISPLACED != 0 {
            let index = mesh.vd_patch_offset + q;
            let tree = vd.tree(self, index);
            let hit = if brute_force {
                tree.intersect_brute_force(ray.origin, ray.dir, ray.t_min, ray.t_max)
            } else {
                let patch = &self.vd_patches[index as usize];
                SlabRay::new(ray.origin, ray.dir).entry_box(
                    &patch.bounds(),
                    ray.t_min,
                    ray.t_max,
                )?;
                tree.intersect(ray.origin, ray.dir, ray.t_min, ray.t_max)
            }?;
            return Some((hit.t, hit.st, hit.normal));
        }
        intersect_quad(
            ray.origin,
            ray.dir,
            &self.quad_corners(mesh, q),
            ray.t_min,
            ray.t_max,
        )
        .map(|(t, st)| (t, st, Vec3::ZERO))
    }

    /// The closest hit in `(t_min, t_max)`, VD patches at their camera-bound levels. Ties in
    /// `t` go to the lower (instance, prim).
    pub fn intersect(&self, ray: &Ray) -> Option<Hit> {
        self.intersect_in(&self.vd, ray)
    }

    /// Whether anything is hit in `(t_min, t_max)`, VD patches at their camera-bound levels.
    pub fn occluded(&self, ray: &Ray) -> bool {
        self.occluded_in(&self.vd, ray)
    }

    /// [`Prepared::intersect`] with the VD patches of `vd`.
    pub fn intersect_in(&self, vd: &VdFrame, ray: &Ray) -> Option<Hit> {
        self.traverse_layout::<CLOSEST>(vd, ray, &mut |_, _, _| {})
    }

    /// [`Prepared::occluded`] with the VD patches of `vd`.
    pub fn occluded_in(&self, vd: &VdFrame, ray: &Ray) -> bool {
        self.traverse_layout::<ANY>(vd, ray, &mut |_, _, _| {})
            .is_some()
    }

    /// The traversal of this scene's layout.
    #[inline]
    fn traverse_layout<const MODE: u8>(
        &self,
        vd: &VdFrame,
        ray: &Ray,
        record: &mut dyn FnMut(u32, f32, Vec3),
    ) -> Option<Hit> {
        match self.layout {
            BvhLayout::Wide => self.traverse_wide::<MODE>(vd, ray, record),
            BvhLayout::Qbvh | BvhLayout::Binary => self.traverse::<MODE>(vd, ray, record),
        }
    }

    /// The VD records of `ray`, as the GPU's trace kernels append them: the traversal finds the
    /// closest triangle or quad and, without intersecting VD patches, calls
    /// `record(patch, entry, object-space dir)` for every patch whose bounds it enters before
    /// the closest hit found so far.
    pub fn vd_records(&self, ray: &Ray, mut record: impl FnMut(u32, f32, Vec3)) {
        self.traverse_layout::<RECORDS>(&self.vd, ray, &mut record);
    }

    /// The fused top + middle level traversal of the QBVH layout. `MODE`: [`CLOSEST`] hit,
    /// [`ANY`] hit (stops at the first found), or [`RECORDS`] (VD patches are recorded, not
    /// intersected).
    fn traverse<const MODE: u8>(
        &self,
        vd: &VdFrame,
        ray: &Ray,
        record: &mut dyn FnMut(u32, f32, Vec3),
    ) -> Option<Hit> {
        let t_min = ray.t_min;
        let world = SlabRay::new(ray.origin, ray.dir);
        let mut best: Option<Hit> = None;
        let mut limit = ray.t_max;
        let mut stack = CompactStack::<TRAVERSAL_STACK_SIZE>::default();
        // The instance being traversed: its object-space ray and its mesh's nodes.
        let mut object: Option<(ObjectRay, &[QbvhNode])> = None;
        let mut node = self
            .top_nodes
            .first()
            .and_then(|root| root.entry(&world, t_min, limit))
            .map(|_| 0u32);
        loop {
            let Some(current) = node else {
                match stack.top() {
                    None => break,
                    Some(RETURN_TO_WORLD) => {
                        stack.drop_top();
                        object = None;
                    }
                    Some(_) => {
                        // The stack is not empty, so this pops a node; cull it if the closest
                        // hit found since it was pushed lies in front of it.
                        let (nodes, slab) = match &object {
                            Some((o, nodes)) => (*nodes, &o.slab),
                            None => (self.top_nodes.as_slice(), &world),
                        };
                        node = stack
                            .pop_node()
                            .filter(|&k| nodes[k as usize].entry(slab, t_min, limit).is_some());
                    }
                }
                continue;
            };
            match &object {
                None => {
                    let top = &self.top_nodes[current as usize];
                    if !top.is_leaf() {
                        node =
                            visit_children(&self.top_nodes, top, &world, t_min, limit, &mut stack);
                        continue;
                    }
                    // A top leaf holds exactly one instance (TOP_SETTINGS); enter it.
                    let o = self.enter_instance(self.top_instance_refs[top.first as usize], ray);
                    if o.mesh.flags & MESH_WALKED != 0 {
                        if let Some(hit) =
                            self.walk_grid::<MODE>(vd, &o, t_min, &mut limit, &mut best, record)
                        {
                            return Some(hit);
                        }
                        node = None;
                        continue;
                    }
                    let start = o.mesh.node_offset as usize;
                    let nodes = &self.mesh_nodes[start..start + o.mesh.node_count as usize];
                    object = Some((o, nodes));
                    stack.push(RETURN_TO_WORLD);
                    node = Some(0);
                }
                Some((o, nodes)) => {
                    let n = &nodes[current as usize];
                    if !n.is_leaf() {
                        node = visit_children(nodes, n, &o.slab, t_min, limit, &mut stack);
                        continue;
                    }
                    for &prim in &o.refs[n.first as usize..(n.first + n.count()) as usize] {
                        if let Some(hit) = self.test_reference::<MODE>(
                            vd, o, prim, t_min, &mut limit, &mut best, record,
                        ) {
                            return Some(hit);
                        }
                    }
                    node = None;
                }
            }
        }
        best
    }

    /// The object-space ray of `ray` in instance `instance`, with the instance's mesh and
    /// primitive references: what both layouts' traversals hold while inside an instance.
    #[inline]
    pub(super) fn enter_instance(&self, instance: u32, ray: &Ray) -> ObjectRay<'_> {
        let record = &self.instances[instance as usize];
        let mesh = &self.meshes[record.mesh as usize];
        let origin = rows_point(&record.world_to_object, ray.origin);
        let dir = rows_vector(&record.world_to_object, ray.dir);
        let refs_start = mesh.prim_ref_offset as usize;
        // A grid holds its references itself.
        let ref_count = if mesh.flags & MESH_WALKED != 0 {
            0
        } else {
            (mesh.triangle_count + mesh.quad_count) as usize
        };
        ObjectRay {
            instance,
            mesh,
            refs: &self.prim_refs[refs_start..refs_start + ref_count],
            origin,
            dir,
            slab: SlabRay::new(origin, dir),
        }
    }

    /// Walks the two-level grid or the kd-tree of an instance's mesh ([`MESH_WALKED`]) with its object-space
    /// ray, testing each leaf's references as every layout's leaf does ([`Self::test_reference`]):
    /// both layouts' loops call it on entering such an instance and then go on in the top level.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk_grid<const MODE: u8>(
        &self,
        vd: &VdFrame,
        o: &ObjectRay,
        t_min: f32,
        limit: &mut f32,
        best: &mut Option<Hit>,
        record: &mut dyn FnMut(u32, f32, Vec3),
    ) -> Option<Hit> {
        let start = o.mesh.node_offset as usize;
        let words = &self.grid_cells[start..start + o.mesh.node_count as usize];
        let mut found = None;
        let walk = if o.mesh.flags & MESH_KDTREE != 0 {
            super::tri_kdtree::walk
        } else {
            super::grid::walk
        };
        walk(words, o.origin, o.dir, t_min, limit, &mut |prim, limit| {
            found = self.test_reference::<MODE>(vd, o, prim, t_min, limit, best, record);
            found.is_some()
        });
        found
    }

    /// Tests primitive `prim` of an instance's mesh against its object-space ray, as every
    /// layout's leaf does: the closest hit so far (`limit`, `best`) is kept with the tie rule;
    /// [`ANY`] returns the first hit; [`RECORDS`] records a VD patch whose bounds the ray enters
    /// before `limit` instead of intersecting it.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn test_reference<const MODE: u8>(
        &self,
        vd: &VdFrame,
        o: &ObjectRay,
        prim: u32,
        t_min: f32,
        limit: &mut f32,
        best: &mut Option<Hit>,
        record: &mut dyn FnMut(u32, f32, Vec3),
    ) -> Option<Hit> {
        let tie_limit = if best.is_some() {
            next_up(*limit)
        } else {
            *limit
        };
        if MODE == RECORDS && prim >= o.mesh.triangle_count && o.mesh.flags & MESH_DISPLACED != 0 {
            let index = o.mesh.vd_patch_offset + prim - o.mesh.triangle_count;
            let bounds = self.vd_patches[index as usize].bounds();
            if let Some(entry) = o.slab.entry_box(&bounds, t_min, *limit) {
                record(index, entry, o.dir);
            }
            return None;
        }
        let ray = Ray {
            origin: o.origin,
            dir: o.dir,
            t_min,
            t_max: tie_limit,
        };
        let (t, st, normal) = self.intersect_prim(vd, o.mesh, prim, &ray, false)?;
        // A merged mesh's hit names the scene instance and primitive it stands for.
        let [instance, prim] = if o.mesh.flags & MESH_MERGED != 0 {
            let [k, prim] = self.merged_prims[(o.mesh.vd_patch_offset + prim) as usize];
            let first = self.instances[o.instance as usize].members;
            [self.merged_members[(first + k) as usize], prim]
        } else {
            [o.instance, prim]
        };
        let hit = Hit {
            t,
            instance,
            prim,
            st,
            normal,
        };
        if MODE == ANY {
            return Some(hit);
        }
        if is_closer(&hit, best) {
            *limit = t;
            *best = Some(hit);
        }
        None
    }

    /// The closest hit found by testing every primitive of every instance, without any BVH
    /// (VD patches cell by cell, at the levels of `vd`): the oracle for tests.
    pub fn intersect_brute_force_in(&self, vd: &VdFrame, ray: &Ray) -> Option<Hit> {
        let mut best: Option<Hit> = None;
        let scene_instances = &self.instances[..self.scene_instances as usize];
        for (i, record) in scene_instances.iter().enumerate() {
            let mesh = &self.meshes[record.mesh as usize];
            let origin = rows_point(&record.world_to_object, ray.origin);
            let dir = rows_vector(&record.world_to_object, ray.dir);
            for prim in 0..mesh.triangle_count + mesh.quad_count {
                let limit = best.map_or(ray.t_max, |b| next_up(b.t));
                if let Some((t, st, normal)) = self.intersect_prim(
                    vd,
                    mesh,
                    prim,
                    &Ray {
                        origin,
                        dir,
                        t_min: ray.t_min,
                        t_max: limit,
                    },
                    true,
                ) {
                    let hit = Hit {
                        t,
                        instance: i as u32,
                        prim,
                        st,
                        normal,
                    };
                    if is_closer(&hit, &best) {
                        best = Some(hit);
                    }
                }
            }
        }
        best
    }

    /// [`Prepared::intersect_brute_force_in`] at the camera-bound levels.
    pub fn intersect_brute_force(&self, ray: &Ray) -> Option<Hit> {
        self.intersect_brute_force_in(&self.vd, ray)
    }

    /// Position, normals, UV and material of a hit returned for `ray`.
    pub fn surface_point(&self, ray: &Ray, hit: &Hit) -> SurfacePoint {
        let record = &self.instances[hit.instance as usize];
        let mesh = &self.meshes[record.mesh as usize];
        let has_normals = mesh.flags & MESH_HAS_NORMALS != 0;
        let has_uvs = mesh.flags & MESH_HAS_UVS != 0;
        let normal = |v: u32| Vec3::from_slice(&self.normals[v as usize][..3]);
        let uv = |v: u32| Vec2::from_array(self.uvs[v as usize]);
        let (position, geometric, shading, uv) = if hit.prim < mesh.triangle_count {
            let t = self.triangles[(mesh.triangle_offset + hit.prim) as usize];
            let (b1, b2) = (hit.st.x, hit.st.y);
            let b0 = 1.0 - b1 - b2;
            let p = [t[0], t[1], t[2]].map(|v| self.position(v));
            let position = p[0] * b0 + p[1] * b1 + p[2] * b2;
            let geometric = (p[1] - p[0]).cross(p[2] - p[0]);
            let shading =
                has_normals.then(|| normal(t[0]) * b0 + normal(t[1]) * b1 + normal(t[2]) * b2);
            let uv = if has_uvs {
                uv(t[0]) * b0 + uv(t[1]) * b1 + uv(t[2]) * b2
            } else {
                hit.st
            };
            (position, geometric, shading, uv)
        } else {
            let q = hit.prim - mesh.triangle_count;
            let vertices = self.quads[(mesh.quad_offset + q) as usize];
            let uvs = if has_uvs {
                vertices.map(uv)
            } else {
                [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y]
            };
            let uv = bilinear2(&uvs, hit.st.x, hit.st.y);
            if mesh.flags & MESH_SPHERE != 0 {
                // The exact sphere: the hit point moved onto it, its normal the radius.
                let radius = self.positions[mesh.vertex_offset as usize][0];
                let origin = rows_point(&record.world_to_object, ray.origin);
                let dir = rows_vector(&record.world_to_object, ray.dir);
                let n = (origin + dir * hit.t).normalize_or(Vec3::Y);
                (n * radius, n, Some(n), sphere_uv(n))
            } else if mesh.flags & MESH_DISPLACED != 0 {
                // The tessellation's triangle: the hit point on the ray and its normal.
                let origin = rows_point(&record.world_to_object, ray.origin);
                let dir = rows_vector(&record.world_to_object, ray.dir);
                (origin + dir * hit.t, hit.normal, None, uv)
            } else {
                let corners = vertices.map(|v| self.position(v));
                let (position, geometric) = quad_half_at(&corners, hit.st);
                let shading =
                    has_normals.then(|| bilinear(&vertices.map(normal), hit.st.x, hit.st.y));
                (position, geometric, shading, uv)
            }
        };
        let to_world_normal =
            |n: Vec3| rows_transpose_vector(&record.world_to_object, n).normalize_or_zero();
        let mut geometric_normal = to_world_normal(geometric);
        if geometric_normal == Vec3::ZERO || !geometric_normal.is_finite() {
            // A sliver too thin for its cross product: face the ray.
            geometric_normal = (-ray.dir).normalize_or(Vec3::Z);
        }
        let shading_normal = match shading.map(to_world_normal) {
            Some(n) if n != Vec3::ZERO && n.is_finite() => {
                if n.dot(geometric_normal) < 0.0 {
                    -n
                } else {
                    n
                }
            }
            _ => geometric_normal,
        };
        SurfacePoint {
            position: rows_point(&record.object_to_world, position),
            geometric_normal,
            shading_normal,
            uv,
            material: record.material,
            mesh: record.mesh,
        }
    }

    /// World-space bounds of everything that can be hit; `(0, 0)` for an empty scene.
    pub fn world_bounds(&self) -> (Vec3, Vec3) {
        if self.world_box.is_empty() {
            (Vec3::ZERO, Vec3::ZERO)
        } else {
            (self.world_box.min, self.world_box.max)
        }
    }

    /// How many top-level nodes the layout's tree has (none for a scene without anything to hit).
    pub fn top_node_count(&self) -> usize {
        self.top_nodes.len() + self.top_wide.len()
    }

    /// How far secondary rays start off a surface: 10⁻⁵ of the scene's size (at least 10⁻⁵),
    /// the same on both backends (the GPU's `FrameParams::epsilon`).
    pub fn ray_epsilon(&self) -> f32 {
        let (lo, hi) = self.world_bounds();
        let extent = if lo.is_finite() && hi.is_finite() {
            (hi - lo)
                .max_element()
                .max(lo.abs().max(hi.abs()).max_element())
        } else {
            1.0
        };
        1e-5 * extent.max(1.0)
    }

    /// Bytes of each flat array, by name.
    pub fn memory_by_array(&self) -> Vec<(&'static str, usize)> {
        use std::mem::size_of_val;
        vec![
            ("positions", size_of_val(self.positions.as_slice())),
            ("normals", size_of_val(self.normals.as_slice())),
            ("uvs", size_of_val(self.uvs.as_slice())),
            ("triangles", size_of_val(self.triangles.as_slice())),
            ("quads", size_of_val(self.quads.as_slice())),
            ("meshes", size_of_val(self.meshes.as_slice())),
            (
                "mesh_nodes",
                size_of_val(self.mesh_nodes.as_slice()) + size_of_val(self.mesh_wide.as_slice()),
            ),
            ("prim_refs", size_of_val(self.prim_refs.as_slice())),
            ("grid_cells", size_of_val(self.grid_cells.as_slice())),
            ("merged_prims", size_of_val(self.merged_prims.as_slice())),
            (
                "merged_members",
                size_of_val(self.merged_members.as_slice()),
            ),
            ("instances", size_of_val(self.instances.as_slice())),
            (
                "top_nodes",
                size_of_val(self.top_nodes.as_slice()) + size_of_val(self.top_wide.as_slice()),
            ),
            (
                "top_instance_refs",
                size_of_val(self.top_instance_refs.as_slice()),
            ),
            ("vd_patches", size_of_val(self.vd_patches.as_slice())),
        ]
    }

    /// Node and primitive counts, memory per array, build times.
    pub fn stats(&self) -> BvhStats {
        let grids = self.meshes.iter().filter(|m| m.flags & MESH_GRID != 0);
        let kdtrees = self.meshes.iter().filter(|m| m.flags & MESH_KDTREE != 0);
        BvhStats {
            instances: self.scene_instances as u64,
            merged_instances: self.merged_instances as u64,
            meshes: self
                .meshes
                .iter()
                .filter(|m| m.flags & MESH_MERGED == 0)
                .count() as u64,
            triangles: self.triangles.len() as u64,
            quads: self.quads.len() as u64,
            vd_patches: self.vd_patches.len() as u64,
            vd_max_level: self.vd_max_level as u64,
            top_nodes: self.top_node_count() as u64,
            middle_nodes: (self.mesh_nodes.len() + self.mesh_wide.len()) as u64,
            grids: grids.clone().count() as u64,
            grid_references: grids
                .map(|m| u64::from(self.grid_cells[m.node_offset as usize + 11]))
                .sum(),
            kdtrees: kdtrees.clone().count() as u64,
            kdtree_references: kdtrees
                .map(|m| u64::from(self.grid_cells[m.node_offset as usize + 9]))
                .sum(),
            kdtrees_on_device: self.kdtrees_on_device as u64,
            top_depth: self.top_depth as u64,
            middle_depth_max: self.meshes.iter().map(|m| m.depth).max().unwrap_or(0) as u64,
            build_ms: self.total_build_ms,
            middle_build_ms: self.middle_build_ms,
            meshes_reused: self.meshes_reused as u64,
            vd_reaches_reused: self.vd_reaches_reused as u64,
            vd_levels_ms: self.vd_levels_ms,
            top_build_ms: self.top_build_ms,
            memory: self.memory_by_array(),
        }
    }
}

/// The hierarchy of a frame: its node and primitive counts, build times and memory per array
/// ([`Prepared::stats`]; part of the frame's statistics, `render::stats::FrameStats`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BvhStats {
    pub instances: u64,
    /// Scene instances traced through a merged mesh ([`Prepared::merged_prims`]).
    pub merged_instances: u64,
    pub meshes: u64,
    pub triangles: u64,
    pub quads: u64,
    pub vd_patches: u64,
    pub vd_max_level: u64,
    pub top_nodes: u64,
    pub middle_nodes: u64,
    /// Meshes whose middle level is a two-level grid (`--accel grid`), and the references
    /// their grids hold.
    pub grids: u64,
    pub grid_references: u64,
    /// Meshes whose middle level is a kd-tree (`--accel kdtree`), and the references their
    /// leaves hold.
    pub kdtrees: u64,
    pub kdtree_references: u64,
    /// Of those, the kd-trees a device built (`Prepared::kdtrees_on_device`).
    pub kdtrees_on_device: u64,
    pub top_depth: u64,
    pub middle_depth_max: u64,
    pub build_ms: f64,
    pub middle_build_ms: f64,
    pub meshes_reused: u64,
    pub vd_reaches_reused: u64,
    pub vd_levels_ms: f64,
    pub top_build_ms: f64,
    /// Bytes of each flat array, by name.
    pub memory: Vec<(&'static str, usize)>,
}

impl BvhStats {
    /// The named figures (`bvh/...`), the nodes and the memory in all included.
    pub fn entries(&self, out: &mut Vec<(String, f64)>) {
        let total: usize = self.memory.iter().map(|(_, b)| b).sum();
        let figures: [(&str, f64); 24] = [
            ("instances", self.instances as f64),
            ("merged_instances", self.merged_instances as f64),
            ("meshes", self.meshes as f64),
            ("triangles", self.triangles as f64),
            ("quads", self.quads as f64),
            ("vd_patches", self.vd_patches as f64),
            ("vd_max_level", self.vd_max_level as f64),
            ("top_nodes", self.top_nodes as f64),
            ("middle_nodes", self.middle_nodes as f64),
            ("nodes", (self.top_nodes + self.middle_nodes) as f64),
            ("grids", self.grids as f64),
            ("grid_references", self.grid_references as f64),
            ("kdtrees", self.kdtrees as f64),
            ("kdtree_references", self.kdtree_references as f64),
            ("kdtrees_on_device", self.kdtrees_on_device as f64),
            ("top_depth", self.top_depth as f64),
            ("middle_depth_max", self.middle_depth_max as f64),
            ("build_ms", self.build_ms),
            ("middle_build_ms", self.middle_build_ms),
            ("meshes_reused", self.meshes_reused as f64),
            ("vd_reaches_reused", self.vd_reaches_reused as f64),
            ("vd_levels_ms", self.vd_levels_ms),
            ("top_build_ms", self.top_build_ms),
            ("memory_bytes", total as f64),
        ];
        out.extend(figures.iter().map(|(n, v)| (format!("bvh/{n}"), *v)));
        out.extend(
            self.memory
                .iter()
                .map(|(name, bytes)| (format!("bvh/memory/{name}_bytes"), *bytes as f64)),
        );
    }

    /// The named figures as a list.
    pub fn to_vec(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        self.entries(&mut out);
        out
    }
}

/// The instance a traversal is in ([`Prepared::enter_instance`]): its mesh and primitive
/// references, and the object-space ray.
pub(super) struct ObjectRay<'a> {
    pub instance: u32,
    pub mesh: &'a MeshRecord,
    pub refs: &'a [u32],
    pub origin: Vec3,
    pub dir: Vec3,
    pub slab: SlabRay,
}

/// [`Prepared::traverse`] modes.
pub(super) const CLOSEST: u8 = 0;
pub(super) const ANY: u8 = 1;
pub(super) const RECORDS: u8 = 2;

/// Whether `hit` beats `best`: closer, or equally close with a lower (instance, prim), so that
/// the result does not depend on the order in which primitives are tested.
#[inline]
pub(super) fn is_closer(hit: &Hit, best: &Option<Hit>) -> bool {
    match best {
        None => true,
        Some(b) => hit.t < b.t || (hit.t == b.t && (hit.instance, hit.prim) < (b.instance, b.prim)),
    }
}

/// The next float above a non-negative `x` (so that a primitive at exactly the closest distance
/// so far still gets tested for the tie rule); infinities and NaN are returned unchanged.
#[inline]
pub(super) fn next_up(x: f32) -> f32 {
    if x.is_finite() && x >= 0.0 {
        f32::from_bits(x.to_bits() + 1)
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_an_affine_transform() {
        let a = Affine3A::from_scale_rotation_translation(
            Vec3::new(1.0, 2.0, 3.0),
            glam::Quat::from_rotation_z(0.3),
            Vec3::new(4.0, 5.0, 6.0),
        );
        let rows = affine_to_rows(&a);
        assert!(rows_to_affine(&rows).abs_diff_eq(a, 1e-6));
        let p = Vec3::new(0.5, -1.0, 2.0);
        assert!((rows_point(&rows, p) - a.transform_point3(p)).length() < 1e-5);
        assert!((rows_vector(&rows, p) - a.transform_vector3(p)).length() < 1e-5);
    }

    #[test]
    fn records_have_vec4_friendly_sizes() {
        assert_eq!(std::mem::size_of::<QbvhNode>(), 32);
        assert_eq!(std::mem::size_of::<MeshRecord>(), 48);
        assert_eq!(std::mem::size_of::<InstanceRecord>(), 112);
        assert_eq!(std::mem::size_of::<VdPatchRecord>(), 48);
    }

    #[test]
    fn node_limit_is_reported_as_an_error() {
        assert!(check_node_index_limit("mesh \"m\"", MAX_TREE_NODES).is_ok());
        let err = check_node_index_limit("mesh \"m\"", MAX_TREE_NODES + 1).unwrap_err();
        assert!(matches!(err, AccelError::TooManyNodes { .. }));
        assert!(err.to_string().contains("26-bit"), "{err}");
    }
}

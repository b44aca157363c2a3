// The scene's storage buffers and the frame parameters, bound by name by every whitted kernel
// (src/gpu/upload.rs uploads them; bindings 0..=19 and 60, kernels use 20..=59).
//!include "shared/math.wgsl"
//!include "shared/types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> normals: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> uvs: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read> triangles: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> quads: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> meshes: array<MeshRecord>;
//!if WIDE_BVH
@group(0) @binding(7) var<storage, read> mesh_nodes: array<WideNode>;
@group(0) @binding(10) var<storage, read> top_nodes: array<WideNode>;
//!else
@group(0) @binding(7) var<storage, read> mesh_nodes: array<QbvhNode>;
@group(0) @binding(10) var<storage, read> top_nodes: array<QbvhNode>;
//!endif
@group(0) @binding(8) var<storage, read> prim_refs: array<u32>;
// Twin of SceneBuffers::leaf_triangles: 3 vertices per prim_refs entry (zeros for non-triangles).
@group(0) @binding(19) var<storage, read> leaf_triangles: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read> instances: array<Instance>;
@group(0) @binding(11) var<storage, read> top_instance_refs: array<u32>;
// Prepared::merged_prims: the (member k, primitive) each primitive of a MESH_MERGED mesh stands
// for, from the mesh's vd_patch_offset; member k of a group is the scene instance
// merged_members[its record's members + k].
@group(0) @binding(13) var<storage, read> merged_prims: array<vec2<u32>>;
@group(0) @binding(14) var<storage, read> merged_members: array<u32>;
@group(0) @binding(12) var<storage, read> vd_patches: array<VdPatch>;
// Prepared::grid_cells: the two-level grids of MESH_GRID meshes (src/accel/grid.rs's words)
// and the kd-trees of MESH_KDTREE meshes (src/accel/tri_kdtree.rs's),
// each from its mesh's node_offset.
@group(0) @binding(60) var<storage, read> grid_cells: array<u32>;
@group(0) @binding(15) var<storage, read> materials: array<Material>;
@group(0) @binding(16) var<storage, read> lights: array<Light>;
@group(0) @binding(17) var<storage, read> textures: array<Texture>;
@group(0) @binding(18) var<storage, read> texels: array<vec4<f32>>;

const NONE: u32 = 0xffffffffu;
const MESH_HAS_NORMALS: u32 = 1u;
const MESH_HAS_UVS: u32 = 2u;
const MESH_DISPLACED: u32 = 4u;
const MESH_SPHERE: u32 = 8u;
const MESH_MERGED: u32 = 16u;
const MESH_GRID: u32 = 32u;
const MESH_KDTREE: u32 = 64u;
// tri_kdtree.rs HEADER_WORDS, SHORT_STACK and INDEX_MASK (shared/traverse_kdtree.wgsl).
const KD_HEADER_WORDS: u32 = 16u;
const KD_SHORT_STACK: u32 = 8u;
const KD_INDEX_MASK: u32 = 0x3fffffffu;

// Twins of prepared.rs's rows_point / rows_vector / rows_transpose_vector, same evaluation order.
fn rows_point(rows: array<vec4<f32>, 3>, p: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        rows[0].x * p.x + rows[0].y * p.y + rows[0].z * p.z + rows[0].w,
        rows[1].x * p.x + rows[1].y * p.y + rows[1].z * p.z + rows[1].w,
        rows[2].x * p.x + rows[2].y * p.y + rows[2].z * p.z + rows[2].w,
    );
}

fn rows_vector(rows: array<vec4<f32>, 3>, v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        rows[0].x * v.x + rows[0].y * v.y + rows[0].z * v.z,
        rows[1].x * v.x + rows[1].y * v.y + rows[1].z * v.z,
        rows[2].x * v.x + rows[2].y * v.y + rows[2].z * v.z,
    );
}

fn rows_transpose_vector(rows: array<vec4<f32>, 3>, n: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        rows[0].x * n.x + rows[1].x * n.y + rows[2].x * n.z,
        rows[0].y * n.x + rows[1].y * n.y + rows[2].y * n.z,
        rows[0].z * n.x + rows[1].z * n.y + rows[2].z * n.z,
    );
}

fn position_of(v: u32) -> vec3<f32> {
    return positions[v].xyz;
}

// The leaf triangles of a mesh whose tree the GPU built: for each reference slot of the mesh,
// the three vertices of its triangle (zeros for a quad or a patch), as the traversal's leaf
// test reads them. Twin of caustica::gpu::upload::leaf_triangles.

struct LeafTriangleParams {
    // The mesh's first reference slot and its number of primitives.
    slot_begin: u32,
    count: u32,
    triangle_offset: u32,
    triangle_count: u32,
}

@group(0) @binding(0) var<uniform> params: LeafTriangleParams;
@group(0) @binding(1) var<storage, read> prim_refs: array<u32>;
@group(0) @binding(2) var<storage, read> triangles: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> leaf_triangles: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.count {
        return;
    }
    let slot = params.slot_begin + i;
    let prim = prim_refs[slot];
    var v = array<vec4<f32>, 3>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    if prim < params.triangle_count {
        let t = triangles[params.triangle_offset + prim];
        v[0] = positions[t.x];
        v[1] = positions[t.y];
        v[2] = positions[t.z];
    }
    leaf_triangles[3u * slot] = v[0];
    leaf_triangles[3u * slot + 1u] = v[1];
    leaf_triangles[3u * slot + 2u] = v[2];
}

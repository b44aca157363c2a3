// Adaptive seeding, step 1 (paper 003 listing 6.7): every shading point's Morton code in the
// screen quadtree, and its index, for the key-value sort.
//!include "seeding/common.wgsl"
//!include "shared/gather_types.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> points: array<ShadingPoint>;
@group(0) @binding(2) var<storage, read_write> codes: array<u32>;
@group(0) @binding(3) var<storage, read_write> order: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = seed_index(gid, nwg);
    if i >= params.n {
        return;
    }
    codes[i] = quadtree_code(points[i].pixel, params.width, params.height, params.levels);
    order[i] = i;
}

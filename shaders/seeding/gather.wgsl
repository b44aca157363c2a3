// Adaptive seeding, after the sort: every shading point's fixed-point keys (SeedPoint), in
// sorted order, so that the later kernels read consecutive memory.
//!include "seeding/common.wgsl"
//!include "shared/gather_types.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> points: array<ShadingPoint>;
@group(0) @binding(2) var<storage, read> order: array<u32>;
@group(0) @binding(3) var<storage, read_write> sorted_points: array<SeedPoint>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = seed_index(gid, nwg);
    if k >= params.n {
        return;
    }
    let p = points[order[k]];
    sorted_points[k] = seed_point(p.position, p.normal, params.position_scale);
}

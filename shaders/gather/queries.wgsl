// The flagged density queries of the gather rays, packed densely at their scanned positions.
//!include "gather/common.wgsl"

@group(0) @binding(20) var<uniform> gather_params: GatherParams;
@group(0) @binding(21) var<storage, read> queries: array<vec4<f32>>;
@group(0) @binding(22) var<storage, read> query_flags: array<u32>;
@group(0) @binding(23) var<storage, read> query_slots: array<u32>;
@group(0) @binding(24) var<storage, read_write> dense_queries: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= gather_params.ray_count || query_flags[i] == 0u {
        return;
    }
    let slot = query_slots[i];
    dense_queries[2u * slot] = queries[2u * i];
    dense_queries[2u * slot + 1u] = queries[2u * i + 1u];
}

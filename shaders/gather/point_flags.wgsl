// 1 for each node of a shade level that is a diffuse shading point (shade.wgsl wrote its point
// with node != NONE), the input of the compaction that lists them.
//!include "shared/types.wgsl"
//!include "shared/gather_types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(21) var<storage, read> level_points: array<ShadingPoint>;
@group(0) @binding(22) var<storage, read_write> point_flags: array<u32>;

const NONE: u32 = 0xffffffffu;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    point_flags[i] = select(0u, 1u, level_points[i].node != NONE);
}

// Appends one shade level's diffuse shading points (the compacted node indices) to the frame's
// list, tagging each with its node (level << 26 | index).
//!include "shared/types.wgsl"
//!include "shared/gather_types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(21) var<storage, read> level_points: array<ShadingPoint>;
@group(0) @binding(22) var<storage, read> selected: array<u32>;
@group(0) @binding(23) var<storage, read> selected_count: array<u32>;
@group(0) @binding(24) var<storage, read_write> points: array<ShadingPoint>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let j = gid.x + gid.y * groups.x * 64u;
    if j >= selected_count[0] {
        return;
    }
    let i = selected[j];
    var p = level_points[i];
    p.node = (params.bounce << 26u) | i;
    points[params.ray_offset + j] = p;
}

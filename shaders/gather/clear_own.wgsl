// Clears the own light of every node of one shade level (before a layer that holds one
// component of photon mapping alone is composed and accumulated).
//!include "shared/types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(22) var<storage, read_write> nodes: array<ShadeNode>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    nodes[i].own = vec3<f32>(0.0);
}

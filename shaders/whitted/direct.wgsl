// Direct light of the diffuse nodes of one shade chunk: each node adds the contributions left in
// its own shadow slots (zero where shadow.wgsl found the ray blocked), in slot order, and scales
// the sum by its albedo/pi. No atomics: a slot belongs to one node, so the sum is deterministic.
//!include "shared/types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(22) var<storage, read_write> nodes: array<ShadeNode>;
@group(0) @binding(25) var<storage, read> shadow_rays: array<ShadowRay>;
@group(0) @binding(26) var<storage, read> shadow_flags: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let local = gid.x + gid.y * groups.x * 64u;
    let i = params.ray_offset + local;
    if i >= params.ray_count {
        return;
    }
    let node = nodes[i];
    if (node.link >> NODE_STATE_SHIFT) != NODE_DIFFUSE {
        return;
    }
    var irradiance = vec3<f32>(0.0);
    // shade.wgsl's shadow_slot(local, k): rows as long as the chunk.
    let row = min(params.shadow_capacity / max(params.shadows_per_hit, 1u), params.ray_count - params.ray_offset);
    for (var k = 0u; k < params.shadows_per_hit; k++) {
        let slot = k * row + local;
        if shadow_flags[slot] == 0u {
            break;
        }
        irradiance += shadow_rays[slot].contribution;
    }
    nodes[i].own = irradiance * node.weight;
}

// Direct light of the nodes of one shade chunk: each node adds the contributions left in its own
// shadow slots (zero where shadow.wgsl found the ray blocked), in slot order; a diffuse node
// scales the sum by its albedo/pi, a rough one (whose rays carry f cos) adds it as it is, and so
// does a plastic one for its rays flagged unscaled. No atomics in the sums: a slot belongs to one node, so the sum is
// deterministic. The used slots are also counted into shadow_total[0] (the statistics' shadow
// rays): per workgroup, then one atomic add.
//!include "shared/types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(22) var<storage, read_write> nodes: array<ShadeNode>;
@group(0) @binding(25) var<storage, read> shadow_rays: array<ShadowRay>;
@group(0) @binding(26) var<storage, read> shadow_flags: array<u32>;
@group(0) @binding(27) var<storage, read_write> shadow_total: array<atomic<u32>>;

var<workgroup> group_shadows: atomic<u32>;

@compute @workgroup_size(64)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let local = gid.x + gid.y * groups.x * 64u;
    let i = params.ray_offset + local;
    let used = node_direct_light(local, i);
    if used > 0u {
        atomicAdd(&group_shadows, used);
    }
    workgroupBarrier();
    if lane == 0u {
        let total = atomicLoad(&group_shadows);
        if total > 0u {
            atomicAdd(&shadow_total[0], total);
        }
    }
}

// Node i (the chunk's ray `local`) takes its direct light; returns its used shadow slots.
fn node_direct_light(local: u32, i: u32) -> u32 {
    if i >= params.ray_count {
        return 0u;
    }
    let node = nodes[i];
    var irradiance = vec3<f32>(0.0);
    // A plastic's shadow rays carry f cos already (ShadowRay._pad 1).
    var unscaled = vec3<f32>(0.0);
    // shade.wgsl's shadow_slot(local, k): rows as long as the chunk.
    let row = min(params.shadow_capacity / max(params.shadows_per_hit, 1u), params.ray_count - params.ray_offset);
    var used = 0u;
    for (var k = 0u; k < params.shadows_per_hit; k++) {
        let slot = k * row + local;
        if shadow_flags[slot] == 0u {
            break;
        }
        let shadow = shadow_rays[slot];
        if shadow._pad != 0u {
            unscaled += shadow.contribution;
        } else {
            irradiance += shadow.contribution;
        }
        used += 1u;
    }
    if (node.link >> NODE_STATE_SHIFT) == NODE_DIFFUSE {
        nodes[i].own = irradiance * node.weight + unscaled;
    } else if used > 0u {
        // A rough surface's shadow rays carry f cos already.
        nodes[i].own = node.own + irradiance;
    }
    return used;
}

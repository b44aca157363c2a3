// Composition (paper 003 section 6.2.5): each diffuse node of one shade level adds its albedo/π
// times the caustic map's flux density and the interpolated indirect irradiance at its shading
// point to its own light, before the shade trees are accumulated. Points
// params.ray_offset .. + params.ray_count of the frame's list belong to this level.
//!include "shared/types.wgsl"
//!include "shared/gather_types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(21) var<storage, read> points: array<ShadingPoint>;
@group(0) @binding(22) var<storage, read_write> nodes: array<ShadeNode>;
@group(0) @binding(23) var<storage, read> caustic_density: array<vec4<f32>>;
@group(0) @binding(24) var<storage, read> indirect: array<vec4<f32>>;
// x: 0 adds both components to the node's light; 1 sets the caustic one alone, 2 the indirect.
@group(0) @binding(25) var<uniform> compose_mode: vec4<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let local = gid.x + gid.y * groups.x * 64u;
    if local >= params.ray_count {
        return;
    }
    let j = params.ray_offset + local;
    let index = points[j].node & 0x3ffffffu;
    let node = nodes[index];
    if compose_mode.x == 1u {
        nodes[index].own = node.weight * caustic_density[j].xyz;
    } else if compose_mode.x == 2u {
        nodes[index].own = node.weight * indirect[j].xyz;
    } else {
        nodes[index].own = node.own + node.weight * (caustic_density[j].xyz + indirect[j].xyz);
    }
}

// One level of the bottom-up accumulation of the shade trees (paper 003 section 5.1.3): each node
// of the level becomes its colour, own + the weighted colours of its children in the next level
// (already accumulated): one child times `weight`; two children, reflected times `fresnel` plus
// refracted times (1 - fresnel) * `weight`, the CPU's order of operations; a diffuse node with a
// `fresnel` above 0 (a plastic) adds its coat's child times it.
//!include "shared/types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(22) var<storage, read_write> nodes: array<ShadeNode>;
@group(0) @binding(33) var<storage, read> child_nodes: array<ShadeNode>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    let node = nodes[i];
    let state = node.link >> NODE_STATE_SHIFT;
    let first = node.link & NODE_CHILD_MASK;
    if state == NODE_ONE_CHILD {
        nodes[i].own = node.own + node.weight * child_nodes[first].own;
    } else if state == NODE_DIFFUSE && node.fresnel > 0.0 {
        // A plastic's coat reflection, weighted by `fresnel`.
        nodes[i].own = node.own + node.fresnel * child_nodes[first].own;
    } else if state == NODE_TWO_CHILDREN {
        let reflected = node.fresnel * child_nodes[first].own;
        let refracted = (1.0 - node.fresnel) * node.weight * child_nodes[first + 1u].own;
        nodes[i].own = node.own + (reflected + refracted);
    }
}

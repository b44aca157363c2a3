// Point kd-tree build, large-node stage, step 1 of a level (one invocation per slot of the
// level): a large node's tight box in O(1) from its sorted lists' ends, its empty-space
// cut-offs, and either a leaf (all points equal) or a median split on the longest axis of the
// tight box; writes the children's slots on the next level (large, small or dead).
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> lists: array<u32>;
@group(0) @binding(3) var<storage, read_write> heap_nodes: array<u32>;
@group(0) @binding(4) var<storage, read_write> heap_boxes: array<f32>;

fn split_list(i: u32) -> u32 {
    return lists[i];
}

//!include "kdtree/build_split_node.wgsl"

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let s = element_index(gid, nwg);
    if s >= params.level_slots {
        return;
    }
    split_node(params.level_base + s);
}

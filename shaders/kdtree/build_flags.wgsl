// Point kd-tree build, large-node stage, step 2 of a level (after build_split): for every
// position of a node being split, the split axis's list names the point there, and the point
// goes left when the position is among the node's first count / 2. Writes that flag at the
// point, so that build_scatter classifies the entries of the other two lists by
// one read of it instead of comparing both points' coordinates with the median's.
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> lists_in: array<u32>;
@group(0) @binding(2) var<storage, read> owner_in: array<u32>;
@group(0) @binding(3) var<storage, read> heap_nodes: array<u32>;
@group(0) @binding(4) var<storage, read_write> left_flags: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let position = element_index(gid, nwg);
    let n = params.n;
    if position >= n {
        return;
    }
    let slot = owner_in[position];
    if slot == INACTIVE {
        return;
    }
    let node = (params.level_base + slot) * NODE_WORDS;
    let info = heap_nodes[node + NODE_INFO];
    if (info & 3u) == KIND_EQUAL {
        return;
    }
    let split_axis = (info >> 2u) & 3u;
    let start = heap_nodes[node + NODE_START];
    let count = heap_nodes[node + NODE_COUNT];
    let point = lists_in[split_axis * n + position];
    left_flags[point] = select(0u, 1u, position - start < count / 2u);
}

// Adaptive seeding, the node table (one dispatch per level, leaves first, one invocation per
// node): a leaf's points are its run of equal codes; an internal node's children are its run of
// equal child keys, and its points run from its first child's first to its last child's end.
//!include "seeding/common.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
// The level's runs: sorted points (leaves) or the next level's nodes (internal), local indices.
@group(0) @binding(1) var<storage, read> run_starts: array<u32>;
@group(0) @binding(2) var<storage, read> run_ends: array<u32>;
@group(0) @binding(3) var<storage, read_write> node_range: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> node_children: array<vec2<u32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = seed_index(gid, nwg);
    if j >= params.count {
        return;
    }
    let g = params.offset + j;
    let start = run_starts[j];
    let end = run_ends[j];
    if params.mode == 1u {
        node_range[g] = vec2<u32>(start, end);
        node_children[g] = vec2<u32>(0u, 0u);
    } else {
        let first = params.child_offset + start;
        let last = params.child_offset + end - 1u;
        node_children[g] = vec2<u32>(first, last + 1u);
        node_range[g] = vec2<u32>(node_range[first].x, node_range[last].y);
    }
}

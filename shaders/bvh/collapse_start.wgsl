// The collapse's first step, one invocation per tree of the batch: the tree's root wide node
// (wide node 0, binary node 0 of the tree) is allocated and queued, unless the tree is empty
// or its root box is. The state words were cleared before. Twin: the start of
// caustica::accel::wide::collapse_to_cwbvh.
//!include "bvh/collapse_common.wgsl"

struct StartParams {
    trees: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> start_params: StartParams;
@group(0) @binding(1) var<storage, read> trees: array<CollapseMesh>;
@group(0) @binding(2) var<storage, read> binary: array<BinaryNodeRecord>;
@group(0) @binding(3) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> queue: array<vec4<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    if t >= start_params.trees {
        return;
    }
    let tree = trees[t];
    if tree.binary_count == 0u || tree.capacity == 0u {
        return;
    }
    let root = binary[tree.binary_base];
    let lo = normal_lo(root.lo);
    let hi = normal_hi(root.hi);
    if lo.x > hi.x || lo.y > hi.y || lo.z > hi.z {
        return;
    }
    atomicStore(&state[STATE_WORDS + TREE_WORDS * t + TREE_NODES], 1u);
    let slot = atomicAdd(&state[STATE_QUEUE], 1u);
    queue[slot] = vec4<u32>(t, 0u, tree.binary_base, 0u);
}

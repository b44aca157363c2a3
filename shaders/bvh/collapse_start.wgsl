// The collapse's first step, one invocation: the state words start over, and the root wide node
// (wide node 0) is given binary node 0, unless the tree is empty or its root box is. Twin: the
// start of caustica::accel::wide::collapse_to_cwbvh.
//!include "bvh/collapse_common.wgsl"

@group(0) @binding(0) var<uniform> params: CollapseParams;
@group(0) @binding(1) var<storage, read> binary: array<BinaryNodeRecord>;
@group(0) @binding(2) var<storage, read_write> state: array<u32>;
@group(0) @binding(3) var<storage, read_write> work: array<u32>;

@compute @workgroup_size(1)
fn main() {
    for (var i = 0u; i < STATE_WORDS; i++) {
        state[i] = 0u;
    }
    if params.binary_count == 0u || params.capacity == 0u {
        return;
    }
    let root = binary[0];
    let lo = normal_lo(root.lo);
    let hi = normal_hi(root.hi);
    let empty = lo.x > hi.x || lo.y > hi.y || lo.z > hi.z;
    if !empty {
        state[STATE_NODES] = 1u;
        work[0] = 0u;
    }
}

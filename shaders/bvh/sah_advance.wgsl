// Binned SAH: one invocation steps the state to the next large level.
//!include "bvh/sah_common.wgsl"

@group(0) @binding(0) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(1)
fn main() {
    state[STATE_LEVEL] += 1u;
}

// Adaptive seeding, the levels bottom-up: a level's node keys are its children's keys without
// their last two bits (one quadtree level up); runs of equal keys are then the parents.
//!include "seeding/common.wgsl"

@group(0) @binding(0) var<uniform> params: SeedParams;
@group(0) @binding(1) var<storage, read> child_keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> parent_keys: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = seed_index(gid, nwg);
    if j >= params.count {
        return;
    }
    parent_keys[j] = child_keys[j] >> 2u;
}

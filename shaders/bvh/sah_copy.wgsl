// Binned SAH, each large level's sixth step: one invocation per position of a large task takes
// its moved primitive and its next task back (a task's positions stay its own);
// bvh/sah_advance.wgsl then steps the state to the next level.
//!include "bvh/sah_common.wgsl"

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read_write> order: array<u32>;
@group(0) @binding(2) var<storage, read_write> task_of: array<u32>;
@group(0) @binding(3) var<storage, read> moved: array<u32>;
@group(0) @binding(4) var<storage, read> moved_task: array<u32>;

@compute @workgroup_size(SAH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = sah_index(gid, nwg, SAH_WG_SIZE);
    if i >= params.n || task_of[i] == SAH_NONE {
        return;
    }
    order[i] = moved[i];
    task_of[i] = moved_task[i];
}

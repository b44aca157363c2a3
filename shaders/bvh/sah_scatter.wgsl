// Binned SAH, each large level's fifth step (after the exclusive scan of the flags): one
// invocation per position of a large task moves its primitive to its place in the stable
// partition (the lefts first, each side in its old order) in `moved`, with the task the
// child is in the next level (SAH_NONE when the child is small or a leaf).
//!include "bvh/sah_common.wgsl"

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read> state: array<u32>;
@group(0) @binding(2) var<storage, read> order: array<u32>;
@group(0) @binding(3) var<storage, read> task_of: array<u32>;
@group(0) @binding(4) var<storage, read> tasks: array<SahTask>;
@group(0) @binding(5) var<storage, read> flags: array<u32>;
@group(0) @binding(6) var<storage, read> ranks: array<u32>;
@group(0) @binding(7) var<storage, read_write> moved: array<u32>;
@group(0) @binding(8) var<storage, read_write> moved_task: array<u32>;

@compute @workgroup_size(SAH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = sah_index(gid, nwg, SAH_WG_SIZE);
    if i >= params.n {
        return;
    }
    let t = task_of[i];
    if t == SAH_NONE {
        return;
    }
    let task = tasks[(state[STATE_LEVEL] % 2u) * params.task_capacity + t];
    let lefts_before = ranks[i] - ranks[task.first];
    var to = task.first + lefts_before;
    var next = task.left_task;
    if flags[i] == 0u {
        to = task.first + task.left + (i - task.first - lefts_before);
        next = task.right_task;
    }
    moved[to] = order[i];
    moved_task[to] = next;
}

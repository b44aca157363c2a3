// Binned SAH, each large level's fourth step: one invocation per position writes 1 when its
// primitive goes to the left child of its large task's split (its bin on the split's axis is
// at most the split's, or its place is among the first `left` for a split by position), else 0
// (and 0 outside large tasks), for the exclusive scan that ranks the stable partition. Twin:
// `goes_left` in caustica::accel::sah_build::build_sah.
//!include "bvh/sah_common.wgsl"

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read> state: array<u32>;
@group(0) @binding(2) var<storage, read> order: array<u32>;
@group(0) @binding(3) var<storage, read> task_of: array<u32>;
@group(0) @binding(4) var<storage, read> boxes: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> tasks: array<SahTask>;
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;

@compute @workgroup_size(SAH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = sah_index(gid, nwg, SAH_WG_SIZE);
    if i >= params.n {
        return;
    }
    let t = task_of[i];
    var flag = 0u;
    if t != SAH_NONE {
        let task = tasks[(state[STATE_LEVEL] % 2u) * params.task_capacity + t];
        if task.mode == MODE_SAH {
            let p = order[i];
            let c = lbvh_centroid(boxes[2u * p].xyz, boxes[2u * p + 1u].xyz);
            let bin = sah_bin(c[task.axis], bitcast<f32>(task.lo), bitcast<f32>(task.extent));
            flag = select(0u, 1u, bin <= task.bin);
        } else {
            flag = select(0u, 1u, i - task.first < task.left);
        }
    }
    flags[i] = flag;
}

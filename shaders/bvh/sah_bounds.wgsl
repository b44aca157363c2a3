// Binned SAH, each large level's first step: one invocation per position of a large task
// joins its primitive's centroid into the task's centroid box (as total-order keys). Twin: the
// centroid box of caustica::accel::sah_build::sah_best_plane.
//!include "bvh/sah_common.wgsl"
const ACC_FIRST: u32 = 0u;
const ACC_SPAN: u32 = 6u;
//!include "bvh/sah_accumulate.wgsl"

@compute @workgroup_size(SAH_WG_SIZE)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = sah_index(gid, nwg, SAH_WG_SIZE);
    start_workgroup(i - lid, lid);
    if i < params.n {
        let t = task_of[i];
        if t != SAH_NONE {
            let p = order[i];
            let c = lbvh_centroid(boxes[2u * p].xyz, boxes[2u * p + 1u].xyz);
            let key = total_order_key(bitcast<vec3<u32>>(c));
            add_word(t, 0u, key.x);
            add_word(t, 1u, key.y);
            add_word(t, 2u, key.z);
            add_word(t, 3u, key.x);
            add_word(t, 4u, key.y);
            add_word(t, 5u, key.z);
        }
    }
    finish_workgroup(lid);
}

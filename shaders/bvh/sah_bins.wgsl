// Binned SAH, each large level's second step: one invocation per position of a large task
// bins its primitive on each axis over the task's centroid box and adds it to the bin's count
// and box (as total-order keys). Twin: the bins of caustica::accel::sah_build::sah_best_plane.
//!include "bvh/sah_common.wgsl"
const ACC_FIRST: u32 = 6u;
const ACC_SPAN: u32 = 336u;
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
            let base = t * ACC_WORDS;
            let lo_key = vec3<u32>(atomicLoad(&acc[base]), atomicLoad(&acc[base + 1u]), atomicLoad(&acc[base + 2u]));
            let hi_key = vec3<u32>(atomicLoad(&acc[base + 3u]), atomicLoad(&acc[base + 4u]), atomicLoad(&acc[base + 5u]));
            let lo = bitcast<vec3<f32>>(key_bits(lo_key));
            let extent = flush3(bitcast<vec3<f32>>(key_bits(hi_key)) - lo);
            let p = order[i];
            let blo = boxes[2u * p].xyz;
            let bhi = boxes[2u * p + 1u].xyz;
            let c = lbvh_centroid(blo, bhi);
            let klo = total_order_key(bitcast<vec3<u32>>(blo));
            let khi = total_order_key(bitcast<vec3<u32>>(bhi));
            for (var a = 0u; a < 3u; a++) {
                let bin = sah_bin(c[a], lo[a], extent[a]);
                let w = (a * SAH_BINS + bin) * BIN_WORDS;
                add_word(t, w, 1u);
                add_word(t, w + 1u, klo.x);
                add_word(t, w + 2u, klo.y);
                add_word(t, w + 3u, klo.z);
                add_word(t, w + 4u, khi.x);
                add_word(t, w + 5u, khi.y);
                add_word(t, w + 6u, khi.z);
            }
        }
    }
    finish_workgroup(lid);
}

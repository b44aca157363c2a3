// The inclusive scan of PLOC's (stay, merge) pairs over one workgroup of PLOC_WG_SIZE
// invocations (Hillis-Steele in workgroup memory), for bvh/ploc_scan.wgsl and
// bvh/ploc_compact.wgsl.
//!include "bvh/ploc_common.wgsl"

var<workgroup> wg_scan: array<vec2<u32>, PLOC_WG_SIZE>;

// The sum of the values of invocations 0..=t (t is the local invocation index), every
// invocation of the workgroup calling it with its own value in uniform control flow. The
// total is wg_scan[PLOC_WG_SIZE - 1] until the caller's next barrier.
fn workgroup_inclusive_scan(t: u32, value: vec2<u32>) -> vec2<u32> {
    wg_scan[t] = value;
    workgroupBarrier();
    for (var d = 1u; d < PLOC_WG_SIZE; d *= 2u) {
        var add = vec2<u32>(0u);
        if t >= d {
            add = wg_scan[t - d];
        }
        workgroupBarrier();
        wg_scan[t] += add;
        workgroupBarrier();
    }
    return wg_scan[t];
}

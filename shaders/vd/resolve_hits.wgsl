// The second pass of the VD batches' closest hit without 64-bit atomics: build_trace.wgsl left
// each hit slot's smallest t (f32 bits, word 2s+1); every record whose own hit has exactly that
// t offers its index with atomicMin (word 2s), so ties go to the lowest record, as the 64-bit
// path's (t << 32 | record) minimum does. One invocation per record; host in src/gpu/vd_batch.rs.
//!include "vd/common.wgsl"

@group(0) @binding(0) var<uniform> params: VdBatchParams;
@group(0) @binding(1) var<storage, read> rays: array<VdBatchRay>;
@group(0) @binding(2) var<storage, read> record_rays: array<u32>;
@group(0) @binding(3) var<storage, read> record_hits: array<VdRecordHit>;
@group(0) @binding(4) var<storage, read_write> hits: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let r = gid.x + gid.y * groups.x * 256u;
    if r >= params.record_count {
        return;
    }
    let h = record_hits[r];
    if h.cell == VD_NONE {
        return;
    }
    let slot = rays[record_rays[r]].hit;
    if bitcast<u32>(h.t) == atomicLoad(&hits[2u * slot + 1u]) {
        atomicMin(&hits[2u * slot], r);
    }
}

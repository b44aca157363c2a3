// Sets every word of the VD batches' hit slots to VD_NONE (no record, t = +inf as u32 bits
// above every finite t), on the device: the slots were uploaded filled with it, which sent
// 8 bytes per ray over the bus in every batch. One invocation per word; host in
// src/gpu/vd_batch.rs (`record_build_trace`).

struct ClearParams {
    words: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: ClearParams;
@group(0) @binding(1) var<storage, read_write> hits: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let w = gid.x + gid.y * groups.x * 256u;
    if w < params.words {
        hits[w] = 0xffffffffu;
    }
}

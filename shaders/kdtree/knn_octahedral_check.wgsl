// Checks the WGSL octahedral code of photon directions against accel::photon_estimate: encodes
// `directions` and decodes `codes`, one of each per invocation (tests only; the estimate's
// bindings 50-52 are declared by the include and bound to placeholders).
//!include "shared/photon_estimate.wgsl"

const WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<storage, read> directions: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> codes: array<u32>;
@group(0) @binding(2) var<storage, read_write> encoded: array<u32>;
// Per code: octahedral_decode_l1 (xyz) and octahedral_decode (xyz), two entries.
@group(0) @binding(3) var<storage, read_write> decoded: array<vec4<f32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG_SIZE;
    if i < arrayLength(&directions) {
        encoded[i] = octahedral_encode(directions[i].xyz);
    }
    if i < arrayLength(&codes) {
        decoded[2u * i] = vec4<f32>(octahedral_decode_l1(codes[i]), 0.0);
        decoded[2u * i + 1u] = vec4<f32>(octahedral_decode(codes[i]), 0.0);
    }
}

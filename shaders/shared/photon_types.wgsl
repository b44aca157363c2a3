// The photon tracer's structs shared with the host (twins in src/render/photons.rs and
// src/gpu/photons.rs; tests/gpu_layout.rs checks their layouts), the stored photon and its
// octahedral direction code (twins in src/accel/photon_estimate.rs). No bindings.
//!include "shared/math.wgsl"

// Twin of render::photons::PhotonEmitter.
struct PhotonEmitter {
    kind: u32,
    first: u32,
    count: u32,
    triangles: u32,
    triangle_count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    position: vec4<f32>,
    axis: vec4<f32>,
    edge_u: vec4<f32>,
    edge_v: vec4<f32>,
    power: vec4<f32>,
}

// Twin of gpu::photons::PhotonParams: the state of one photon dispatch.
struct PhotonParams {
    ray_count: u32,
    emitter_count: u32,
    stream_tag: u32,
    pass_kind: u32,
    max_hits: u32,
    bounce: u32,
    first_photon: u32,
    target_count: u32, // caustic targets to aim at (0: emit as the light does)
}

// Twin of gpu::photons::GpuPhotonPath: what a photon ray carries besides the ray.
// flags: earlier interactions (bits 0-7) and PHOTON_SPECULAR_PATH.
struct PhotonPath {
    power: vec3<f32>,
    flags: u32,
}

// Twin of accel::photon_estimate::PhotonRecord (size and offsets checked by a test).
struct PhotonRecord {
    position: vec3<f32>,
    // The unit direction of travel (towards the surface), octahedral_encode'd.
    direction: u32,
    power: vec3<f32>,
    flags: u32,
}

// photon_estimate::OCTAHEDRAL_STEPS.
const OCTAHEDRAL_STEPS: i32 = 65535;

fn octahedral_sign_not_zero(v: f32) -> f32 {
    return select(-1.0, 1.0, v >= 0.0);
}

// photon_estimate::octahedral_encode (a zero or non-finite vector encodes +z). The division and
// rounding may differ from the CPU's by one grid step where a coordinate falls on a half step.
fn octahedral_encode(v_in: vec3<f32>) -> u32 {
    var v = v_in;
    var l1 = abs(v.x) + abs(v.y) + abs(v.z);
    if !(l1 > 0.0) || !is_finite_f32(l1) {
        v = vec3<f32>(0.0, 0.0, 1.0);
        l1 = 1.0;
    }
    var p = vec2<f32>(v.x / l1, v.y / l1);
    if v.z < 0.0 {
        p = vec2<f32>((1.0 - abs(p.y)) * octahedral_sign_not_zero(p.x), (1.0 - abs(p.x)) * octahedral_sign_not_zero(p.y));
    }
    // round() in WGSL rounds half to even and Rust's half away from zero: floor(x + 0.5) is
    // the latter for these nonnegative values.
    let q = clamp(floor((p * 0.5 + 0.5) * f32(OCTAHEDRAL_STEPS) + 0.5), vec2<f32>(0.0), vec2<f32>(f32(OCTAHEDRAL_STEPS)));
    return u32(q.x) | (u32(q.y) << 16u);
}

// photon_estimate::octahedral_decode_l1: the direction scaled to |x| + |y| + |z| = 65535, all
// integers, exact on both backends.
fn octahedral_decode_l1(code: u32) -> vec3<f32> {
    let x = 2 * i32(code & 0xffffu) - OCTAHEDRAL_STEPS;
    let y = 2 * i32(code >> 16u) - OCTAHEDRAL_STEPS;
    let z = OCTAHEDRAL_STEPS - abs(x) - abs(y);
    if z < 0 {
        return vec3<f32>(f32((OCTAHEDRAL_STEPS - abs(y)) * sign(x)), f32((OCTAHEDRAL_STEPS - abs(x)) * sign(y)), f32(z));
    }
    return vec3<f32>(f32(x), f32(y), f32(z));
}

// photon_estimate::octahedral_decode: the unit direction of a code.
fn octahedral_decode(code: u32) -> vec3<f32> {
    return normalize(octahedral_decode_l1(code));
}

// photon_estimate::PHOTON_NORMAL_SHIFT: a stored photon's flags hold its surface normal's
// coarse_octahedral_encode in bits 16-31.
const PHOTON_NORMAL_SHIFT: u32 = 16u;

// photon_estimate::coarse_octahedral_encode: the 8 leading bits of each coordinate.
fn coarse_octahedral_encode(v: vec3<f32>) -> u32 {
    let code = octahedral_encode(v);
    return ((code >> 8u) & 0xffu) | ((code >> 24u) << 8u);
}

// photon_estimate::coarse_octahedral_decode: each coordinate at the centre of its cell.
fn coarse_octahedral_decode(code: u32) -> vec3<f32> {
    let x = ((code & 0xffu) << 8u) | 0x80u;
    let y = (((code >> 8u) & 0xffu) << 8u) | 0x80u;
    return octahedral_decode(x | (y << 16u));
}

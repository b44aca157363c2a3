// Pure helpers of the batched VD bottom level (no bindings): twins of src/accel/vd_bottom.rs
// (levels, quantization, links, packing). The slab and watertight triangle tests come from
// shared/ray_tests.wgsl, which the scene traversal uses too.
//!include "shared/vd_types.wgsl"
//!include "shared/ray_tests.wgsl"

const VD_NONE: u32 = 0xffffffffu;
// vd_bottom.rs LINK_END (17 bits of skip) and Q_MAX.
const VD_LINK_END: u32 = 0x1ffffu;
const VD_Q_MAX: u32 = 0xffffu;
// f32::EPSILON and f32::MIN_POSITIVE as bits.
const VD_EPSILON_BITS: u32 = 0x34000000u;
const VD_MIN_POSITIVE_BITS: u32 = 0x00800000u;
// aabb.rs FAR_SLACK = 1 + 2·γ(3), as its f32 bits.



// A key of f32 bits whose u32 order is the float order (for min/max with u32 atomics).
fn vd_order_key(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if (b & 0x80000000u) != 0u {
        return ~b;
    }
    return b | 0x80000000u;
}

fn vd_from_order_key(k: u32) -> f32 {
    if (k & 0x80000000u) != 0u {
        return bitcast<f32>(k & 0x7fffffffu);
    }
    return bitcast<f32>(~k);
}

// vd_bottom::first_node_of_level: (4^l − 1)/3.
fn vd_first_node_of_level(l: u32) -> u32 {
    return ((1u << (2u * l)) - 1u) / 3u;
}

// vd_bottom::lod_level: the smallest level whose cell (largest edge of the bounds / 2^L) fits
// the footprint distance · spread.
fn vd_lod_level(bmin: vec3<f32>, bmax: vec3<f32>, distance: f32, spread: f32, max_level: u32) -> u32 {
    var edge = 0.0;
    if !(bmin.x > bmax.x || bmin.y > bmax.y || bmin.z > bmax.z) {
        let e = bmax - bmin;
        edge = max(max(e.x, e.y), e.z);
    }
    let footprint = distance * spread;
    if footprint != footprint || footprint <= 0.0 || !is_finite_f32(footprint) {
        if edge > 0.0 {
            return max_level;
        }
        return 0u;
    }
    var level = 0u;
    var cell = edge;
    while level < max_level && cell > footprint {
        level += 1u;
        cell *= 0.5;
    }
    return level;
}



// ---------------------------------------------------------------------------------------------
// QuantFrame
// ---------------------------------------------------------------------------------------------

struct VdFrame {
    origin: vec3<f32>,
    step: vec3<f32>,
}

// QuantFrame::new: step = extent / 0xffff grown by a few ulps until code 0xffff reaches the
// root maximum (the loop is bounded on the GPU; the CPU's ends after a step or two).
fn vd_frame_new(root_min: vec3<f32>, root_max: vec3<f32>) -> VdFrame {
    let grow = 1.0 + 4.0 * bitcast<f32>(VD_EPSILON_BITS);
    let tiny = bitcast<f32>(VD_MIN_POSITIVE_BITS);
    var step = max(root_max - root_min, vec3<f32>(0.0)) / f32(VD_Q_MAX);
    for (var a = 0u; a < 3u; a++) {
        var s = step[a] * grow;
        for (var i = 0u; i < 64u; i++) {
            if !(root_min[a] + f32(VD_Q_MAX) * s < root_max[a]) {
                break;
            }
            s = s * grow + tiny;
        }
        step[a] = s;
    }
    return VdFrame(root_min, step);
}

fn vd_decode_axis(frame: VdFrame, a: u32, q: u32) -> f32 {
    return frame.origin[a] + f32(q) * frame.step[a];
}

// QuantFrame::quantize_down: the largest code whose decoded value is <= v.
fn vd_quantize_down(frame: VdFrame, a: u32, v: f32) -> u32 {
    if frame.step[a] <= 0.0 {
        return 0u;
    }
    let guess = floor((v - frame.origin[a]) / frame.step[a]);
    var q = u32(clamp(guess, 0.0, f32(VD_Q_MAX)));
    for (var i = 0u; i < 64u; i++) {
        if !(q > 0u && vd_decode_axis(frame, a, q) > v) {
            break;
        }
        q -= 1u;
    }
    // Far off (not expected): fall back to the frame's edge, which is always conservative.
    if q > 0u && vd_decode_axis(frame, a, q) > v {
        q = 0u;
    }
    return q;
}

// QuantFrame::quantize_up: the smallest code whose decoded value is >= v.
fn vd_quantize_up(frame: VdFrame, a: u32, v: f32) -> u32 {
    if frame.step[a] <= 0.0 {
        return 0u;
    }
    let guess = floor((v - frame.origin[a]) / frame.step[a]) + 1.0;
    var q = u32(clamp(guess, 0.0, f32(VD_Q_MAX)));
    for (var i = 0u; i < 64u; i++) {
        if !(q > 0u && vd_decode_axis(frame, a, q - 1u) >= v) {
            break;
        }
        q -= 1u;
    }
    for (var i = 0u; i < 64u; i++) {
        if !(q < VD_Q_MAX && vd_decode_axis(frame, a, q) < v) {
            break;
        }
        q += 1u;
    }
    if q < VD_Q_MAX && vd_decode_axis(frame, a, q) < v {
        q = VD_Q_MAX;
    }
    return q;
}

// ---------------------------------------------------------------------------------------------
// Node packing (VdNode, 5 words)
// ---------------------------------------------------------------------------------------------

fn vd_round_half_away(x: f32) -> f32 {
    return sign(x) * floor(abs(x) + 0.5);
}

// vd_bottom.rs pack_snorm16x2 (Rust rounding: half away from zero).
fn vd_pack_snorm16x2(v: vec2<f32>) -> u32 {
    let x = u32(i32(vd_round_half_away(clamp(v.x, -1.0, 1.0) * 32767.0))) & 0xffffu;
    let y = u32(i32(vd_round_half_away(clamp(v.y, -1.0, 1.0) * 32767.0))) & 0xffffu;
    return x | (y << 16u);
}

fn vd_unpack_snorm16x2(p: u32) -> vec2<f32> {
    let x = f32(i32(p << 16u) >> 16u);
    let y = f32(i32(p) >> 16u);
    return vec2<f32>(max(x / 32767.0, -1.0), max(y / 32767.0, -1.0));
}

fn vd_pack_unorm16x2(v: vec2<f32>) -> u32 {
    let x = u32(vd_round_half_away(clamp(v.x, 0.0, 1.0) * 65535.0));
    let y = u32(vd_round_half_away(clamp(v.y, 0.0, 1.0) * 65535.0));
    return x | (y << 16u);
}

fn vd_unpack_unorm16x2(p: u32) -> vec2<f32> {
    return vec2<f32>(f32(p & 0xffffu) / 65535.0, f32(p >> 16u) / 65535.0);
}

fn vd_sign(v: f32) -> f32 {
    if v >= 0.0 {
        return 1.0;
    }
    return -1.0;
}

// vd_bottom::oct_encode.
fn vd_oct_encode(n: vec3<f32>) -> u32 {
    let l1 = abs(n.x) + abs(n.y) + abs(n.z);
    if l1 != l1 || l1 <= 0.0 || !is_finite_f32(l1) {
        return 0u;
    }
    let p = n / l1;
    var e = p.xy;
    if p.z < 0.0 {
        e = vec2<f32>((1.0 - abs(p.y)) * vd_sign(p.x), (1.0 - abs(p.x)) * vd_sign(p.y));
    }
    return vd_pack_snorm16x2(e);
}

// vd_bottom::oct_decode.
fn vd_oct_decode(packed: u32) -> vec3<f32> {
    let e = vd_unpack_snorm16x2(packed);
    var n = vec3<f32>(e.x, e.y, 1.0 - abs(e.x) - abs(e.y));
    if n.z < 0.0 {
        let x = n.x;
        let y = n.y;
        n.x = (1.0 - abs(y)) * vd_sign(x);
        n.y = (1.0 - abs(x)) * vd_sign(y);
    }
    return vd_normalize(n);
}

// glam's normalize (v · 1/|v|), with the dot product written out in glam's order.
fn vd_length_squared(v: vec3<f32>) -> f32 {
    return (v.x * v.x) + (v.y * v.y) + (v.z * v.z);
}

fn vd_normalize(v: vec3<f32>) -> vec3<f32> {
    return v * (1.0 / sqrt(vd_length_squared(v)));
}

fn vd_normalize_or_zero(v: vec3<f32>) -> vec3<f32> {
    let r = 1.0 / sqrt(vd_length_squared(v));
    if is_finite_f32(r) && r > 0.0 {
        return v * r;
    }
    return vec3<f32>(0.0);
}

// glam's cross, in its order of operations.
fn vd_cross(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(a.y * b.z - b.y * a.z, a.z * b.x - b.z * a.x, a.x * b.y - b.x * a.y);
}

// ---------------------------------------------------------------------------------------------
// Ray tests (copies of shared/intersect.wgsl)
// ---------------------------------------------------------------------------------------------






// Shared by the adaptive seeding kernels (src/gpu/seeding.rs): the parameters, the fixed-point
// point and node types, and the exact integer arithmetic of the CPU twin (src/cpu/gather.rs:
// quadtree_code, SeedPoint::new, seed_mean_normal, seed_variation, stratum_pick): 64-bit sums as
// two u32 words, a 32x32 -> 64 multiplication, a 64/32 division, an integer square root. The
// only float operation on data is one multiplication per coordinate, which GPUs round
// correctly; everything after it is integer, so the seeds equal the CPU twin's bit for bit.

// Invocations per workgroup.
const WG_SIZE: u32 = 256u;
// Sorted points per invocation in the chunked kernels (sums, errors).
const CHUNK: u32 = 32u;
// cpu::gather::SEED_POSITION_BITS, SEED_NORMAL_BITS.
const POSITION_BITS: u32 = 10u;
const NORMAL_BITS: u32 = 14u;
// render::gather::SEED_DENSITY_BITS: the minimum density is round(beta * 2^16).
const DENSITY_BITS: u32 = 16u;
// Position keys: floor(scale * x) clamped to +-2^30, plus 2^30.
const POSITION_LIMIT: f32 = 1073741824.0;
const POSITION_BIAS: u32 = 0x40000000u;
// Coordinates are clamped to +-2^90 (the scale is at most 2^37, so products stay finite).
const COORDINATE_LIMIT: f32 = 1.2379400392853803e27;
// The per-axis position difference counted at most.
const DIFFERENCE_CAP: u32 = 32768u;

// Twin of gpu::seeding::SeedParams (size and offsets checked by a test).
struct SeedParams {
    // Shading points.
    n: u32,
    // Quadtree levels below the root (leaves at this level).
    levels: u32,
    width: u32,
    height: u32,
    // alpha * 2^10, clamped (cpu::gather::seed_position_scale).
    position_scale: f32,
    seed_lo: u32,
    seed_hi: u32,
    // Items of this dispatch (nodes of a level, seeds).
    count: u32,
    // The first node of the level a per-level kernel works on.
    offset: u32,
    // The next level's first node (link), or the first leaf (select).
    child_offset: u32,
    // Leaves (select).
    leaves: u32,
    // Link: 1 on the leaf level.
    mode: u32,
    // The root's seeds, min(seeds, n) (distribute).
    total: u32,
    // The minimum density beta as round(beta * 2^16) (distribute).
    min_density: u32,
}

// A shading point in fixed point, in sorted order (cpu::gather::SeedPoint).
struct SeedPoint {
    position: vec3<u32>,
    _pad0: u32,
    normal: vec3<i32>,
    _pad1: u32,
}

// The linear invocation index of a grid that may spill into y (Kernel::grid_for).
fn seed_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG_SIZE;
}

// --- 64-bit words: vec2(low, high) -----------------------------------------------------------

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// Sign extension of an i32 into a two's complement 64-bit word.
fn from_i32(v: i32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0));
}

fn neg64(v: vec2<u32>) -> vec2<u32> {
    return add64(~v, vec2<u32>(1u, 0u));
}

// The full product a * b.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// (low 32 bits of v / d, v % d) for d > 0: the high word's quotient is dropped (callers either
// know the quotient fits 32 bits or want it truncated, as the CPU's `as u32`), then 32 steps of
// shift-and-subtract; a remainder that reaches 2^32 in a step is larger than d, and the wrapped
// subtraction gives the right value.
fn div64(v: vec2<u32>, d: u32) -> vec2<u32> {
    var r = v.y % d;
    var q = 0u;
    for (var b = 0u; b < 32u; b++) {
        let bit = 31u - b;
        let top = r >> 31u;
        r = (r << 1u) | ((v.x >> bit) & 1u);
        if top != 0u || r >= d {
            r = r - d;
            q = q | (1u << bit);
        }
    }
    return vec2<u32>(q, r);
}

// Bits of a 64-bit word (0 for 0).
fn bit_length64(v: vec2<u32>) -> u32 {
    if v.y != 0u {
        return 64u - countLeadingZeros(v.y);
    }
    return 32u - countLeadingZeros(v.x);
}

// v >> s for unsigned v and s < 64.
fn shr64(v: vec2<u32>, s: u32) -> vec2<u32> {
    if s == 0u {
        return v;
    }
    if s < 32u {
        return vec2<u32>((v.x >> s) | (v.y << (32u - s)), v.y >> s);
    }
    return vec2<u32>(v.y >> (s - 32u), 0u);
}

// floor(sqrt(x)), exactly: a float estimate within one of the answer, then integer corrections
// (straight-line code: no loop for lavapipe's loop budget).
fn isqrt(x: u32) -> u32 {
    var s = min(u32(sqrt(f32(x))), 65535u);
    if s * s > x {
        s = s - 1u;
    }
    if s * s > x {
        s = s - 1u;
    }
    if s < 65535u && (s + 1u) * (s + 1u) <= x {
        s = s + 1u;
    }
    if s < 65535u && (s + 1u) * (s + 1u) <= x {
        s = s + 1u;
    }
    return s;
}

// --- the CPU twin's functions ------------------------------------------------------------------

// cpu::gather::quadtree_code.
fn spread_bits(value: u32) -> u32 {
    var v = value & 0xffffu;
    v = (v | (v << 8u)) & 0x00ff00ffu;
    v = (v | (v << 4u)) & 0x0f0f0f0fu;
    v = (v | (v << 2u)) & 0x33333333u;
    return (v | (v << 1u)) & 0x55555555u;
}

fn quadtree_code(pixel: u32, width_in: u32, height_in: u32, levels: u32) -> u32 {
    let width = max(width_in, 1u);
    let height = max(height_in, 1u);
    let x = pixel % width;
    let y = pixel / width;
    // (v << levels) as 64 bits; levels is 1..=16. A pixel past the image is on the last row.
    let last = (1u << levels) - 1u;
    let cx = min(div64(vec2<u32>(x << levels, x >> (32u - levels)), width).x, last);
    var cy = last;
    let y_cells = vec2<u32>(y << levels, y >> (32u - levels));
    if y_cells.y < height {
        cy = min(div64(y_cells, height).x, last);
    }
    return spread_bits(cx) | (spread_bits(cy) << 1u);
}

// cpu::gather::seed_clean: NaN, infinities and subnormals become 0, decided on the bits.
fn seed_clean(x: f32) -> f32 {
    let exponent = bitcast<u32>(x) & 0x7f800000u;
    return select(x, 0.0, exponent == 0u || exponent == 0x7f800000u);
}

// cpu::gather::SeedPoint::new.
fn seed_point(position: vec3<f32>, normal: vec3<f32>, scale: f32) -> SeedPoint {
    var p: vec3<u32>;
    var q: vec3<i32>;
    for (var a = 0u; a < 3u; a++) {
        let v = seed_clean(clamp(seed_clean(position[a]), -COORDINATE_LIMIT, COORDINATE_LIMIT) * scale);
        p[a] = bitcast<u32>(i32(clamp(floor(v), -POSITION_LIMIT, POSITION_LIMIT))) + POSITION_BIAS;
        q[a] = i32(floor(clamp(seed_clean(normal[a]), -1.0, 1.0) * 16384.0));
    }
    return SeedPoint(p, 0u, q, 0u);
}

// cpu::gather::seed_mean_normal, on the three components of a sum of normal keys (two's
// complement 64-bit words).
fn seed_mean_normal(sx: vec2<u32>, sy: vec2<u32>, sz: vec2<u32>) -> vec3<i32> {
    let s = array<vec2<u32>, 3>(sx, sy, sz);
    var largest = vec2<u32>(0u, 0u);
    for (var a = 0u; a < 3u; a++) {
        var m = s[a];
        if (m.y >> 31u) != 0u {
            m = neg64(m);
        }
        if m.y > largest.y || (m.y == largest.y && m.x > largest.x) {
            largest = m;
        }
    }
    if largest.x == 0u && largest.y == 0u {
        return vec3<i32>(0);
    }
    let bits = bit_length64(largest);
    var t: vec3<i32>;
    for (var a = 0u; a < 3u; a++) {
        let v = s[a];
        if bits > 15u {
            // An arithmetic shift whose result fits in i32: its low word is the answer.
            let r = bits - 15u;
            if r < 32u {
                t[a] = bitcast<i32>((v.x >> r) | (v.y << (32u - r)));
            } else {
                t[a] = bitcast<i32>(v.y) >> (r - 32u);
            }
        } else {
            t[a] = bitcast<i32>(v.x) << (15u - bits);
        }
    }
    let len2 = u32(t.x * t.x) + u32(t.y * t.y) + u32(t.z * t.z);
    let len = i32(isqrt(len2));
    return (t * 16384) / vec3<i32>(len);
}

// cpu::gather::seed_variation.
fn seed_variation(p: SeedPoint, mean: SeedPoint) -> u32 {
    var d2 = 0u;
    var e2 = 0u;
    for (var a = 0u; a < 3u; a++) {
        let x = p.position[a];
        let m = mean.position[a];
        let d = min(select(m - x, x - m, x >= m), DIFFERENCE_CAP);
        d2 = d2 + d * d;
        let e = u32(abs(p.normal[a] - mean.normal[a]));
        e2 = e2 + e * e;
    }
    return (isqrt(d2) << (NORMAL_BITS - POSITION_BITS)) + isqrt(e2);
}

// cpu::gather::stratum_pick.
fn stratum_pick(j: u32, count: u32, size: u32, u24: u32) -> u32 {
    let lo = div64(mul_wide(j, size), count).x;
    let hi = div64(mul_wide(j + 1u, size), count).x;
    let w = mul_wide(u24, hi - lo);
    return lo + ((w.x >> 24u) | (w.y << 8u));
}

// cpu::gather::seed_density_floor: floor(beta * floor(total * size / n) / 2^16) for size <= n
// (so the inner quotient is at most total and fits the division's 32-bit quotient).
fn density_floor(total: u32, size: u32, n: u32, beta: u32) -> u32 {
    let share = div64(mul_wide(total, size), max(n, 1u)).x;
    return shr64(mul_wide(min(beta, 1u << DENSITY_BITS), share), DENSITY_BITS).x;
}

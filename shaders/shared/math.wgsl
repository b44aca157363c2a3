// Small numeric helpers shared by every kernel, with no bindings: float classification and
// Morton (Z-order) decoding.

fn f32_infinity() -> f32 {
    return bitcast<f32>(0x7f800000u);
}

fn is_finite_f32(x: f32) -> bool {
    return abs(x) <= 3.40282347e38;
}

fn morton_compact(m: u32) -> u32 {
    var v = m & 0x55555555u;
    v = (v | (v >> 1u)) & 0x33333333u;
    v = (v | (v >> 2u)) & 0x0f0f0f0fu;
    v = (v | (v >> 4u)) & 0x00ff00ffu;
    return (v | (v >> 8u)) & 0x0000ffffu;
}

fn morton_decode(m: u32) -> vec2<u32> {
    return vec2<u32>(morton_compact(m), morton_compact(m >> 1u));
}


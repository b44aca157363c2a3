// Small numeric helpers shared by every kernel, with no bindings: float classification and
// Morton (Z-order) codes of 16-bit coordinates (x in the even bits, y in the odd bits).

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


fn morton_spread(v: u32) -> u32 {
    var x = v & 0x0000ffffu;
    x = (x | (x << 8u)) & 0x00ff00ffu;
    x = (x | (x << 4u)) & 0x0f0f0f0fu;
    x = (x | (x << 2u)) & 0x33333333u;
    return (x | (x << 1u)) & 0x55555555u;
}

fn morton_encode(p: vec2<u32>) -> u32 {
    return morton_spread(p.x) | (morton_spread(p.y) << 1u);
}

// Shared by the Morton-code kernels (prims/morton_codes.wgsl, bvh/lbvh_codes.wgsl).

// The 10 low bits of a cell coordinate spread to every third bit.
fn spread_bits(v: u32) -> u32 {
    var x = v & 0x3ffu;
    x = (x | (x << 16u)) & 0x030000ffu;
    x = (x | (x << 8u)) & 0x0300f00fu;
    x = (x | (x << 4u)) & 0x030c30c3u;
    return (x | (x << 2u)) & 0x09249249u;
}

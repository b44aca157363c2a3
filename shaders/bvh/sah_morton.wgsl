// The hybrid's Morton split, for the kernels that read the sorted codes (bvh/sah_split.wgsl,
// bvh/sah_small.wgsl), each of which defines `sah_code(position)`.

// The first of the sorted codes at positions first..first + count (which differ at the ends,
// `a` and `b`) with their highest differing bit set, less `first`. Twin of
// caustica::accel::sah_build::morton_split.
fn morton_split_in(first: u32, count: u32, a: u32, b: u32) -> u32 {
    let bit = 1u << (31u - countLeadingZeros(a ^ b));
    var lo = 0u;
    var hi = count;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if (sah_code(first + mid) & bit) == 0u {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Shared by the LBVH kernels (bvh/lbvh_codes.wgsl, bvh/lbvh_hierarchy.wgsl,
// bvh/lbvh_bounds.wgsl; host side caustica::gpu::lbvh, CPU twin caustica::accel::lbvh): the
// parameters, the grid index, the node record as words and the exact union of bounds.
//!include "shared/bvh_build.wgsl"

// Invocations per workgroup of every LBVH kernel.
const LBVH_WG_SIZE: u32 = 256u;

// A bound word of an internal node whose bounds are not written yet: a signalling NaN, which no
// arithmetic produces (lbvh_bounds.wgsl waits for it to change, and works the bounds out from
// the leaves should a box really hold these bits).
const LBVH_PENDING: u32 = 0xff8a5a5au;

// Words per node record (48 bytes), and the word of each field in a record.
const NODE_WORDS: u32 = 12u;
const WORD_LO: u32 = 0u;
const WORD_LEFT: u32 = 3u;
const WORD_HI: u32 = 4u;
const WORD_RIGHT: u32 = 7u;
const WORD_FIRST: u32 = 8u;
const WORD_COUNT: u32 = 9u;
const WORD_PARENT: u32 = 10u;

// Twin of caustica::gpu::lbvh::LbvhParams (layout checked by a test).
struct LbvhParams {
    // Primitives.
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    // xyz: the Morton frame's low corner and cells per unit length (caustica::accel::lbvh::LbvhFrame).
    lo: vec4<f32>,
    scale: vec4<f32>,
}

// BinaryNodeRecord with its bounds as bits (the same layout, checked by a test), so that bounds
// are moved bit for bit, NaNs included.
struct BinaryNodeWords {
    lo: vec3<u32>,
    left: u32,
    hi: vec3<u32>,
    right: u32,
    first: u32,
    count: u32,
    parent: u32,
    _pad: u32,
}

// A box as the bits of its floats.
struct BoxWords {
    lo: vec3<u32>,
    hi: vec3<u32>,
}

// The linear invocation index of a grid that may spill into y (`Kernel::grid_for`).
fn lbvh_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * LBVH_WG_SIZE;
}

// The bits of a float turned into a key whose unsigned order is the total order of
// f32::total_cmp (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN).
fn total_order_key(bits: vec3<u32>) -> vec3<u32> {
    let negative = (bits & vec3<u32>(0x80000000u)) != vec3<u32>(0u);
    return bits ^ select(vec3<u32>(0x80000000u), vec3<u32>(0xffffffffu), negative);
}

// The union of two boxes by component-wise minimum and maximum in that total order: the same
// bits whatever order boxes are joined in. Twin of caustica::accel::lbvh::union_exact.
fn union_words(a: BoxWords, b: BoxWords) -> BoxWords {
    let lo = select(a.lo, b.lo, total_order_key(b.lo) < total_order_key(a.lo));
    let hi = select(a.hi, b.hi, total_order_key(b.hi) > total_order_key(a.hi));
    return BoxWords(lo, hi);
}

// Twin of caustica::accel::lbvh::flush, on the bits (a zero exponent field), so that no
// compiler can see through it and fuse a multiply before it with an add after it.
fn flush(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    return bitcast<f32>(select(bits, 0u, (bits & 0x7f800000u) == 0u));
}

fn flush3(v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(flush(v.x), flush(v.y), flush(v.z));
}

// The centroid of the box lo..hi: the origin for an empty box, else the flushed corners' mean,
// flushed. Twin of caustica::accel::lbvh::lbvh_centroid.
fn lbvh_centroid(lo: vec3<f32>, hi: vec3<f32>) -> vec3<f32> {
    if any(lo > hi) {
        return vec3<f32>(0.0);
    }
    return flush3((flush3(lo) + flush3(hi)) * 0.5);
}

// Shared by the GPU BVH builders and the collapse into the wide layout.

// One node of a binary BVH; 48 bytes. Twin of caustica::accel::bvh::BinaryNodeRecord.
// first/count: the subtree's range of the primitive order (inner nodes too); a leaf has
// left == right == BVH_NO_NODE; the root (node 0) has parent == BVH_NO_NODE.
struct BinaryNodeRecord {
    lo: vec3<f32>,
    left: u32,
    hi: vec3<f32>,
    right: u32,
    first: u32,
    count: u32,
    parent: u32,
    _pad: u32,
}

const BVH_NO_NODE: u32 = 0xffffffffu;

fn is_empty_box(lo: vec3<f32>, hi: vec3<f32>) -> bool {
    return lo.x > hi.x || lo.y > hi.y || lo.z > hi.z;
}

// Half the surface area, its sums fused in a fixed order; 0 for an empty box. Twin of
// caustica::accel::wide::collapse_area.
fn collapse_area(lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    if is_empty_box(lo, hi) {
        return 0.0;
    }
    let d = hi - lo;
    return fma(d.x, d.y, fma(d.y, d.z, d.z * d.x));
}

// f32::total_cmp's order as a signed integer.
fn total_key(x: f32) -> i32 {
    let b = bitcast<i32>(x);
    return b ^ i32(u32(b >> 31u) >> 1u);
}

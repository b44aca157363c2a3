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

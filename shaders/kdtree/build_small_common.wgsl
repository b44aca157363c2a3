// Shared by the small-node stage's two kernels (build_small.wgsl, an invocation per small root,
// and build_small_group.wgsl, a workgroup per small root): their bindings and the pending node of
// a root's depth-first walk. Each keeps its own split choice, written for its layout: shared as
// one function over per-axis vectors, the choice measured 5-14% slower in both (the lent H200,
// docs/performance.md).
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> small_list: array<u32>;
@group(0) @binding(3) var<storage, read_write> heap_nodes: array<u32>;
@group(0) @binding(4) var<storage, read> heap_boxes: array<f32>;
@group(0) @binding(5) var<storage, read_write> scratch: array<u32>;
// [words of the whole tree, nodes, leaves, max branch depth]
@group(0) @binding(6) var<storage, read_write> stats: array<atomic<u32>, 4>;

const NO_SPLIT: u32 = 3u;
const NO_PATCH: u32 = 0xffffffffu;

struct Pending {
    mask: u32,
    depth: u32,
    // the header word (relative) whose right-child index is this node, or NO_PATCH
    patch_word: u32,
    lo: vec3<f32>,
    hi: vec3<f32>,
}

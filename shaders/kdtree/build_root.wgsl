// Point kd-tree build, initialization: the root node (heap slot 0) over all points with the
// scene box from the sorted lists' ends; a root of at most KD_SMALL_NODE points is a small root
// and gets its points (in x order) in the small list. One workgroup.
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> lists: array<u32>;
@group(0) @binding(3) var<storage, read_write> small_list: array<u32>;
@group(0) @binding(4) var<storage, read_write> heap_nodes: array<u32>;
@group(0) @binding(5) var<storage, read_write> heap_boxes: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(local_invocation_index) li: u32) {
    let n = params.n;
    if n <= KD_SMALL_NODE && li < n {
        small_list[li] = lists[li];
    }
    if li != 0u || n == 0u {
        return;
    }
    heap_nodes[NODE_START] = 0u;
    heap_nodes[NODE_COUNT] = n;
    heap_nodes[NODE_INFO] = select(KIND_SMALL, KIND_LARGE, n > KD_SMALL_NODE);
    for (var a = 0u; a < 3u; a++) {
        heap_boxes[a] = kd_coord(points[lists[a * n]][a]);
        heap_boxes[3u + a] = kd_coord(points[lists[a * n + n - 1u]][a]);
    }
}

// One k-nearest-neighbour search per query, results sorted by (squared distance, index): the
// GPU side of gpu::knn::KnnQueries::knn_vec, twin of accel::knn::knn.
//!include "shared/knn_heap.wgsl"
//!include "shared/knn.wgsl"

// Twin of gpu::knn::KnnParams (size and offsets checked by a test).
struct KnnParams {
    query_count: u32,
    first_query: u32,
    k: u32,
    max_dist2: f32,
    filter_code: u32,
    cone_k: f32,
    // Nonzero: the queries are taken in the order of the `order` binding (density only).
    ordered: u32,
    _pad1: u32,
}

const WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<uniform> params: KnnParams;
// Query positions (xyz, w unused); this dispatch reads queries[first_query ..][.. query_count].
@group(0) @binding(1) var<storage, read> queries: array<vec4<f32>>;
// k slots per query of this dispatch; the first out_count[q] of them are written.
@group(0) @binding(2) var<storage, read_write> out_index: array<u32>;
@group(0) @binding(3) var<storage, read_write> out_dist2: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_count: array<u32>;
// knn_error bits of every query, or-ed together.
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let local = gid.x + gid.y * nwg.x * WG_SIZE;
    if local >= params.query_count {
        return;
    }
    // Bounds of their own, so that the kernel may be compiled without naga's checks.
    let q = params.first_query + local;
    let base = local * params.k;
    let end = base + params.k;
    if q < local || q >= arrayLength(&queries) || local >= arrayLength(&out_count) || end < base || end > arrayLength(&out_index) || end > arrayLength(&out_dist2) {
        atomicOr(&status[0], KNN_ERROR_TREE);
        return;
    }
    let count = knn_search(queries[q].xyz, params.k, params.max_dist2);
    knn_sort_heap(count);
    var j = 0u;
    while j < count {
        out_index[base + j] = knn_heap_index(j);
        out_dist2[base + j] = knn_heap_dist(j);
        j++;
    }
    if j < count {
        knn_error |= KNN_ERROR_LOOP_CUT;
    }
    out_count[local] = count;
    if knn_error != 0u {
        atomicOr(&status[0], knn_error);
    }
}

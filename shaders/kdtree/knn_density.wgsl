// The photon density estimate at one (position, normal) per invocation: the GPU side of
// gpu::knn::KnnQueries::flux_density_vec, twin of accel::photon_estimate::photon_flux_density.
//!include "shared/photon_estimate.wgsl"

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
// Two entries per query: the position (xyz) and the surface normal (xyz).
@group(0) @binding(1) var<storage, read> queries: array<vec4<f32>>;
// The estimate of each query of this dispatch (xyz, w = 0).
@group(0) @binding(2) var<storage, read_write> out_density: array<vec4<f32>>;
// knn_error bits of every query, or-ed together.
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;
// With params.ordered, invocation t answers query order[t] (gpu::prims::morton: neighbouring
// invocations search the same part of the tree); otherwise query t.
@group(0) @binding(6) var<storage, read> order: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * WG_SIZE;
    if t >= params.query_count {
        return;
    }
    var local = t;
    if params.ordered != 0u {
        if t >= arrayLength(&order) || order[t] >= params.query_count {
            atomicOr(&status[0], KNN_ERROR_TREE);
            return;
        }
        local = order[t];
    }
    let q = params.first_query + local;
    // Bounds of their own, so that the kernel may be compiled without naga's checks.
    if q < local || 2u * q + 1u >= arrayLength(&queries) || local >= arrayLength(&out_density) {
        atomicOr(&status[0], KNN_ERROR_TREE);
        return;
    }
    let x = queries[2u * q].xyz;
    let n = queries[2u * q + 1u].xyz;
    let density = photon_flux_density(x, n, params.k, params.max_dist2, params.filter_code, params.cone_k);
    out_density[local] = vec4<f32>(density, 0.0);
    if knn_error != 0u {
        atomicOr(&status[0], knn_error);
    }
}

// A gather hit's irradiance from the precomputed irradiance photons, one (position, normal) per
// invocation: the nearest of the LOOKUP_NEIGHBOURS nearest photons whose normal agrees, zero if
// none does. GPU side of gpu::irradiance_photons::IrradiancePhotonKernels::lookup, twin of
// cpu::irradiance_photons::IrradiancePhotons::irradiance.
//!include "shared/knn.wgsl"
//!include "shared/gather_types.wgsl"


// render::irradiance_photons::LOOKUP_NEIGHBOURS (at most KNN_MAX_K: the host compiles this
// kernel with KNN_SMALL_HEAP) and LOOKUP_MIN_COS.
const LOOKUP_NEIGHBOURS: u32 = 8u;
const LOOKUP_MIN_COS: f32 = 0.9;

const WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<uniform> params: PhotonLookupParams;
// Two entries per query: the position (xyz) and the normal (xyz).
@group(0) @binding(1) var<storage, read> queries: array<vec4<f32>>;
// Two entries per irradiance photon; the second is its normal.
@group(0) @binding(2) var<storage, read> photon_queries: array<vec4<f32>>;
// The irradiance at each irradiance photon (xyz).
@group(0) @binding(3) var<storage, read> photon_irradiance: array<vec4<f32>>;
// The irradiance of each query (xyz, w = 0); NaN where its search reported an error.
@group(0) @binding(4) var<storage, read_write> out_density: array<vec4<f32>>;
// knn_error bits of every query, or-ed together.
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = gid.x + gid.y * nwg.x * WG_SIZE;
    if q >= params.count {
        return;
    }
    let x = queries[2u * q].xyz;
    let n = queries[2u * q + 1u].xyz;
    let found = knn_search(x, LOOKUP_NEIGHBOURS, params.max_dist2);
    // The first agreeing photon in (distance², index) order, as the CPU's sorted list gives it.
    var best = 0xffffffffu;
    var best_d = 0.0;
    for (var j = 0u; j < LOOKUP_NEIGHBOURS; j++) {
        if j < found {
            let i = knn_heap_index[j];
            let d = knn_heap_dist[j];
            if i < params.photon_count && dot(photon_queries[2u * i + 1u].xyz, n) >= LOOKUP_MIN_COS
                && (best == 0xffffffffu || knn_precedes(d, i, best_d, best)) {
                best = i;
                best_d = d;
            }
        }
    }
    if knn_error != 0u {
        atomicOr(&status[0], knn_error);
        out_density[q] = vec4<f32>(bitcast<f32>(0x7fc00000u));
    } else if best != 0xffffffffu {
        out_density[q] = vec4<f32>(photon_irradiance[best].xyz, 0.0);
    } else {
        out_density[q] = vec4<f32>(0.0);
    }
}

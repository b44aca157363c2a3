// A gather hit's irradiance from the precomputed irradiance photons, one (position, normal) per
// invocation: the nearest photon whose normal agrees, within the radius, zero if there is none.
// GPU side of gpu::irradiance_photons::IrradiancePhotonKernels::lookup, twin of
// cpu::irradiance_photons::IrradiancePhotons::irradiance. The host compiles it with KNN_FILTER:
// the search offers only the photons knn_accept takes.
//!include "shared/knn.wgsl"
//!include "shared/gather_types.wgsl"

// render::irradiance_photons::LOOKUP_MIN_COS.
const LOOKUP_MIN_COS: f32 = 0.9;
// The search's heap (shared/knn.wgsl): the one nearest photon.
const KNN_HEAP_SIZE: u32 = 1u;
const KNN_HEAP_DEPTH: u32 = 0u;
// Four points of a leaf per iteration, offered at once (shared/knn.wgsl, knn_enqueue).
const KNN_LEAF_CHUNK: u32 = 4u;
const KNN_FLUSH_EVERY: u32 = 1u;

const WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<uniform> params: PhotonLookupParams;
// Two entries per query: the position (xyz) and the normal (xyz).
@group(0) @binding(1) var<storage, read> queries: array<vec4<f32>>;
// The normal of each irradiance photon (xyz).
@group(0) @binding(2) var<storage, read> photon_normals: array<vec4<f32>>;
// The irradiance at each irradiance photon (xyz).
@group(0) @binding(3) var<storage, read> photon_irradiance: array<vec4<f32>>;
// The irradiance of each query (xyz, w = 0); NaN where its search reported an error.
@group(0) @binding(4) var<storage, read_write> out_density: array<vec4<f32>>;
// knn_error bits of every query, or-ed together.
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

// The normal of the query being answered.
// The queries in the Morton order of their positions (gpu::prims::morton), taken in that order.
@group(0) @binding(6) var<storage, read> order: array<u32>;

var<private> lookup_normal: vec3<f32>;

// render::irradiance_photons::normals_agree, for the filtered search.
fn knn_accept(i: u32) -> bool {
    return i < params.photon_count && i < arrayLength(&photon_normals) && dot(photon_normals[i].xyz, lookup_normal) >= LOOKUP_MIN_COS;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * WG_SIZE;
    if t >= params.count || t >= arrayLength(&order) {
        return;
    }
    let q = order[t];
    // Bounds of their own, so that the kernel may be compiled without naga's checks.
    if q >= params.count || 2u * q + 1u >= arrayLength(&queries) || q >= arrayLength(&out_density) {
        atomicOr(&status[0], KNN_ERROR_TREE);
        return;
    }
    let x = queries[2u * q].xyz;
    lookup_normal = queries[2u * q + 1u].xyz;
    if dot(lookup_normal, lookup_normal) == 0.0 {
        // No normal, no photon agrees with it (as on the CPU): a gather ray that met no
        // diffuse surface, whose query the reduction does not read, costs no search.
        out_density[q] = vec4<f32>(0.0);
        return;
    }
    let found = knn_search(x, 1u, params.max_dist2);
    if knn_error != 0u {
        atomicOr(&status[0], knn_error);
        out_density[q] = vec4<f32>(bitcast<f32>(0x7fc00000u));
    } else if found > 0u && knn_heap_index(0u) < arrayLength(&photon_irradiance) {
        out_density[q] = vec4<f32>(photon_irradiance[knn_heap_index(0u)].xyz, 0.0);
    } else {
        out_density[q] = vec4<f32>(0.0);
    }
}

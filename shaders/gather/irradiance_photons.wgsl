// The global map's irradiance photons (Christensen's precomputed irradiance): photon j·stride
// becomes irradiance photon j, with the map's estimate at its own position and normal from the
// photons that are not irradiance photons (scaled by stride/(stride - 1); with stride 1, from
// the other photons), its normal for the lookups and a kd-tree point. GPU side of
// gpu::irradiance_photons::IrradiancePhotonKernels::precompute, twin of
// cpu::irradiance_photons::IrradiancePhotons::precompute and
// accel::photon_estimate::irradiance_photon_estimate. The host compiles it with KNN_FILTER: the
// search offers only the photons knn_accept takes.
//!include "shared/photon_estimate.wgsl"
//!include "shared/gather_types.wgsl"

const WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<uniform> params: PhotonLookupParams;
// The normal of each irradiance photon (xyz).
@group(0) @binding(2) var<storage, read_write> photon_normals: array<vec4<f32>>;
// Its position, as a kd-tree point.
@group(0) @binding(3) var<storage, read_write> photon_points: array<vec4<f32>>;
// The irradiance at it (xyz); NaN where its search reported an error.
@group(0) @binding(4) var<storage, read_write> photon_irradiance: array<vec4<f32>>;
// knn_error bits of every estimate, or-ed together.
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

// The irradiance photons in the Morton order of their positions (gpu::prims::morton): the
// invocations take them in that order, so that neighbouring ones search the same part of the
// tree.
@group(0) @binding(6) var<storage, read> order: array<u32>;

// The map index of the irradiance photon being estimated.
var<private> estimate_index: u32;

// The photons an irradiance photon's estimate counts: not irradiance photons (with stride 1:
// not itself).
fn knn_accept(i: u32) -> bool {
    if params.stride <= 1u {
        return i != estimate_index;
    }
    return i % params.stride != 0u;
}

// photon_estimate::thinning_scale.
fn thinning_scale(stride: u32) -> f32 {
    if stride <= 1u {
        return 1.0;
    }
    return f32(stride) / f32(stride - 1u);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * WG_SIZE;
    if t >= params.count || t >= arrayLength(&order) {
        return;
    }
    let j = order[t];
    if j >= params.count {
        atomicOr(&status[0], KNN_ERROR_TREE);
        return;
    }
    estimate_index = j * params.stride;
    // Bounds of their own, so that the kernel may be compiled without naga's checks.
    if estimate_index >= arrayLength(&kd_photons) || j >= arrayLength(&photon_normals) || j >= arrayLength(&photon_points) || j >= arrayLength(&photon_irradiance) {
        atomicOr(&status[0], KNN_ERROR_TREE);
        return;
    }
    let r = kd_photons[estimate_index];
    let n = coarse_octahedral_decode(r.flags >> PHOTON_NORMAL_SHIFT);
    photon_normals[j] = vec4<f32>(n, 0.0);
    photon_points[j] = vec4<f32>(r.position, 0.0);
    let e = photon_flux_density(r.position, n, params.k, params.max_dist2, params.filter_code, params.cone_k) * thinning_scale(params.stride);
    if knn_error != 0u {
        atomicOr(&status[0], knn_error);
        photon_irradiance[j] = vec4<f32>(bitcast<f32>(0x7fc00000u));
    } else {
        photon_irradiance[j] = vec4<f32>(e, 0.0);
    }
}

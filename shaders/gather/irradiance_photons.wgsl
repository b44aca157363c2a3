// The global map's irradiance photons (Christensen's precomputed irradiance): photon j·stride
// becomes irradiance photon j, with a density query at its position and normal and a kd-tree
// point. GPU side of gpu::irradiance_photons::IrradiancePhotonKernels::precompute, twin of
// cpu::irradiance_photons::IrradiancePhotons::precompute.
//!include "shared/photon_types.wgsl"
//!include "shared/gather_types.wgsl"


const WG_SIZE: u32 = 64u;

@group(0) @binding(0) var<uniform> params: PhotonLookupParams;
@group(0) @binding(1) var<storage, read> photons: array<PhotonRecord>;
// Two entries per irradiance photon: its position and its normal (a density query).
@group(0) @binding(2) var<storage, read_write> photon_queries: array<vec4<f32>>;
// Its position again, as a kd-tree point.
@group(0) @binding(3) var<storage, read_write> photon_points: array<vec4<f32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = gid.x + gid.y * nwg.x * WG_SIZE;
    if j >= params.count {
        return;
    }
    let r = photons[j * params.stride];
    let n = coarse_octahedral_decode(r.flags >> PHOTON_NORMAL_SHIFT);
    photon_queries[2u * j] = vec4<f32>(r.position, 0.0);
    photon_queries[2u * j + 1u] = vec4<f32>(n, 0.0);
    photon_points[j] = vec4<f32>(r.position, 0.0);
}

// Bouncing photons (paper 003 listing 6.5): the compacted next rays of one bounce become the
// next bounce's rays, in photon order.
//!include "photons/common.wgsl"

@group(0) @binding(20) var<uniform> photon_params: PhotonParams;
@group(0) @binding(21) var<storage, read> next_rays: array<Ray>;
@group(0) @binding(22) var<storage, read> next_paths: array<PhotonPath>;
@group(0) @binding(23) var<storage, read> selected: array<u32>;
@group(0) @binding(24) var<storage, read> selected_count: array<u32>;
@group(0) @binding(25) var<storage, read_write> rays_out: array<Ray>;
@group(0) @binding(26) var<storage, read_write> paths_out: array<PhotonPath>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let j = gid.x + gid.y * groups.x * 64u;
    if j >= selected_count[0] {
        return;
    }
    let i = selected[j];
    rays_out[j] = next_rays[i];
    paths_out[j] = next_paths[i];
}

// Storing photons (paper 003 listing 6.4): the compacted store candidates of one bounce are
// appended to the map at map_cursor[0], with their positions for the kd-tree builder. The map
// has room for arrayLength(&stored) photons; what does not fit is not written, and
// photons/advance.wgsl still counts it, so that the host sees the size the map needs.
//!include "photons/common.wgsl"

@group(0) @binding(20) var<uniform> photon_params: PhotonParams;
@group(0) @binding(21) var<storage, read> store_candidates: array<PhotonRecord>;
@group(0) @binding(22) var<storage, read> selected: array<u32>;
@group(0) @binding(23) var<storage, read> selected_count: array<u32>;
@group(0) @binding(24) var<storage, read_write> stored: array<PhotonRecord>;
@group(0) @binding(25) var<storage, read_write> stored_positions: array<vec4<f32>>;
@group(0) @binding(26) var<storage, read> map_cursor: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let j = gid.x + gid.y * groups.x * 64u;
    if j >= selected_count[0] {
        return;
    }
    let at = map_cursor[0] + j;
    if at >= arrayLength(&stored) || at >= arrayLength(&stored_positions) || at < j {
        return;
    }
    let p = store_candidates[selected[j]];
    stored[at] = p;
    stored_positions[at] = vec4<f32>(p.position, 0.0);
}

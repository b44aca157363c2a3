// The level of every VD patch edge for the frame's patch levels: the finest level of the patches
// that share it (accel/vd_seams.rs `edge_levels`), one invocation per patch, atomicMax into
// `edge_levels` (cleared to 0 before).
//!include "shared/vd_types.wgsl"

@group(0) @binding(0) var<uniform> params: VdBatchParams;
@group(0) @binding(1) var<storage, read> seams: array<VdSeams>;
@group(0) @binding(2) var<storage, read> levels: array<u32>;
@group(0) @binding(3) var<storage, read_write> edge_levels: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let p = gid.x + gid.y * groups.x * 256u;
    if p >= params.patch_count {
        return;
    }
    let level = levels[p];
    let seam = seams[p];
    for (var e = 0u; e < 4u; e++) {
        atomicMax(&edge_levels[seam.edge_code[e] >> 3u], level);
    }
}

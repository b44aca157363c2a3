// Merges the batched VD bottom level's closest hits (src/gpu/vd_batch.rs) into the closest hits
// the trace kernel found among triangles and flat quads: one invocation per ray of the queue.
// A slot's winning record gives t, the patch and (s, t), its ray copy gives the instance; the
// hit keeps the tie rule of the traversal (closer, or as close with a lower instance, prim), as
// the CPU's Prepared::traverse does when it meets the patch in its leaves.
//!include "shared/scene.wgsl"
//!include "vd/common.wgsl"

@group(0) @binding(21) var<storage, read_write> hits: array<Hit>;
@group(0) @binding(40) var<storage, read> vd_rays: array<VdBatchRay>;
@group(0) @binding(42) var<storage, read> vd_record_rays: array<u32>;
// Two words per slot: the winning (sorted) record or 0xffffffff, and the f32 bits of its t.
@group(0) @binding(44) var<storage, read> vd_hits: array<u32>;
@group(0) @binding(45) var<storage, read> vd_record_hits: array<VdRecordHit>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    let record = vd_hits[2u * i];
    if record == NONE {
        return;
    }
    let rh = vd_record_hits[record];
    let instance = vd_rays[vd_record_rays[record]].instance;
    let vd_patch = vd_patches[rh.patch_index];
    let prim = meshes[vd_patch.mesh].triangle_count + vd_patch.quad;
    let h = hits[i];
    var closer = h.instance == NONE || rh.t < h.t;
    if rh.t == h.t && (instance < h.instance || (instance == h.instance && prim < h.prim)) {
        closer = true;
    }
    if closer {
        hits[i] = Hit(rh.t, instance, prim, vd_oct_encode(rh.normal), rh.st);
    }
}

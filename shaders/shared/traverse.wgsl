// The fused top-level + middle-level traversal of src/accel/prepared.rs: one loop, one stack;
// entering an instance pushes a return-to-world marker and switches to the object-space ray,
// popping the marker switches back. Ties in t go to the lower (instance, prim), so the result
// does not depend on the visiting order. With GRID, an instance of a MESH_GRID mesh is walked at
// once by shared/traverse_grid.wgsl and the loop stays in the top level. The scene's layout picks the loop: the QBVH with
// paper 004's compact stack (shared/traverse_qbvh.wgsl), or with WIDE_BVH the 8-wide
// compressed BVH (shared/traverse_wide.wgsl). Both define
// trace_ray(origin, dir, t_min, t_max, any_hit) -> TraceHit.
//!include "shared/intersect.wgsl"

//!if VD_PATCHES
//!include "shared/vd_types.wgsl"
// The VD record queue (paper 000 section 1.5): a ray that enters a VD patch's bounds before its
// closest hit so far appends its object-space copy and the patch, to be traced by the batched
// bottom level (src/gpu/vd_batch.rs); Prepared::vd_records is the CPU twin. Records past
// params.vd_record_capacity are counted but not written (the host grows the queue and traces
// again). `vd_slot` is the hit slot the calling kernel traces for.
@group(0) @binding(40) var<storage, read_write> vd_rays: array<VdBatchRay>;
@group(0) @binding(41) var<storage, read_write> vd_record_patches: array<u32>;
@group(0) @binding(42) var<storage, read_write> vd_record_rays: array<u32>;
@group(0) @binding(43) var<storage, read_write> vd_record_count: array<atomic<u32>>;
var<private> vd_slot: u32;

fn vd_record(vd_patch: u32, instance: u32, origin: vec3<f32>, dir: vec3<f32>, t_max: f32) {
    let k = atomicAdd(&vd_record_count[0], 1u);
    if k < params.vd_record_capacity {
        vd_rays[k] = VdBatchRay(origin, t_max, dir, params.vd_pixel_spread * length(dir), vd_slot, instance, 0u, 0u);
        vd_record_patches[k] = vd_patch;
        vd_record_rays[k] = k;
    }
}
//!endif

struct TraceHit {
    t: f32,
    instance: u32,
    prim: u32,
    st: vec2<f32>,
}

// prepared.rs next_up: the next float above a non-negative finite x.
fn next_up(x: f32) -> f32 {
    if is_finite_f32(x) && x >= 0.0 {
        return bitcast<f32>(bitcast<u32>(x) + 1u);
    }
    return x;
}

fn is_closer(t: f32, instance: u32, prim: u32, best: TraceHit) -> bool {
    if best.instance == NONE {
        return true;
    }
    return t < best.t || (t == best.t && (instance < best.instance || (instance == best.instance && prim < best.prim)));
}

// Tests reference `slot` (primitive `prim`) of the instance's mesh against the object-space
// ray (`sheared`: its shear_ray); `limit` and `best` are the closest hit so far. Returns true when an any-hit search has
// found its hit (then in `best`).
fn test_reference(mesh: MeshRecord, instance: u32, prim: u32, slot: u32, o_origin: vec3<f32>, o_dir: vec3<f32>, sheared: ShearedRay, t_min: f32, any_hit: bool, limit: ptr<function, f32>, best: ptr<function, TraceHit>) -> bool {
    var tie_limit = *limit;
    if (*best).instance != NONE {
        tie_limit = next_up(*limit);
    }
    // Kernels for scenes without VD patches leave this branch out (fewer registers).
    //!if VD_PATCHES
    if prim >= mesh.triangle_count && (mesh.flags & MESH_DISPLACED) != 0u {
        let vd_patch = mesh.vd_patch_offset + prim - mesh.triangle_count;
        let vd = vd_patches[vd_patch];
        if slab_entry(o_origin, 1.0 / o_dir, vd.bounds_min, vd.bounds_max, t_min, *limit) >= 0.0 {
            vd_record(vd_patch, instance, o_origin, o_dir, *limit);
        }
        return false;
    }
    //!endif
    let h = intersect_prim(mesh, prim, slot, o_origin, o_dir, sheared, t_min, tie_limit);
    if h.hit {
        // A merged mesh's hit names the scene instance and primitive it stands for.
        var owner = vec2<u32>(instance, prim);
        if (mesh.flags & MESH_MERGED) != 0u {
            let member = merged_prims[mesh.vd_patch_offset + prim];
            owner = vec2<u32>(merged_members[instances[instance].members + member.x], member.y);
        }
        if any_hit {
            *best = TraceHit(h.t, owner.x, owner.y, h.st);
            return true;
        }
        if is_closer(h.t, owner.x, owner.y, *best) {
            *limit = h.t;
            *best = TraceHit(h.t, owner.x, owner.y, h.st);
        }
    }
    return false;
}

// What grid_instance did with an instance: not a grid (enter its tree), walked its grid, or
// found an any-hit search's hit there.
const GRID_NOT: u32 = 0u;
const GRID_WALKED: u32 = 1u;
const GRID_FOUND: u32 = 2u;

//!if GRID
//!include "shared/traverse_kdtree.wgsl"
//!include "shared/traverse_grid.wgsl"
//!else
// Scenes without grids: every instance holds a tree.
fn grid_instance(mesh: MeshRecord, instance: u32, record: Instance, origin: vec3<f32>, dir: vec3<f32>, t_min: f32, any_hit: bool, limit: ptr<function, f32>, best: ptr<function, TraceHit>) -> u32 {
    return GRID_NOT;
}
//!endif

//!if WIDE_BVH
//!include "shared/traverse_wide.wgsl"
//!else
//!include "shared/traverse_qbvh.wgsl"
//!endif

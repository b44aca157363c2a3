// Ray-box and ray-primitive tests: twins of src/accel/aabb.rs (SlabRay), src/accel/primitives.rs
// (the watertight triangle test, quads as two triangles), written to give the same results bit
// for bit where WGSL allows.
//!include "shared/scene.wgsl"
//!include "shared/ray_tests.wgsl"

struct PrimHit {
    hit: bool,
    t: f32,
    st: vec2<f32>,
}

// primitives.rs intersect_quad: (v0, v1, v2) then (v0, v2, v3), with the patch parameter.
fn intersect_quad(origin: vec3<f32>, dir: vec3<f32>, v0: vec3<f32>, v1: vec3<f32>, v2: vec3<f32>, v3: vec3<f32>, t_min: f32, t_max: f32) -> PrimHit {
    let first = intersect_triangle(origin, dir, v0, v1, v2, t_min, t_max);
    var limit = t_max;
    if first.hit {
        limit = first.t;
    }
    let second = intersect_triangle(origin, dir, v0, v2, v3, t_min, limit);
    if second.hit {
        return PrimHit(true, second.t, vec2<f32>(second.b1, second.b1 + second.b2));
    }
    if first.hit {
        return PrimHit(true, first.t, vec2<f32>(first.b1 + first.b2, first.b2));
    }
    return PrimHit(false, 0.0, vec2<f32>(0.0));
}

// Prepared::intersect_prim: primitive `prim` of `mesh`, referenced from prim_refs[slot], against
// an object-space ray. Triangles read their vertices from leaf_triangles (the same values as
// positions[triangles[..]], gathered in reference order).
fn intersect_prim(mesh: MeshRecord, prim: u32, slot: u32, origin: vec3<f32>, dir: vec3<f32>, t_min: f32, t_max: f32) -> PrimHit {
    if prim < mesh.triangle_count {
        let b = 3u * slot;
        let h = intersect_triangle(origin, dir, leaf_triangles[b].xyz, leaf_triangles[b + 1u].xyz, leaf_triangles[b + 2u].xyz, t_min, t_max);
        return PrimHit(h.hit, h.t, vec2<f32>(h.b1, h.b2));
    }
    // VD patches never get here: the traversal records them for the batched bottom level.
    let q = prim - mesh.triangle_count;
    let v = quads[mesh.quad_offset + q];
    return intersect_quad(origin, dir, position_of(v.x), position_of(v.y), position_of(v.z), position_of(v.w), t_min, t_max);
}

// Ray-box and ray-primitive tests: twins of src/accel/aabb.rs (SlabRay), src/accel/primitives.rs
// (the watertight triangle test, quads as two triangles), written to give the same results bit
// for bit where WGSL allows.
//!include "shared/scene.wgsl"
//!include "shared/ray_tests.wgsl"
//!include "shared/camera.wgsl"

struct PrimHit {
    hit: bool,
    t: f32,
    st: vec2<f32>,
}

// primitives.rs intersect_quad: (v0, v1, v2) then (v0, v2, v3), with the patch parameter; the
// ray sheared once (shear_ray).
fn intersect_quad(origin: vec3<f32>, sheared: ShearedRay, v0: vec3<f32>, v1: vec3<f32>, v2: vec3<f32>, v3: vec3<f32>, t_min: f32, t_max: f32) -> PrimHit {
    let first = intersect_triangle_sheared(origin, sheared, v0, v1, v2, t_min, t_max);
    var limit = t_max;
    if first.hit {
        limit = first.t;
    }
    let second = intersect_triangle_sheared(origin, sheared, v0, v2, v3, t_min, limit);
    if second.hit {
        return PrimHit(true, second.t, vec2<f32>(second.b1, second.b1 + second.b2));
    }
    if first.hit {
        return PrimHit(true, first.t, vec2<f32>(first.b1 + first.b2, first.b2));
    }
    return PrimHit(false, 0.0, vec2<f32>(0.0));
}

// primitives.rs sphere_uv.
fn sphere_uv(p: vec3<f32>) -> vec2<f32> {
    let n = normalize_or(p, vec3<f32>(0.0, 1.0, 0.0));
    let tau = 6.28318530717958647692;
    var phi = atan2(-n.z, n.x);
    if phi < 0.0 {
        phi += tau;
    }
    return vec2<f32>(phi / tau, 1.0 - acos(clamp(n.y, -1.0, 1.0)) / (0.5 * tau));
}

// primitives.rs intersect_sphere: the sphere of `radius` about the origin.
fn intersect_sphere(origin: vec3<f32>, dir: vec3<f32>, radius: f32, t_min: f32, t_max: f32) -> PrimHit {
    let miss = PrimHit(false, 0.0, vec2<f32>(0.0));
    let a = dot(dir, dir);
    if !(a > 0.0) || !is_finite_f32(a) {
        return miss;
    }
    let b = 2.0 * dot(dir, origin);
    let c = dot(origin, origin) - radius * radius;
    let closest = origin - dir * (b / (2.0 * a));
    let length = sqrt(dot(closest, closest));
    let discriminant = 4.0 * a * (radius + length) * (radius - length);
    if discriminant < 0.0 {
        return miss;
    }
    let root = sqrt(discriminant);
    var q = -0.5 * (b + root);
    if b < 0.0 {
        q = -0.5 * (b - root);
    }
    if q == 0.0 {
        return miss;
    }
    var t0 = q / a;
    var t1 = c / q;
    if t0 > t1 {
        let swap = t0;
        t0 = t1;
        t1 = swap;
    }
    var t: f32;
    if t0 > t_min && t0 < t_max {
        t = t0;
    } else if t1 > t_min && t1 < t_max {
        t = t1;
    } else {
        return miss;
    }
    return PrimHit(true, t, sphere_uv(origin + dir * t));
}

// Prepared::intersect_prim: primitive `prim` of `mesh`, referenced from prim_refs[slot], against
// an object-space ray (`sheared`: its shear_ray, made once per ray). Triangles read their
// vertices from leaf_triangles (the same values as positions[triangles[..]], gathered in
// reference order).
fn intersect_prim(mesh: MeshRecord, prim: u32, slot: u32, origin: vec3<f32>, dir: vec3<f32>, sheared: ShearedRay, t_min: f32, t_max: f32) -> PrimHit {
    if prim < mesh.triangle_count {
        //!if GRID
        // A grid's references (slot NONE) read their triangle by index.
        if slot == NONE {
            let tri = triangles[mesh.triangle_offset + prim];
            let g = intersect_triangle_sheared(origin, sheared, position_of(tri.x), position_of(tri.y), position_of(tri.z), t_min, t_max);
            return PrimHit(g.hit, g.t, vec2<f32>(g.b1, g.b2));
        }
        //!endif
        let b = 3u * slot;
        let h = intersect_triangle_sheared(origin, sheared, leaf_triangles[b].xyz, leaf_triangles[b + 1u].xyz, leaf_triangles[b + 2u].xyz, t_min, t_max);
        return PrimHit(h.hit, h.t, vec2<f32>(h.b1, h.b2));
    }
    if (mesh.flags & MESH_SPHERE) != 0u {
        return intersect_sphere(origin, dir, positions[mesh.vertex_offset].x, t_min, t_max);
    }
    // VD patches never get here: the traversal records them for the batched bottom level.
    let q = prim - mesh.triangle_count;
    let v = quads[mesh.quad_offset + q];
    return intersect_quad(origin, sheared, position_of(v.x), position_of(v.y), position_of(v.z), position_of(v.w), t_min, t_max);
}

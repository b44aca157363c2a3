// Ray-box and ray-triangle tests with no bindings: twins of src/accel/aabb.rs (SlabRay) and
// src/accel/primitives.rs (the watertight triangle test), bit for bit where WGSL allows. Shared
// by the scene traversal (shared/intersect.wgsl) and the VD bottom level (vd/common.wgsl).
//!include "shared/math.wgsl"

// aabb.rs FAR_SLACK = 1 + 2·γ(3), as its f32 bits.
const FAR_SLACK_BITS: u32 = 0x3f800003u;

// The entry and exit of one slab; NaN (origin on a plane, direction parallel) means inside.
fn slab(lo: f32, hi: f32, origin: f32, inv_dir: f32) -> vec2<f32> {
    let a = (lo - origin) * inv_dir;
    let b = (hi - origin) * inv_dir;
    if a <= b {
        return vec2<f32>(a, b);
    } else if b < a {
        return vec2<f32>(b, a);
    }
    return vec2<f32>(-f32_infinity(), f32_infinity());
}

// SlabRay::entry: the entry distance into [lo, hi] clipped to [t_min, t_max], or -1 on a miss
// (entries are never negative because t_min >= 0).
fn slab_entry(origin: vec3<f32>, inv_dir: vec3<f32>, lo: vec3<f32>, hi: vec3<f32>, t_min: f32, t_max: f32) -> f32 {
    let x = slab(lo.x, hi.x, origin.x, inv_dir.x);
    let y = slab(lo.y, hi.y, origin.y, inv_dir.y);
    let z = slab(lo.z, hi.z, origin.z, inv_dir.z);
    let near = max(max(max(x.x, y.x), z.x), t_min);
    let far = min(min(min(x.y, y.y), z.y) * bitcast<f32>(FAR_SLACK_BITS), t_max);
    if near <= far {
        return near;
    }
    return -1.0;
}

// px·qy − py·qx as exactly as f32 allows (the CPU evaluates it in f64 and rounds): the products'
// rounding errors come from fma, the difference's from two-sum.
fn exact_cross(px: f32, py: f32, qx: f32, qy: f32) -> f32 {
    let p1 = px * qy;
    let e1 = fma(px, qy, -p1);
    let p2 = py * qx;
    let e2 = fma(py, qx, -p2);
    let s = p1 - p2;
    let bb = s - p1;
    let err = (p1 - (s - bb)) + (-p2 - bb);
    return s + (err + (e1 - e2));
}

struct TriangleHit {
    hit: bool,
    t: f32,
    b1: f32,
    b2: f32,
}

// The per-ray part of primitives.rs intersect_triangle (Woop, Benthin and Wald's watertight
// test): the axis the ray runs most along (kz), the other two (kx, ky, swapped to keep the
// winding when dir[kz] < 0) and the shear (sx, sy, sz). A trace computes it once per
// (object-space) ray; `valid` is false for a direction that can hit nothing.
struct ShearedRay {
    kx: u32,
    ky: u32,
    kz: u32,
    valid: bool,
    s: vec3<f32>,
}

fn shear_ray(dir: vec3<f32>) -> ShearedRay {
    let ad = abs(dir);
    var kz = 2u;
    if ad.x >= ad.y && ad.x >= ad.z {
        kz = 0u;
    } else if ad.y >= ad.z {
        kz = 1u;
    }
    var kx = (kz + 1u) % 3u;
    var ky = (kz + 2u) % 3u;
    if dir[kz] < 0.0 {
        let k = kx;
        kx = ky;
        ky = k;
    }
    if dir[kz] == 0.0 || !is_finite_f32(dir[kz]) {
        return ShearedRay(kx, ky, kz, false, vec3<f32>(0.0));
    }
    let sz = 1.0 / dir[kz];
    return ShearedRay(kx, ky, kz, true, vec3<f32>(dir[kx] * sz, dir[ky] * sz, sz));
}

// Component k (0, 1 or 2) of v, by selects rather than a run-time vector index
// (docs/performance.md: what the triangle test costs the trace).
fn pick(v: vec3<f32>, k: u32) -> f32 {
    return select(select(v.x, v.y, k == 1u), v.z, k == 2u);
}

// primitives.rs intersect_triangle for a ray sheared by shear_ray.
fn intersect_triangle_sheared(origin: vec3<f32>, ray: ShearedRay, p0: vec3<f32>, p1: vec3<f32>, p2: vec3<f32>, t_min: f32, t_max: f32) -> TriangleHit {
    var miss = TriangleHit(false, 0.0, 0.0, 0.0);
    if !ray.valid {
        return miss;
    }
    let sx = ray.s.x;
    let sy = ray.s.y;
    let sz = ray.s.z;
    let a = p0 - origin;
    let b = p1 - origin;
    let c = p2 - origin;
    let az = pick(a, ray.kz);
    let bz = pick(b, ray.kz);
    let cz = pick(c, ray.kz);
    let ax = pick(a, ray.kx) - sx * az;
    let ay = pick(a, ray.ky) - sy * az;
    let bx = pick(b, ray.kx) - sx * bz;
    let by = pick(b, ray.ky) - sy * bz;
    let cx = pick(c, ray.kx) - sx * cz;
    let cy = pick(c, ray.ky) - sy * cz;
    var u = cx * by - cy * bx;
    var v = ax * cy - ay * cx;
    var w = bx * ay - by * ax;
    if u == 0.0 || v == 0.0 || w == 0.0 {
        u = exact_cross(cx, cy, bx, by);
        v = exact_cross(ax, ay, cx, cy);
        w = exact_cross(bx, by, ax, ay);
    }
    if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
        return miss;
    }
    let det = u + v + w;
    if det == 0.0 || !is_finite_f32(det) {
        return miss;
    }
    let t_scaled = u * (sz * az) + v * (sz * bz) + w * (sz * cz);
    let inv_det = 1.0 / det;
    let t = t_scaled * inv_det;
    if t > t_min && t < t_max {
        return TriangleHit(true, t, v * inv_det, w * inv_det);
    }
    return miss;
}

// primitives.rs intersect_triangle: Woop, Benthin and Wald's watertight test.
fn intersect_triangle(origin: vec3<f32>, dir: vec3<f32>, p0: vec3<f32>, p1: vec3<f32>, p2: vec3<f32>, t_min: f32, t_max: f32) -> TriangleHit {
    return intersect_triangle_sheared(origin, shear_ray(dir), p0, p1, p2, t_min, t_max);
}

// The photon maps' debug views: for each camera ray, the first surface it sees, when diffuse,
// becomes a density query (position, normal facing the camera) with the weight albedo/π
// (w = 1); other rays get w = 0. Twin of the per-sample part of cpu::photons::photon_views.
//!include "photons/common.wgsl"

@group(0) @binding(20) var<storage, read> rays: array<Ray>;
@group(0) @binding(21) var<storage, read> hits: array<Hit>;
@group(0) @binding(22) var<storage, read_write> queries: array<vec4<f32>>;
@group(0) @binding(23) var<storage, read_write> weights: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    weights[i] = vec4<f32>(0.0);
    let ray = rays[i];
    let hit = hits[i];
    if ray.pixel == NONE || hit.instance == NONE {
        return;
    }
    let sp = surface_point(ray.origin, ray.dir, hit);
    let m = materials[sp.material];
    if m.kind != 0u {
        return;
    }
    queries[2u * i] = vec4<f32>(sp.position, 1.0);
    queries[2u * i + 1u] = vec4<f32>(face_forward(sp.shading_normal, ray.dir), 0.0);
    weights[i] = vec4<f32>(albedo_of(m, sp) * (1.0 / PI), 1.0);
}

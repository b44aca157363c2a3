// Photon emission (paper 003 listing 6.2): photon first_photon + i of the pass leaves its
// emitter as ray i, with its power in paths[i]. Twin of render::photons::emit_photon.
//!include "photons/common.wgsl"
//!include "shared/environment.wgsl"

@group(0) @binding(20) var<uniform> photon_params: PhotonParams;
@group(0) @binding(21) var<storage, read> emitters: array<PhotonEmitter>;
@group(0) @binding(22) var<storage, read_write> rays: array<Ray>;
@group(0) @binding(23) var<storage, read_write> paths: array<PhotonPath>;
@group(0) @binding(24) var<storage, read> targets: array<vec4<f32>>;

struct EmittedPhoton {
    origin: vec3<f32>,
    dir: vec3<f32>,
    power: vec3<f32>,
}

// A point on a mesh emitter and the unit normal of its emitting side there.
struct MeshPoint {
    point: vec3<f32>,
    normal: vec3<f32>,
}

// render::photons::mesh_emitter_point: scene::pick_by_cdf over the emitter's triangles (records
// triangles .. triangles + triangle_count, axis.w the area fraction up to each), then
// triangle_point.
fn mesh_emitter_point(e: PhotonEmitter, u: vec2<f32>) -> MeshPoint {
    if e.triangle_count == 0u {
        return MeshPoint(e.position.xyz, vec3<f32>(0.0, 0.0, 1.0));
    }
    var lo = e.triangles;
    var hi = e.triangles + e.triangle_count - 1u;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if emitters[mid].axis.w <= u.x {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    var below = 0.0;
    if lo > e.triangles {
        below = emitters[lo - 1u].axis.w;
    }
    let t = emitters[lo];
    let width = t.axis.w - below;
    var x = 0.5;
    if width > 0.0 {
        x = clamp((u.x - below) / width, 0.0, 1.0);
    }
    return MeshPoint(triangle_point(t.position.xyz, t.edge_u.xyz, t.edge_v.xyz, vec2<f32>(x, u.y)), t.axis.xyz);
}

// render::photons::directional_direction.
fn directional_direction(axis: vec3<f32>, cos_max: f32, u: vec2<f32>) -> vec3<f32> {
    if cos_max < 1.0 {
        return cone_direction(axis, cos_max, u);
    }
    return axis;
}

// The `radius` of render::photons::emit_aimed: a target's disk for a directional light, grown
// for a sun by how far its directions stray from 2.02 R before the target's centre through it.
fn aimed_disk_radius(r: f32, scene_radius: f32, tan_max: f32) -> f32 {
    return r + (2.02 * scene_radius + r) * tan_max;
}

// render::photons::target_cone: (axis, cos of the half-angle, solid angle) seen from `origin`.
struct TargetCone {
    axis: vec3<f32>,
    cos_max: f32,
    solid_angle: f32,
}

fn target_cone(origin: vec3<f32>, t: vec4<f32>) -> TargetCone {
    let to = t.xyz - origin;
    let d2 = dot3(to, to);
    let r2 = t.w * t.w;
    if d2 <= r2 {
        return TargetCone(vec3<f32>(0.0, 0.0, 1.0), -1.0, 4.0 * PI);
    }
    let cos_max = sqrt(max(1.0 - r2 / d2, 0.0));
    return TargetCone(to / sqrt(d2), cos_max, 2.0 * PI * (1.0 - cos_max));
}

// render::photons::emit_aimed, over the first `count` entries of `targets`.
fn emit_aimed(e: PhotonEmitter, count: u32, u_pos: vec2<f32>, u_dir: vec2<f32>, u_pick: f32) -> EmittedPhoton {
    let p = e.position.xyz;
    let axis = e.axis.xyz;
    let power = e.power.xyz;
    let dark = EmittedPhoton(p, vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(0.0));
    if e.kind == EMITTER_DIRECTIONAL {
        let cos_max = e.axis.w;
        let tan_max = sqrt(max(1.0 - cos_max * cos_max, 0.0)) / cos_max;
        var total = 0.0;
        for (var k = 0u; k < count; k++) {
            let r = aimed_disk_radius(targets[k].w, e.edge_v.w, tan_max);
            total += r * r;
        }
        var pick = u_pick * total;
        var chosen = count - 1u;
        for (var k = 0u; k < count; k++) {
            let r = aimed_disk_radius(targets[k].w, e.edge_v.w, tan_max);
            let a = r * r;
            if pick < a {
                chosen = k;
                break;
            }
            pick -= a;
        }
        let t = targets[chosen];
        let d = concentric_disk(u_pos) * aimed_disk_radius(t.w, e.edge_v.w, tan_max);
        let point = t.xyz + e.edge_u.xyz * d.x + e.edge_v.xyz * d.y;
        var covered = 0u;
        for (var k = 0u; k < count; k++) {
            let off = point - targets[k].xyz;
            let side = off - axis * dot3(off, axis);
            let r = aimed_disk_radius(targets[k].w, e.edge_v.w, tan_max);
            if dot3(side, side) <= r * r {
                covered += 1u;
            }
        }
        let scene_area = e.edge_v.w * e.edge_v.w;
        return EmittedPhoton(point - axis * (2.02 * e.edge_v.w), directional_direction(axis, cos_max, u_dir), power * (total / scene_area / f32(max(covered, 1u))));
    }
    var origin = p;
    if e.kind == EMITTER_QUAD {
        origin = p + e.edge_u.xyz * u_pos.x + e.edge_v.xyz * u_pos.y;
    }
    var total = 0.0;
    for (var k = 0u; k < count; k++) {
        total += target_cone(origin, targets[k]).solid_angle;
    }
    var pick = u_pick * total;
    var chosen = target_cone(origin, targets[count - 1u]);
    for (var k = 0u; k < count; k++) {
        let c = target_cone(origin, targets[k]);
        if pick < c.solid_angle {
            chosen = c;
            break;
        }
        pick -= c.solid_angle;
    }
    let dir = cone_direction(chosen.axis, chosen.cos_max, u_dir);
    var covered = 0u;
    for (var k = 0u; k < count; k++) {
        let c = target_cone(origin, targets[k]);
        if dot3(dir, c.axis) >= c.cos_max {
            covered += 1u;
        }
    }
    let mixture = total / f32(max(covered, 1u));
    var weight: f32;
    if e.kind == EMITTER_POINT {
        weight = mixture / (4.0 * PI);
    } else if e.kind == EMITTER_SPOT {
        let omega_outer = 2.0 * PI * (1.0 - e.axis.w);
        if omega_outer <= 0.0 {
            return dark;
        }
        weight = spot_falloff(e.axis.w, e.edge_u.w, dot3(dir, axis)) * mixture / omega_outer;
    } else {
        let c = dot3(dir, axis);
        if c <= 0.0 {
            return dark;
        }
        weight = c * mixture / PI;
    }
    return EmittedPhoton(origin, dir, power * weight);
}

// render::photons::sphere_emitter_point: a point uniform over sphere emitter `e` (position =
// centre, w = radius), moved out by its epsilon (axis.w), and the outward normal there.
fn sphere_emitter_point(e: PhotonEmitter, u: vec2<f32>) -> MeshPoint {
    let z = 1.0 - 2.0 * u.x;
    let r = sqrt(max(1.0 - z * z, 0.0));
    let phi = 2.0 * PI * u.y;
    let normal = vec3<f32>(r * cos(phi), r * sin(phi), z);
    return MeshPoint(e.position.xyz + normal * (e.position.w + e.axis.w), normal);
}

// render::photons::environment_as_directional: the directional emitter a photon of environment
// emitter `e` leaves from, towards a direction chosen from `u` by the map's luminance; its
// kind stays EMITTER_ENVIRONMENT (no photon) for a black map or a pole.
fn environment_as_directional(e: PhotonEmitter, u: vec2<f32>) -> PhotonEmitter {
    let m = EnvMapRef(e.triangles, max(e.triangle_count, 1u), max(e._pad0, 1u));
    let chosen = env_sample(m, u);
    var d = e;
    if chosen.pdf <= 0.0 {
        return d;
    }
    let travel = -(e.axis.xyz * chosen.dir.x + e.edge_u.xyz * chosen.dir.y + e.edge_v.xyz * chosen.dir.z);
    let radius = e.edge_v.w;
    d.kind = EMITTER_DIRECTIONAL;
    d.position = vec4<f32>(e.position.xyz - travel * (radius * 1.01), 1.0);
    d.axis = vec4<f32>(travel, 1.0);
    d.edge_u = vec4<f32>(orthonormal_basis_t(travel), 0.0);
    d.edge_v = vec4<f32>(orthonormal_basis_b(travel), radius);
    d.power = vec4<f32>(e.power.xyz * env_lookup(m, chosen.dir) / chosen.pdf, 0.0);
    return d;
}

// render::photons::emit_photon; aimed at the first `target_count` targets when there are any.
fn emit_photon(emitter: PhotonEmitter, target_count: u32, stream: ptr<function, SampleStream>) -> EmittedPhoton {
    let ux = next_f32(stream);
    let u_pos = vec2<f32>(ux, next_f32(stream));
    let vx = next_f32(stream);
    let u_dir = vec2<f32>(vx, next_f32(stream));
    let u_pick = next_f32(stream);
    // A mesh emitter leaves like a quad from a point on one of its triangles.
    var e = emitter;
    if e.kind == EMITTER_ENVIRONMENT {
        e = environment_as_directional(emitter, u_dir);
        if e.kind == EMITTER_ENVIRONMENT {
            return EmittedPhoton(emitter.position.xyz, vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(0.0));
        }
    }
    if e.kind == EMITTER_MESH {
        let m = mesh_emitter_point(emitter, u_pos);
        e.position = vec4<f32>(m.point, 1.0);
        e.axis = vec4<f32>(m.normal, 0.0);
    } else if e.kind == EMITTER_SPHERE {
        let m = sphere_emitter_point(emitter, u_pos);
        e.kind = EMITTER_MESH;
        e.position = vec4<f32>(m.point, 1.0);
        e.axis = vec4<f32>(m.normal, 0.0);
    }
    if target_count > 0u {
        return emit_aimed(e, target_count, u_pos, u_dir, u_pick);
    }
    let p = e.position.xyz;
    let axis = e.axis.xyz;
    let power = e.power.xyz;
    if e.kind == EMITTER_SPOT {
        let dir = cone_direction(axis, e.axis.w, u_dir);
        let falloff = spot_falloff(e.axis.w, e.edge_u.w, dot3(dir, axis));
        return EmittedPhoton(p, dir, power * falloff);
    }
    if e.kind == EMITTER_DIRECTIONAL {
        let d = concentric_disk(u_pos) * e.edge_v.w;
        return EmittedPhoton(p + e.edge_u.xyz * d.x + e.edge_v.xyz * d.y, directional_direction(axis, e.axis.w, u_dir), power);
    }
    if e.kind == EMITTER_QUAD {
        return EmittedPhoton(p + e.edge_u.xyz * u_pos.x + e.edge_v.xyz * u_pos.y, cosine_direction(axis, u_dir), power);
    }
    if e.kind == EMITTER_MESH {
        return EmittedPhoton(p, cosine_direction(axis, u_dir), power);
    }
    let z = 1.0 - 2.0 * u_dir.x;
    let r = sqrt(max(1.0 - z * z, 0.0));
    let phi = 2.0 * PI * u_dir.y;
    return EmittedPhoton(p, vec3<f32>(r * cos(phi), r * sin(phi), z), power);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= photon_params.ray_count {
        return;
    }
    let photon = photon_params.first_photon + i;
    // render::photons::emitter_of: the first emitter whose range ends past the photon.
    var lo = 0u;
    var hi = photon_params.emitter_count;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        let c = emitters[mid];
        if c.first + c.count <= photon {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let e = emitters[min(lo, max(photon_params.emitter_count, 1u) - 1u)];
    var stream = sample_stream(params.seed_lo, params.seed_hi, photon, photon_params.stream_tag);
    let emitted = emit_photon(e, photon_params.target_count, &stream);
    rays[i] = Ray(emitted.origin, photon, emitted.dir, photon_params.stream_tag, stream.dimension, 0u, 0u, 0u);
    paths[i] = PhotonPath(emitted.power, PHOTON_SPECULAR_PATH);
}

// Photon hits (paper 003 listing 6.3, with the store and bounce decisions): for each traced
// photon ray, whether it is stored here (store_flags, the record in store_candidates) and
// whether it goes on (bounce_flags, the next ray and path in next_rays / next_paths).
// Twin of the loop body of cpu::photons::trace_photons.
//!include "photons/common.wgsl"

@group(0) @binding(20) var<uniform> photon_params: PhotonParams;
@group(0) @binding(21) var<storage, read> rays: array<Ray>;
@group(0) @binding(22) var<storage, read> hits: array<Hit>;
@group(0) @binding(23) var<storage, read> paths: array<PhotonPath>;
@group(0) @binding(24) var<storage, read_write> store_flags: array<u32>;
@group(0) @binding(25) var<storage, read_write> store_candidates: array<PhotonRecord>;
@group(0) @binding(26) var<storage, read_write> bounce_flags: array<u32>;
@group(0) @binding(27) var<storage, read_write> next_rays: array<Ray>;
@group(0) @binding(28) var<storage, read_write> next_paths: array<PhotonPath>;
@group(0) @binding(29) var<storage, read_write> hit_counter: atomic<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= photon_params.ray_count {
        // Past the bounce's live rays (their count was copied in from the device): neither
        // stored nor bouncing, so that the compactions over the whole chunk skip them.
        if i < arrayLength(&store_flags) {
            store_flags[i] = 0u;
        }
        if i < arrayLength(&bounce_flags) {
            bounce_flags[i] = 0u;
        }
        return;
    }
    store_flags[i] = 0u;
    bounce_flags[i] = 0u;
    let ray = rays[i];
    let hit = hits[i];
    if hit.instance == NONE {
        return;
    }
    atomicAdd(&hit_counter, 1u);
    let path = paths[i];
    let bounces = path.flags & PHOTON_BOUNCES_MASK;
    let specular_path = (path.flags & PHOTON_SPECULAR_PATH) != 0u;
    let sp = surface_point(ray.origin, ray.dir, hit);
    let m = material_at(materials[sp.material], sp);
    let dir = normalize3(ray.dir);
    var albedo = vec3<f32>(0.0);
    if m.kind == 0u || m.kind == MATERIAL_PLASTIC {
        albedo = albedo_of(m, sp);
    }
    var stream = sample_stream(params.seed_lo, params.seed_hi, ray.pixel, ray.sample);
    stream.dimension = ray.dimension;
    let step = interact(photon_params.pass_kind, m, albedo, dir, path.power, sp.shading_normal, sp.geometric_normal, specular_path, bounces, bounces + 1u < photon_params.max_hits, &stream);
    if step.store {
        store_flags[i] = 1u;
        let normal = coarse_octahedral_encode(face_forward(sp.shading_normal, dir));
        store_candidates[i] = PhotonRecord(sp.position, octahedral_encode(dir), path.power, path.flags | (normal << PHOTON_NORMAL_SHIFT));
    }
    if step.next {
        bounce_flags[i] = 1u;
        let ng = face_forward(sp.geometric_normal, dir);
        var side = ng;
        if step.transmitted {
            side = -ng;
        }
        let origin = offset_origin(sp.position, side, params.epsilon);
        next_rays[i] = Ray(origin, ray.pixel, step.dir, ray.sample, stream.dimension, 0u, 0u, 0u);
        var flags = bounces + 1u;
        if specular_path && step.specular {
            flags |= PHOTON_SPECULAR_PATH;
        }
        next_paths[i] = PhotonPath(step.power, flags);
    }
}

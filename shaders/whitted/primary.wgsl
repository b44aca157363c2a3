// Camera rays of one pass (render::plan): one per (pixel, sample) of the pass's tiles and
// samples, with threads mapped to pixels in Morton order inside 8x8 tiles (paper 003 section
// 4.9) and the pixel and lens samples of the CPU twin (src/cpu/whitted.rs camera_sample): with
// params.sampler sobol the stream's first pair, else a jittered grid over the frame's spp. Slot
// i of the pass is sample sample_offset + i % pass_spp of pixel i / pass_spp of the pass's
// tiles. With params.centre_rays, one ray through each pixel centre and the lens centre (the
// `id` layer). Slots outside the image hold padding rays.
//!include "shared/camera.wgsl"
//!include "shared/rng.wgsl"
//!include "shared/math.wgsl"

const TILE_PIXELS: u32 = 64u;

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(20) var<storage, read_write> rays: array<Ray>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    var pass_spp = params.pass_spp;
    var first_sample = params.sample_offset;
    if params.centre_rays != 0u {
        pass_spp = 1u;
        first_sample = 0u;
    }
    let slot = i / pass_spp;
    let s = first_sample + i % pass_spp;
    let tiles_x = (params.width + 7u) / 8u;
    let tile = params.tile_offset + slot / TILE_PIXELS;
    let m = slot % TILE_PIXELS;
    let local = morton_decode(m);
    let px = (tile % tiles_x) * 8u + local.x;
    let py = (tile / tiles_x) * 8u + local.y;
    var ray: Ray;
    ray.sample = s;
    // Padding of the image's last tiles, and pixels outside a crop, get no ray.
    if px >= params.width || py >= params.height || px < params.crop_x0 || px >= params.crop_x1
        || py < params.crop_y0 || py >= params.crop_y1 {
        ray.pixel = 0xffffffffu;
        rays[i] = ray;
        return;
    }
    let pixel_index = py * params.width + px;
    ray.pixel = pixel_index;
    var offset = vec2<f32>(0.5);
    var lens = vec2<f32>(0.5);
    if params.centre_rays == 0u {
        var stream = camera_stream(params.seed_lo, params.seed_hi, pixel_index, s, params.sampler);
        if params.sampler == SAMPLER_SOBOL {
            let ox = next_f32(&stream);
            offset = vec2<f32>(ox, next_f32(&stream));
        } else {
            var jitter = vec2<f32>(0.5);
            if params.spp != 1u {
                let jx = next_f32(&stream);
                jitter = vec2<f32>(jx, next_f32(&stream));
            }
            offset = stratified_sample(s, params.spp, jitter);
        }
        let lx = next_f32(&stream);
        lens = vec2<f32>(lx, next_f32(&stream));
        ray.dimension = stream.dimension;
    }
    let camera_ray = generate_ray(params, vec2<f32>(f32(px), f32(py)) + offset, lens);
    ray.origin = camera_ray.origin;
    ray.dir = camera_ray.dir;
    rays[i] = ray;
}

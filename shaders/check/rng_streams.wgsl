// Writes the first four numbers of the sample stream of every (pixel, sample) pair, so a test can
// compare the GPU's random numbers with the CPU twin in src/render/sampling.rs bit for bit.
//!include "shared/rng.wgsl"

struct RngParams {
    seed_lo: u32,
    seed_hi: u32,
    pixels: u32,
    samples: u32,
}

@group(0) @binding(0) var<uniform> params: RngParams;
@group(0) @binding(1) var<storage, read_write> numbers: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.pixels * params.samples {
        return;
    }
    var stream = sample_stream(params.seed_lo, params.seed_hi, i / params.samples, i % params.samples);
    for (var d = 0u; d < 4u; d++) {
        numbers[i * 4u + d] = next_f32(&stream);
    }
}

// Writes the first `dimensions` numbers of the sample stream of every (pixel, sample) pair, so a
// test can compare the GPU's random numbers with the CPU twin in src/render/sampling.rs bit for
// bit. sampler: 2 for the tagged independent streams (sample_stream), else a camera sampler
// (camera_stream with SAMPLER_SOBOL or SAMPLER_INDEPENDENT), whose samples start at first_sample.
//!include "shared/rng.wgsl"

struct RngParams {
    seed_lo: u32,
    seed_hi: u32,
    pixels: u32,
    samples: u32,
    sampler: u32,
    first_sample: u32,
    dimensions: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: RngParams;
@group(0) @binding(1) var<storage, read_write> numbers: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.pixels * params.samples {
        return;
    }
    let pixel = i / params.samples;
    let sample = params.first_sample + i % params.samples;
    var stream: SampleStream;
    if params.sampler == 2u {
        stream = sample_stream(params.seed_lo, params.seed_hi, pixel, sample);
    } else {
        stream = camera_stream(params.seed_lo, params.seed_hi, pixel, sample, params.sampler);
    }
    for (var d = 0u; d < params.dimensions; d++) {
        numbers[i * params.dimensions + d] = next_f32(&stream);
    }
}

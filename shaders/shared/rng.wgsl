// Deterministic random numbers: functions of (seed, pixel, sample, dimension). Independent streams
// hash them with PCG; Sobol streams (camera samples with `sampler sobol`) take dimensions in pairs,
// each an Owen-scrambled, index-shuffled 2D Sobol sequence over the pixel's samples.
// Twin of src/render/sampling.rs; the same inputs give the same numbers on the CPU and the GPU.

fn pcg_hash(input: u32) -> u32 {
    let state = input * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// FrameParams.sampler (scene::Sampler).
const SAMPLER_SOBOL: u32 = 0u;
const SAMPLER_INDEPENDENT: u32 = 1u;

// key: independent, a hash of (seed, pixel, sample); Sobol, a hash of (seed, pixel).
// sample: the sample's index in the pixel's Sobol sequence (0 for independent streams).
struct SampleStream {
    key: u32,
    dimension: u32,
    sample: u32,
    sobol: u32,
}

fn seed_hash(seed_lo: u32, seed_hi: u32) -> u32 {
    return pcg_hash(seed_lo ^ pcg_hash(seed_hi));
}

// An independent stream keyed by (seed, pixel, sample); streams that are not camera samples put
// their own index and a tag here (SampleStream::new).
fn sample_stream(seed_lo: u32, seed_hi: u32, pixel: u32, sample: u32) -> SampleStream {
    let s = seed_hash(seed_lo, seed_hi);
    return SampleStream(pcg_hash(s ^ pcg_hash(pixel ^ pcg_hash(sample))), 0u, 0u, 0u);
}

// The stream of camera sample `sample` (its global index) of `pixel` (SampleStream::camera).
fn camera_stream(seed_lo: u32, seed_hi: u32, pixel: u32, sample: u32, sampler: u32) -> SampleStream {
    if sampler == SAMPLER_INDEPENDENT {
        return sample_stream(seed_lo, seed_hi, pixel, sample);
    }
    return SampleStream(pcg_hash(seed_hash(seed_lo, seed_hi) ^ pcg_hash(pixel)), 0u, sample, 1u);
}

// Component 1 of the Sobol sequence (sobol_dimension1); component 0 is reverseBits(index).
fn sobol_dimension1(index: u32) -> u32 {
    var i = index;
    var v = 0x80000000u;
    var x = 0u;
    while i != 0u {
        if (i & 1u) != 0u {
            x ^= v;
        }
        i >>= 1u;
        v ^= v >> 1u;
    }
    return x;
}

// Burley's hash-based nested uniform (Owen) scramble (owen_scramble).
fn owen_scramble(x: u32, seed: u32) -> u32 {
    var v = reverseBits(x);
    v += seed;
    v ^= v * 0x6c50b47cu;
    v ^= v * 0xb82f1e52u;
    v ^= v * 0xc7afe638u;
    v ^= v * 0x8d22f6e6u;
    return reverseBits(v);
}

// Dimension `dimension` of sample `index` of the Sobol stream keyed by `key` (sobol_bits).
fn sobol_bits(key: u32, index: u32, dimension: u32) -> u32 {
    let pair_seed = pcg_hash(key ^ pcg_hash(dimension / 2u));
    let shuffled = owen_scramble(index, pcg_hash(pair_seed));
    let component = dimension % 2u;
    var point = reverseBits(shuffled);
    if component != 0u {
        point = sobol_dimension1(shuffled);
    }
    return owen_scramble(point, pcg_hash(pair_seed + 1u + component));
}

fn next_f32(stream: ptr<function, SampleStream>) -> f32 {
    var bits: u32;
    if (*stream).sobol != 0u {
        bits = sobol_bits((*stream).key, (*stream).sample, (*stream).dimension);
    } else {
        bits = pcg_hash((*stream).key ^ pcg_hash((*stream).dimension));
    }
    (*stream).dimension += 1u;
    return f32(bits >> 8u) * (1.0 / 16777216.0);
}

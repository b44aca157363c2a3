// Deterministic random numbers: the PCG hash of (seed, pixel, sample, dimension).
// Twin of src/render/sampling.rs; the same inputs give the same numbers on the CPU and the GPU.

fn pcg_hash(input: u32) -> u32 {
    let state = input * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

struct SampleStream {
    key: u32,
    dimension: u32,
}

fn sample_stream(seed_lo: u32, seed_hi: u32, pixel: u32, sample: u32) -> SampleStream {
    let s = pcg_hash(seed_lo ^ pcg_hash(seed_hi));
    return SampleStream(pcg_hash(s ^ pcg_hash(pixel ^ pcg_hash(sample))), 0u);
}

fn next_f32(stream: ptr<function, SampleStream>) -> f32 {
    let bits = pcg_hash((*stream).key ^ pcg_hash((*stream).dimension));
    (*stream).dimension += 1u;
    return f32(bits >> 8u) * (1.0 / 16777216.0);
}

//! Deterministic random numbers and sampling helpers shared by both backends.
//!
//! Every random number is a hash of (seed, pixel, sample, dimension), so an image does not
//! depend on how work is split between threads or GPU invocations, and the GPU twin can
//! reproduce the CPU's numbers exactly (the WGSL version uses the same PCG hash).

use glam::Vec2;

/// The PCG-RXS-M-XS 32-bit hash (Jarzynski and Olano, "Hash Functions for GPU Rendering").
#[inline]
pub fn pcg_hash(input: u32) -> u32 {
    let state = input.wrapping_mul(747796405).wrapping_add(2891336453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277803737);
    (word >> 22) ^ word
}

/// A stream of uniform numbers for one (pixel, sample) pair.
#[derive(Clone, Copy, Debug)]
pub struct SampleStream {
    key: u32,
    dimension: u32,
}

impl SampleStream {
    pub fn new(seed: u64, pixel: u32, sample: u32) -> SampleStream {
        let s = pcg_hash(seed as u32 ^ pcg_hash((seed >> 32) as u32));
        let key = pcg_hash(s ^ pcg_hash(pixel ^ pcg_hash(sample)));
        SampleStream { key, dimension: 0 }
    }

    /// The next uniform number in [0, 1).
    pub fn next_f32(&mut self) -> f32 {
        let bits = pcg_hash(self.key ^ pcg_hash(self.dimension));
        self.dimension += 1;
        (bits >> 8) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    pub fn next_vec2(&mut self) -> Vec2 {
        let x = self.next_f32();
        Vec2::new(x, self.next_f32())
    }
}

/// Position of sample `index` of `count` in a stratified pattern over the unit square, jittered
/// by `jitter` in [0,1)². With `count == 1` and no jitter wanted, pass (0.5, 0.5).
pub fn stratified_sample(index: u32, count: u32, jitter: Vec2) -> Vec2 {
    let count = count.max(1);
    let cols = (count as f32).sqrt().ceil() as u32;
    let rows = count.div_ceil(cols);
    let cell = Vec2::new((index % cols) as f32, (index / cols) as f32);
    (cell + jitter) / Vec2::new(cols as f32, rows as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_streams_are_uniform_and_reproducible() {
        let mut sum = 0.0f64;
        let n = 100_000;
        for i in 0..n {
            let mut s = SampleStream::new(7, i, 3);
            let x = s.next_f32();
            assert!((0.0..1.0).contains(&x));
            sum += x as f64;
            assert_eq!(x, SampleStream::new(7, i, 3).next_f32());
        }
        assert!((sum / n as f64 - 0.5).abs() < 0.005);
    }

    #[test]
    fn stratified_samples_fill_distinct_cells() {
        let pts: Vec<Vec2> = (0..4)
            .map(|i| stratified_sample(i, 4, Vec2::splat(0.5)))
            .collect();
        assert_eq!(
            pts,
            vec![
                Vec2::new(0.25, 0.25),
                Vec2::new(0.75, 0.25),
                Vec2::new(0.25, 0.75),
                Vec2::new(0.75, 0.75)
            ]
        );
    }
}

//! Deterministic random numbers and sampling helpers shared by both backends.
//!
//! Every random number is a function of (seed, pixel, sample, dimension), so an image does not
//! depend on how work is split between threads or GPU invocations, and the GPU twin
//! (shaders/shared/rng.wgsl) reproduces the CPU's numbers exactly. Two kinds of stream:
//! independent streams hash the four inputs with PCG (photons, gather rays, seeding, and camera
//! samples with `sampler independent`); Sobol streams (camera samples with `sampler sobol`) take
//! dimensions in pairs, each pair an Owen-scrambled, index-shuffled 2D Sobol sequence over the
//! pixel's samples.

use crate::scene::Sampler;
use glam::Vec2;

/// The PCG-RXS-M-XS 32-bit hash (Jarzynski and Olano, "Hash Functions for GPU Rendering").
#[inline]
pub fn pcg_hash(input: u32) -> u32 {
    let state = input.wrapping_mul(747796405).wrapping_add(2891336453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277803737);
    (word >> 22) ^ word
}

/// The 64-bit seed folded into 32 bits.
fn seed_hash(seed: u64) -> u32 {
    pcg_hash(seed as u32 ^ pcg_hash((seed >> 32) as u32))
}

/// Component 0 of the Sobol sequence, 32 bits: the van der Corput radical inverse (bit reversal).
#[inline]
pub fn sobol_dimension0(index: u32) -> u32 {
    index.reverse_bits()
}

/// Component 1 of the Sobol sequence, 32 bits: the generator matrix of the primitive polynomial
/// `x + 1`, whose direction numbers are `v_0 = 2^31` and `v_i = v_{i-1} ^ (v_{i-1} >> 1)`.
/// Together with [`sobol_dimension0`] it is a (0,2)-sequence in base 2.
#[inline]
pub fn sobol_dimension1(index: u32) -> u32 {
    let (mut i, mut v, mut x) = (index, 1u32 << 31, 0u32);
    while i != 0 {
        if i & 1 != 0 {
            x ^= v;
        }
        i >>= 1;
        v ^= v >> 1;
    }
    x
}

/// Burley's hash-based nested uniform (Owen) scramble of a 32-bit fraction ("Practical
/// Hash-based Owen Scrambling", 2020): the improved Laine-Karras permutation applied to the
/// reversed bits, so each bit is flipped by a hash of the bits above it. Applied to a sample
/// index, it maps every aligned block of `2^k` indices onto an aligned block of `2^k`.
#[inline]
pub fn owen_scramble(x: u32, seed: u32) -> u32 {
    let mut v = x.reverse_bits();
    v = v.wrapping_add(seed);
    v ^= v.wrapping_mul(0x6c50_b47c);
    v ^= v.wrapping_mul(0xb82f_1e52);
    v ^= v.wrapping_mul(0xc7af_e638);
    v ^= v.wrapping_mul(0x8d22_f6e6);
    v.reverse_bits()
}

/// 32 bits of dimension `dimension` of sample `index` of the Sobol stream keyed by `key`:
/// component `dimension % 2` of 2D point `index` of pair `dimension / 2`. The pair's seeds are
/// hashes of (key, pair): one shuffles the index, one scrambles each coordinate.
pub fn sobol_bits(key: u32, index: u32, dimension: u32) -> u32 {
    let pair_seed = pcg_hash(key ^ pcg_hash(dimension / 2));
    let shuffled = owen_scramble(index, pcg_hash(pair_seed));
    let component = dimension % 2;
    let point = if component == 0 {
        sobol_dimension0(shuffled)
    } else {
        sobol_dimension1(shuffled)
    };
    owen_scramble(point, pcg_hash(pair_seed.wrapping_add(1 + component)))
}

/// A stream of uniform numbers for one (pixel, sample) pair.
#[derive(Clone, Copy, Debug)]
pub struct SampleStream {
    /// Independent: a hash of (seed, pixel, sample). Sobol: a hash of (seed, pixel).
    key: u32,
    dimension: u32,
    /// The sample's index in the pixel's Sobol sequence (0 for independent streams).
    sample: u32,
    sobol: bool,
}

impl SampleStream {
    /// An independent stream keyed by (seed, `pixel`, `sample`). Streams that are not camera
    /// samples put their own index and a tag here (photons: photon index and pass tag).
    pub fn new(seed: u64, pixel: u32, sample: u32) -> SampleStream {
        let key = pcg_hash(seed_hash(seed) ^ pcg_hash(pixel ^ pcg_hash(sample)));
        SampleStream {
            key,
            dimension: 0,
            sample: 0,
            sobol: false,
        }
    }

    /// The stream of camera sample `sample` (the global index, which does not depend on the
    /// sample count) of pixel `pixel`, drawn by `sampler`.
    pub fn camera(seed: u64, pixel: u32, sample: u32, sampler: Sampler) -> SampleStream {
        match sampler {
            Sampler::Independent => SampleStream::new(seed, pixel, sample),
            Sampler::Sobol => SampleStream {
                key: pcg_hash(seed_hash(seed) ^ pcg_hash(pixel)),
                dimension: 0,
                sample,
                sobol: true,
            },
        }
    }

    /// The next dimension this stream draws (GPU rays carry it to continue the stream).
    pub fn dimension(&self) -> u32 {
        self.dimension
    }

    /// The next uniform number in [0, 1), with 24 random bits.
    pub fn next_f32(&mut self) -> f32 {
        let bits = if self.sobol {
            sobol_bits(self.key, self.sample, self.dimension)
        } else {
            pcg_hash(self.key ^ pcg_hash(self.dimension))
        };
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
///
/// Every sample gets a cell of area exactly `1/count`, for any count: the square is cut into
/// `⌊√count⌋` rows, the samples are dealt to the rows as evenly as possible (the first
/// `count mod rows` rows take one more), and a row of `c` samples is `c/count` high and cut into
/// `c` columns. A square count is the plain `√count × √count` grid. (A grid of `⌈√count⌉`
/// columns with its last row part empty, as this was before, under-samples that row's strip:
/// 8 samples, 128 gather rays or light samples were biased.) `shaders/shared/camera.wgsl` is
/// the twin.
pub fn stratified_sample(index: u32, count: u32, jitter: Vec2) -> Vec2 {
    let count = count.max(1);
    let rows = integer_sqrt(count);
    let base = count / rows;
    let extra = count % rows;
    // Rows 0..extra hold base + 1 samples, the rest base.
    let long = extra * (base + 1);
    let (row_start, cells) = if index < long {
        (index / (base + 1) * (base + 1), base + 1)
    } else {
        (long + (index - long) / base * base, base)
    };
    let col = index - row_start;
    Vec2::new(
        (col as f32 + jitter.x) / cells as f32,
        (row_start as f32 + cells as f32 * jitter.y) / count as f32,
    )
}

/// `⌊√n⌋`, at least 1: the rows of [`stratified_sample`] and of the gather's strata. Twin:
/// `integer_sqrt` in `shaders/shared/camera.wgsl`.
pub fn integer_sqrt(n: u32) -> u32 {
    n.isqrt().max(1)
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

    /// Whether `points` (2^k of them) form a (0,k,2)-net in base 2: every elementary interval
    /// of area 2^-k (2^i × 2^(k-i) cells, for every i) holds exactly one point.
    fn is_net(points: &[Vec2], k: u32) -> bool {
        assert_eq!(points.len(), 1 << k);
        (0..=k).all(|i| {
            let mut seen = vec![false; 1 << k];
            points.iter().all(|p| {
                let cx = (p.x * (1u32 << i) as f32) as usize;
                let cy = (p.y * (1u32 << (k - i)) as f32) as usize;
                let cell = (cy << i) | cx;
                !std::mem::replace(&mut seen[cell], true)
            })
        })
    }

    /// Pair `pair` of samples `first..first + count` of a pixel's Sobol streams.
    fn sobol_pair(seed: u64, pixel: u32, pair: u32, first: u32, count: u32) -> Vec<Vec2> {
        (first..first + count)
            .map(|s| {
                let mut stream = SampleStream::camera(seed, pixel, s, Sampler::Sobol);
                for _ in 0..2 * pair {
                    stream.next_f32();
                }
                stream.next_vec2()
            })
            .collect()
    }

    #[test]
    fn sobol_generator_matrices_match_the_published_direction_numbers() {
        // pbrt-v4's SobolMatrices32, dimension 1: the first eight columns.
        let published = [
            0x8000_0000u32,
            0xc000_0000,
            0xa000_0000,
            0xf000_0000,
            0x8800_0000,
            0xcc00_0000,
            0xaa00_0000,
            0xff00_0000,
        ];
        for (bit, column) in published.iter().enumerate() {
            assert_eq!(sobol_dimension1(1 << bit), *column, "column {bit}");
            assert_eq!(sobol_dimension0(1 << bit), 0x8000_0000 >> bit);
        }
        // Columns combine by xor (a linear map over GF(2)).
        assert_eq!(sobol_dimension1(0b101), published[0] ^ published[2]);
    }

    #[test]
    fn unscrambled_sobol_points_are_a_0_2_sequence() {
        for k in 0..=12 {
            for block in [0u32, 1, 3] {
                let first = block << k;
                let points: Vec<Vec2> = (first..first + (1 << k))
                    .map(|i| {
                        let f = |b: u32| (b >> 8) as f32 / (1u32 << 24) as f32;
                        Vec2::new(f(sobol_dimension0(i)), f(sobol_dimension1(i)))
                    })
                    .collect();
                assert!(is_net(&points, k), "k {k} block {block}");
            }
        }
    }

    #[test]
    fn sobol_pairs_are_0_2_nets_in_every_power_of_two_prefix_and_block() {
        for k in 0..=8u32 {
            for pixel in [0u32, 1, 77, 4095, 123_456] {
                for pair in 0..4 {
                    for block in [0u32, 1, 6] {
                        let points = sobol_pair(42, pixel, pair, block << k, 1 << k);
                        assert!(
                            is_net(&points, k),
                            "k {k} pixel {pixel} pair {pair} block {block}: {points:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn owen_scrambling_keeps_every_sample_uniform() {
        // Each sample of a scrambled net is uniform on [0,1)²: over many pixels, sample 5's
        // first pair falls into each of 16 × 16 cells about equally often (a chi-square test
        // with 255 degrees of freedom; 400 is beyond its 99.999th percentile).
        let pixels = 256 * 64;
        let mut counts = vec![0u32; 256];
        for pixel in 0..pixels {
            let p = sobol_pair(9, pixel, 0, 5, 1)[0];
            counts[(p.y * 16.0) as usize * 16 + (p.x * 16.0) as usize] += 1;
        }
        let expected = pixels as f64 / 256.0;
        let chi2: f64 = counts
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 400.0, "chi-square {chi2}");
    }

    #[test]
    fn sobol_numbers_lie_in_the_unit_interval_with_24_bits() {
        for pixel in 0..200 {
            for s in 0..64 {
                let mut stream = SampleStream::camera(3, pixel, s, Sampler::Sobol);
                for _ in 0..8 {
                    let x = stream.next_f32();
                    assert!((0.0..1.0).contains(&x), "{x}");
                    assert_eq!(x * (1u32 << 24) as f32, (x * (1u32 << 24) as f32).floor());
                }
            }
        }
        // The largest value a stream can return is below 1.
        assert!(((u32::MAX >> 8) as f32 * (1.0 / (1u32 << 24) as f32)) < 1.0);
    }

    /// The correlation coefficient of two equally long series.
    fn correlation(a: &[f32], b: &[f32]) -> f64 {
        let n = a.len() as f64;
        let mean = |v: &[f32]| v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let (ma, mb) = (mean(a), mean(b));
        let cov: f64 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| (x as f64 - ma) * (y as f64 - mb))
            .sum();
        let var = |v: &[f32], m: f64| v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>();
        cov / (var(a, ma) * var(b, mb)).sqrt()
    }

    #[test]
    fn different_pixels_and_pairs_draw_decorrelated_points() {
        // Sample s of neighbouring pixels, and pairs 0 and 1 of one pixel, over 64 samples of
        // 500 pixels: 32,000 couples. Independent uniforms would give a correlation with a
        // standard deviation of 1/sqrt(32000) ≈ 0.0056; 0.03 is over five of them.
        let (mut x0, mut x_next_pixel, mut x_pair1, mut y_pair1) = (vec![], vec![], vec![], vec![]);
        for pixel in 0..500u32 {
            let a = sobol_pair(5, pixel, 0, 0, 64);
            let b = sobol_pair(5, pixel + 1, 0, 0, 64);
            let c = sobol_pair(5, pixel, 1, 0, 64);
            assert_ne!(a, b, "pixel {pixel}");
            assert_ne!(a, c, "pixel {pixel}");
            x0.extend(a.iter().map(|p| p.x));
            x_next_pixel.extend(b.iter().map(|p| p.x));
            x_pair1.extend(c.iter().map(|p| p.x));
            y_pair1.extend(c.iter().map(|p| p.y));
        }
        for (what, other) in [
            ("the next pixel's x", &x_next_pixel),
            ("pair 1's x", &x_pair1),
            ("pair 1's y", &y_pair1),
        ] {
            let r = correlation(&x0, other);
            assert!(r.abs() < 0.03, "{what}: correlation {r}");
        }
    }

    #[test]
    fn independent_camera_streams_are_the_tagged_pcg_streams() {
        for pixel in [0u32, 9, 1 << 20] {
            for s in 0..9 {
                let mut a = SampleStream::camera(11, pixel, s, Sampler::Independent);
                let mut b = SampleStream::new(11, pixel, s);
                for _ in 0..6 {
                    assert_eq!(a.next_f32().to_bits(), b.next_f32().to_bits());
                }
            }
        }
    }

    /// The first three numbers of `SampleStream::new(0x1234_5678_9abc_def0, 17, 3)`, as f32
    /// bits, computed from the PCG formula before the Sobol sampler existed.
    const PCG_GOLDEN: [u32; 3] = [0x3e03_f944, 0x3e78_95bc, 0x3c50_7300];

    #[test]
    fn pcg_streams_keep_their_numbers() {
        // Photon, gather and seeding streams (and `sampler independent`) must not change:
        // these are the numbers of the stream before the Sobol sampler was added.
        let mut stream = SampleStream::new(0x1234_5678_9abc_def0, 17, 3);
        let bits: Vec<u32> = (0..3).map(|_| stream.next_f32().to_bits()).collect();
        assert_eq!(bits, PCG_GOLDEN);
    }

    /// Every count's cells tile the unit square with equal areas: the cell of each sample (its
    /// jitter 0 and 1 corners) has area 1/count, and the cells do not overlap, so a jittered
    /// pattern is uniform in expectation at any count (8, 128 and 200 included).
    #[test]
    fn stratified_cells_have_equal_area_and_tile_the_square_at_any_count() {
        for count in [1u32, 2, 3, 5, 8, 12, 16, 17, 64, 128, 200, 256, 1000] {
            let mut area = 0.0f64;
            let mut cells = Vec::new();
            for i in 0..count {
                let a = stratified_sample(i, count, Vec2::ZERO);
                let b = stratified_sample(i, count, Vec2::ONE);
                let cell = (b - a).as_dvec2();
                assert!(
                    (cell.x * cell.y - 1.0 / count as f64).abs() < 1e-6,
                    "count {count}, sample {i}: cell {cell}"
                );
                area += cell.x * cell.y;
                cells.push((a, b));
            }
            assert!((area - 1.0).abs() < 1e-5, "count {count}: area {area}");
            for (i, (a, b)) in cells.iter().enumerate() {
                for (c, d) in &cells[i + 1..] {
                    let overlap = (b.min(*d) - a.max(*c)).max(Vec2::ZERO);
                    assert!(overlap.x * overlap.y < 1e-9, "count {count}: cells overlap");
                }
            }
        }
    }

    #[test]
    fn integer_sqrt_is_the_floor_of_the_root() {
        for n in 1..100_000u32 {
            let r = integer_sqrt(n);
            assert!(r * r <= n && (r + 1) * (r + 1) > n, "{n}: {r}");
        }
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

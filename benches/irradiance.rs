//! Irradiance interpolation throughput: the GPU kernel (`gpu::irradiance`, with and without
//! naga's runtime checks) and the CPU twin (`cpu::gather::IrradianceCache::irradiance`) on all
//! cores (rayon), in interpolations per second (median of runs after one warm-up). GPU figures
//! are the wall time of submit and wait, and the GPU timestamps of the passes when the adapter
//! has them; the samples' kd-tree is built by the GPU builder (timed apart). A sample of the
//! GPU's answers is checked against the CPU's.
//!
//! `cargo bench --bench irradiance -- [--samples N] [--queries Q] [--runs R] [--cpu-queries C]`
//! (defaults: 16384 samples, 1M queries, 5 runs, every query on the CPU too). The samples lie on
//! a unit sphere and on the floor below it, as a final gather's seeds would; the queries are
//! shading points near random samples (most interpolate, some fall back, a few get nothing).

mod support;

use std::time::Instant;

use caustica::cpu::gather::IrradianceCache;
use caustica::gpu::irradiance::{IrradianceKernels, IrradianceOutput};
use caustica::gpu::kdtree::KdTreeBuilder;
use caustica::gpu::kernel::{read_buffer, storage_buffer, Checks};
use caustica::gpu::upload::{GpuIrradianceSample, GpuShadingPoint};
use caustica::gpu::GpuBuffer;
use caustica::gpu::{GpuContext, GpuError};
use caustica::render::gather::IrradianceSample;
use glam::Vec3;
use rayon::prelude::*;
use support::{median, time_dispatches};

struct Options {
    samples: usize,
    queries: usize,
    runs: usize,
    cpu_queries: usize,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| -> Option<f64> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
    };
    let queries = arg("--queries").map_or(1_000_000, |v| v as usize);
    Options {
        samples: arg("--samples").map_or(16_384, |v| v as usize),
        queries,
        runs: arg("--runs").map_or(5, |v| v as usize).max(1),
        cpu_queries: arg("--cpu-queries").map_or(queries, |v| v as usize),
    }
}

/// A small deterministic generator (xorshift64*), uniform floats in [0, 1).
struct Random(u64);

impl Random {
    fn f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32) / (1u64 << 24) as f32
    }
    fn unit_vector(&mut self) -> Vec3 {
        loop {
            let v = Vec3::new(self.f32(), self.f32(), self.f32()) * 2.0 - 1.0;
            let l = v.length_squared();
            if l > 1e-4 && l <= 1.0 {
                return v / l.sqrt();
            }
        }
    }
}

/// Half the samples on the unit sphere (outward normals), half on the floor y = −1 over
/// [−3, 3]², with radii from 0.02 to 0.5 and irradiance from 0 to 10 per channel.
fn make_samples(n: usize, rng: &mut Random) -> Vec<IrradianceSample> {
    (0..n)
        .map(|i| {
            let (position, normal) = if i % 2 == 0 {
                let p = rng.unit_vector();
                (p, p)
            } else {
                let p = Vec3::new(6.0 * rng.f32() - 3.0, -1.0, 6.0 * rng.f32() - 3.0);
                (p, Vec3::Y)
            };
            IrradianceSample {
                position,
                normal,
                irradiance: 10.0 * Vec3::new(rng.f32(), rng.f32(), rng.f32()),
                radius: 0.02 + 0.48 * rng.f32(),
                // The gradient changes no search, only a dot product per sample used.
                gradient: [Vec3::new(1.0, 0.0, 0.5); 3],
            }
        })
        .collect()
}

/// Shading points within a sample's radius of a random sample, with its normal tilted by up to
/// about 30° (one in eight turned away).
fn make_queries(samples: &[IrradianceSample], count: usize, rng: &mut Random) -> Vec<(Vec3, Vec3)> {
    (0..count)
        .map(|q| {
            let s = &samples[(rng.f32() * samples.len() as f32) as usize % samples.len()];
            let x = s.position + s.radius * rng.f32() * rng.unit_vector();
            let n = (s.normal + 0.5 * rng.f32() * rng.unit_vector()).normalize();
            (x, if q % 8 == 7 { -n } else { n })
        })
        .collect()
}

fn rate(count: usize, seconds: f64) -> String {
    let r = count as f64 / seconds;
    if r >= 1e6 {
        format!("{:.2} M interpolations/s", r / 1e6)
    } else {
        format!("{:.1} k interpolations/s", r / 1e3)
    }
}

/// Times both kernel variants over all queries (in chunks that fit one binding) and checks every
/// 997th answer against the CPU.
fn bench_gpu(
    ctx: &GpuContext,
    cache: &IrradianceCache,
    queries: &[(Vec3, Vec3)],
    o: &Options,
) -> Result<(), GpuError> {
    let gpu_samples: Vec<GpuIrradianceSample> = cache
        .samples
        .iter()
        .map(GpuIrradianceSample::from)
        .collect();
    let points: Vec<GpuShadingPoint> = queries
        .iter()
        .map(|&(x, n)| GpuShadingPoint {
            position: x.to_array(),
            pixel: 0,
            normal: n.to_array(),
            node: 0,
        })
        .collect();
    let sample_buffer = storage_buffer(ctx, "irradiance samples", &gpu_samples)?;
    let position_buffer = storage_buffer(ctx, "irradiance sample positions", &cache.points)?;
    let builder = KdTreeBuilder::new(ctx)?;
    // One build to warm up, one timed (its submit and the wait for it).
    builder.build(ctx, &position_buffer, cache.points.len() as u32)?;
    ctx.wait_idle()?;
    let start = Instant::now();
    let tree = builder.build(ctx, &position_buffer, cache.points.len() as u32)?;
    ctx.wait_idle()?;
    println!(
        "  GPU kd-tree over the samples: {:.2} ms ({} words)",
        start.elapsed().as_secs_f64() * 1e3,
        tree.counts(ctx)?.word_count
    );
    let chunk = IrradianceKernels::max_queries(ctx).max(1) as usize;
    let buffers: Vec<(usize, GpuBuffer)> = (0..points.len())
        .step_by(chunk)
        .map(|first| {
            let end = (first + chunk).min(points.len());
            storage_buffer(ctx, "shading points", &points[first..end]).map(|b| (first, b))
        })
        .collect::<Result<_, _>>()?;
    for checks in [Checks::Checked, Checks::Unchecked] {
        let kernels = IrradianceKernels::with_checks(ctx, checks)?;
        let mut dispatches = Vec::new();
        let mut outputs: Vec<(usize, IrradianceOutput)> = Vec::new();
        for (first, buffer) in &buffers {
            let n = chunk.min(points.len() - first) as u32;
            let (dispatch, output) = kernels.prepare(ctx, &sample_buffer, &tree, buffer, n)?;
            dispatches.push(dispatch);
            outputs.push((*first, output));
        }
        let (wall, gpu) = time_dispatches(ctx, &dispatches, o.runs)?;
        let (mut checked, mut exact, mut worst) = (0usize, 0usize, 0.0f32);
        for (first, output) in &outputs {
            output.check(ctx)?;
            let got: Vec<[f32; 4]> =
                read_buffer(ctx, &output.irradiance, output.query_count as usize)?;
            for q in (0..got.len()).step_by(997) {
                let (x, n) = queries[first + q];
                let cpu = cache.irradiance(x, n);
                let g = Vec3::new(got[q][0], got[q][1], got[q][2]);
                checked += 1;
                exact += usize::from(g == cpu);
                worst =
                    worst.max((g - cpu).abs().max_element() / cpu.abs().max_element().max(1e-30));
            }
        }
        println!(
            "  GPU ({checks:?}): wall {} ({:.1} ms), GPU {}; {exact}/{checked} sampled answers \
             equal the CPU's bit for bit, worst relative difference {worst:.1e}",
            rate(queries.len(), wall),
            wall * 1e3,
            gpu.map_or("no timestamps".to_string(), |g| format!(
                "{} ({:.1} ms)",
                rate(queries.len(), g),
                g * 1e3
            )),
        );
    }
    Ok(())
}

fn main() -> Result<(), GpuError> {
    let o = options();
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("irradiance: no GPU ({e}); timing the CPU only");
            None
        }
    };
    let cpu_count = o.cpu_queries.min(o.queries);
    println!(
        "{}; {} samples, {} queries (CPU: {cpu_count}), {} runs, {} CPU threads",
        ctx.as_ref().map_or("no GPU".to_string(), |c| format!(
            "{} ({})",
            c.info.name, c.info.backend
        )),
        o.samples,
        o.queries,
        o.runs,
        rayon::current_num_threads()
    );
    if o.samples == 0 || o.queries == 0 {
        println!("nothing to interpolate");
        return Ok(());
    }
    let mut rng = Random(0x9e37_79b9_7f4a_7c15);
    let samples = make_samples(o.samples, &mut rng);
    let queries = make_queries(&samples, o.queries, &mut rng);
    let start = Instant::now();
    let cache = IrradianceCache::new(samples);
    println!(
        "  CPU kd-tree over the samples: {:.2} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    if let Some(ctx) = &ctx {
        bench_gpu(ctx, &cache, &queries, &o)?;
    }
    if cpu_count > 0 {
        let mut times = Vec::new();
        let mut checksum = 0.0f64;
        for _ in 0..o.runs.min(3) {
            let start = Instant::now();
            let sum: f64 = queries[..cpu_count]
                .par_iter()
                .map(|&(x, n)| cache.irradiance(x, n).x as f64)
                .sum();
            times.push(start.elapsed().as_secs_f64());
            checksum = sum;
        }
        let t = median(times);
        println!(
            "  CPU twin (rayon): {} ({:.1} ms; mean red irradiance {:.3})",
            rate(cpu_count, t),
            t * 1e3,
            checksum / cpu_count as f64
        );
    }
    Ok(())
}

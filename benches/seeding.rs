//! Adaptive seeding times: the GPU stage (`gpu::seeding`: wall time of a run plus the wait for
//! its last kernels, and GPU timestamps per part when the adapter has them) and the CPU twin
//! (`cpu::gather::seed_irradiance_samples`), in milliseconds (median of runs after one warm-up),
//! on one synthetic shading point per pixel of a square image (a room with a sphere and a patch
//! of noisy normals), with the default minimum density, and whether both chose the same seeds.
//!
//! `cargo bench --bench seeding -- [--points N] [--seeds K...] [--levels L...] [--runs R]
//! [--cpu-runs R] [--no-cpu]` (default: 1,048,576 points (1024×1024), K = 4096 and 16384,
//! L = 7 and 10, 5 GPU runs, 1 CPU run; without a GPU it times the CPU only).

mod support;

use std::time::Instant;

use caustica::cpu::gather::seed_irradiance_samples;
use caustica::gpu::kernel::{read_buffer, storage_buffer};
use caustica::gpu::prims::Primitives;
use caustica::gpu::seeding::{SeedingKernels, SeedingSettings, SeedingTimes};
use caustica::gpu::upload::GpuShadingPoint;
use caustica::gpu::GpuBuffer;
use caustica::gpu::{GpuContext, GpuError};
use caustica::render::gather::ShadingPoint;
use caustica::scene::DEFAULT_MIN_SEED_DENSITY;
use glam::Vec3;
use support::median;

struct Options {
    points: usize,
    seeds: Vec<u32>,
    levels: Vec<u32>,
    runs: usize,
    cpu_runs: usize,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Options {
        points: 1 << 20,
        seeds: Vec::new(),
        levels: Vec::new(),
        runs: 5,
        cpu_runs: 1,
    };
    let mut i = 0;
    while i < args.len() {
        let value = |k: usize| args.get(k).and_then(|v| v.parse::<usize>().ok());
        match args[i].as_str() {
            "--points" => {
                o.points = value(i + 1).unwrap_or(o.points);
                i += 1;
            }
            "--seeds" => {
                while let Some(k) = value(i + 1) {
                    o.seeds.push(k as u32);
                    i += 1;
                }
            }
            "--levels" => {
                while let Some(l) = value(i + 1) {
                    o.levels.push(l as u32);
                    i += 1;
                }
            }
            "--runs" => {
                o.runs = value(i + 1).unwrap_or(o.runs);
                i += 1;
            }
            "--cpu-runs" => {
                o.cpu_runs = value(i + 1).unwrap_or(o.cpu_runs);
                i += 1;
            }
            "--no-cpu" => o.cpu_runs = 0,
            _ => {}
        }
        i += 1;
    }
    if o.seeds.is_empty() {
        o.seeds = vec![4096, 16384];
    }
    if o.levels.is_empty() {
        o.levels = vec![7, 10];
    }
    o.runs = o.runs.max(1);
    o
}

/// xorshift64* floats in [0, 1).
struct Random(u64);

impl Random {
    fn unit(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32) / (1u32 << 24) as f32
    }
}

/// One shading point per pixel of a `side × side` image (the first `n` pixels): a floor, a
/// back wall, a sphere in front and a patch of noisy normals.
fn frame(n: usize, side: u32) -> Vec<ShadingPoint> {
    let mut r = Random(0x9e37_79b9_7f4a_7c15);
    (0..n as u32)
        .map(|pixel| {
            let (x, y) = (pixel % side, pixel / side);
            let u = (x as f32 + 0.5) / side as f32 * 2.0 - 1.0;
            let v = 1.0 - (y as f32 + 0.5) / side as f32 * 2.0;
            let (position, normal) = if u * u + (v + 0.2) * (v + 0.2) < 0.25 {
                let (sx, sy) = (u * 2.0, (v + 0.2) * 2.0);
                let sz = (1.0 - sx * sx - sy * sy).max(0.0).sqrt();
                let n = Vec3::new(sx, sy, -sz).normalize_or_zero();
                (Vec3::new(0.0, -0.2, 2.0) + 0.5 * n, n)
            } else if v < -0.3 {
                (Vec3::new(u * 3.0, -1.0, 1.0 / (-v)), Vec3::Y)
            } else if u > 0.6 && v > 0.3 {
                let n = Vec3::new(r.unit() - 0.5, r.unit() - 0.5, -1.0).normalize();
                (Vec3::new(u * 3.0, v * 3.0, 4.0), n)
            } else {
                (Vec3::new(u * 3.0, v * 3.0, 4.0), -Vec3::Z)
            };
            ShadingPoint {
                position,
                normal,
                weight: Vec3::ONE,
                pixel,
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn bench_gpu(
    ctx: &GpuContext,
    prims: &Primitives,
    kernels: &SeedingKernels,
    buffer: &GpuBuffer,
    n: u32,
    settings: &SeedingSettings,
    runs: usize,
    reference: Option<&[u32]>,
) -> Result<(), GpuError> {
    let mut walls = Vec::new();
    let mut parts: Vec<SeedingTimes> = Vec::new();
    let mut last = None;
    for run in 0..=runs {
        // Idle, and the last run's buffers back in the pool (as between frames).
        ctx.recycle_buffers()?;
        let start = Instant::now();
        let out = kernels.seed_with_stats(ctx, prims, buffer, n, settings, &mut || Ok(()))?;
        ctx.wait_idle()?;
        let wall = start.elapsed().as_secs_f64() * 1e3;
        if run > 0 {
            walls.push(wall);
            parts.extend(out.stats.gpu);
        }
        last = Some(out);
    }
    let Some(out) = last else {
        return Ok(());
    };
    println!(
        "  GPU       {:9.2} ms wall   {} seeds, {} nodes, {} leaves, {} read-backs",
        median(walls),
        out.count,
        out.stats.nodes,
        out.stats.leaves,
        out.stats.host_readbacks,
    );
    if !parts.is_empty() {
        let m = |f: fn(&SeedingTimes) -> f64| median(parts.iter().map(f).collect());
        println!(
            "            GPU timestamps: total {:.2} ms = codes+sort+levels {:.2} + node sums/means/errors {:.2} + distribute+select {:.2}",
            m(SeedingTimes::total_ms),
            m(|t| t.structure_ms),
            m(|t| t.nodes_ms),
            m(|t| t.select_ms),
        );
    }
    if let Some(reference) = reference {
        let seeds: Vec<u32> = read_buffer(ctx, &out.seeds, out.count as usize)?;
        println!(
            "            same seeds as the CPU twin: {}",
            if seeds == reference { "yes" } else { "NO" }
        );
    }
    Ok(())
}

fn main() -> Result<(), GpuError> {
    let o = options();
    let side = (o.points as f64).sqrt().ceil().max(1.0) as u32;
    let points = frame(o.points, side);
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("seeding: no GPU ({e}); timing the CPU twin only");
            None
        }
    };
    let gpu = match &ctx {
        Some(ctx) => {
            println!(
                "adapter: {} ({}, {}), driver {}, timestamps {}",
                ctx.info.name,
                ctx.info.backend,
                ctx.info.device_type,
                ctx.info.driver,
                if ctx.info.features.timestamps {
                    "yes"
                } else {
                    "no"
                }
            );
            let gpu_points: Vec<GpuShadingPoint> = points
                .iter()
                .enumerate()
                .map(|(i, p)| GpuShadingPoint::from_point(p, i as u32))
                .collect();
            Some((
                Primitives::new(ctx)?,
                SeedingKernels::new(ctx)?.with_timestamps(true),
                storage_buffer(ctx, "bench shading points", &gpu_points)?,
            ))
        }
        None => None,
    };
    println!(
        "{} shading points ({side}×{side} pixels); median of {} GPU runs (after a warm-up) and {} CPU runs",
        o.points, o.runs, o.cpu_runs
    );
    for &levels in &o.levels {
        for &seeds in &o.seeds {
            let settings = SeedingSettings {
                width: side,
                height: side,
                levels,
                seeds,
                min_density: DEFAULT_MIN_SEED_DENSITY,
                alpha: 10.0 / 3.0,
                seed: 1,
            };
            println!("L = {levels}, K = {seeds}:");
            let mut reference = None;
            if o.cpu_runs > 0 {
                let mut times = Vec::new();
                for _ in 0..o.cpu_runs {
                    let start = Instant::now();
                    let chosen = seed_irradiance_samples(&points, &settings);
                    times.push(start.elapsed().as_secs_f64() * 1e3);
                    reference = Some(chosen);
                }
                println!(
                    "  CPU twin  {:9.2} ms       ({} rayon threads)",
                    median(times),
                    rayon::current_num_threads()
                );
            }
            if let (Some(ctx), Some((prims, kernels, buffer))) = (&ctx, &gpu) {
                if let Err(e) = bench_gpu(
                    ctx,
                    prims,
                    kernels,
                    buffer,
                    o.points as u32,
                    &settings,
                    o.runs,
                    reference.as_deref(),
                ) {
                    println!("  GPU refused: {e}");
                }
            }
        }
    }
    Ok(())
}

//! Point kd-tree build times: the GPU builder (wall time of `build` plus the wait for its last
//! kernels, and GPU timestamps per stage when the adapter has them) and the CPU twin, on uniform
//! and clustered points, in milliseconds (median of runs after one warm-up) and millions of
//! points per second.
//!
//! `cargo bench --bench kdtree_build -- [--points N...] [--runs R] [--cpu-runs R] [--no-cpu]`
//! (default: 1M and 10M points, 5 GPU runs, 3 CPU runs; without a GPU it times the CPU only).

mod support;

use std::time::Instant;

use caustica::accel::kdtree::{build_point_kdtree, validate_point_kdtree};
use caustica::gpu::kdtree::{KdStageTimes, KdTreeBuilder};
use caustica::gpu::kernel::{read_buffer, storage_buffer};
use caustica::gpu::{GpuContext, GpuError};
use support::median;

struct Options {
    points: Vec<usize>,
    runs: usize,
    cpu_runs: usize,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut points = Vec::new();
    let mut runs = 5;
    let mut cpu_runs = 3;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--points" => {
                while let Some(n) = args.get(i + 1).and_then(|v| v.parse().ok()) {
                    points.push(n);
                    i += 1;
                }
            }
            "--runs" => {
                runs = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(runs);
                i += 1;
            }
            "--cpu-runs" => {
                cpu_runs = args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(cpu_runs);
                i += 1;
            }
            "--no-cpu" => cpu_runs = 0,
            _ => {}
        }
        i += 1;
    }
    if points.is_empty() {
        points = vec![1_000_000, 10_000_000];
    }
    Options {
        points,
        runs: runs.max(1),
        cpu_runs,
    }
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
    fn normal(&mut self) -> f32 {
        let u = self.unit().max(1e-7);
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * self.unit()).cos()
    }
}

fn uniform(n: usize) -> Vec<[f32; 4]> {
    let mut r = Random(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|_| [r.unit() * 10.0, r.unit() * 10.0, r.unit() * 10.0, 0.0])
        .collect()
}

/// Photon-map-like: 64 gaussian blobs of very different sizes in a mostly empty box.
fn clustered(n: usize) -> Vec<[f32; 4]> {
    let mut r = Random(0x1234_5678_9abc_def1);
    let blobs: Vec<([f32; 3], f32)> = (0..64)
        .map(|i| {
            let c = [r.unit() * 100.0, r.unit() * 100.0, r.unit() * 100.0];
            (c, 0.05 * 3f32.powi(i % 4))
        })
        .collect();
    (0..n)
        .map(|_| {
            let (c, s) = blobs[((r.unit() * 64.0) as usize).min(63)];
            [
                c[0] + s * r.normal(),
                c[1] + s * r.normal(),
                c[2] + s * r.normal(),
                0.0,
            ]
        })
        .collect()
}

fn mpts(n: usize, ms: f64) -> f64 {
    n as f64 / (ms * 1e3)
}

fn bench_gpu(
    ctx: &GpuContext,
    builder: &KdTreeBuilder,
    points: &[[f32; 4]],
    runs: usize,
    reference: Option<&[u32]>,
) -> Result<(), GpuError> {
    let n = points.len();
    let buffer = storage_buffer(ctx, "bench points", points)?;
    let mut walls = Vec::new();
    let mut stages: Vec<KdStageTimes> = Vec::new();
    let mut last = None;
    for run in 0..=runs {
        // Idle, and the last run's buffers back in the pool (as between frames).
        ctx.recycle_buffers()?;
        let start = Instant::now();
        let tree = builder.build(ctx, &buffer, n as u32)?;
        ctx.wait_idle()?;
        let wall = start.elapsed().as_secs_f64() * 1e3;
        if run > 0 {
            walls.push(wall);
            stages.extend(tree.stats.gpu);
        }
        last = Some(tree);
    }
    let Some(tree) = last else {
        return Ok(());
    };
    let wall = median(walls);
    let counts = tree.counts(ctx)?;
    let variant = if builder.uses_subgroups {
        "subgroups"
    } else {
        "shared memory"
    };
    println!(
        "  GPU ({variant:13}) {wall:9.2} ms wall  {:8.2} Mpts/s   {} words, {} nodes, {} leaves, depth {}, {} levels, {} launches, {} read-backs",
        mpts(n, wall),
        counts.word_count,
        counts.nodes,
        counts.leaves,
        counts.max_branch_depth,
        tree.stats.levels,
        tree.stats.kernel_launches,
        tree.stats.host_readbacks,
    );
    if !stages.is_empty() {
        let m = |f: fn(&KdStageTimes) -> f64| median(stages.iter().map(f).collect());
        let total = m(KdStageTimes::total_ms);
        println!(
            "      GPU timestamps: total {total:.2} ms ({:.2} Mpts/s) = init+sort {:.2} + large {:.2} + small {:.2} + sizes {:.2} + write {:.2}",
            mpts(n, total),
            m(|t| t.init_ms),
            m(|t| t.large_ms),
            m(|t| t.small_ms),
            m(|t| t.sizes_ms),
            m(|t| t.write_ms),
        );
    }
    if let Some(reference) = reference {
        let words: Vec<u32> = read_buffer(ctx, &tree.words, counts.word_count as usize)?;
        let same = words == reference;
        println!(
            "      same words as the CPU twin: {}",
            if same { "yes" } else { "NO" }
        );
        if !same {
            match validate_point_kdtree(&words, points) {
                Ok(_) => println!("      (the GPU tree is valid)"),
                Err(e) => println!("      the GPU tree is INVALID: {e}"),
            }
        }
    }
    Ok(())
}

fn main() -> Result<(), GpuError> {
    let options = options();
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("kdtree_build: no GPU ({e}); timing the CPU twin only");
            None
        }
    };
    let builders = match &ctx {
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
            let mut b = vec![KdTreeBuilder::new(ctx)?.with_timestamps(true)];
            if ctx.info.features.subgroups {
                b.push(KdTreeBuilder::new_without_subgroups(ctx)?.with_timestamps(true));
            }
            b
        }
        None => Vec::new(),
    };
    println!(
        "median of {} GPU runs (after a warm-up) and {} CPU runs",
        options.runs, options.cpu_runs
    );
    for &n in &options.points {
        for (name, make) in [
            ("uniform", uniform as fn(usize) -> Vec<[f32; 4]>),
            ("clustered", clustered),
        ] {
            let points = make(n);
            println!("{n} points, {name}:");
            let mut reference = None;
            if options.cpu_runs > 0 {
                let mut times = Vec::new();
                for _ in 0..options.cpu_runs {
                    let start = Instant::now();
                    let tree = build_point_kdtree(&points);
                    times.push(start.elapsed().as_secs_f64() * 1e3);
                    reference = Some(tree);
                }
                let ms = median(times);
                if let Some(tree) = &reference {
                    println!(
                        "  CPU twin           {ms:9.2} ms       {:8.2} Mpts/s   {} words, {} nodes, {} leaves, depth {}",
                        mpts(n, ms),
                        tree.words.len(),
                        tree.node_count,
                        tree.leaf_count,
                        tree.max_branch_depth
                    );
                }
            }
            if let Some(ctx) = &ctx {
                for builder in &builders {
                    let reference = reference.as_ref().map(|t| t.words.as_slice());
                    if let Err(e) = bench_gpu(ctx, builder, &points, options.runs, reference) {
                        println!("  GPU refused: {e}");
                    }
                }
            }
        }
    }
    Ok(())
}

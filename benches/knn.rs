//! k-nearest-neighbour query throughput over point kd-trees: the GPU kernels (`gpu::knn`, with
//! and without naga's runtime checks; the neighbour lists and the photon density estimate) and
//! the CPU twin on all cores (rayon), on uniform and clustered photon-like points, in queries per
//! second (median of runs after one warm-up). GPU figures are the wall time of submit and wait,
//! and the GPU timestamps of the query passes when the adapter has them. A sample of the GPU's
//! answers is checked against the CPU's.
//!
//! `cargo bench --bench knn -- [--points N] [--queries Q] [--k K] [--runs R] [--cpu-queries C]
//! [--radius R] [--sorted]` (`--sorted`: the queries in 3D Morton order; defaults: 1M points, 1M queries at jittered point positions, k = 64, 5 runs,
//! every query on the CPU too, no radius). The tree is built by the GPU builder when there is a
//! GPU (and read back for the CPU), otherwise by the CPU twin.

mod support;

use std::time::Instant;

use caustica::accel::kdtree::build_point_kdtree;
use caustica::accel::knn::{knn, Neighbour};
use caustica::accel::photon_estimate::{
    octahedral_encode, photon_flux_density, EstimateFilter, PhotonRecord,
};
use caustica::gpu::kdtree::{GpuKdTree, KdTreeBuilder};
use caustica::gpu::kernel::{read_buffer, storage_buffer, Checks};
use caustica::gpu::knn::{check_status, KnnQueries};
use caustica::gpu::GpuBuffer;
use caustica::gpu::{GpuContext, GpuError};
use glam::Vec3;
use rayon::prelude::*;
use support::{median, time_dispatches};

struct Options {
    points: usize,
    queries: usize,
    k: u32,
    runs: usize,
    cpu_queries: usize,
    max_dist2: f32,
    sorted: bool,
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
        points: arg("--points").map_or(1_000_000, |v| v as usize),
        queries,
        k: arg("--k").map_or(64, |v| v as u32),
        runs: arg("--runs").map_or(5, |v| v as usize).max(1),
        cpu_queries: arg("--cpu-queries").map_or(queries, |v| v as usize),
        max_dist2: arg("--radius").map_or(f32::INFINITY, |r| (r * r) as f32),
        sorted: args.iter().any(|a| a == "--sorted"),
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
    fn gaussian(&mut self) -> f32 {
        let u1 = self.f32().max(1e-7);
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * self.f32()).cos()
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

/// Photon-like points: uniform in the unit cube, or gathered in Gaussian blobs whose sizes span
/// three orders of magnitude (caustics beside diffuse light).
fn make_points(n: usize, clustered: bool, rng: &mut Random) -> Vec<[f32; 4]> {
    if !clustered {
        return (0..n)
            .map(|_| [rng.f32(), rng.f32(), rng.f32(), 0.0])
            .collect();
    }
    let blobs: Vec<(Vec3, f32)> = (0..64)
        .map(|b| {
            let centre = Vec3::new(rng.f32(), rng.f32(), rng.f32());
            (centre, 0.001 * 10f32.powf(3.0 * (b as f32 / 63.0)))
        })
        .collect();
    (0..n)
        .map(|_| {
            let (centre, sigma) = blobs[(rng.f32() * blobs.len() as f32) as usize % blobs.len()];
            let p = centre + sigma * Vec3::new(rng.gaussian(), rng.gaussian(), rng.gaussian());
            [p.x, p.y, p.z, 0.0]
        })
        .collect()
}

/// 3D Morton code of `p` in the unit cube at 10 bits an axis.
fn morton3(p: Vec3) -> u32 {
    let spread = |v: f32| -> u32 {
        let mut x = ((v.clamp(0.0, 1.0) * 1023.0) as u32) & 0x3ff;
        x = (x | (x << 16)) & 0x030000ff;
        x = (x | (x << 8)) & 0x0300f00f;
        x = (x | (x << 4)) & 0x030c30c3;
        (x | (x << 2)) & 0x09249249
    };
    spread(p.x) | (spread(p.y) << 1) | (spread(p.z) << 2)
}

/// Queries at randomly chosen points, jittered by about the typical spacing of the points.
fn make_queries(points: &[[f32; 4]], count: usize, rng: &mut Random) -> Vec<Vec3> {
    let spacing = (1.0 / points.len().max(1) as f32).cbrt();
    (0..count)
        .map(|_| {
            let p = points[(rng.f32() * points.len() as f32) as usize % points.len()];
            Vec3::new(p[0], p[1], p[2])
                + spacing * (Vec3::new(rng.f32(), rng.f32(), rng.f32()) - 0.5)
        })
        .collect()
}

fn rate(count: usize, seconds: f64) -> String {
    let r = count as f64 / seconds;
    if r >= 1e6 {
        format!("{:.2} M queries/s", r / 1e6)
    } else {
        format!("{:.1} k queries/s", r / 1e3)
    }
}

/// The neighbour lists of `queries` on the GPU, in chunks whose outputs fit one binding:
/// throughput, and a check of every `check_every`-th query against the CPU.
#[allow(clippy::too_many_arguments)]
fn bench_gpu_knn(
    ctx: &GpuContext,
    knn_gpu: &KnnQueries,
    tree: &GpuKdTree,
    query_buffer: &GpuBuffer,
    queries: &[Vec3],
    host_words: &[u32],
    points: &[[f32; 4]],
    o: &Options,
) -> Result<String, GpuError> {
    let chunk = KnnQueries::max_knn_queries(ctx, o.k).max(1) as usize;
    let mut dispatches = Vec::new();
    let mut outputs = Vec::new();
    for first in (0..queries.len()).step_by(chunk) {
        let n = chunk.min(queries.len() - first) as u32;
        let (d, out) =
            knn_gpu.prepare_knn(ctx, tree, query_buffer, first as u32, n, o.k, o.max_dist2)?;
        dispatches.push(d);
        outputs.push((first, n, out));
    }
    let (wall, gpu) = time_dispatches(ctx, &dispatches, o.runs)?;
    // Check a sample of the last run's answers against the CPU.
    let mut checked = 0usize;
    let mut agree = 0usize;
    for (first, n, out) in &outputs {
        check_status(ctx, &out.status)?;
        let counts: Vec<u32> = read_buffer(ctx, &out.counts, *n as usize)?;
        let indices: Vec<u32> = read_buffer(ctx, &out.indices, *n as usize * o.k as usize)?;
        let dist2: Vec<f32> = read_buffer(ctx, &out.dist2, *n as usize * o.k as usize)?;
        for q in (0..*n as usize).step_by(997) {
            let base = q * o.k as usize;
            let got: Vec<Neighbour> = (base..base + counts[q] as usize)
                .map(|s| Neighbour {
                    dist2: dist2[s],
                    index: indices[s],
                })
                .collect();
            let want = knn(
                host_words,
                points,
                queries[first + q],
                o.k as usize,
                o.max_dist2,
            );
            checked += 1;
            agree += usize::from(got == want);
        }
    }
    Ok(format!(
        "wall {} ({:.1} ms), GPU {}; {agree}/{checked} sampled answers equal the CPU's",
        rate(queries.len(), wall),
        wall * 1e3,
        gpu.map_or("no timestamps".to_string(), |g| format!(
            "{} ({:.1} ms)",
            rate(queries.len(), g),
            g * 1e3
        )),
    ))
}

fn main() -> Result<(), GpuError> {
    let o = options();
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("knn: no GPU ({e}); timing the CPU only");
            None
        }
    };
    println!(
        "{}; {} points, {} queries (CPU: {}), k = {}, max_dist2 = {}, {} runs, {} CPU threads",
        ctx.as_ref().map_or("no GPU".to_string(), |c| format!(
            "{} ({})",
            c.info.name, c.info.backend
        )),
        o.points,
        o.queries,
        o.cpu_queries.min(o.queries),
        o.k,
        o.max_dist2,
        o.runs,
        rayon::current_num_threads()
    );
    let kernels = match &ctx {
        Some(ctx) => Some((
            KnnQueries::with_checks(ctx, Checks::Checked)?,
            KnnQueries::with_checks(ctx, Checks::Unchecked)?,
            KdTreeBuilder::new(ctx)?,
        )),
        None => None,
    };
    for clustered in [false, true] {
        let name = if clustered { "clustered" } else { "uniform" };
        let mut rng = Random(0x9e37_79b9_7f4a_7c15 ^ clustered as u64);
        let points = make_points(o.points, clustered, &mut rng);
        let mut queries = make_queries(&points, o.queries, &mut rng);
        if o.sorted {
            let (lo, hi) = queries.iter().fold(
                (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
                |(lo, hi), q| (lo.min(*q), hi.max(*q)),
            );
            let extent = (hi - lo).max(Vec3::splat(1e-30));
            queries.sort_by_key(|q| morton3((*q - lo) / extent));
        }
        let mut rng_photons = Random(77);
        let photons: Vec<PhotonRecord> = points
            .iter()
            .map(|p| PhotonRecord {
                position: [p[0], p[1], p[2]],
                direction: octahedral_encode(-rng_photons.unit_vector().abs()),
                power: [1e-6, 2e-6, 3e-6],
                flags: 0,
            })
            .collect();
        let normals: Vec<Vec3> = queries
            .iter()
            .map(|_| rng_photons.unit_vector().abs())
            .collect();
        let start = Instant::now();
        let (host_words, gpu_tree) = match (&ctx, &kernels) {
            (Some(ctx), Some((_, _, builder))) => {
                let point_buffer = storage_buffer(ctx, "points", &points)?;
                let tree = builder.build(ctx, &point_buffer, points.len() as u32)?;
                let count = tree.counts(ctx)?.word_count as usize;
                let words: Vec<u32> = read_buffer(ctx, &tree.words, count)?;
                (words, Some(tree))
            }
            _ => (build_point_kdtree(&points).words, None),
        };
        println!(
            "\n{name}: tree of {} words built in {:.1} ms ({})",
            host_words.len(),
            start.elapsed().as_secs_f64() * 1e3,
            if gpu_tree.is_some() {
                "GPU builder, with readback"
            } else {
                "CPU builder"
            }
        );
        if let (Some(ctx), Some((checked, unchecked, _)), Some(tree)) = (&ctx, &kernels, &gpu_tree)
        {
            let q4: Vec<[f32; 4]> = queries.iter().map(|q| [q.x, q.y, q.z, 0.0]).collect();
            let query_buffer = storage_buffer(ctx, "queries", &q4)?;
            for (variant, knn_gpu) in [("checked", checked), ("unchecked", unchecked)] {
                let line = bench_gpu_knn(
                    ctx,
                    knn_gpu,
                    tree,
                    &query_buffer,
                    &queries,
                    &host_words,
                    &points,
                    &o,
                )?;
                println!("  GPU kNN lists ({variant}): {line}");
            }
            // The density estimate (cone filter), one vec4 out per query.
            let pairs: Vec<[f32; 4]> = queries
                .iter()
                .zip(&normals)
                .flat_map(|(q, n)| [[q.x, q.y, q.z, 0.0], [n.x, n.y, n.z, 0.0]])
                .collect();
            let pair_buffer = storage_buffer(ctx, "density queries", &pairs)?;
            let photon_buffer = storage_buffer(ctx, "photons", &photons)?;
            let filter = EstimateFilter::Cone { k: 1.1 };
            for (variant, knn_gpu) in [("checked", checked), ("unchecked", unchecked)] {
                let (dispatch, out) = knn_gpu.prepare_density(
                    ctx,
                    tree,
                    &photon_buffer,
                    &pair_buffer,
                    0,
                    queries.len() as u32,
                    o.k,
                    o.max_dist2,
                    filter,
                    None,
                )?;
                let (wall, gpu) = time_dispatches(ctx, std::slice::from_ref(&dispatch), o.runs)?;
                check_status(ctx, &out.status)?;
                let density: Vec<[f32; 4]> = read_buffer(ctx, &out.density, queries.len())?;
                let mut worst = 0.0f32;
                for q in (0..queries.len()).step_by(997) {
                    let cpu = photon_flux_density(
                        &host_words,
                        &points,
                        &photons,
                        queries[q],
                        normals[q],
                        o.k as usize,
                        o.max_dist2,
                        filter,
                    );
                    let g = Vec3::new(density[q][0], density[q][1], density[q][2]);
                    worst = worst
                        .max((cpu - g).abs().max_element() / cpu.abs().max_element().max(1e-30));
                }
                println!(
                    "  GPU density ({variant}): wall {} ({:.1} ms), GPU {}; sampled worst relative difference to the CPU {worst:.1e}",
                    rate(queries.len(), wall),
                    wall * 1e3,
                    gpu.map_or("no timestamps".to_string(), |g| format!("{} ({:.1} ms)", rate(queries.len(), g), g * 1e3)),
                );
            }
        }
        let cpu_count = o.cpu_queries.min(queries.len());
        if cpu_count > 0 {
            let mut times = Vec::new();
            for _ in 0..o.runs.min(3) {
                let start = Instant::now();
                let found: usize = queries[..cpu_count]
                    .par_iter()
                    .map(|&q| knn(&host_words, &points, q, o.k as usize, o.max_dist2).len())
                    .sum();
                std::hint::black_box(found);
                times.push(start.elapsed().as_secs_f64());
            }
            let t = median(times);
            println!(
                "  CPU kNN lists (rayon): {} ({:.1} ms for {cpu_count})",
                rate(cpu_count, t),
                t * 1e3
            );
        }
    }
    Ok(())
}

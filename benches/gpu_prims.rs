//! Throughput of the GPU data-parallel primitives on pre-uploaded buffers: scan, compaction,
//! segmented reduce, radix sort (32- and 64-bit keys) and sorted bounds, in millions of elements
//! per second (median of a few runs after one warm-up; record, submit and wait, no readback).
//!
//! `cargo bench --bench gpu_prims` (add `-- --n N --runs R`; without a GPU it says why and exits).

use std::time::Instant;

use caustica::gpu::encoder::Encoder;
use caustica::gpu::kernel::{storage_buffer, storage_buffer_sized};
use caustica::gpu::prims::Primitives;
use caustica::gpu::{GpuContext, GpuError};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Median seconds of `runs` timed runs of `record` (after one warm-up).
fn time_runs(
    ctx: &GpuContext,
    runs: usize,
    mut record: impl FnMut(&mut Encoder) -> Result<(), GpuError>,
) -> Result<f64, GpuError> {
    let mut seconds = Vec::new();
    for run in 0..=runs {
        let start = Instant::now();
        let mut encoder = Encoder::new(ctx);
        record(&mut encoder)?;
        ctx.submit([encoder.finish()]);
        ctx.recycle_buffers()?;
        if run > 0 {
            seconds.push(start.elapsed().as_secs_f64());
        }
    }
    seconds.sort_by(|a, b| a.total_cmp(b));
    Ok(seconds[seconds.len() / 2])
}

fn main() -> Result<(), GpuError> {
    let n = arg("--n", 1 << 24) as u32;
    let runs = arg("--runs", 3).max(1);
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("gpu_prims: skipping: {e}");
            return Ok(());
        }
    };
    println!(
        "{} ({}), n = {n}, median of {runs}",
        ctx.info.name, ctx.info.backend
    );
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u32
    };
    let words: Vec<u32> = (0..n).map(|_| next()).collect();
    let flags: Vec<u32> = words.iter().map(|w| u32::from(w % 100 < 40)).collect();
    let heads: Vec<u32> = words.iter().map(|w| u32::from(w % 100 < 2)).collect();
    let mut sorted: Vec<u32> = words.iter().map(|w| w % 1_000_000).collect();
    sorted.sort_unstable();
    let input = storage_buffer(&ctx, "input", &words)?;
    let flags = storage_buffer(&ctx, "flags", &flags)?;
    let heads = storage_buffer(&ctx, "heads", &heads)?;
    let sorted = storage_buffer(&ctx, "sorted", &sorted)?;
    let output = storage_buffer_sized(&ctx, "output", n as u64 * 4)?;
    let keys_hi = storage_buffer(&ctx, "keys hi", &words)?;
    let values = storage_buffer(&ctx, "values", &words)?;
    for subgroups in [true, false] {
        if subgroups && !ctx.info.features.subgroups {
            continue;
        }
        let prims = if subgroups {
            Primitives::new(&ctx)?
        } else {
            Primitives::new_without_subgroups(&ctx)?
        };
        let variant = if subgroups {
            "subgroups"
        } else {
            "shared memory"
        };
        let report = |name: &str, seconds: f64| {
            println!(
                "{variant:>13}  {name:<28} {:>8.1} ms  {:>8.1} M elements/s",
                seconds * 1e3,
                n as f64 / seconds / 1e6
            );
        };
        let s = time_runs(&ctx, runs, |e| {
            prims.exclusive_scan(&ctx, e, &input, &output, n)
        })?;
        report("exclusive scan", s);
        let s = time_runs(&ctx, runs, |e| {
            prims
                .compact(&ctx, e, &input, &flags, &output, n)
                .map(|_| ())
        })?;
        report("compaction (40% kept)", s);
        let s = time_runs(&ctx, runs, |e| {
            prims
                .segmented_reduce(&ctx, e, &input, &heads, n)
                .map(|_| ())
        })?;
        report("segmented reduce (2% heads)", s);
        let s = time_runs(&ctx, runs, |e| {
            prims
                .find_sorted_bounds(&ctx, e, &sorted, None, n)
                .map(|_| ())
        })?;
        report("sorted bounds (u32)", s);
        let s = time_runs(&ctx, runs, |e| {
            prims.radix_sort_u32(&ctx, e, &input, &values, n, 32)
        })?;
        report("radix sort u32 (32 bits)", s);
        let s = time_runs(&ctx, runs, |e| {
            prims.radix_sort_u64(&ctx, e, &input, &keys_hi, &values, n, 64)
        })?;
        report("radix sort u64 (64 bits)", s);
    }
    Ok(())
}

//! What several benchmarks share: medians, and timing recorded-ready GPU query dispatches.
#![allow(dead_code)]

use std::time::Instant;

use caustica::gpu::encoder::Encoder;
use caustica::gpu::kernel::{read_buffer, storage_buffer_sized};
use caustica::gpu::knn::KnnDispatch;
use caustica::gpu::{GpuContext, GpuError};

/// The value after `name` on the command line (`--runs 5`), if any.
pub fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The median of `v` (the upper one of an even count); NaN when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Median wall seconds (submit and wait) and median GPU seconds (timestamps around each pass,
/// summed) of `runs` runs of all `dispatches`, after one warm-up run.
pub fn time_dispatches(
    ctx: &GpuContext,
    dispatches: &[KnnDispatch<'_>],
    runs: usize,
) -> Result<(f64, Option<f64>), GpuError> {
    let passes = dispatches.len() as u32;
    let query = ctx.info.features.timestamps.then(|| {
        ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("bench timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * passes,
        })
    });
    let bytes = 16 * passes as u64;
    let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench timestamps resolve"),
        size: bytes,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let ticks = storage_buffer_sized(ctx, "bench ticks", bytes)?;
    let (mut walls, mut gpus) = (Vec::new(), Vec::new());
    for run in 0..=runs {
        let mut encoder = Encoder::new(ctx);
        for (p, dispatch) in dispatches.iter().enumerate() {
            let writes = query.as_ref().map(|q| wgpu::ComputePassTimestampWrites {
                query_set: q,
                beginning_of_pass_write_index: Some(2 * p as u32),
                end_of_pass_write_index: Some(2 * p as u32 + 1),
            });
            dispatch.record(&mut encoder, writes);
        }
        if let Some(q) = &query {
            encoder.resolve_query_set(q, 0..2 * passes, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &ticks, 0, bytes);
        }
        let start = Instant::now();
        ctx.submit([encoder.finish()]);
        ctx.wait_idle()?;
        let wall = start.elapsed().as_secs_f64();
        if run == 0 {
            continue;
        }
        walls.push(wall);
        if query.is_some() {
            let t: Vec<u64> = read_buffer(ctx, &ticks, 2 * passes as usize)?;
            let sum: u64 = t.chunks(2).map(|c| c[1].saturating_sub(c[0])).sum();
            gpus.push(sum as f64 * ctx.info.timestamp_period_ns as f64 * 1e-9);
        }
        ctx.recycle_buffers()?;
    }
    let gpu = (!gpus.is_empty()).then(|| median(gpus));
    Ok((median(walls), gpu))
}

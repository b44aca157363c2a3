//! What one small dispatch costs the device and the host, recorded the ways the pipeline could
//! record it: each in its own compute pass with its own bind group (how `Kernel::dispatch` and
//! every stage record today), each in its own pass with one bind group, all in one pass on one
//! buffer (a barrier between each), and all in one pass over buffers taken in turn. Device time
//! from the device clock (a timestamp before and after the submission), host time to record.
//!
//! `cargo bench --bench dispatch_overhead` (add `-- --dispatches N --words W --runs R`).

use std::time::Instant;

use caustica::gpu::encoder::Encoder;
use caustica::gpu::kernel::{storage_buffer_sized, Checks, Kernel};
use caustica::gpu::{GpuBuffer, GpuContext, GpuError};

mod support;

/// The number after `name` on the command line, or `default`.
fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    support::arg(&args, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Clone, Copy, Debug)]
enum Way {
    PassAndBindGroupEach,
    PassEach,
    OnePass,
    OnePassBuffersInTurn,
}

fn record(
    ctx: &GpuContext,
    kernel: &Kernel,
    buffers: &[GpuBuffer],
    way: Way,
    dispatches: usize,
    groups: u32,
) -> Result<wgpu::CommandBuffer, GpuError> {
    let mut encoder = Encoder::new(ctx);
    let binds: Vec<wgpu::BindGroup> = buffers
        .iter()
        .map(|b| kernel.bind(ctx, &[("data", b)]))
        .collect::<Result<_, _>>()?;
    match way {
        Way::PassAndBindGroupEach => {
            for _ in 0..dispatches {
                let bind = kernel.bind(ctx, &[("data", &buffers[0])])?;
                kernel.dispatch(&mut encoder, &bind, (groups, 1, 1));
            }
        }
        Way::PassEach => {
            for _ in 0..dispatches {
                kernel.dispatch(&mut encoder, &binds[0], (groups, 1, 1));
            }
        }
        Way::OnePass | Way::OnePassBuffersInTurn => {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&kernel.pipeline);
            for d in 0..dispatches {
                let b = match way {
                    Way::OnePass => 0,
                    _ => d % binds.len(),
                };
                pass.set_bind_group(0, &binds[b], &[]);
                pass.dispatch_workgroups(groups, 1, 1);
            }
        }
    }
    Ok(encoder.finish())
}

fn main() -> Result<(), GpuError> {
    let ctx = match GpuContext::open(caustica::gpu::context::gpu_required()) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("no GPU: {e}");
            return Ok(());
        }
    };
    let dispatches = arg("--dispatches", 1000);
    let words = arg("--words", 1024) as u64;
    let runs = arg("--runs", 5);
    let kernel = Kernel::new(&ctx, "bench/touch.wgsl", &[], Checks::Checked)?;
    let buffers: Vec<GpuBuffer> = (0..8)
        .map(|_| storage_buffer_sized(&ctx, "touched", words * 4))
        .collect::<Result<_, _>>()?;
    let groups = words.div_ceil(256) as u32;
    println!(
        "{} ({}), {dispatches} dispatches of {groups} workgroups, median of {runs}",
        ctx.info.name, ctx.info.backend
    );
    println!(
        "{:<36} {:>12} {:>14} {:>12}",
        "way", "device µs/d", "record µs/d", "wall ms"
    );
    for way in [
        Way::PassAndBindGroupEach,
        Way::PassEach,
        Way::OnePass,
        Way::OnePassBuffersInTurn,
    ] {
        let (mut device, mut host, mut wall) = (Vec::new(), Vec::new(), Vec::new());
        for run in 0..=runs {
            ctx.recycle_buffers()?;
            ctx.reset_clocks();
            let start = Instant::now();
            let commands = record(&ctx, &kernel, &buffers, way, dispatches, groups)?;
            let recorded = start.elapsed().as_secs_f64();
            ctx.submit([commands]);
            ctx.wait_idle()?;
            let elapsed = start.elapsed().as_secs_f64();
            let clock = ctx.read_device_clock()?;
            if run > 0 {
                host.push(recorded * 1e6 / dispatches as f64);
                wall.push(elapsed * 1e3);
                if let Some(c) = clock {
                    device.push(c.device_ms * 1e3 / dispatches as f64);
                }
            }
        }
        let median = support::median;
        println!(
            "{:<36} {:>12.2} {:>14.2} {:>12.2}",
            format!("{way:?}"),
            median(device),
            median(host),
            median(wall)
        );
    }
    Ok(())
}

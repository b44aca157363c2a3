//! Photon tracing throughput (photons emitted per second, the whole pass: emission, every
//! bounce's trace, interaction, compaction, store and bounce, with its host round trips) on the
//! GPU and on the CPU twin, for the global and the caustic pass of the Cornell box with its
//! mirror and glass spheres (`scenes/cornell_spheres.csc`) and of Dabrovic Sponza
//! (`benches/scenes/sponza.csc`, mesh from `../shared/assets`). Wall-clock medians of `--runs`.
//!
//! `cargo bench --bench photons -- [--photons 1000000] [--runs 5] [--scenes cornell,sponza] [--cpu-runs 1]`

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use caustica::accel::VdFrame;
use caustica::gpu::GpuBackend;
use caustica::gpu::GpuContext;
use caustica::io::AssetCache;
use caustica::render::photons::PhotonPass;
use caustica::Overrides;
use support::{arg, median};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = arg(&args, "--runs")
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let cpu_runs: usize = arg(&args, "--cpu-runs")
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let photons: u32 = arg(&args, "--photons")
        .and_then(|r| r.parse().ok())
        .unwrap_or(1_000_000);
    let scenes = arg(&args, "--scenes").unwrap_or_else(|| "cornell,sponza".into());
    let gpu = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => {
            println!(
                "device: {} ({}, {})",
                ctx.info.name, ctx.info.backend, ctx.info.driver
            );
            Some(GpuBackend::new(Arc::new(ctx)).expect("the kernels compile"))
        }
        Err(e) => {
            eprintln!("no GPU: {e}; CPU figures only");
            None
        }
    };
    println!(
        "{photons} photons per pass, GPU median of {runs} runs, CPU median of {cpu_runs} ({} threads)",
        rayon::current_num_threads()
    );
    println!(
        "{:<8} {:<8} {:>9} {:>10} {:>6} {:>11} {:>13} {:>11} {:>13}",
        "scene",
        "pass",
        "emitted",
        "stored",
        "path",
        "gpu ms",
        "gpu Mphot/s",
        "cpu ms",
        "cpu Mphot/s"
    );
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for name in scenes.split(',') {
        let path = match name {
            "cornell" => root.join("scenes/cornell_spheres.csc"),
            other => root.join("benches/scenes").join(format!("{other}.csc")),
        };
        let assets = AssetCache::default();
        let scene = match caustica::load_scene(&path)
            .and_then(|f| caustica::evaluate_frame(&f, 1, &assets, &Overrides::default()))
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "{name}: skipping: {}",
                    e.to_string().lines().next().unwrap_or_default()
                );
                continue;
            }
        };
        let prepared = caustica::prepare(&scene).expect("the benchmark scenes build");
        for pass in [PhotonPass::Global, PhotonPass::Caustic] {
            let mut gpu_ms = Vec::new();
            let mut stats = None;
            if let Some(gpu) = &gpu {
                // One warm-up run compiles the kernels.
                let _ = gpu.trace_photons_vec(&scene, &prepared, pass, photons.min(10_000));
                for _ in 0..runs {
                    let start = Instant::now();
                    match gpu.trace_photons_vec(&scene, &prepared, pass, photons) {
                        Ok((_, s)) => {
                            gpu_ms.push(start.elapsed().as_secs_f64() * 1e3);
                            stats = Some(s);
                        }
                        Err(e) => {
                            eprintln!("{name} {}: {e}", pass.name());
                            break;
                        }
                    }
                }
            }
            let mut cpu_ms = Vec::new();
            for _ in 0..cpu_runs {
                let start = Instant::now();
                let map = caustica::cpu::photons::trace_photons(
                    &scene,
                    &prepared,
                    &VdFrame::default(),
                    pass,
                    photons,
                );
                cpu_ms.push(start.elapsed().as_secs_f64() * 1e3);
                stats.get_or_insert(map.stats);
            }
            let Some(s) = stats else { continue };
            let (g, c) = (median(gpu_ms), median(cpu_ms));
            println!(
                "{name:<8} {:<8} {:>9} {:>10} {:>6.2} {:>11.1} {:>13.2} {:>11.1} {:>13.3}",
                pass.name(),
                s.emitted,
                s.stored,
                s.mean_path_length(),
                g,
                s.emitted as f64 / g / 1e3,
                c,
                s.emitted as f64 / c / 1e3,
            );
        }
    }
}

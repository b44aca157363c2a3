//! The middle level's builders side by side (issue 17), on the dragon alone (as raybench traces
//! it, `benches/scenes/raybench_dragon.csc`) and Dabrovic Sponza (`sponza.csc`): for each
//! builder, the build's time, the wide trees' SAH cost relative to the binned SAH's
//! ([`wide_sah_cost`], each mesh weighted by its root box's area), their nodes and depth.
//! - `cpu_sah`: the binned SAH and the collapse on the CPU (all threads; `bvh/middle_build_ms`).
//! - `gpu_lbvh twin`, `gpu_ploc twin`: the CPU twins of the LBVH or PLOC and of the GPU
//!   collapse, which make the GPU's trees.
//! - `gpu_lbvh`, `gpu_ploc`: built and collapsed on the GPU, straight into the scene's arrays,
//!   as a frame does (`gpu::middle_build`): the device's time from its clock (the kernels
//!   only), and the host's from recording to the checked result (the primitives' boxes sent,
//!   one wait). Also the device time of the Morton order alone and of the LBVH alone.
//!
//! Medians of `--runs` after one warm-up run. Traversal speed on the trees is `gpu_rays
//! --layouts wide,wide:gpu_lbvh,wide:gpu_ploc` (the twins' trees, which are the GPU's).
//!
//! `cargo bench --bench bvh_builders -- [--scenes dragon,sponza] [--runs 9]`

mod support;

use std::path::PathBuf;
use std::time::Instant;

use caustica::accel::lbvh::lbvh_frame;
use caustica::accel::wide::{wide_sah_cost, WideNode};
use caustica::accel::{BvhBuilder, BvhLayout, PrepareOptions, Prepared};
use caustica::gpu::encoder::Encoder;
use caustica::gpu::kernel::{read_buffer, storage_buffer, storage_buffer_sized};
use caustica::gpu::lbvh::{box_words, LbvhBuilder};
use caustica::gpu::middle_build::MiddleBuildKernels;
use caustica::gpu::prims::Primitives;
use caustica::gpu::upload::upload_scene;
use caustica::gpu::GpuContext;
use caustica::io::AssetCache;
use caustica::Overrides;
use support::{arg, median};

/// The SAH cost of every mesh's tree in `nodes` (laid out as `prepared`'s), weighted by the
/// area of the mesh's box.
fn scene_cost(prepared: &Prepared, nodes: &[WideNode]) -> f64 {
    let (mut sum, mut weight) = (0.0, 0.0);
    for (m, mesh) in prepared.meshes.iter().enumerate() {
        if mesh.node_count == 0 {
            continue;
        }
        let b = prepared.mesh_bounds[m];
        let d = (b.max - b.min).as_dvec3();
        let area = d.x * d.y + d.y * d.z + d.z * d.x;
        let tree = &nodes[mesh.node_offset as usize..][..mesh.node_count as usize];
        sum += area * wide_sah_cost(tree);
        weight += area;
    }
    sum / weight.max(f64::MIN_POSITIVE)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = arg(&args, "--runs")
        .and_then(|r| r.parse().ok())
        .unwrap_or(9)
        .max(1);
    let scenes = arg(&args, "--scenes").unwrap_or_else(|| "dragon,sponza".into());
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("no GPU ({e}): the CPU builders only");
            None
        }
    };
    let prims = ctx
        .as_ref()
        .map(|c| Primitives::new(c).expect("primitives"));
    let kernels = ctx
        .as_ref()
        .map(|c| MiddleBuildKernels::new(c).expect("build kernels"));
    if let Some(ctx) = &ctx {
        println!(
            "device: {} ({}, {}), {} CPU threads, {runs} runs",
            ctx.info.name,
            ctx.info.backend,
            ctx.info.driver,
            rayon::current_num_threads()
        );
    }
    println!(
        "{:<8} {:<15} {:>11} {:>11} {:>9} {:>9} {:>6}",
        "scene", "builder", "prims", "median ms", "device ms", "SAH cost", "nodes"
    );
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/scenes");
    for name in scenes.split(',') {
        let raybench = root.join(format!("raybench_{name}.csc"));
        let path = if raybench.exists() {
            raybench
        } else {
            root.join(format!("{name}.csc"))
        };
        let assets = AssetCache::default();
        let scene = match caustica::load_scene(&path)
            .and_then(|f| caustica::evaluate_frame(&f, 1, &assets, &Overrides::default()))
        {
            Ok(s) => s,
            Err(e) => {
                let e = e.to_string();
                eprintln!("{name}: skipping: {}", e.lines().next().unwrap_or_default());
                continue;
            }
        };
        let prim_count: usize = scene
            .meshes
            .iter()
            .map(|m| m.data.triangles.len() + m.data.quads.len())
            .sum();
        let options = |builder, device_builds| PrepareOptions {
            layout: BvhLayout::Wide,
            builder,
            device_builds,
            ..PrepareOptions::default()
        };
        let cpu_build = |o: PrepareOptions| {
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..=runs {
                let p = Prepared::build(&scene, &o).expect("the benchmark scenes build");
                times.push(p.middle_build_ms);
                last = Some(p);
            }
            times.remove(0);
            (median(times), last.expect("one run at least"))
        };
        let (sah_ms, sah) = cpu_build(options(BvhBuilder::CpuSah, false));
        let sah_cost = scene_cost(&sah, &sah.mesh_wide);
        let row = |builder: &str, ms: f64, device: Option<f64>, cost: f64, nodes: u64| {
            println!(
                "{name:<8} {builder:<15} {prim_count:>11} {ms:>11.2} {:>9} {:>9.3} {nodes:>6}",
                device.map_or("-".into(), |d| format!("{d:.2}")),
                cost / sah_cost
            );
        };
        row(
            "cpu_sah",
            sah_ms,
            None,
            sah_cost,
            sah.mesh_wide.len() as u64,
        );
        let mut twins = Vec::new();
        for builder in [
            BvhBuilder::GpuLbvh,
            BvhBuilder::GpuSah,
            BvhBuilder::GpuHybrid,
            BvhBuilder::GpuPloc,
        ] {
            let (ms, twin) = cpu_build(options(builder, false));
            let cost = scene_cost(&twin, &twin.mesh_wide);
            row(
                &format!("{} twin", builder.name()),
                ms,
                None,
                cost,
                twin.mesh_wide.len() as u64,
            );
            twins.push((builder, twin, cost));
        }
        let (Some(ctx), Some(prims), Some(kernels)) = (&ctx, &prims, &kernels) else {
            continue;
        };
        // The Morton order alone (codes and sort), which both GPU builders begin with, and the
        // LBVH alone (codes, sort, hierarchy, boxes), without the collapse.
        let lbvh = LbvhBuilder::new(ctx).expect("LBVH kernels");
        let probe = Prepared::build(&scene, &options(BvhBuilder::GpuLbvh, true))
            .expect("the benchmark scenes build");
        let boxes: Vec<_> = probe
            .device_builds
            .iter()
            .map(|b| {
                let buffer =
                    storage_buffer(ctx, "boxes", &box_words(&b.boxes)).expect("boxes upload");
                let order = storage_buffer_sized(ctx, "order", b.boxes.len() as u64 * 4)
                    .expect("order buffer");
                (buffer, order, b.boxes.len() as u32, lbvh_frame(&b.boxes))
            })
            .collect();
        let (mut morton_device, mut lbvh_device) = (Vec::new(), Vec::new());
        for run in 0..=runs {
            for whole in [false, true] {
                ctx.reset_clocks();
                let mut encoder = Encoder::new(ctx);
                let mut kept = Vec::new();
                for (buffer, order, n, frame) in &boxes {
                    if whole {
                        let built = lbvh
                            .record_build(ctx, &mut encoder, prims, buffer, *n, frame)
                            .expect("LBVH");
                        kept.push(built.nodes);
                    } else {
                        let (codes, _) = lbvh
                            .record_morton_order(ctx, &mut encoder, prims, buffer, *n, frame, order)
                            .expect("Morton order");
                        kept.push(codes);
                    }
                }
                ctx.submit([encoder.finish()]);
                let clock = ctx.read_device_clock().expect("the clock reads");
                if run > 0 {
                    let into = if whole {
                        &mut lbvh_device
                    } else {
                        &mut morton_device
                    };
                    into.extend(clock.map(|c| c.device_ms));
                }
            }
        }
        if !lbvh_device.is_empty() {
            println!(
                "{name}: of the GPU builds' device time, the Morton order takes {:.2} ms, the \
                 whole LBVH {:.2} ms",
                median(morton_device),
                median(lbvh_device)
            );
        }
        for (builder, twin, twin_cost) in &twins {
            let prepared = Prepared::build(&scene, &options(*builder, true))
                .expect("the benchmark scenes build");
            let buffers = upload_scene(ctx, &scene, &prepared).expect("the scene uploads");
            let all: Vec<_> = prepared.device_builds.iter().collect();
            let (mut host, mut device) = (Vec::new(), Vec::new());
            let mut report = None;
            for run in 0..=runs {
                ctx.reset_clocks();
                ctx.set_stage("middle_build");
                let start = Instant::now();
                let r = kernels
                    .build(ctx, prims, &prepared, &all, &buffers)
                    .expect("the GPU builds");
                let ms = start.elapsed().as_secs_f64() * 1e3;
                let clock = ctx.read_device_clock().expect("the clock reads");
                if run > 0 {
                    host.push(ms);
                    device.extend(clock.map(|c| c.device_ms));
                }
                report = Some(r);
            }
            let report = report.expect("one run at least");
            let nodes: Vec<WideNode> =
                read_buffer(ctx, &buffers.mesh_nodes, prepared.mesh_wide.len()).expect("read back");
            let gpu_cost = scene_cost(&prepared, &nodes);
            row(
                builder.name(),
                median(host),
                (!device.is_empty()).then(|| median(device)),
                gpu_cost,
                report.nodes,
            );
            println!(
                "{name}: {}: the GPU's tree and the twin's: {} nodes and {} ({}), SAH cost {:.6} \
                 and {:.6}, depth {} and {}",
                builder.name(),
                report.nodes,
                twin.mesh_wide.len(),
                if report.nodes == twin.mesh_wide.len() as u64 {
                    "the same"
                } else {
                    "DIFFERENT"
                },
                gpu_cost / sah_cost,
                twin_cost / sah_cost,
                report.depth,
                twin.meshes.iter().map(|m| m.depth).max().unwrap_or(0)
            );
        }
    }
}

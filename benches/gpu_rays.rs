//! GPU ray throughput (Mrays/s) of primary, shadow, reflection and diffuse rays on the bunny,
//! the dragon and Dabrovic Sponza (`benches/scenes/*.csc`, meshes from `../shared/assets`), for
//! the QBVH and for a binary BVH in the same layout, with checked and unchecked shader modules.
//! Times are GPU timestamps of one dispatch over the whole ray set; medians of `--runs`.
//!
//! `cargo bench --bench gpu_rays -- [--resolution 1920x1080] [--runs 5] [--scenes bunny,dragon,sponza] [--vd-code-ab] [--rays DIR]`
//!
//! `--rays DIR` traces the rays `../shared/tools/raybench --dump-rays DIR` wrote
//! (`DIR/{dragon,sponza}_{primary,diffuse}.rays`) instead of making its own, through the geometry
//! raybench traces (`benches/scenes/raybench_dragon.csc`: the dragon alone in its file's
//! coordinates; `sponza.csc`), so that both traversals are timed on the same rays.

mod support;

use support::arg;

use std::path::PathBuf;

use caustica::accel::{PrepareOptions, Prepared};
use caustica::gpu::kernel::Checks;
use caustica::gpu::raybench::{make_ray_sets, measure, read_raybench_sets, MeasureOptions};
use caustica::gpu::GpuContext;
use caustica::io::AssetCache;
use caustica::Overrides;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = arg(&args, "--runs")
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let (width, height) = arg(&args, "--resolution")
        .and_then(|r| {
            r.split_once('x')
                .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        })
        .unwrap_or((1920u32, 1080u32));
    let same_rays = arg(&args, "--rays").map(PathBuf::from);
    let default_scenes = if same_rays.is_some() {
        "dragon,sponza"
    } else {
        "bunny,dragon,sponza"
    };
    let scenes = arg(&args, "--scenes").unwrap_or_else(|| default_scenes.into());
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    println!(
        "device: {} ({}, {}), {}x{}, {runs} runs",
        ctx.info.name, ctx.info.backend, ctx.info.driver, width, height
    );
    println!(
        "{:<8} {:<18} {:<10} {:>9} {:>10} {:>10} {:>7} {:>7}",
        "scene", "layout", "rays", "count", "median ms", "Mrays/s", "hit %", "agree %"
    );
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for name in scenes.split(',') {
        let dir = root.join("benches/scenes");
        let raybench_scene = dir.join(format!("raybench_{name}.csc"));
        let path = if same_rays.is_some() && raybench_scene.exists() {
            raybench_scene
        } else {
            dir.join(format!("{name}.csc"))
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
        let qbvh = Prepared::build(&scene, &PrepareOptions::default())
            .expect("the benchmark scenes build");
        let sets = match &same_rays {
            Some(dir) => match read_raybench_sets(dir, name) {
                Ok(sets) => sets,
                Err(e) => {
                    eprintln!("{name}: skipping: {e}");
                    continue;
                }
            },
            None => make_ray_sets(&scene, &qbvh, width, height),
        };
        let binary = Prepared::build(&scene, &PrepareOptions { branching: 2 })
            .expect("the benchmark scenes build");
        let configs = if args.iter().any(|a| a == "--vd-code-ab") {
            // What the VD-patch traversal code costs a kernel that never runs it.
            vec![
                ("qbvh unchecked", &qbvh, Checks::Unchecked, false),
                ("qbvh +vd code", &qbvh, Checks::Unchecked, true),
                ("qbvh unchecked", &qbvh, Checks::Unchecked, false),
                ("qbvh +vd code", &qbvh, Checks::Unchecked, true),
            ]
        } else {
            vec![
                ("qbvh unchecked", &qbvh, Checks::Unchecked, false),
                ("qbvh checked", &qbvh, Checks::Checked, false),
                ("binary unchecked", &binary, Checks::Unchecked, false),
                ("binary checked", &binary, Checks::Checked, false),
            ]
        };
        for (layout, prepared, checks, vd_code) in configs {
            match measure(
                &ctx,
                &scene,
                prepared,
                &sets,
                MeasureOptions {
                    checks,
                    runs,
                    with_vd_code: vd_code,
                    check_every: 97,
                },
            ) {
                Ok(rows) => {
                    for r in rows {
                        println!(
                            "{name:<8} {layout:<18} {:<10} {:>9} {:>10.3} {:>10.1} {:>7.1} {:>7.2}",
                            r.kind,
                            r.rays,
                            r.median_ms,
                            r.mrays_per_s,
                            100.0 * r.hit_fraction,
                            100.0 * r.agreement
                        );
                    }
                }
                Err(e) => eprintln!("{name} {layout}: {e}"),
            }
        }
    }
}

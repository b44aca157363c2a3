//! GPU ray throughput (Mrays/s) of primary, shadow, reflection and diffuse rays on the bunny,
//! the dragon and Dabrovic Sponza (`benches/scenes/*.csc`, meshes from `../shared/assets`), for
//! every layout of `--layouts` (the QBVH, the 8-wide compressed BVH, a binary BVH in the QBVH's
//! node format), unchecked shader modules (and checked ones with `--checked`), the layouts in
//! turn `--rounds` times.
//! Times are GPU timestamps of one dispatch over the whole ray set; medians of `--runs`.
//!
//! `cargo bench --bench gpu_rays -- [--resolution 1920x1080] [--runs 5] [--scenes bunny,dragon,sponza] [--layouts qbvh,wide,binary,wide:gpu_lbvh] [--variants base;WG128;...] [--rounds N] [--checked] [--apart] [--vd-code-ab] [--rays DIR]`
//!
//! `--apart` also measures every layout with its instances kept apart
//! (`PrepareOptions::merge_instances` off: no merged trees), labelled `LAYOUT apart`.
//!
//! `--variants` measures experiments of the kernel (`shaders/bench/trace_rays.wgsl`): each is a
//! set of defines (`WG128`), `base` for none; `FUSED` keeps the fused two-level loop where
//! the one instance's would run (`gpu::raybench::MeasureOptions::fused`).
//!
//! `--rays DIR` traces the rays `../shared/tools/raybench --dump-rays DIR` wrote
//! (`DIR/{dragon,sponza}_{primary,diffuse}.rays`) instead of making its own, through the geometry
//! raybench traces (`benches/scenes/raybench_dragon.csc`: the dragon alone in its file's
//! coordinates; `sponza.csc`), so that both traversals are timed on the same rays; the primary
//! rays in the order raybench's primary kernel traces them (8×16 pixel tiles).

mod support;

use support::arg;

use std::path::PathBuf;

use caustica::accel::{BvhBuilder, BvhLayout, PrepareOptions, Prepared};
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
    // LAYOUT[:BUILDER], as `--accel` takes them (a GPU builder's tree as its CPU twins build
    // it, which is the tree the GPU builds).
    let layouts: Vec<(BvhLayout, BvhBuilder)> = arg(&args, "--layouts")
        .unwrap_or_else(|| "qbvh,wide,binary".into())
        .split(',')
        .map(|l| caustica::parse_accel(l.trim()).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let label = |(l, b): (BvhLayout, BvhBuilder)| match b {
        BvhBuilder::CpuSah => l.name().to_string(),
        b => format!("{}:{}", l.name(), b.name()),
    };
    let rounds: usize = arg(&args, "--rounds")
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let checked = args.iter().any(|a| a == "--checked");
    let apart = args.iter().any(|a| a == "--apart");
    // Experiments of the benchmark kernel: `;`-separated sets of defines, `base` for none;
    // `FUSED` among them is `MeasureOptions::fused`, not a define.
    type Kernel = (&'static [&'static str], bool);
    let variants: Vec<(&'static str, Kernel)> = arg(&args, "--variants")
        .unwrap_or_else(|| "base".into())
        .split(';')
        .map(|v| {
            let name: &'static str = Box::leak(v.trim().to_string().into_boxed_str());
            let defines: Vec<&'static str> = if name == "base" {
                Vec::new()
            } else {
                name.split(',').collect()
            };
            let fused = defines.contains(&"FUSED");
            let defines: Vec<&'static str> =
                defines.into_iter().filter(|&d| d != "FUSED").collect();
            (name, (&*Box::leak(defines.into_boxed_slice()), fused))
        })
        .collect();
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
        "{:<8} {:<22} {:<10} {:>9} {:>10} {:>10} {:>7} {:>7}",
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
        let build_as = |(layout, builder): (BvhLayout, BvhBuilder), merge_instances: bool| {
            let start = std::time::Instant::now();
            let options = PrepareOptions {
                layout,
                builder,
                device_builds: false,
                merge_instances,
            };
            let p = Prepared::build(&scene, &options).expect("the benchmark scenes build");
            let s = p.stats();
            println!(
                "{name}: {}{} layout: {} of {} instances merged, {} middle nodes, {:.1} ms to build, {:.1} MB of nodes",
                label((layout, builder)),
                if merge_instances { "" } else { " apart" },
                s.merged_instances,
                s.instances,
                s.middle_nodes,
                start.elapsed().as_secs_f64() * 1e3,
                s.memory
                    .iter()
                    .filter(|(n, _)| n.ends_with("nodes"))
                    .map(|(_, b)| *b)
                    .sum::<usize>() as f64
                    / 1e6
            );
            p
        };
        let build = |l| build_as(l, true);
        let qbvh = build((BvhLayout::Qbvh, BvhBuilder::CpuSah));
        let sets = match &same_rays {
            Some(dir) => match read_raybench_sets(dir, name, width, height) {
                Ok(sets) => sets,
                Err(e) => {
                    eprintln!("{name}: skipping: {e}");
                    continue;
                }
            },
            None => make_ray_sets(&scene, &qbvh, width, height),
        };
        let prepared: Vec<((BvhLayout, BvhBuilder), Prepared)> = layouts
            .iter()
            .map(|&l| {
                (
                    l,
                    if l == (BvhLayout::Qbvh, BvhBuilder::CpuSah) {
                        qbvh.clone()
                    } else {
                        build(l)
                    },
                )
            })
            .collect();
        let kept_apart: Vec<((BvhLayout, BvhBuilder), Prepared)> = if apart {
            layouts.iter().map(|&l| (l, build_as(l, false))).collect()
        } else {
            Vec::new()
        };
        let of =
            |l: (BvhLayout, BvhBuilder)| &prepared.iter().find(|(k, _)| *k == l).expect("built").1;
        let apart_of =
            |l: (BvhLayout, BvhBuilder)| kept_apart.iter().find(|(k, _)| *k == l).map(|p| &p.1);
        let configs: Vec<(String, &Prepared, Checks, bool, Kernel)> =
            if args.iter().any(|a| a == "--vd-code-ab") {
                // What the VD-patch traversal code costs a kernel that never runs it.
                (0..2)
                    .flat_map(|_| {
                        [
                            (
                                "qbvh unchecked".to_string(),
                                &qbvh,
                                Checks::Unchecked,
                                false,
                                (&[][..], false),
                            ),
                            (
                                "qbvh +vd code".to_string(),
                                &qbvh,
                                Checks::Unchecked,
                                true,
                                (&[][..], false),
                            ),
                        ]
                    })
                    .collect()
            } else {
                // Every layout unchecked, `--rounds` times in turn; with `--checked` also checked.
                let mut configs = Vec::new();
                for _ in 0..rounds {
                    for &l in &layouts {
                        for &(variant, defines) in &variants {
                            let name = if variant == "base" {
                                label(l)
                            } else {
                                format!("{} {variant}", label(l))
                            };
                            configs.push((name.clone(), of(l), Checks::Unchecked, false, defines));
                            if let Some(p) = apart_of(l) {
                                configs.push((
                                    format!("{name} apart"),
                                    p,
                                    Checks::Unchecked,
                                    false,
                                    defines,
                                ));
                            }
                            if checked {
                                configs.push((
                                    format!("{name} checked"),
                                    of(l),
                                    Checks::Checked,
                                    false,
                                    defines,
                                ));
                            }
                        }
                    }
                }
                configs
            };
        for (layout, prepared, checks, vd_code, (defines, fused)) in configs {
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
                    defines,
                    fused,
                },
            ) {
                Ok(rows) => {
                    for r in rows {
                        println!(
                            "{name:<8} {layout:<22} {:<10} {:>9} {:>10.3} {:>10.1} {:>7.1} {:>7.2}",
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

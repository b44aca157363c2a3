//! Whole-frame figures of the CPU backend at 1024×1024: scene load, hierarchy build and Whitted
//! render of the Cornell box (`scenes/cornell_point.csc`) and of the Stanford dragon
//! (`benches/scenes/dragon.csc`, 871K triangles from `../shared/assets`). Prints the median,
//! minimum and maximum of a few runs.
//!
//! `cargo bench --bench render_cpu` (add `-- --runs N` to change the number of runs).

use std::path::{Path, PathBuf};
use std::time::Instant;

use caustica::io::AssetCache;
use caustica::render::RenderOptions;
use caustica::{Device, Overrides};

fn median_min_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn bench_scene(label: &str, path: &Path, spp: u32, runs: usize) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let load_start = Instant::now();
    let file = match caustica::load_scene(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "{label}: skipping: {}",
                e.to_string().lines().next().unwrap_or_default()
            );
            return;
        }
    };
    let assets = AssetCache::default();
    let overrides = Overrides {
        resolution: Some((1024, 1024)),
        spp: Some(spp),
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Default::default()
    };
    let scene = match caustica::evaluate_frame(&file, 1, &assets, &overrides) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "{label}: skipping: {}",
                e.to_string().lines().next().unwrap_or_default()
            );
            return;
        }
    };
    let load_s = load_start.elapsed().as_secs_f64();
    let backend =
        caustica::select_backend(Device::Cpu).expect("the CPU backend is always available");
    let (mut builds, mut renders, mut rates) = (Vec::new(), Vec::new(), Vec::new());
    let mut faces = 0.0;
    for _ in 0..runs {
        let t = Instant::now();
        let prepared = caustica::prepare(&scene).expect("the benchmark scenes build");
        builds.push(t.elapsed().as_secs_f64() * 1e3);
        let frame = backend
            .render_frame(&scene, &prepared, &RenderOptions::default())
            .expect("the CPU backend renders");
        renders.push(frame.metadata.render_seconds * 1e3);
        rates.push(frame.metadata.stats.whitted.mrays_per_s());
        let bvh = prepared.stats();
        faces = (bvh.triangles + bvh.quads) as f64;
    }
    let (b, bmin, bmax) = median_min_max(builds);
    let (r, rmin, rmax) = median_min_max(renders);
    let (m, _, _) = median_min_max(rates);
    println!(
        "{label:<10} {} | {:.0} faces | load {:.0} ms | build median {b:.2} ms (min {bmin:.2}, max {bmax:.2}) | render 1024x1024 {spp} spp median {r:.0} ms (min {rmin:.0}, max {rmax:.0}) | {m:.2} Mrays/s | {runs} runs, {} threads",
        path.strip_prefix(&root).unwrap_or(path).display(),
        faces,
        load_s * 1e3,
        rayon::current_num_threads(),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    bench_scene("cornell", &root.join("scenes/cornell_point.csc"), 1, runs);
    bench_scene("cornell", &root.join("scenes/cornell_point.csc"), 4, runs);
    let dragon = root.join("benches/scenes/dragon.csc");
    if root
        .join("../shared/assets/meshes/stanford/dragon/dragon_vrip.ply.gz")
        .exists()
    {
        bench_scene("dragon", &dragon, 1, runs);
    } else {
        eprintln!("dragon: skipping: ../shared/assets/meshes/stanford/dragon/dragon_vrip.ply.gz not found");
    }
}

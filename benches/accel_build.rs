//! Build time, size and a primary-ray rate of the middle level on the Stanford dragon
//! (871K triangles). Prints the median of a few runs; skips with a message without the assets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use caustica::accel::{PrepareOptions, Prepared, Ray};
use caustica::scene::{Instance, Mesh, MeshData, MeshOrigin, Scene, Span};
use glam::{Affine3A, Vec3};
use rayon::prelude::*;

const RUNS: usize = 5;

fn load_dragon() -> Option<MeshData> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/assets/meshes/stanford/dragon/dragon_vrip.ply.gz");
    if !path.exists() {
        eprintln!("skipping: ../shared/assets/meshes/stanford/dragon/dragon_vrip.ply.gz not found");
        return None;
    }
    match caustica::io::load_mesh(&path) {
        Ok(mesh) => Some(mesh),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let load_start = Instant::now();
    let Some(dragon) = load_dragon() else { return };
    println!(
        "dragon: {} vertices, {} triangles (parsed in {:.1} s)",
        dragon.positions.len(),
        dragon.triangles.len(),
        load_start.elapsed().as_secs_f64()
    );
    let (lo, hi) = dragon.bounds().unwrap_or((Vec3::ZERO, Vec3::ZERO));
    let scene = Scene {
        meshes: vec![Mesh {
            name: "dragon".into(),
            origin: MeshOrigin::Inline,
            data: Arc::new(dragon),
            displacement: None,
            span: Span::NONE,
        }],
        instances: vec![Instance {
            mesh: 0,
            material: 0,
            transform: Affine3A::IDENTITY,
            span: Span::NONE,
        }],
        ..Default::default()
    };

    let mut builds = Vec::new();
    let mut prepared = None;
    for _ in 0..RUNS {
        let p = Prepared::build(&scene, &PrepareOptions::default()).expect("the dragon builds");
        builds.push(p.middle_build_ms);
        prepared = Some(p);
    }
    let Some(prepared) = prepared else { return };
    println!(
        "middle-level build: {:.1} ms (median of {RUNS}, {} threads)",
        median(builds),
        rayon::current_num_threads()
    );
    for (name, value) in prepared.stats().to_vec() {
        if name.contains("nodes") || name.contains("depth") || name.contains("memory") {
            println!("  {name:32} {value}");
        }
    }

    // Primary-like rays: a pinhole camera looking at the dragon from the front.
    let (width, height) = (512u32, 512u32);
    let centre = (lo + hi) * 0.5;
    let eye = centre + Vec3::new(0.0, 0.0, (hi - lo).length() * 1.2);
    let half = (hi - lo).max_element() * 0.6;
    let rays: Vec<Ray> = (0..width * height)
        .map(|i| {
            let (x, y) = ((i % width) as f32 + 0.5, (i / width) as f32 + 0.5);
            let target = centre
                + Vec3::new(
                    (x / width as f32 * 2.0 - 1.0) * half,
                    (1.0 - y / height as f32 * 2.0) * half,
                    0.0,
                );
            Ray::new(eye, target - eye)
        })
        .collect();
    let mut rates = Vec::new();
    let mut hits = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        hits = rays
            .par_iter()
            .filter(|r| prepared.intersect(r).is_some())
            .count();
        rates.push(rays.len() as f64 / start.elapsed().as_secs_f64());
    }
    println!(
        "closest hit: {:.2} Mrays/s ({} rays, {:.0}% hit, median of {RUNS})",
        median(rates) / 1e6,
        rays.len(),
        100.0 * hits as f64 / rays.len() as f64
    );
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let _ = rays.par_iter().filter(|r| prepared.occluded(r)).count();
        rates.push(rays.len() as f64 / start.elapsed().as_secs_f64());
    }
    println!("any hit:     {:.2} Mrays/s", median(rates) / 1e6);
}

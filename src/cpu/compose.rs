//! Photon mapping's composition on the CPU: the frame's shading points take the caustic map's
//! density and the irradiance cache's interpolated indirect light (`cpu::gather`), and the
//! photon maps' debug views; the twin of the GPU's `gather.rs` composition and photon views.

use glam::Vec3;
use rayon::prelude::*;

use crate::accel::Prepared;
use crate::accel::VdFrame;
use crate::cpu::gather::{irradiance_cache, GatherLookup};
use crate::cpu::irradiance_photons::IrradiancePhotons;
use crate::cpu::optics::face_forward;
use crate::cpu::photons::{albedo_at, FrameTrees};
use crate::cpu::whitted::Tracer;
use crate::render::gather::{gather_ray_count, ShadingPoint};
use crate::render::photons::{scene_sphere, EstimateSettings, PhotonPass};
use crate::render::progress::Phase;
use crate::render::stats::{GatherStats, ViewSearches};
use crate::render::PhotonViews;
use crate::scene::{Aov, Integrator, MaterialKind, Scene};

/// The photon maps' debug views (`photons_global`, `photons_caustic`): for each camera sample,
/// the first surface it sees, when diffuse, reflects albedo/π times the map's flux density
/// there; a pixel averages its samples. Returns the views and, per map, its density searches
/// and their rate per second.
pub fn photon_views(
    scene: &Scene,
    prepared: &Prepared,
    tracer: &Tracer,
    trees: &FrameTrees,
) -> (PhotonViews, Vec<ViewSearches>) {
    let mut views = PhotonViews::default();
    let mut stats = Vec::new();
    let settings = EstimateSettings::of(scene, prepared);
    let (width, height) = (scene.film.width.max(1), scene.film.height.max(1));
    let spp = scene.film.spp.max(1);
    for (aov, pass) in [
        (Aov::PhotonsGlobal, PhotonPass::Global),
        (Aov::PhotonsCaustic, PhotonPass::Caustic),
    ] {
        if !scene.output.layers.contains(&aov) {
            continue;
        }
        let tree = match pass {
            PhotonPass::Global => trees.global.as_ref(),
            PhotonPass::Caustic => trees.caustic.as_ref(),
        };
        let Some(tree) = tree else {
            continue;
        };
        let start = std::time::Instant::now();
        let queries = std::sync::atomic::AtomicU64::new(0);
        let pixels: Vec<Vec3> = (0..width * height)
            .into_par_iter()
            .map(|pixel| {
                let mut sum = Vec3::ZERO;
                for s in 0..spp {
                    let (ray, _) = tracer.camera_sample(pixel % width, pixel / width, s);
                    let Some(hit) = prepared.intersect_in(&tracer.vd, &ray) else {
                        continue;
                    };
                    let sp = prepared.surface_point(&ray, &hit);
                    let material = &scene.materials[sp.material as usize].kind;
                    if !matches!(material, MaterialKind::Diffuse { .. }) {
                        continue;
                    }
                    queries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let n = face_forward(sp.shading_normal, ray.dir);
                    let albedo = albedo_at(scene, material, sp.uv);
                    sum += albedo
                        * std::f32::consts::FRAC_1_PI
                        * tree.flux_density(sp.position, n, &settings);
                }
                sum / spp as f32
            })
            .collect();
        let seconds = start.elapsed().as_secs_f64();
        let queries = queries.into_inner();
        stats.push((pass, queries, queries as f64 / seconds.max(1e-9)));
        match pass {
            PhotonPass::Global => views.global = pixels,
            PhotonPass::Caustic => views.caustic = pixels,
        }
    }
    (views, stats)
}

/// Christensen's precomputed irradiance over the frame's global map, once per frame for a
/// photon-mapped frame (`gather { precomputed_irradiance }` above 0), with the milliseconds it
/// took. Twin of the GPU's, made by its first composition (`gpu::gather::PrecomputedIrradiance`).
pub fn precompute_irradiance(
    scene: &Scene,
    prepared: &Prepared,
    trees: &FrameTrees,
) -> Option<(IrradiancePhotons, f64)> {
    let stride = scene.gather.precomputed_irradiance;
    let global = trees.global.as_ref()?;
    if scene.film.integrator != Integrator::PhotonMap || stride == 0 {
        return None;
    }
    let start = std::time::Instant::now();
    let photons =
        IrradiancePhotons::precompute(global, stride, &EstimateSettings::of(scene, prepared));
    Some((photons, start.elapsed().as_secs_f64() * 1e3))
}

/// Photon mapping's composition (paper 003 section 6.2.5) on the CPU: traces both maps,
/// places and gathers the irradiance samples over the frame's diffuse `points`, and adds to
/// each point's pixel its weight times the caustic map's flux density and the interpolated
/// indirect irradiance. `color` holds the Whitted image (direct light and the shade trees) and
/// becomes the composed one; `layers` receives the components and the seed counts. Returns
/// the statistics of the stages.
#[allow(clippy::too_many_arguments)]
pub fn compose(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    trees: &FrameTrees,
    photons: Option<&IrradiancePhotons>,
    points: &[ShadingPoint],
    color: &mut [Vec3],
    layers: &mut PhotonViews,
    report: &(dyn Fn(Phase, f32) + Sync),
) -> GatherStats {
    let mut stats = GatherStats::default();
    let settings = EstimateSettings::of(scene, prepared);
    let epsilon = prepared.ray_epsilon();
    let (_, radius) = scene_sphere(prepared);
    let (Some(global), Some(caustic)) = (&trees.global, &trees.caustic) else {
        // The plan of a photon-mapped frame always asks for both maps.
        return stats;
    };
    let lookup = GatherLookup::of(global, &settings, photons);
    let start = std::time::Instant::now();
    let (seeds, cache) = irradiance_cache(
        scene, prepared, vd, &lookup, epsilon, radius, points, report,
    );
    stats.seeds = Some(seeds.len() as u64);
    stats.rays = Some(seeds.len() as u64 * gather_ray_count(scene) as u64);
    stats.seed_and_gather_ms = Some(start.elapsed().as_secs_f64() * 1e3);
    let start = std::time::Instant::now();
    let parts: Vec<(Vec3, Vec3)> = points
        .par_iter()
        .map(|p| {
            let e_caustic = if caustic.map.records.is_empty() {
                Vec3::ZERO
            } else {
                caustic.flux_density(p.position, p.normal, &settings)
            };
            (
                p.weight * e_caustic,
                p.weight * cache.irradiance(p.position, p.normal),
            )
        })
        .collect();
    stats.interpolate_ms = Some(start.elapsed().as_secs_f64() * 1e3);
    stats.shading_points = Some(points.len() as u64);
    // This pass's parts and seeds, added to the frame's layers and colour.
    let n = color.len();
    let mut pass = PhotonViews {
        caustic_part: vec![Vec3::ZERO; n],
        indirect_part: vec![Vec3::ZERO; n],
        seeds: vec![0.0; n],
        ..Default::default()
    };
    for (p, (c, i)) in points.iter().zip(&parts) {
        let pixel = p.pixel as usize;
        if pixel < n {
            pass.caustic_part[pixel] += *c;
            pass.indirect_part[pixel] += *i;
        }
    }
    for &s in &seeds {
        let pixel = points[s as usize].pixel as usize;
        if pixel < n {
            pass.seeds[pixel] += 1.0;
        }
    }
    for (k, c) in color.iter_mut().enumerate() {
        *c += pass.caustic_part[k] + pass.indirect_part[k];
    }
    layers.add(&pass);
    stats
}

//! Photon tracing on the CPU: the twin of the GPU's photon wavefront (`gpu::photons`), one
//! photon after another with rayon, through the same three-level traversal as camera rays.
//!
//! A photon leaves its light (`render::photons::emit_photon`), and at each surface hit
//! [`interact`] decides whether it is stored and whether it goes on, with Russian roulette by
//! the surface's reflectance. The records come out in the GPU's order: all first hits in photon
//! order, then all second hits, and so on.

use glam::{Vec2, Vec3};
use rayon::prelude::*;

use crate::accel::kdtree::{build_point_kdtree, PointKdTree};
use crate::accel::photon_estimate::{
    coarse_octahedral_encode, octahedral_encode, photon_flux_density, PhotonRecord,
    PHOTON_NORMAL_SHIFT,
};
use crate::accel::{Prepared, Ray, VdFrame};
use crate::cpu::optics::{
    conductor_fresnel, dielectric_split, face_forward, offset_origin, reflect,
};
use crate::cpu::plastic::{Plastic, PlasticHit};
use crate::cpu::rough::{Facets, RoughHit, RoughSurface};
use crate::render::photons::EstimateSettings;
use crate::render::photons::{
    caustic_targets, cosine_direction, emit_photon, emitter_of, photon_emitters, PhotonPass,
    PhotonPassStats, PHOTON_CHUNK, PHOTON_SPECULAR_PATH,
};
use crate::render::plan::FramePlan;
use crate::render::progress::Phase;
use crate::render::sampling::SampleStream;
use crate::render::stats::PhotonMapStats;
use crate::scene::{FresnelMode, MaterialKind, Scene};

/// A photon map as traced: the stored photons in order and the pass's counts.
#[derive(Clone, Debug, Default)]
pub struct PhotonMap {
    pub records: Vec<PhotonRecord>,
    pub stats: PhotonPassStats,
}

impl PhotonMap {
    /// The total stored power (W per channel).
    pub fn total_power(&self) -> Vec3 {
        self.records.iter().map(|r| Vec3::from_array(r.power)).sum()
    }

    /// Positions as the kd-tree builders take them.
    pub fn points(&self) -> Vec<[f32; 4]> {
        self.records
            .iter()
            .map(|r| [r.position[0], r.position[1], r.position[2], 0.0])
            .collect()
    }
}

/// Traces `count` photons of `pass` from the scene's lights (shared by power) for at most
/// `scene.photons.max_bounces` surface hits each, with VD patches at the levels of `vd`.
pub fn trace_photons(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    pass: PhotonPass,
    count: u32,
) -> PhotonMap {
    let start = std::time::Instant::now();
    let targets = match pass {
        PhotonPass::Global => Vec::new(),
        PhotonPass::Caustic => caustic_targets(scene, prepared),
    };
    // Without specular instances no photon can make an L S+ D path.
    let count = if pass == PhotonPass::Caustic && targets.is_empty() {
        0
    } else {
        count
    };
    let emitters = photon_emitters(scene, prepared, count);
    let emitted: u32 = emitters.iter().map(|e| e.count).sum();
    let max_hits = scene.photons.max_bounces;
    let epsilon = prepared.ray_epsilon();
    let environment = scene.environment().map(|e| &*e.map);
    let per_photon: Vec<(Vec<(u32, PhotonRecord)>, u64)> = (0..emitted)
        .into_par_iter()
        .map(|i| {
            // emitter_of finds one: the emitters' ranges cover 0..emitted.
            let e = emitter_of(&emitters, i).expect("photon index within the emitters");
            let mut rng = SampleStream::new(scene.film.seed, i, pass.stream_tag());
            let photon = emit_photon(e, &emitters, environment, &targets, &mut rng);
            let mut ray = Ray::new(photon.origin, photon.dir);
            let mut power = photon.power;
            let mut specular_path = true;
            let mut stored = Vec::new();
            let mut hits = 0u64;
            for bounce in 0..max_hits {
                let Some(hit) = prepared.intersect_in(vd, &ray) else {
                    break;
                };
                hits += 1;
                let sp = prepared.surface_point(&ray, &hit);
                let material = &*scene.material_at(sp.material, sp.uv);
                let dir = ray.dir.normalize();
                let surface = SurfaceKind::of(material, albedo_at(scene, material, sp.uv));
                let step = interact(
                    pass,
                    surface,
                    dir,
                    power,
                    sp.shading_normal,
                    sp.geometric_normal,
                    specular_path,
                    bounce,
                    bounce + 1 < max_hits,
                    &mut rng,
                );
                if step.store {
                    let normal = coarse_octahedral_encode(face_forward(sp.shading_normal, dir));
                    let flags = bounce
                        | if specular_path {
                            PHOTON_SPECULAR_PATH
                        } else {
                            0
                        }
                        | normal << PHOTON_NORMAL_SHIFT;
                    stored.push((
                        bounce,
                        PhotonRecord {
                            position: sp.position.to_array(),
                            direction: octahedral_encode(dir),
                            power: power.to_array(),
                            flags,
                        },
                    ));
                }
                let Some((next, next_power)) = step.next else {
                    break;
                };
                specular_path &= step.specular;
                let ng = face_forward(sp.geometric_normal, dir);
                let side = if step.transmitted { -ng } else { ng };
                ray = Ray::new(offset_origin(sp.position, side, epsilon), next);
                power = next_power;
            }
            (stored, hits)
        })
        .collect();
    // The GPU's order: (chunk, bounce, photon).
    let mut keyed: Vec<(u32, u32, u32, PhotonRecord)> = Vec::new();
    let mut hits = 0;
    for (i, (stored, h)) in per_photon.into_iter().enumerate() {
        hits += h;
        let i = i as u32;
        keyed.extend(stored.into_iter().map(|(b, r)| (i / PHOTON_CHUNK, b, i, r)));
    }
    keyed.sort_by_key(|&(chunk, bounce, photon, _)| (chunk, bounce, photon));
    let records: Vec<PhotonRecord> = keyed.into_iter().map(|k| k.3).collect();
    PhotonMap {
        stats: PhotonPassStats {
            emitted: emitted as u64,
            stored: records.len() as u64,
            hits,
            trace_ms: start.elapsed().as_secs_f64() * 1e3,
        },
        records,
    }
}

/// The diffuse albedo of `material` at `uv` (textures included).
pub(crate) fn albedo_at(scene: &Scene, material: &MaterialKind, uv: glam::Vec2) -> Vec3 {
    match material {
        MaterialKind::Diffuse { albedo, texture }
        | MaterialKind::Plastic {
            albedo, texture, ..
        } => match texture {
            Some(t) => *albedo * scene.textures[*t as usize].sample(uv),
            None => *albedo,
        },
        _ => Vec3::ZERO,
    }
}

/// What a surface does to a photon arriving along `dir` (unit) with `power`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interaction {
    /// Store the photon (with its arriving power) at this hit.
    pub store: bool,
    /// The next direction and power, when the photon goes on.
    pub next: Option<(Vec3, Vec3)>,
    /// Whether the photon goes on through the surface (a refraction: offset the origin to the
    /// far side).
    pub transmitted: bool,
    /// Whether the interaction was specular (mirror, conductor or dielectric).
    pub specular: bool,
}

/// Russian roulette survival probability for scattering `power` by `reflectance` (Jensen 2001:
/// the largest scattered channel over the largest incoming channel), in [0, 1].
pub fn survival_probability(reflectance: Vec3, power: Vec3) -> f32 {
    let max_in = power.max_element();
    if max_in <= 0.0 || !max_in.is_finite() {
        return 0.0;
    }
    ((reflectance * power).max_element() / max_in).clamp(0.0, 1.0)
}

/// A diffuse bounce of a photon arriving along `dir`: a cosine-distributed direction about the
/// shading normal turned towards it, `None` when that goes below the geometric surface.
fn cosine_bounce(dir: Vec3, shading_normal: Vec3, geometric_normal: Vec3, u: Vec2) -> Option<Vec3> {
    let n = face_forward(shading_normal, dir);
    let ng = face_forward(geometric_normal, dir);
    let next = cosine_direction(n, u);
    (next.dot(ng) > 0.0).then_some(next)
}

/// Material data an interaction needs, as the GPU reads it from its material record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SurfaceKind {
    Diffuse {
        albedo: Vec3,
    },
    Mirror {
        reflectance: Vec3,
    },
    /// A conductor: a mirror whose reflectance is its Fresnel term at the photon's angle.
    Conductor {
        eta: Vec3,
        k: Vec3,
        tint: Vec3,
    },
    Dielectric {
        ior: f32,
        tint: Vec3,
        fresnel: FresnelMode,
    },
    /// A rough conductor or dielectric: photons go on in a direction its BSDF samples.
    Rough(RoughSurface),
    /// A plastic: stored as on a diffuse surface, and reflected by its coat or its base.
    Plastic(Plastic),
    Absorber,
}

impl SurfaceKind {
    /// The reflectance of a mirror, or of a conductor at incidence cosine `cos_i` (the twin of
    /// `specular_reflectance` in shaders/shared/shading.wgsl); zero for other kinds.
    pub fn specular_reflectance(&self, cos_i: f32) -> Vec3 {
        match *self {
            SurfaceKind::Mirror { reflectance } => reflectance,
            SurfaceKind::Conductor { eta, k, tint } => conductor_fresnel(cos_i, eta, k) * tint,
            _ => Vec3::ZERO,
        }
    }

    /// The kind of `material` with a diffuse albedo already looked up (`albedo`).
    pub fn of(material: &MaterialKind, albedo: Vec3) -> SurfaceKind {
        if let Some(rough) = RoughSurface::of(material) {
            return SurfaceKind::Rough(rough);
        }
        match *material {
            MaterialKind::Diffuse { .. } => SurfaceKind::Diffuse { albedo },
            MaterialKind::Mirror { reflectance } => SurfaceKind::Mirror { reflectance },
            MaterialKind::Conductor { eta, k, tint, .. } => SurfaceKind::Conductor { eta, k, tint },
            MaterialKind::Dielectric {
                ior, tint, fresnel, ..
            } => SurfaceKind::Dielectric { ior, tint, fresnel },
            MaterialKind::Plastic { .. } => {
                Plastic::of(material, albedo).map_or(SurfaceKind::Absorber, SurfaceKind::Plastic)
            }
            MaterialKind::Emissive { .. } | MaterialKind::LightSurface { .. } => {
                SurfaceKind::Absorber
            }
        }
    }
}

/// One surface interaction of a photon (twin of `interact` in `shaders/photons/common.wgsl`),
/// drawing [`INTERACT_DIMENSIONS`] numbers from `rng`. `shading_normal` and `geometric_normal`
/// are the surface's; `specular_path` says whether every earlier interaction was specular and
/// `bounces` how many there were; `can_continue` is false at the last allowed hit.
#[allow(clippy::too_many_arguments)]
pub fn interact(
    pass: PhotonPass,
    surface: SurfaceKind,
    dir: Vec3,
    power: Vec3,
    shading_normal: Vec3,
    geometric_normal: Vec3,
    specular_path: bool,
    bounces: u32,
    can_continue: bool,
    rng: &mut SampleStream,
) -> Interaction {
    let u = rng.next_f32();
    let u_dir = rng.next_vec2();
    let none = Interaction {
        store: false,
        next: None,
        transmitted: false,
        specular: false,
    };
    match surface {
        SurfaceKind::Absorber => none,
        SurfaceKind::Diffuse { albedo } => {
            let store = match pass {
                PhotonPass::Global => true,
                PhotonPass::Caustic => specular_path && bounces > 0,
            };
            let mut out = Interaction { store, ..none };
            if pass == PhotonPass::Caustic || !can_continue {
                return out;
            }
            let p = survival_probability(albedo, power);
            if u >= p {
                return out;
            }
            let Some(next) = cosine_bounce(dir, shading_normal, geometric_normal, u_dir) else {
                return out;
            };
            out.next = Some((next, power * albedo / p));
            out
        }
        SurfaceKind::Mirror { .. } | SurfaceKind::Conductor { .. } => {
            if !can_continue {
                return Interaction {
                    specular: true,
                    ..none
                };
            }
            let n = face_forward(shading_normal, dir);
            let reflectance = surface.specular_reflectance(-dir.dot(n));
            let p = survival_probability(reflectance, power);
            if u >= p {
                return Interaction {
                    specular: true,
                    ..none
                };
            }
            Interaction {
                store: false,
                next: Some((reflect(dir, n), power * reflectance / p)),
                transmitted: false,
                specular: true,
            }
        }
        SurfaceKind::Plastic(plastic) => {
            let store = match pass {
                PhotonPass::Global => true,
                PhotonPass::Caustic => specular_path && bounces > 0,
            };
            let out = Interaction { store, ..none };
            let Some(hit) = PlasticHit::new(plastic, dir, shading_normal, geometric_normal)
                .filter(|_| can_continue)
            else {
                return out;
            };
            // The coat with the probability of its Fresnel term (a specular step), else the
            // base (a diffuse one, which ends a caustic photon's path).
            let p_coat = hit.coat_probability();
            if u < p_coat {
                return match hit.sample_coat(u_dir) {
                    Some(s) => Interaction {
                        next: Some((s.dir, power * s.weight / p_coat)),
                        specular: true,
                        ..out
                    },
                    None => out,
                };
            }
            if pass == PhotonPass::Caustic {
                return out;
            }
            let Some(next) = cosine_bounce(dir, shading_normal, geometric_normal, u_dir) else {
                return out;
            };
            let weight = hit.base_bounce_weight(next);
            let p = survival_probability(weight, power);
            if (u - p_coat) / (1.0 - p_coat) >= p {
                return out;
            }
            Interaction {
                next: Some((next, power * weight / p)),
                ..out
            }
        }
        SurfaceKind::Rough(surface) => {
            // Glossy: a caustic path goes on through it, as through a mirror.
            let specular = Interaction {
                specular: true,
                ..none
            };
            if !can_continue {
                return specular;
            }
            let Some(sample) = RoughHit::new(surface, dir, shading_normal, geometric_normal)
                .and_then(|hit| hit.sample(u, u_dir))
            else {
                return specular;
            };
            // A conductor's weight is its Fresnel term: Russian roulette on it, as for a smooth
            // one (u chose nothing else). A dielectric's is at most its tint; u chose the branch.
            let power = match surface.facets {
                Facets::Conductor { .. } => {
                    let p = survival_probability(sample.weight, power);
                    if u >= p {
                        return specular;
                    }
                    power * sample.weight / p
                }
                Facets::Dielectric { .. } => power * sample.weight,
            };
            Interaction {
                next: Some((sample.dir, power)),
                transmitted: sample.transmitted,
                ..specular
            }
        }
        SurfaceKind::Dielectric { ior, tint, fresnel } => {
            let specular = Interaction {
                specular: true,
                ..none
            };
            if !can_continue {
                return specular;
            }
            let split = dielectric_split(dir, shading_normal, geometric_normal, ior, fresnel);
            if u < split.fresnel {
                return Interaction {
                    next: Some((split.reflected, power)),
                    ..specular
                };
            }
            match split.refracted {
                Some(t) => Interaction {
                    next: Some((t, power * tint)),
                    transmitted: true,
                    ..specular
                },
                None => specular,
            }
        }
    }
}

/// A photon map with its kd-tree, ready for radiance estimates.
pub struct PhotonTree {
    pub map: PhotonMap,
    pub points: Vec<[f32; 4]>,
    pub tree: PointKdTree,
    pub build_ms: f64,
}

impl PhotonTree {
    /// Builds the kd-tree over the map's photons (the CPU twin of the GPU builder).
    pub fn build(map: PhotonMap) -> PhotonTree {
        let start = std::time::Instant::now();
        let points = map.points();
        let tree = build_point_kdtree(&points);
        PhotonTree {
            map,
            points,
            tree,
            build_ms: start.elapsed().as_secs_f64() * 1e3,
        }
    }

    /// The flux density (W/m²) at `x` on the side `n` faces, with the scene's settings.
    pub fn flux_density(&self, x: Vec3, n: Vec3, settings: &EstimateSettings) -> Vec3 {
        photon_flux_density(
            &self.tree.words,
            &self.points,
            &self.map.records,
            x,
            n,
            settings.k,
            settings.max_dist2,
            settings.filter,
        )
    }
}

/// The photon maps of a frame with their kd-trees, traced once whatever the passes and layers
/// that use them (the twin of `gpu::photons::FrameMaps`).
#[derive(Default)]
pub struct FrameTrees {
    pub global: Option<PhotonTree>,
    pub caustic: Option<PhotonTree>,
}

/// Traces the photon maps `plan` asks for at the frame's VD levels and builds their kd-trees.
/// Returns them with the statistics of the photon stages.
pub fn trace_frame_trees(
    scene: &Scene,
    prepared: &Prepared,
    vd: &VdFrame,
    plan: &FramePlan,
    report: &dyn Fn(Phase, f32),
) -> (FrameTrees, Vec<PhotonMapStats>) {
    let mut trees = FrameTrees::default();
    let mut stats = Vec::new();
    let passes = plan.photon_passes(scene);
    for (i, &(pass, count)) in passes.iter().enumerate() {
        let share = i as f32 / passes.len() as f32;
        report(Phase::Photons, share);
        let map = trace_photons(scene, prepared, vd, pass, count);
        let mut map_stats = PhotonMapStats::of(pass, map.stats);
        report(Phase::KdTrees, share);
        let tree = PhotonTree::build(map);
        map_stats.tree_build_ms = Some(tree.build_ms);
        stats.push(map_stats);
        match pass {
            PhotonPass::Global => trees.global = Some(tree),
            PhotonPass::Caustic => trees.caustic = Some(tree),
        }
    }
    (trees, stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gold's complex index, as in scenes/cornell_metals.csc.
    fn gold() -> SurfaceKind {
        SurfaceKind::Conductor {
            eta: Vec3::new(0.143, 0.374, 1.442),
            k: Vec3::new(3.983, 2.386, 1.603),
            tint: Vec3::ONE,
        }
    }

    #[test]
    fn a_conductor_reflects_photons_with_its_fresnel_reflectance_at_their_angle() {
        let theta = 70f32.to_radians();
        let dir = Vec3::new(theta.sin(), -theta.cos(), 0.0);
        let power = Vec3::ONE;
        let reflectance = gold().specular_reflectance(theta.cos());
        assert_eq!(
            reflectance,
            conductor_fresnel(
                theta.cos(),
                Vec3::new(0.143, 0.374, 1.442),
                Vec3::new(3.983, 2.386, 1.603)
            )
        );
        let p = survival_probability(reflectance, power);
        let (mut survived, mut absorbed) = (0, 0);
        for photon in 0..200 {
            let mut rng = SampleStream::new(7, photon, 0);
            let step = interact(
                PhotonPass::Global,
                gold(),
                dir,
                power,
                Vec3::Y,
                Vec3::Y,
                true,
                0,
                true,
                &mut rng,
            );
            assert!(step.specular && !step.store && !step.transmitted);
            match step.next {
                Some((next, next_power)) => {
                    survived += 1;
                    assert!((next - Vec3::new(theta.sin(), theta.cos(), 0.0)).length() < 1e-6);
                    assert!((next_power - reflectance / p).abs().max_element() < 1e-6);
                }
                None => absorbed += 1,
            }
        }
        // Russian roulette on the reflectance: gold at 70° keeps most photons, not all.
        assert!(p > 0.9 && p < 1.0, "{p}");
        assert!(
            survived > 150 && absorbed > 0,
            "{survived} survived, {absorbed} absorbed"
        );
    }
}

//! What both backends share of photon tracing (paper 003 section 6.2.1): the emitters with
//! their photon counts and powers, how a photon leaves each kind of light, how it interacts with
//! a surface (store, Russian roulette, bounce), and the statistics of a photon pass.
//!
//! The GPU kernels under `shaders/photons/` are twins of [`emit_photon`] and of
//! `cpu::photons::interact`; they read the same [`PhotonEmitter`] table and draw the same random numbers
//! (the photon's stream is `SampleStream::new(seed, photon index, pass tag)`), so a photon's
//! path differs between the backends only by floating-point rounding.
//!
//! Random dimensions of one photon: 5 at emission (2 for the position on the light, 2 for the
//! direction, 1 for the choice of a caustic target, whatever the light uses), then 3 per surface
//! interaction (1 for the Russian roulette or the Fresnel choice, 2 for a diffuse bounce
//! direction). Fixed counts keep the streams aligned between the backends whichever branch a
//! photon takes.
//!
//! **Caustic photons are aimed** (Jensen's projection maps, with bounding spheres): the caustic
//! pass sends photons only towards the bounding spheres of the specular instances
//! ([`caustic_targets`]), since only those can start an `L S+ D` path. A photon picks one
//! target's cone (or, for a directional light, its disk) in proportion to its solid angle
//! (area), then a uniform direction (point) in it; its power is the light's emission in that
//! direction divided by the density of the mixture, which counts every target whose cone
//! (disk) contains the direction (point). So the caustic map is an unbiased estimate of the
//! same light as the global map's `L S+ D` photons, with far fewer photons wasted.

use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec3};

use super::camera::concentric_disk;
use super::sampling::SampleStream;
use crate::accel::photon_estimate::EstimateFilter;
use crate::accel::prepared::{MESH_DISPLACED, MESH_SPHERE};
use crate::accel::Aabb;
use crate::accel::Prepared;
use crate::scene::{
    directional_cos_max, directional_disk_radius, EnvMap, LightKind, MaterialKind, PhotonFilter,
    Scene,
};

/// Random dimensions drawn at emission.
pub const EMIT_DIMENSIONS: u32 = 5;
/// Random dimensions drawn at each surface interaction.
pub const INTERACT_DIMENSIONS: u32 = 3;

/// Emitter kinds (`EMITTER_*` in `shaders/photons/common.wgsl`).
pub const EMITTER_POINT: u32 = 0;
pub const EMITTER_SPOT: u32 = 1;
pub const EMITTER_DIRECTIONAL: u32 = 2;
pub const EMITTER_QUAD: u32 = 3;
pub const EMITTER_MESH: u32 = 4;
/// A record after the emitters that holds one triangle of a mesh emitter.
pub const EMITTER_TRIANGLE: u32 = 5;
pub const EMITTER_ENVIRONMENT: u32 = 6;
pub const EMITTER_SPHERE: u32 = 7;

/// A photon record's `flags`: the number of surface interactions before this one (bits 0–7),
/// and whether every one of them was specular (bit 8), so `L S+ D` paths are
/// `SPECULAR_PATH` with a nonzero count.
pub const PHOTON_BOUNCES_MASK: u32 = 0xff;
pub const PHOTON_SPECULAR_PATH: u32 = 1 << 8;

/// Which map a photon pass fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PhotonPass {
    /// Every diffuse hit is stored; photons bounce on until absorbed or out of bounces.
    Global,
    /// Only diffuse hits after one or more specular interactions (`L S+ D`) are stored, and a
    /// photon ends at its first diffuse hit.
    Caustic,
}

impl PhotonPass {
    /// The `sample` coordinate of the photons' random streams (camera samples use `0..spp`).
    pub fn stream_tag(self) -> u32 {
        match self {
            PhotonPass::Global => 0x8000_0001,
            PhotonPass::Caustic => 0x8000_0002,
        }
    }

    pub fn index(self) -> u32 {
        match self {
            PhotonPass::Global => 0,
            PhotonPass::Caustic => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PhotonPass::Global => "global",
            PhotonPass::Caustic => "caustic",
        }
    }
}

/// One light as a photon source: photons `first .. first + count` of a pass leave it. Twin of
/// `PhotonEmitter` in `shaders/photons/common.wgsl`.
///
/// - point: `position`; `power` = Φ / count.
/// - spot: `position`, `axis` (unit, w = cos of the outer half-angle), `edge_u.w` = cos of the
///   inner half-angle; `power` = I·Ω_outer / count, where I = Φ/4π, times the falloff of each
///   photon's direction (directions are uniform in the outer cone).
/// - directional: `axis` = unit direction of travel (w = cos of the half-angle of a sun's cone of
///   directions, 1 for one direction); `position` = centre of the disk that covers the scene's
///   bounds (grown for a sun, `scene::directional_disk_radius`), already moved back along
///   `-axis` out of them; `edge_v.w` = the disk's radius R; `edge_u`/`edge_v` xyz = the disk's
///   unit axes; `power` = E·πR² / count.
/// - quad: `position` = corner, `edge_u`, `edge_v` the edges, `axis` = unit normal;
///   `power` = L·A·π / count (cosine-weighted directions).
/// - mesh: its triangles are the records `triangles .. triangles + triangle_count` of the
///   same array (after every emitter), each an `EMITTER_TRIANGLE` with `position` = p0,
///   `edge_u` = e1, `edge_v` = e2, `axis` = (unit normal, the area fraction up to and including
///   it), `first` past every photon and `count` 0; `power` = L·A·π / count, as a quad's.
/// - environment: `triangles` = the map's offset in the GPU's texel array, `triangle_count` =
///   its width, `_pad0` = its height; `axis`/`edge_u`/`edge_v` xyz = the columns of
///   map-to-world; `position` = the centre of the scene's sphere, `edge_v.w` = its radius R;
///   `power` = scale·πR² / count. A photon picks its direction ω by the map's luminance and
///   then leaves like a directional light's towards −ω, of power `power`·L(ω)/pdf(ω)
///   ([`environment_as_directional`]).
/// - sphere: `position` = centre (w = radius), `axis.w` = how far in front of the sphere
///   photons leave (the ray epsilon: the sphere is geometry); `power` = L·4πr²·π / count. A
///   photon leaves like a mesh emitter's from a point uniform over the sphere.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PhotonEmitter {
    pub kind: u32,
    pub first: u32,
    pub count: u32,
    pub triangles: u32,
    pub triangle_count: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
    pub position: [f32; 4],
    pub axis: [f32; 4],
    pub edge_u: [f32; 4],
    pub edge_v: [f32; 4],
    pub power: [f32; 4],
}

/// The total power (W per channel) a light emits, as photon emission sees it.
pub fn light_power(kind: &LightKind, scene_radius: f32) -> Vec3 {
    let pi = std::f32::consts::PI;
    match *kind {
        LightKind::Point { power, .. } => power,
        LightKind::Spot {
            power,
            cone_inner_deg,
            cone_outer_deg,
            ..
        } => {
            let (c0, c1) = spot_cosines(cone_inner_deg, cone_outer_deg);
            // ∫ smoothstep over the ramp is half its width.
            let effective = if c1 > c0 {
                (1.0 - c1) + 0.5 * (c1 - c0)
            } else {
                1.0 - c0
            };
            power / (4.0 * pi) * (2.0 * pi * effective)
        }
        LightKind::Directional {
            irradiance,
            angle_deg,
            ..
        } => {
            let disk = directional_disk_radius(scene_radius, directional_cos_max(angle_deg));
            irradiance * (pi * disk * disk)
        }
        LightKind::Quad {
            edge_u,
            edge_v,
            radiance,
            ..
        } => radiance * (edge_u.cross(edge_v).length() * pi),
        LightKind::Mesh {
            ref emitter,
            radiance,
            ..
        } => radiance * (emitter.area * pi),
        LightKind::Sphere {
            sphere, radiance, ..
        } => radiance * (sphere.area() * pi),
        LightKind::Environment(ref env) => env.integral() * (pi * scene_radius * scene_radius),
    }
}

/// (cos outer, cos inner) of a spot light's cone.
fn spot_cosines(inner_deg: f32, outer_deg: f32) -> (f32, f32) {
    (outer_deg.to_radians().cos(), inner_deg.to_radians().cos())
}

/// The centre and radius of a sphere around the scene's geometry (a unit sphere at the origin
/// for an empty scene).
pub fn scene_sphere(prepared: &Prepared) -> (Vec3, f32) {
    let (lo, hi) = prepared.world_bounds();
    if lo.is_finite() && hi.is_finite() && lo.cmple(hi).all() {
        let centre = (lo + hi) * 0.5;
        (centre, ((hi - lo) * 0.5).length().max(1e-6))
    } else {
        (Vec3::ZERO, 1.0)
    }
}

/// Shares `total` photons between the scene's lights in proportion to their power (summed over
/// the channels; largest remainders get the leftover photons) and derives each emitter's
/// per-photon power, so that the powers of all photons of a pass sum to the lights' power.
pub fn photon_emitters(scene: &Scene, prepared: &Prepared, total: u32) -> Vec<PhotonEmitter> {
    let (centre, radius) = scene_sphere(prepared);
    let powers: Vec<f64> = scene
        .lights
        .iter()
        .map(|l| {
            let p = light_power(&l.kind, radius);
            if p.is_finite() {
                (p.x.max(0.0) + p.y.max(0.0) + p.z.max(0.0)) as f64
            } else {
                0.0
            }
        })
        .collect();
    let sum: f64 = powers.iter().sum();
    if sum <= 0.0 || total == 0 {
        return Vec::new();
    }
    let mut counts: Vec<u32> = powers
        .iter()
        .map(|p| (p / sum * total as f64).floor() as u32)
        .collect();
    let mut left = total - counts.iter().sum::<u32>();
    let mut order: Vec<usize> = (0..powers.len()).filter(|&i| powers[i] > 0.0).collect();
    order.sort_by(|&a, &b| {
        let ra = powers[a] / sum * total as f64 - counts[a] as f64;
        let rb = powers[b] / sum * total as f64 - counts[b] as f64;
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    let mut emitters = Vec::new();
    let mut meshes = Vec::new();
    let mut first = 0u32;
    for (light, &count) in scene.lights.iter().zip(&counts) {
        if count == 0 {
            continue;
        }
        let n = count as f32;
        let mut e = PhotonEmitter {
            first,
            count,
            ..Default::default()
        };
        match light.kind {
            LightKind::Point { position, power } => {
                e.kind = EMITTER_POINT;
                e.position = v4(position, 1.0);
                e.power = v4(power / n, 0.0);
            }
            LightKind::Spot {
                position,
                direction,
                power,
                cone_inner_deg,
                cone_outer_deg,
            } => {
                let (c0, c1) = spot_cosines(cone_inner_deg, cone_outer_deg);
                let pi = std::f32::consts::PI;
                e.kind = EMITTER_SPOT;
                e.position = v4(position, 1.0);
                e.axis = v4(direction.normalize_or_zero(), c0);
                e.edge_u = [0.0, 0.0, 0.0, c1];
                e.power = v4(power / (4.0 * pi) * (2.0 * pi * (1.0 - c0)) / n, 0.0);
            }
            LightKind::Directional {
                direction,
                irradiance,
                angle_deg,
            } => {
                let d = direction.normalize_or_zero();
                let (u, v) = orthonormal_basis(d);
                let cos_max = directional_cos_max(angle_deg);
                let disk = directional_disk_radius(radius, cos_max);
                e.kind = EMITTER_DIRECTIONAL;
                e.axis = v4(d, cos_max);
                e.position = v4(centre - d * (radius * 1.01), 1.0);
                e.edge_u = v4(u, 0.0);
                e.edge_v = v4(v, disk);
                e.power = v4(irradiance * (std::f32::consts::PI * disk * disk) / n, 0.0);
            }
            LightKind::Quad {
                corner,
                edge_u,
                edge_v,
                radiance,
                ..
            } => {
                let normal_area = edge_u.cross(edge_v);
                let area = normal_area.length();
                e.kind = EMITTER_QUAD;
                e.position = v4(corner, 1.0);
                e.edge_u = v4(edge_u, 0.0);
                e.edge_v = v4(edge_v, 0.0);
                e.axis = v4(normal_area.normalize_or_zero(), area);
                e.power = v4(radiance * (area * std::f32::consts::PI) / n, 0.0);
            }
            LightKind::Mesh {
                ref emitter,
                radiance,
                ..
            } => {
                e.kind = EMITTER_MESH;
                e.triangle_count = emitter.triangles.len() as u32;
                e.power = v4(radiance * (emitter.area * std::f32::consts::PI) / n, 0.0);
                meshes.push((emitters.len(), emitter));
            }
            LightKind::Sphere {
                sphere, radiance, ..
            } => {
                e.kind = EMITTER_SPHERE;
                e.position = v4(sphere.centre, sphere.radius);
                e.axis = v4(Vec3::ZERO, prepared.ray_epsilon());
                e.power = v4(radiance * (sphere.area() * std::f32::consts::PI) / n, 0.0);
            }
            LightKind::Environment(ref env) => {
                e.kind = EMITTER_ENVIRONMENT;
                e.triangles = scene.texture_texel_count() as u32;
                e.triangle_count = env.map.width;
                e._pad0 = env.map.height;
                e.position = v4(centre, 1.0);
                e.axis = v4(env.to_world.x_axis, 0.0);
                e.edge_u = v4(env.to_world.y_axis, 0.0);
                e.edge_v = v4(env.to_world.z_axis, radius);
                e.power = v4(
                    Vec3::splat(env.scale * std::f32::consts::PI * radius * radius / n),
                    0.0,
                );
            }
        }
        emitters.push(e);
        first += count;
    }
    // The mesh emitters' triangles after every emitter, with empty photon ranges past the last
    // photon, so that the emitters' ranges stay in order for `emitter_of`. Photons leave from
    // just in front of the emitter, which is geometry.
    let epsilon = prepared.ray_epsilon();
    for (index, emitter) in meshes {
        emitters[index].triangles = emitters.len() as u32;
        emitters.extend(emitter.triangles.iter().map(|t| PhotonEmitter {
            kind: EMITTER_TRIANGLE,
            first,
            position: v4(t.p0 + t.normal * epsilon, 1.0),
            edge_u: v4(t.e1, 0.0),
            edge_v: v4(t.e2, 0.0),
            axis: v4(t.normal, t.cdf),
            ..Default::default()
        }));
    }
    emitters
}

fn v4(v: Vec3, w: f32) -> [f32; 4] {
    [v.x, v.y, v.z, w]
}

/// A point on mesh emitter `e` (a point and its unit normal), from the triangles after the
/// emitters (see [`PhotonEmitter`]); `u.x` picks the triangle by area and, rescaled, the point
/// with `u.y`. Twin of `mesh_emitter_point` in `shaders/photons/emit.wgsl`.
fn mesh_emitter_point(e: &PhotonEmitter, emitters: &[PhotonEmitter], u: Vec2) -> (Vec3, Vec3) {
    let start = e.triangles as usize;
    let end = (start + e.triangle_count as usize).min(emitters.len());
    let Some(triangles) = emitters.get(start..end).filter(|t| !t.is_empty()) else {
        return (Vec3::from_slice(&e.position), Vec3::Z);
    };
    let (i, x) = crate::scene::pick_by_cdf(triangles.len(), |k| triangles[k].axis[3], u.x);
    let t = &triangles[i];
    let point = crate::scene::triangle_point(
        Vec3::from_slice(&t.position),
        Vec3::from_slice(&t.edge_u),
        Vec3::from_slice(&t.edge_v),
        Vec2::new(x, u.y),
    );
    (point, Vec3::from_slice(&t.axis))
}

/// A point uniform over sphere emitter `e`'s surface, moved out by its epsilon, and the outward
/// unit normal there. Twin of `sphere_emitter_point` in `shaders/photons/emit.wgsl`.
fn sphere_emitter_point(e: &PhotonEmitter, u: Vec2) -> (Vec3, Vec3) {
    let z = 1.0 - 2.0 * u.x;
    let r = (1.0 - z * z).max(0.0).sqrt();
    let phi = 2.0 * std::f32::consts::PI * u.y;
    let normal = Vec3::new(r * phi.cos(), r * phi.sin(), z);
    let centre = Vec3::from_slice(&e.position[..3]);
    (centre + normal * (e.position[3] + e.axis[3]), normal)
}

/// A unit vector's two perpendicular unit vectors (Duff et al. 2017, branchless).
pub fn orthonormal_basis(n: Vec3) -> (Vec3, Vec3) {
    let sign = if n.z >= 0.0 { 1.0f32 } else { -1.0 };
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    (
        Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x),
        Vec3::new(b, sign + n.y * n.y * a, -n.y),
    )
}

/// A cosine-distributed direction about `n` from two uniform numbers (Malley's method on the
/// concentric disk).
pub fn cosine_direction(n: Vec3, u: Vec2) -> Vec3 {
    let d = concentric_disk(u);
    let z = (1.0 - d.x * d.x - d.y * d.y).max(0.0).sqrt();
    let (t, b) = orthonormal_basis(n);
    t * d.x + b * d.y + n * z
}

/// The direction of a photon of a directional light travelling along `axis`: uniform in its
/// cone of half-angle acos(`cos_max`) for a sun, `axis` itself when `cos_max` is 1.
pub fn directional_direction(axis: Vec3, cos_max: f32, u: Vec2) -> Vec3 {
    if cos_max < 1.0 {
        cone_direction(axis, cos_max, u)
    } else {
        axis
    }
}

/// A uniform direction in the cone of half-angle acos(`cos_max`) about `axis`.
pub fn cone_direction(axis: Vec3, cos_max: f32, u: Vec2) -> Vec3 {
    let cos = 1.0 - u.x * (1.0 - cos_max);
    let sin = (1.0 - cos * cos).max(0.0).sqrt();
    let phi = 2.0 * std::f32::consts::PI * u.y;
    let (t, b) = orthonormal_basis(axis);
    t * (sin * phi.cos()) + b * (sin * phi.sin()) + axis * cos
}

/// The smooth falloff of a spot light between its outer and inner cone (as the Whitted
/// renderer's direct light).
pub fn spot_falloff(cos_outer: f32, cos_inner: f32, cos: f32) -> f32 {
    if cos_inner <= cos_outer {
        return if cos >= cos_outer { 1.0 } else { 0.0 };
    }
    let t = ((cos - cos_outer) / (cos_inner - cos_outer)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// A photon leaving a light: origin, unit direction and power.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmittedPhoton {
    pub origin: Vec3,
    pub dir: Vec3,
    pub power: Vec3,
}

/// The emitter of photon `index`, by binary search (the emitters' ranges are consecutive and
/// in order, the mesh emitters' triangles after them with empty ranges past every photon).
/// Twin of the search in `shaders/photons/emit.wgsl`.
pub fn emitter_of(emitters: &[PhotonEmitter], index: u32) -> Option<&PhotonEmitter> {
    let k = emitters.partition_point(|e| e.first as u64 + e.count as u64 <= index as u64);
    emitters
        .get(k)
        .filter(|e| index >= e.first && index - e.first < e.count)
}

/// Photon `index` of a pass, drawing [`EMIT_DIMENSIONS`] numbers from `rng`; aimed at
/// `targets` when there are any (the caustic pass). Twin of `emit_photon` in
/// `shaders/photons/common.wgsl`.
pub fn emit_photon(
    e: &PhotonEmitter,
    emitters: &[PhotonEmitter],
    environment: Option<&EnvMap>,
    targets: &[[f32; 4]],
    rng: &mut SampleStream,
) -> EmittedPhoton {
    let u_pos = rng.next_vec2();
    let u_dir = rng.next_vec2();
    let u_pick = rng.next_f32();
    // An environment's photon leaves like a directional light's, in a direction of its own.
    let from_sky;
    let e = if e.kind == EMITTER_ENVIRONMENT {
        let Some(sky) = environment.and_then(|map| environment_as_directional(e, map, u_dir))
        else {
            return EmittedPhoton {
                origin: Vec3::from_slice(&e.position),
                dir: Vec3::Z,
                power: Vec3::ZERO,
            };
        };
        from_sky = sky;
        &from_sky
    } else {
        e
    };
    // A mesh emitter leaves like a quad from a point on one of its triangles.
    let mesh_point;
    let e = if e.kind == EMITTER_MESH {
        let (point, normal) = mesh_emitter_point(e, emitters, u_pos);
        mesh_point = PhotonEmitter {
            position: v4(point, 1.0),
            axis: v4(normal, 0.0),
            ..*e
        };
        &mesh_point
    } else if e.kind == EMITTER_SPHERE {
        let (point, normal) = sphere_emitter_point(e, u_pos);
        mesh_point = PhotonEmitter {
            kind: EMITTER_MESH,
            position: v4(point, 1.0),
            axis: v4(normal, 0.0),
            ..*e
        };
        &mesh_point
    } else {
        e
    };
    if !targets.is_empty() {
        return emit_aimed(e, targets, u_pos, u_dir, u_pick);
    }
    let p = Vec3::from_slice(&e.position);
    let axis = Vec3::from_slice(&e.axis);
    let power = Vec3::from_slice(&e.power);
    match e.kind {
        EMITTER_SPOT => {
            let dir = cone_direction(axis, e.axis[3], u_dir);
            let falloff = spot_falloff(e.axis[3], e.edge_u[3], dir.dot(axis));
            EmittedPhoton {
                origin: p,
                dir,
                power: power * falloff,
            }
        }
        EMITTER_DIRECTIONAL => {
            let d = concentric_disk(u_pos) * e.edge_v[3];
            EmittedPhoton {
                origin: p + Vec3::from_slice(&e.edge_u) * d.x + Vec3::from_slice(&e.edge_v) * d.y,
                dir: directional_direction(axis, e.axis[3], u_dir),
                power,
            }
        }
        EMITTER_QUAD => EmittedPhoton {
            origin: p
                + Vec3::from_slice(&e.edge_u) * u_pos.x
                + Vec3::from_slice(&e.edge_v) * u_pos.y,
            dir: cosine_direction(axis, u_dir),
            power,
        },
        EMITTER_MESH => EmittedPhoton {
            origin: p,
            dir: cosine_direction(axis, u_dir),
            power,
        },
        _ => {
            // Uniform over the sphere.
            let z = 1.0 - 2.0 * u_dir.x;
            let r = (1.0 - z * z).max(0.0).sqrt();
            let phi = 2.0 * std::f32::consts::PI * u_dir.y;
            EmittedPhoton {
                origin: p,
                dir: Vec3::new(r * phi.cos(), r * phi.sin(), z),
                power,
            }
        }
    }
}

/// The directional emitter that photon of environment emitter `e` (see [`PhotonEmitter`]) leaves
/// from: a direction ω towards the sky chosen from `u` by the map's luminance, photons
/// travelling along −ω from a disk of the scene's radius beyond the scene, each of power
/// `power`·L(ω)/pdf(ω); `None` for a black map or a pole. Twin of `environment_as_directional`
/// in `shaders/photons/emit.wgsl`.
pub fn environment_as_directional(
    e: &PhotonEmitter,
    map: &EnvMap,
    u: Vec2,
) -> Option<PhotonEmitter> {
    let (d, pdf) = map.sample(u)?;
    let to_world = glam::Mat3::from_cols(
        Vec3::from_slice(&e.axis),
        Vec3::from_slice(&e.edge_u),
        Vec3::from_slice(&e.edge_v),
    );
    let travel = -(to_world * d);
    let radius = e.edge_v[3];
    let (u_axis, v_axis) = orthonormal_basis(travel);
    let power = Vec3::from_slice(&e.power) * map.lookup(d) / pdf;
    Some(PhotonEmitter {
        kind: EMITTER_DIRECTIONAL,
        position: v4(
            Vec3::from_slice(&e.position) - travel * (radius * 1.01),
            1.0,
        ),
        axis: v4(travel, 1.0),
        edge_u: v4(u_axis, 0.0),
        edge_v: v4(v_axis, radius),
        power: v4(power, 0.0),
        ..*e
    })
}

/// Counts of one photon pass.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhotonPassStats {
    pub emitted: u64,
    pub stored: u64,
    /// Surface hits of all photons (the photons' path lengths summed).
    pub hits: u64,
    pub trace_ms: f64,
}

impl PhotonPassStats {
    /// Average number of surface hits per emitted photon.
    pub fn mean_path_length(&self) -> f64 {
        if self.emitted == 0 {
            0.0
        } else {
            self.hits as f64 / self.emitted as f64
        }
    }
}

/// The most caustic targets; a scene with more specular instances aims at one sphere around
/// all of them.
pub const MAX_CAUSTIC_TARGETS: usize = 64;

/// Bounding spheres (centre, radius) of the instances with a specular material (mirror,
/// conductor or dielectric, smooth or rough), the targets of the caustic pass; empty when there
/// are none. Plastics are not targets: a large plastic floor would draw the photons meant for
/// the glass and metal, for the few percent of light its coat reflects (caustic photons still
/// reflect off coats they meet on their way).
pub fn caustic_targets(scene: &Scene, prepared: &Prepared) -> Vec<[f32; 4]> {
    let mut spheres: Vec<(Vec3, f32)> = Vec::new();
    let mut boxes = Aabb::EMPTY;
    for (record, instance) in prepared.instances.iter().zip(&scene.instances) {
        let specular = matches!(
            scene
                .materials
                .get(instance.material as usize)
                .map(|m| &m.kind),
            Some(
                MaterialKind::Mirror { .. }
                    | MaterialKind::Conductor { .. }
                    | MaterialKind::Dielectric { .. }
            )
        );
        let mesh = &prepared.meshes[record.mesh as usize];
        if !specular || mesh.triangle_count + mesh.quad_count == 0 {
            continue;
        }
        let root = prepared.mesh_bounds[record.mesh as usize];
        boxes = boxes.union(root.transformed(&instance.transform));
        let centre = (root.min + root.max) * 0.5;
        // The vertices' sphere around the box centre (tighter than the box's for round
        // objects); a displaced mesh reaches beyond its vertices, so it keeps the box's.
        let vertices = &prepared.positions
            [mesh.vertex_offset as usize..(mesh.vertex_offset + mesh.vertex_count) as usize];
        let radius = if mesh.flags & MESH_SPHERE != 0 {
            // An analytic sphere's one vertex holds its radius.
            vertices.first().map_or(0.0, |p| p[0])
        } else if mesh.flags & MESH_DISPLACED == 0 {
            vertices
                .iter()
                .map(|p| Vec3::new(p[0], p[1], p[2]).distance(centre))
                .fold(0.0f32, f32::max)
        } else {
            (root.max - root.min).length() * 0.5
        };
        let m = instance.transform.matrix3;
        let scale = m
            .x_axis
            .length()
            .max(m.y_axis.length())
            .max(m.z_axis.length());
        // A little larger, so that rounding never cuts off the object's rim.
        spheres.push((
            instance.transform.transform_point3(centre),
            radius * scale * 1.001 + 1e-6,
        ));
    }
    if spheres.len() > MAX_CAUSTIC_TARGETS {
        let c = (boxes.min + boxes.max) * 0.5;
        let r = spheres
            .iter()
            .map(|(sc, sr)| sc.distance(c) + sr)
            .fold(0.0f32, f32::max);
        spheres = vec![(c, r)];
    }
    spheres.iter().map(|(c, r)| [c.x, c.y, c.z, *r]).collect()
}

/// The cone from `origin` around target `t`: (unit axis, cos of its half-angle, solid angle).
/// An origin inside the sphere sees it all around (cos −1, 4π).
fn target_cone(origin: Vec3, t: [f32; 4]) -> (Vec3, f32, f32) {
    let to = Vec3::new(t[0], t[1], t[2]) - origin;
    let d2 = to.length_squared();
    let r2 = t[3] * t[3];
    if d2 <= r2 {
        return (Vec3::Z, -1.0, 4.0 * std::f32::consts::PI);
    }
    let cos_max = (1.0 - r2 / d2).max(0.0).sqrt();
    (
        to / d2.sqrt(),
        cos_max,
        2.0 * std::f32::consts::PI * (1.0 - cos_max),
    )
}

/// A caustic photon aimed at one of `targets` (module docs): the mixture of the targets' cones
/// (disks for a directional light), weighted by the count of targets that cover the sample.
fn emit_aimed(
    e: &PhotonEmitter,
    targets: &[[f32; 4]],
    u_pos: Vec2,
    u_dir: Vec2,
    u_pick: f32,
) -> EmittedPhoton {
    let p = Vec3::from_slice(&e.position);
    let axis = Vec3::from_slice(&e.axis);
    let power = Vec3::from_slice(&e.power);
    let dark = EmittedPhoton {
        origin: p,
        dir: Vec3::Z,
        power: Vec3::ZERO,
    };
    if e.kind == EMITTER_DIRECTIONAL {
        // Disks around the targets, perpendicular to the light, chosen by area: of the targets'
        // radii, grown for a sun by how far its cone's directions stray on the way from the
        // photon's origin (2.02 R before the target's centre) through the target.
        let u = Vec3::from_slice(&e.edge_u);
        let v = Vec3::from_slice(&e.edge_v);
        let cos_max = e.axis[3];
        let tan_max = (1.0 - cos_max * cos_max).max(0.0).sqrt() / cos_max;
        let radius = |t: &[f32; 4]| t[3] + (2.02 * e.edge_v[3] + t[3]) * tan_max;
        let total: f32 = targets.iter().map(|t| radius(t) * radius(t)).sum();
        let mut pick = u_pick * total;
        let mut chosen = targets.len() - 1;
        for (k, t) in targets.iter().enumerate() {
            let area = radius(t) * radius(t);
            if pick < area {
                chosen = k;
                break;
            }
            pick -= area;
        }
        let t = targets[chosen];
        let d = concentric_disk(u_pos) * radius(&t);
        let centre = Vec3::new(t[0], t[1], t[2]);
        let point = centre + u * d.x + v * d.y;
        let covered = targets
            .iter()
            .filter(|t| {
                let c = Vec3::new(t[0], t[1], t[2]);
                let off = point - c;
                (off - axis * off.dot(axis)).length_squared() <= radius(t) * radius(t)
            })
            .count()
            .max(1);
        // `power` is E·πR²/N for the scene disk of radius R = edge_v.w.
        let scene_area = e.edge_v[3] * e.edge_v[3];
        return EmittedPhoton {
            origin: point - axis * (2.02 * e.edge_v[3]),
            dir: directional_direction(axis, cos_max, u_dir),
            power: power * (total / scene_area / covered as f32),
        };
    }
    let origin = if e.kind == EMITTER_QUAD {
        p + Vec3::from_slice(&e.edge_u) * u_pos.x + Vec3::from_slice(&e.edge_v) * u_pos.y
    } else {
        p
    };
    let cones: Vec<(Vec3, f32, f32)> = targets.iter().map(|&t| target_cone(origin, t)).collect();
    let total: f32 = cones.iter().map(|c| c.2).sum();
    let mut pick = u_pick * total;
    let mut chosen = cones.len() - 1;
    for (k, c) in cones.iter().enumerate() {
        if pick < c.2 {
            chosen = k;
            break;
        }
        pick -= c.2;
    }
    let (cone_axis, cos_max, _) = cones[chosen];
    let dir = cone_direction(cone_axis, cos_max, u_dir);
    let covered = cones.iter().filter(|c| dir.dot(c.0) >= c.1).count().max(1);
    // Photons per unit solid angle of the mixture: covered / total. The light's emission in
    // `dir` over that, per photon: `power` already holds 1/N of the light's normalisation.
    let mixture = total / covered as f32;
    let weight = match e.kind {
        // Φ/N per photon of a uniform sphere: intensity·4π/N.
        EMITTER_POINT => mixture / (4.0 * std::f32::consts::PI),
        // I·Ω_outer/N per photon, times the falloff.
        EMITTER_SPOT => {
            let omega_outer = 2.0 * std::f32::consts::PI * (1.0 - e.axis[3]);
            if omega_outer <= 0.0 {
                return dark;
            }
            spot_falloff(e.axis[3], e.edge_u[3], dir.dot(axis)) * mixture / omega_outer
        }
        // L·A·π/N per photon; the emission in `dir` is L·A·cos.
        _ => {
            let cos = dir.dot(axis);
            if cos <= 0.0 {
                return dark;
            }
            cos * mixture / std::f32::consts::PI
        }
    };
    EmittedPhoton {
        origin,
        dir,
        power: power * weight,
    }
}

/// Photons traced together in one wavefront on the GPU; the maps of both backends are ordered
/// by (chunk, bounce, photon).
pub const PHOTON_CHUNK: u32 = 1 << 20;

/// The estimate's filter for a scene's photon settings.
pub fn estimate_filter(filter: PhotonFilter) -> EstimateFilter {
    match filter {
        PhotonFilter::None => EstimateFilter::None,
        PhotonFilter::Cone { k } => EstimateFilter::Cone { k },
        PhotonFilter::Epanechnikov => EstimateFilter::Epanechnikov,
    }
}

/// k, the search radius and the filter of the radiance estimates of a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimateSettings {
    pub k: usize,
    pub max_dist2: f32,
    pub filter: EstimateFilter,
}

impl EstimateSettings {
    /// From the scene's `photons` block; the radius defaults to a tenth of the scene's.
    pub fn of(scene: &Scene, prepared: &Prepared) -> EstimateSettings {
        let (_, radius) = scene_sphere(prepared);
        let r = scene.photons.search_radius(radius);
        EstimateSettings {
            k: scene.photons.knn as usize,
            max_dist2: r * r,
            filter: estimate_filter(scene.photons.filter),
        }
    }
}

//! The Whitted ray tracer on the CPU: direct light with shadow rays, perfect reflection and
//! Fresnel-weighted refraction, evaluated as a recursive shade tree, with rayon over tiles.
//!
//! What it computes, per camera sample:
//! - at a diffuse surface: `albedo/π · Σ_lights E_light`, each light's irradiance tested with
//!   shadow rays (quad and mesh lights with `samples` stratified shadow rays each);
//! - at a mirror: `reflectance · L(reflected ray)`; at a conductor the same with the
//!   conductor's Fresnel reflectance at the hit's angle (`cpu::optics`);
//! - at a dielectric: `F · L(reflected) + (1 − F) · tint · L(refracted)` with the exact (or, per
//!   material, Schlick's) `F`, or total internal reflection;
//! - at a rough conductor, rough dielectric or plastic: shadow rays weighted by the lobe's
//!   `f cos` (rough glass's also towards lights beyond it, from its far side) and one sampled
//!   child, weighed against each other by multiple importance sampling;
//! - at an emissive surface seen from its front: its radiance (every emissive instance is also a
//!   mesh light, `Scene::add_emissive_lights`, lighting other surfaces through shadow rays);
//! - at a quad light's surface (`Scene::add_light_surfaces`) seen from its front: the light's
//!   radiance; from behind, black.
//!
//! Specular branches stop after `film.max_depth` bounces. Misses see the environment light
//! (black without one), which also lights diffuse points through `samples` shadow rays towards
//! directions chosen by its luminance.

use glam::{Vec2, Vec3};

use crate::accel::{Hit, Prepared, Ray, SurfacePoint, VdFrame};
use crate::cpu::optics::{
    dielectric_split, face_forward, offset_origin, reflect, specular_reflectance,
};
use crate::cpu::plastic::{Plastic, PlasticHit};
use crate::cpu::rough::{power_heuristic, RoughHit, RoughSample, RoughSurface};
use crate::render::gather::ShadingPoint;
use crate::render::lights::{sample_sphere_light, SphereLightSample};
use crate::render::photons::cone_direction;
use crate::render::plan::PassPlan;
use crate::render::sampling::{stratified_sample, SampleStream};
use crate::render::stats::Counter;
use crate::render::CameraModel;
use crate::scene::{
    directional_cos_max, Aov, AreaSampling, Environment, Integrator, LightKind, MaterialKind,
    Sampler, Scene,
};

/// Per-pixel results of a tile.
pub(crate) struct TileOutput {
    pub(crate) x0: u32,
    pub(crate) y0: u32,
    pub(crate) w: u32,
    pub(crate) h: u32,
    pub(crate) color: Vec<Vec3>,
    /// The sums of the pass's samples' first hits.
    pub(crate) first: Vec<FirstHitValues>,
    /// (instance, prim) of the first hit through the pixel centre, −1 for a miss.
    pub(crate) ids: Vec<[f32; 2]>,
    /// The diffuse shading points of the tile's shade trees (photon mapping only).
    pub(crate) points: Vec<ShadingPoint>,
}

/// Ray counters, shared by the worker threads.
#[derive(Default)]
pub(crate) struct RayCounters {
    pub(crate) primary: Counter,
    pub(crate) shadow: Counter,
    pub(crate) specular: Counter,
}

/// The state shared by all tiles of one frame.
pub struct Tracer<'a> {
    scene: &'a Scene,
    prepared: &'a Prepared,
    camera: CameraModel,
    pub(crate) counters: RayCounters,
    /// Distance offset for secondary ray origins, relative to the scene size.
    epsilon: f32,
    /// The frame's VD bottom level: levels chosen by the camera rays, trees built on first use.
    pub vd: VdFrame,
    /// The scene's environment light, which rays that leave the scene see.
    environment: Option<&'a Environment>,
    /// Per instance, the area light whose surface it is ([`Scene::instance_area_lights`]).
    area_lights: Vec<Option<(u32, AreaSampling)>>,
}

impl<'a> Tracer<'a> {
    pub fn new(scene: &'a Scene, prepared: &'a Prepared) -> Tracer<'a> {
        let mut tracer = Tracer {
            scene,
            prepared,
            camera: CameraModel::new(&scene.camera, &scene.film),
            counters: RayCounters::default(),
            epsilon: prepared.ray_epsilon(),
            vd: VdFrame::default(),
            environment: scene.environment(),
            area_lights: scene.instance_area_lights(),
        };
        // The frame's VD levels from every camera sample (accel::vd_frame), as the GPU's
        // camera batch chooses them.
        if !prepared.vd_patches.is_empty() {
            let (w, spp) = (tracer.camera.width, scene.film.spp.max(1));
            let count = (w * tracer.camera.height * spp) as usize;
            let levels = prepared.vd_levels_from_rays(count, |i| {
                let (pixel, s) = ((i / spp as usize) as u32, (i % spp as usize) as u32);
                tracer.camera_sample(pixel % w, pixel / w, s).0
            });
            tracer.vd = VdFrame::new(levels);
        }
        tracer
    }

    /// Camera sample `s` of pixel (`px`, `py`): the ray and the sample's random stream,
    /// advanced past the film and lens dimensions. With the Sobol sampler the pixel offset is
    /// the stream's first pair; with the independent one a jittered grid of `spp` cells (the
    /// pixel centre at 1 spp).
    pub(crate) fn camera_sample(&self, px: u32, py: u32, s: u32) -> (Ray, SampleStream) {
        let film = &self.scene.film;
        let spp = film.spp.max(1);
        let pixel_index = py * self.camera.width + px;
        let mut rng = SampleStream::camera(film.seed, pixel_index, s, film.sampler);
        let offset = match film.sampler {
            Sampler::Sobol => rng.next_vec2(),
            Sampler::Independent => {
                let jitter = if spp == 1 {
                    Vec2::splat(0.5)
                } else {
                    rng.next_vec2()
                };
                stratified_sample(s, spp, jitter)
            }
        };
        let lens = rng.next_vec2();
        let (origin, dir) = self
            .camera
            .generate_ray(Vec2::new(px as f32, py as f32) + offset, lens);
        let ray = Ray {
            origin,
            dir,
            t_min: 0.0,
            t_max: f32::INFINITY,
        };
        (ray, rng)
    }

    /// The samples of `pass` for the pixels of the tile at (`x0`, `y0`) that lie in the pass's
    /// tiles: colour as the sum over the pass's samples divided by the frame's spp, the first
    /// hits as sums in sample order, the id from sample 0 (when the pass holds it).
    pub(crate) fn render_tile(
        &self,
        x0: u32,
        y0: u32,
        w: u32,
        h: u32,
        pass: &PassPlan,
    ) -> TileOutput {
        let n = (w * h) as usize;
        let mut out = TileOutput {
            x0,
            y0,
            w,
            h,
            color: vec![Vec3::ZERO; n],
            first: vec![FirstHitValues::default(); n],
            ids: vec![[-1.0; 2]; n],
            points: Vec::new(),
        };
        let collect = self.scene.film.integrator == Integrator::PhotonMap;
        let wants_ids = self.scene.output.layers.contains(&Aov::Id);
        let spp = self.scene.film.spp.max(1);
        // Pixels outside a crop get no camera ray, as on the GPU.
        let [cx0, cy0, cx1, cy1] =
            self.scene
                .film
                .crop_pixels()
                .unwrap_or([0, 0, self.camera.width, self.camera.height]);
        for y in 0..h {
            for x in 0..w {
                let (px, py) = (x0 + x, y0 + y);
                if !pass.covers_pixel(px, py, self.camera.width)
                    || !(cx0..cx1).contains(&px)
                    || !(cy0..cy1).contains(&py)
                {
                    continue;
                }
                let mut sum = Vec3::ZERO;
                let mut first = FirstHitValues::default();
                for s in pass.sample_start..pass.sample_start + pass.samples {
                    let (ray, mut rng) = self.camera_sample(px, py, s);
                    self.counters.primary.add(1);
                    let mut hit_info = FirstHitValues::default();
                    let mut sink = if collect {
                        PathSink::Collect {
                            weight: Vec3::splat(1.0 / spp as f32),
                            pixel: py * self.camera.width + px,
                            points: Vec::new(),
                        }
                    } else {
                        PathSink::None
                    };
                    sum += self.radiance_along(&ray, 0, &mut rng, Some(&mut hit_info), &mut sink);
                    if let PathSink::Collect { points, .. } = sink {
                        out.points.extend(points);
                    }
                    first.add(&hit_info);
                }
                let i = (y * w + x) as usize;
                out.color[i] = sum / spp as f32;
                out.first[i] = first;
                if wants_ids && pass.sample_start == 0 {
                    out.ids[i] = self.primary_hit_id(px, py);
                }
            }
        }
        out
    }

    /// (instance, prim) of the closest hit of the camera ray through the centre of pixel
    /// (`px`, `py`) and the centre of the lens; (−1, −1) for a miss.
    pub fn primary_hit_id(&self, px: u32, py: u32) -> [f32; 2] {
        let (origin, dir) = self.camera.generate_ray(
            Vec2::new(px as f32 + 0.5, py as f32 + 0.5),
            Vec2::splat(0.5),
        );
        match self.prepared.intersect_in(
            &self.vd,
            &Ray {
                origin,
                dir,
                t_min: 0.0,
                t_max: f32::INFINITY,
            },
        ) {
            Some(hit) => [hit.instance as f32, hit.prim as f32],
            None => [-1.0, -1.0],
        }
    }

    /// Radiance arriving along `ray` (towards its origin). `first` receives the AOV values of the
    /// first surface hit when given.
    pub fn radiance(
        &self,
        ray: &Ray,
        depth: u32,
        rng: &mut SampleStream,
        first: Option<&mut FirstHitValues>,
    ) -> Vec3 {
        self.radiance_along(ray, depth, rng, first, &mut PathSink::None)
    }

    /// [`Tracer::radiance`], also handing every diffuse hit of the shade tree with its path
    /// weight to `sink` (the shading points of photon mapping).
    pub fn radiance_along(
        &self,
        ray: &Ray,
        depth: u32,
        rng: &mut SampleStream,
        first: Option<&mut FirstHitValues>,
        sink: &mut PathSink,
    ) -> Vec3 {
        self.radiance_sampled(ray, depth, rng, first, sink, 0.0)
    }

    /// [`Tracer::radiance_along`] for a ray a glossy surface sampled with density `bsdf_pdf`
    /// per unit solid angle (0 for a camera ray or a specular one): light it finds on an area
    /// light or the environment, which the glossy surface's shadow rays sample too, is weighed
    /// by the power heuristic against them.
    fn radiance_sampled(
        &self,
        ray: &Ray,
        depth: u32,
        rng: &mut SampleStream,
        first: Option<&mut FirstHitValues>,
        sink: &mut PathSink,
        bsdf_pdf: f32,
    ) -> Vec3 {
        let hit = self.prepared.intersect_in(&self.vd, ray);
        let Some(hit) = hit else {
            // A ray that leaves the scene sees the environment.
            return self.environment.map_or(Vec3::ZERO, |env| {
                let dir = ray.dir.normalize();
                let mut seen = env.radiance(dir);
                if bsdf_pdf > 0.0 {
                    let light_pdf =
                        env.samples.max(1) as f32 * env.map.pdf(env.to_world.transpose() * dir);
                    seen *= power_heuristic(bsdf_pdf, light_pdf);
                }
                seen
            });
        };
        let sp = self.prepared.surface_point(ray, &hit);
        let kind = &*self.scene.material_at(sp.material, sp.uv);
        let dir = ray.dir.normalize();
        if let Some(f) = first {
            *f = FirstHitValues {
                albedo: self.albedo_of(kind, &sp),
                hit: 1.0,
                normal: sp.shading_normal,
                geometric: sp.geometric_normal,
                position: sp.position,
            };
        }
        match kind {
            MaterialKind::Emissive { radiance, .. } | MaterialKind::LightSurface { radiance } => {
                let cos_light = -dir.dot(sp.geometric_normal);
                if cos_light <= 0.0 {
                    return Vec3::ZERO;
                }
                match self
                    .area_lights
                    .get(hit.instance as usize)
                    .copied()
                    .flatten()
                {
                    Some((_, sampling)) if bsdf_pdf > 0.0 => {
                        let distance = hit.t * ray.dir.length();
                        let light_pdf = sampling.counted_pdf_from(ray.origin, distance, cos_light);
                        *radiance * power_heuristic(bsdf_pdf, light_pdf)
                    }
                    _ => *radiance,
                }
            }
            MaterialKind::Conductor { .. } | MaterialKind::Dielectric { .. }
                if kind.alpha().is_some() =>
            {
                if depth >= self.scene.film.max_depth {
                    return Vec3::ZERO;
                }
                let Some(rough) = RoughSurface::of(kind).and_then(|surface| {
                    RoughHit::new(surface, dir, sp.shading_normal, sp.geometric_normal)
                }) else {
                    return Vec3::ZERO;
                };
                // The lobe's direction first, then the shadow rays, then the child's numbers.
                let u_branch = rng.next_f32();
                let sample = rough.sample(u_branch, rng.next_vec2());
                let l = self.direct_light(&sp, dir, rng, Lobe::Rough(&rough));
                l + sample.map_or(Vec3::ZERO, |s| self.follow(&sp, dir, &s, depth, rng, sink))
            }
            MaterialKind::Plastic { .. } => {
                let albedo = self.albedo_of(kind, &sp);
                let Some(plastic) = Plastic::of(kind, albedo)
                    .and_then(|p| PlasticHit::new(p, dir, sp.shading_normal, sp.geometric_normal))
                else {
                    return Vec3::ZERO;
                };
                sink.collect(&sp, dir, plastic.base_albedo());
                // As at a rough surface: the coat's direction, the shadow rays, the child.
                let _ = rng.next_f32();
                let sample = plastic.sample_coat(rng.next_vec2());
                let l = self.direct_light(&sp, dir, rng, Lobe::Plastic(&plastic));
                if depth >= self.scene.film.max_depth {
                    return l;
                }
                l + sample.map_or(Vec3::ZERO, |s| self.follow(&sp, dir, &s, depth, rng, sink))
            }
            MaterialKind::Diffuse { .. } => {
                let albedo = self.albedo_of(kind, &sp);
                sink.collect(&sp, dir, albedo);
                self.direct_light(&sp, dir, rng, Lobe::Diffuse)
                    * albedo
                    * std::f32::consts::FRAC_1_PI
            }
            MaterialKind::Mirror { .. } | MaterialKind::Conductor { .. } => {
                if depth >= self.scene.film.max_depth {
                    return Vec3::ZERO;
                }
                let n = face_forward(sp.shading_normal, dir);
                let ng = face_forward(sp.geometric_normal, dir);
                let reflectance = specular_reflectance(kind, -dir.dot(n));
                let bounce = self.spawn(&sp, ng, reflect(dir, n));
                let mut child = sink.scaled(reflectance);
                let l =
                    reflectance * self.radiance_along(&bounce, depth + 1, rng, None, &mut child);
                sink.absorb(child);
                l
            }
            MaterialKind::Dielectric {
                ior, tint, fresnel, ..
            } => {
                if depth >= self.scene.film.max_depth {
                    return Vec3::ZERO;
                }
                let split =
                    dielectric_split(dir, sp.shading_normal, sp.geometric_normal, *ior, *fresnel);
                let ng_out = face_forward(sp.geometric_normal, dir);
                let mut l = Vec3::ZERO;
                if split.fresnel > 0.0 {
                    let bounce = self.spawn(&sp, ng_out, split.reflected);
                    let mut child = sink.scaled(Vec3::splat(split.fresnel));
                    l += split.fresnel
                        * self.radiance_along(&bounce, depth + 1, rng, None, &mut child);
                    sink.absorb(child);
                }
                if let Some(t) = split.refracted {
                    let bounce = self.spawn(&sp, -ng_out, t);
                    let w = (1.0 - split.fresnel) * *tint;
                    let mut child = sink.scaled(w);
                    l += w * self.radiance_along(&bounce, depth + 1, rng, None, &mut child);
                    sink.absorb(child);
                }
                l
            }
        }
    }

    /// The radiance a glossy surface's sampled direction `s` brings back, times its weight,
    /// the child path's shading points going to `sink`. Shadow rays sample lights only on the
    /// viewer's side, so what a refraction finds is all the lobe's (no MIS weight).
    fn follow(
        &self,
        sp: &SurfacePoint,
        dir: Vec3,
        s: &RoughSample,
        depth: u32,
        rng: &mut SampleStream,
        sink: &mut PathSink,
    ) -> Vec3 {
        let ng = face_forward(sp.geometric_normal, dir);
        let bounce = self.spawn(sp, if s.transmitted { -ng } else { ng }, s.dir);
        let mut child = sink.scaled(s.weight);
        let l = s.weight * self.radiance_sampled(&bounce, depth + 1, rng, None, &mut child, s.pdf);
        sink.absorb(child);
        l
    }

    /// A secondary ray from the surface point, offset to the side of `side_normal`.
    fn spawn(&self, sp: &SurfacePoint, side_normal: Vec3, dir: Vec3) -> Ray {
        self.counters.specular.add(1);
        Ray {
            origin: offset_origin(sp.position, side_normal, self.epsilon),
            dir,
            t_min: 0.0,
            t_max: f32::INFINITY,
        }
    }

    fn albedo_of(&self, kind: &MaterialKind, sp: &SurfacePoint) -> Vec3 {
        match kind {
            MaterialKind::Diffuse { albedo, texture }
            | MaterialKind::Plastic {
                albedo, texture, ..
            } => match texture {
                Some(t) => *albedo * self.scene.textures[*t as usize].sample(sp.uv),
                None => *albedo,
            },
            MaterialKind::Mirror { reflectance } => *reflectance,
            // The reflectance at normal incidence.
            MaterialKind::Conductor { .. } => specular_reflectance(kind, 1.0),
            MaterialKind::Dielectric { tint, .. } => *tint,
            MaterialKind::Emissive { radiance, .. } | MaterialKind::LightSurface { radiance } => {
                radiance.min(Vec3::ONE)
            }
        }
    }

    /// Light arriving at a point from every light, with shadow rays: at a diffuse point the
    /// irradiance `Σ L cos / pdf`, which the caller scales by albedo/π; at a rough or plastic
    /// one `Σ L f cos / pdf`, the glossy lobe's share of each area or environment sample
    /// weighed by the power heuristic against the lobe's own sampling
    /// ([`Tracer::radiance_sampled`]). Surfaces are two-sided: the normal is turned towards the
    /// viewer.
    fn direct_light(
        &self,
        sp: &SurfacePoint,
        view_dir: Vec3,
        rng: &mut SampleStream,
        lobe: Lobe,
    ) -> Vec3 {
        let n = face_forward(sp.shading_normal, view_dir);
        let ng = face_forward(sp.geometric_normal, view_dir);
        let origin = offset_origin(sp.position, ng, self.epsilon);
        // Rough glass also takes light from beyond it: those shadow rays leave from its far side.
        let transmits = matches!(lobe, Lobe::Rough(rough) if rough.transmits());
        let at = LightSample {
            origin,
            far_origin: transmits.then(|| offset_origin(sp.position, -ng, self.epsilon)),
            n,
            ng,
            lobe,
        };
        let mut e = Vec3::ZERO;
        for light in &self.scene.lights {
            match light.kind {
                LightKind::Point { position, power } => {
                    e += self.point_light(&at, position, power / (4.0 * std::f32::consts::PI));
                }
                LightKind::Spot {
                    position,
                    direction,
                    power,
                    cone_inner_deg,
                    cone_outer_deg,
                } => {
                    let to_point = (sp.position - position).normalize_or_zero();
                    let cos = to_point.dot(direction.normalize_or_zero());
                    let falloff = smoothstep(
                        cone_outer_deg.to_radians().cos(),
                        cone_inner_deg.to_radians().cos(),
                        cos,
                    );
                    if falloff > 0.0 {
                        e += self.point_light(
                            &at,
                            position,
                            power * falloff / (4.0 * std::f32::consts::PI),
                        );
                    }
                }
                LightKind::Directional {
                    direction,
                    irradiance,
                    angle_deg,
                } => {
                    // A sun's disk: a direction uniform in its cone, weighted so that a surface
                    // facing it gets `irradiance` (∫ L cos dω = L π sin²θ over the cone). Rays
                    // do not see it, so it is light sampling's alone.
                    let toward = -direction.normalize_or_zero();
                    let cos_max = directional_cos_max(angle_deg);
                    let (wi, scale) = if cos_max < 1.0 {
                        let u = rng.next_vec2();
                        (cone_direction(toward, cos_max, u), 2.0 / (1.0 + cos_max))
                    } else {
                        (toward, 1.0)
                    };
                    let response = at.response(wi, None);
                    if response != Vec3::ZERO && self.direction_clear(at.origin_toward(wi), wi) {
                        e += irradiance * scale * response;
                    }
                }
                LightKind::Environment(ref env) => {
                    // Directions chosen by the map's luminance: `L cos / pdf` each.
                    let count = env.samples.max(1);
                    let mut sum = Vec3::ZERO;
                    for s in 0..count {
                        let u = stratified_sample(s, count, rng.next_vec2());
                        let Some(sample) = env.sample(u) else {
                            continue;
                        };
                        let response = at.response(sample.dir, Some(count as f32 * sample.pdf));
                        if response != Vec3::ZERO
                            && self.direction_clear(at.origin_toward(sample.dir), sample.dir)
                        {
                            sum += sample.radiance * response / sample.pdf;
                        }
                    }
                    e += sum / count as f32;
                }
                LightKind::Quad {
                    corner,
                    edge_u,
                    edge_v,
                    radiance,
                    ..
                } => {
                    let Some(sampling) = light.kind.area_sampling() else {
                        continue;
                    };
                    if sampling.area <= 0.0 {
                        continue;
                    }
                    let light_n = edge_u.cross(edge_v) / sampling.area;
                    let mut sum = Vec3::ZERO;
                    for s in 0..sampling.samples {
                        let uv = stratified_sample(s, sampling.samples, rng.next_vec2());
                        let target = corner + edge_u * uv.x + edge_v * uv.y;
                        sum += self.area_light_sample(&at, target, light_n, radiance, sampling);
                    }
                    e += sum * (sampling.area / sampling.samples as f32);
                }
                LightKind::Mesh {
                    ref emitter,
                    radiance,
                    ..
                } => {
                    let Some(sampling) = light.kind.area_sampling() else {
                        continue;
                    };
                    let mut sum = Vec3::ZERO;
                    for s in 0..sampling.samples {
                        let u = stratified_sample(s, sampling.samples, rng.next_vec2());
                        let (point, light_n) = emitter.sample(u);
                        // Just in front of the emitter, which is geometry.
                        let target = point + light_n * self.epsilon;
                        sum += self.area_light_sample(&at, target, light_n, radiance, sampling);
                    }
                    e += sum * (sampling.area / sampling.samples as f32);
                }
                LightKind::Sphere {
                    sphere,
                    radiance,
                    samples,
                    ..
                } => {
                    // Directions uniform over the cone the sphere covers: `L cos / pdf` each.
                    let count = samples.max(1);
                    let mut sum = Vec3::ZERO;
                    for s in 0..count {
                        let u = stratified_sample(s, count, rng.next_vec2());
                        let Some(sample) = sample_sphere_light(&sphere, origin, u) else {
                            continue;
                        };
                        sum += self.sphere_light_sample(&at, &sample, radiance, count);
                    }
                    e += sum / count as f32;
                }
            }
        }
        e
    }

    /// One sample of a sphere light: `radiance · response / pdf` towards the point `sample`
    /// when its shadow ray is clear, else zero. Twin of `sphere_light_shadow` in
    /// `shaders/whitted/shade.wgsl`.
    fn sphere_light_sample(
        &self,
        at: &LightSample,
        sample: &SphereLightSample,
        radiance: Vec3,
        count: u32,
    ) -> Vec3 {
        // Just in front of the emitter, which is geometry.
        let to_light = sample.point + sample.normal * self.epsilon - at.origin;
        let wi = to_light.normalize_or_zero();
        if -sample.normal.dot(wi) <= 0.0 {
            return Vec3::ZERO;
        }
        let response = at.response(wi, Some(count as f32 * sample.pdf));
        if response == Vec3::ZERO || !self.segment_clear_from(at, wi, to_light) {
            return Vec3::ZERO;
        }
        radiance * response / sample.pdf
    }

    /// One sample of an area light: `radiance · response · cos_light / d²` from the point
    /// `target` of the light (unit normal `light_n` on its emitting side) when its shadow ray
    /// is clear, else zero ([`LightSample::response`]: `cos_surface` at a diffuse point). Twin
    /// of `area_light_shadow` in `shaders/whitted/shade.wgsl`.
    fn area_light_sample(
        &self,
        at: &LightSample,
        target: Vec3,
        light_n: Vec3,
        radiance: Vec3,
        sampling: AreaSampling,
    ) -> Vec3 {
        let to_light = target - at.origin;
        let dist2 = to_light.length_squared();
        if dist2 <= 0.0 {
            return Vec3::ZERO;
        }
        let distance = dist2.sqrt();
        let wi = to_light / distance;
        let cos_light = -light_n.dot(wi);
        if cos_light <= 0.0 {
            return Vec3::ZERO;
        }
        let response = at.response(wi, Some(sampling.counted_pdf(distance, cos_light)));
        if response == Vec3::ZERO || !self.segment_clear_from(at, wi, to_light) {
            return Vec3::ZERO;
        }
        radiance * response * (cos_light / dist2)
    }

    /// Whether the shadow ray towards `at.origin + to_light` (direction `wi`) reaches (just short
    /// of) it unblocked, leaving from the side of the surface `wi` points to
    /// ([`LightSample::origin_toward`]); counts the ray.
    fn segment_clear_from(&self, at: &LightSample, wi: Vec3, to_light: Vec3) -> bool {
        let from = at.origin_toward(wi);
        self.segment_clear(from, at.origin + to_light - from)
    }

    /// Whether the shadow ray from `origin` along `to_light` reaches (just short of) its end
    /// unblocked; counts the ray.
    fn segment_clear(&self, origin: Vec3, to_light: Vec3) -> bool {
        self.counters.shadow.add(1);
        let shadow = Ray {
            origin,
            dir: to_light,
            t_min: 0.0,
            t_max: 1.0 - 1e-4,
        };
        !self.prepared.occluded_in(&self.vd, &shadow)
    }

    /// Whether the shadow ray from `origin` along `dir` leaves the scene unblocked (a light
    /// infinitely far away); counts the ray.
    fn direction_clear(&self, origin: Vec3, dir: Vec3) -> bool {
        self.counters.shadow.add(1);
        let shadow = Ray {
            origin,
            dir,
            t_min: 0.0,
            t_max: f32::INFINITY,
        };
        !self.prepared.occluded_in(&self.vd, &shadow)
    }

    /// Light from an isotropic point source of intensity `intensity` (W/sr), with a shadow
    /// ray: `intensity · response / d²`.
    fn point_light(&self, at: &LightSample, position: Vec3, intensity: Vec3) -> Vec3 {
        let to_light = position - at.origin;
        let dist2 = to_light.length_squared();
        if dist2 <= 0.0 {
            return Vec3::ZERO;
        }
        let wi = to_light / dist2.sqrt();
        let response = at.shading_response(wi, None);
        if response == Vec3::ZERO || !self.segment_clear_from(at, wi, to_light) {
            return Vec3::ZERO;
        }
        intensity * response / dist2
    }

    /// Follows only the refracted branch of a ray through dielectrics (no Fresnel weighting),
    /// returning the direction after each interface; stops at the first non-dielectric surface,
    /// a miss, total internal reflection or `max_steps`. Used to check refraction geometry.
    pub fn follow_refraction(&self, ray: &Ray, max_steps: u32) -> Vec<(Vec3, Vec3)> {
        let mut path = Vec::new();
        let mut ray = *ray;
        for _ in 0..max_steps {
            let Some(hit): Option<Hit> = self.prepared.intersect_in(&self.vd, &ray) else {
                break;
            };
            let sp = self.prepared.surface_point(&ray, &hit);
            let MaterialKind::Dielectric { ior, fresnel, .. } =
                self.scene.materials[sp.material as usize].kind
            else {
                break;
            };
            let dir = ray.dir.normalize();
            let split = dielectric_split(dir, sp.shading_normal, sp.geometric_normal, ior, fresnel);
            let Some(t) = split.refracted else { break };
            let ng_out = face_forward(sp.geometric_normal, dir);
            ray = Ray {
                origin: offset_origin(sp.position, -ng_out, self.epsilon),
                dir: t,
                t_min: 0.0,
                t_max: f32::INFINITY,
            };
            path.push((sp.position, t));
        }
        path
    }
}

/// What a point's light samples are weighed by.
#[derive(Clone, Copy)]
enum Lobe<'r> {
    /// The cosine alone: irradiance, which the caller scales by albedo/π.
    Diffuse,
    Rough(&'r RoughHit),
    Plastic(&'r PlasticHit),
}

/// A point that light samples reach: the shadow rays' origin (and, where light also comes
/// through from behind, the origin on the far side), the shading and geometric normals on the
/// viewer's side, and its lobe.
struct LightSample<'r> {
    origin: Vec3,
    far_origin: Option<Vec3>,
    n: Vec3,
    ng: Vec3,
    lobe: Lobe<'r>,
}

impl LightSample<'_> {
    /// What light arriving from unit direction `wi` is multiplied by: the cosine at a diffuse
    /// point; at a rough one `f cos`, times the power heuristic of the light's strategy
    /// (density `light_pdf`, its sample count folded in; `None` for a light that rays cannot
    /// meet) against the lobe's. Zero below either normal, except through rough glass, whose
    /// transmission takes light from below both.
    fn response(&self, wi: Vec3, light_pdf: Option<f32>) -> Vec3 {
        let (side, cos) = (self.ng.dot(wi), self.n.dot(wi));
        if side == 0.0 || (side > 0.0) != (cos > 0.0) {
            return Vec3::ZERO;
        }
        self.shading_response(wi, light_pdf)
    }

    /// The origin of a shadow ray towards unit direction `wi`: on the far side of the surface
    /// when `wi` leaves through it (rough glass), else on the viewer's.
    fn origin_toward(&self, wi: Vec3) -> Vec3 {
        match self.far_origin {
            Some(far) if self.ng.dot(wi) < 0.0 => far,
            _ => self.origin,
        }
    }

    /// [`LightSample::response`] tested against the shading normal only (point and spot
    /// lights).
    fn shading_response(&self, wi: Vec3, light_pdf: Option<f32>) -> Vec3 {
        let cos = self.n.dot(wi);
        let weigh = |glossy: Vec3, bsdf_pdf: f32| match light_pdf {
            Some(p) => glossy * power_heuristic(p, bsdf_pdf),
            None => glossy,
        };
        match self.lobe {
            // Only rough glass takes light from below: its transmission lobe.
            Lobe::Rough(rough) if cos < 0.0 => {
                let (f_cos, bsdf_pdf) = rough.eval_transmission(wi);
                weigh(f_cos, bsdf_pdf)
            }
            _ if cos <= 0.0 => Vec3::ZERO,
            Lobe::Diffuse => Vec3::splat(cos),
            Lobe::Rough(rough) => {
                let (f_cos, bsdf_pdf) = rough.eval_reflection(wi);
                weigh(f_cos, bsdf_pdf)
            }
            // The base's light only shadow rays find; a smooth coat's none.
            Lobe::Plastic(plastic) => {
                let (base, coat, coat_pdf) = plastic.eval(wi);
                if coat_pdf > 0.0 {
                    base + weigh(coat, coat_pdf)
                } else {
                    base
                }
            }
        }
    }
}

/// Where [`Tracer::radiance_along`] puts the diffuse hits of a shade tree.
pub enum PathSink {
    None,
    /// Collect each diffuse hit as a shading point of `pixel`, its weight `weight` times the
    /// surface's albedo/π (`weight` is the path's throughput over the sample count).
    Collect {
        weight: Vec3,
        pixel: u32,
        points: Vec<ShadingPoint>,
    },
}

impl PathSink {
    /// A sink for a child path whose throughput is this one's times `factor`.
    fn scaled(&self, factor: Vec3) -> PathSink {
        match self {
            PathSink::None => PathSink::None,
            PathSink::Collect { weight, pixel, .. } => PathSink::Collect {
                weight: *weight * factor,
                pixel: *pixel,
                points: Vec::new(),
            },
        }
    }

    /// Collects the diffuse point `sp` (seen along `dir`) of `albedo`: its weight is the path's
    /// times albedo/π.
    fn collect(&mut self, sp: &SurfacePoint, dir: Vec3, albedo: Vec3) {
        if let PathSink::Collect {
            weight,
            pixel,
            points,
        } = self
        {
            points.push(ShadingPoint {
                position: sp.position,
                normal: face_forward(sp.shading_normal, dir),
                weight: *weight * albedo * std::f32::consts::FRAC_1_PI,
                pixel: *pixel,
            });
        }
    }

    /// Takes a child's points.
    fn absorb(&mut self, child: PathSink) {
        if let (PathSink::Collect { points, .. }, PathSink::Collect { points: more, .. }) =
            (self, child)
        {
            points.extend(more);
        }
    }
}

/// What the camera saw first through one sample (all zero for a miss), or the sum of this
/// over samples, for the AOV layers; the twin of the GPU's `FirstHit`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstHitValues {
    pub albedo: Vec3,
    /// 1 for a hit, 0 for a miss; summed, how many samples hit.
    pub hit: f32,
    /// The shading normal.
    pub normal: Vec3,
    pub geometric: Vec3,
    pub position: Vec3,
}

impl FirstHitValues {
    /// Adds `other` to these sums.
    pub fn add(&mut self, other: &FirstHitValues) {
        self.albedo += other.albedo;
        self.hit += other.hit;
        self.normal += other.normal;
        self.geometric += other.geometric;
        self.position += other.position;
    }
}

fn smoothstep(edge0: f32, edge1: f32, x: f32) -> f32 {
    if edge1 <= edge0 {
        return if x >= edge0 { 1.0 } else { 0.0 };
    }
    let t = ((x - edge0) / (edge1 - edge0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

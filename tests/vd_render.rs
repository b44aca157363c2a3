//! VD patches through the renderers: scenes written in the scene language, rendered by the CPU
//! backend and (when there is one) the GPU backend, compared through the frames' `depth`,
//! `normal` and `id` layers. The displaced teapot matches the tessellation of its Bézier
//! patches within the deviation of the tessellations both sides use, and the overhang map's
//! folded cap shows a downward-facing underside above its base plane, which no height map can.

mod support;

use support::vd_tessellation_deviation;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use glam::{Vec2, Vec3};

use caustica::accel::Prepared;
use caustica::cpu::{render_whitted, Tracer};
use caustica::gpu::test_context;
use caustica::gpu::GpuBackend;
use caustica::io::AssetCache;
use caustica::render::{Backend, CameraModel, Frame, RenderOptions};
use caustica::scene::Scene;
use caustica::{Overrides, SceneFile};

/// Parses and evaluates scene text (first frame) and builds its hierarchy.
fn load(name: &str, text: &str) -> (Scene, Prepared) {
    let file = SceneFile::from_str(name, text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let first = file.frame_range().unwrap().first;
    // These tests compare the Whitted images of the two backends.
    let whitted = Overrides {
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Overrides::default()
    };
    let scene = caustica::evaluate_frame(&file, first, &AssetCache::default(), &whitted)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let prepared = caustica::prepare(&scene).unwrap_or_else(|e| panic!("{name}: {e}"));
    (scene, prepared)
}

/// The GPU backend, or `None` (with the reason printed) when there is no GPU and none is
/// required.
fn gpu_backend() -> Option<GpuBackend> {
    test_context().map(|ctx| GpuBackend::new(Arc::new(ctx)).unwrap())
}

/// The per-pixel layers the tests read.
struct Layers {
    /// Distance along the camera ray through the pixel centre; infinity for a miss.
    depth: Vec<f32>,
    /// Unit world normal of the first hit (a VD patch's facet normal).
    normal: Vec<Vec3>,
    /// (instance, prim) of the first hit; −1 for a miss. Empty unless requested.
    id: Vec<[f32; 2]>,
}

impl Layers {
    fn of(frame: &Frame) -> Layers {
        // Distance along the camera ray (one sample a pixel from a pinhole): from the camera to
        // the first hit's position `P`; infinite where the sample missed (no coverage).
        let origin = frame.metadata.camera_position;
        let depth = frame
            .aov("P")
            .expect("a position layer")
            .pixels
            .chunks_exact(3)
            .zip(&frame.alpha)
            .map(|(p, &a)| {
                if a > 0.0 {
                    (Vec3::new(p[0], p[1], p[2]) - origin).length()
                } else {
                    f32::INFINITY
                }
            })
            .collect();
        let normal = frame
            .aov("Ns")
            .expect("a shading normal layer")
            .pixels
            .chunks_exact(3)
            .map(|c| Vec3::new(c[0], c[1], c[2]))
            .collect();
        let id = frame.aov("id").map_or(Vec::new(), |l| {
            l.pixels.chunks_exact(2).map(|c| [c[0], c[1]]).collect()
        });
        Layers { depth, normal, id }
    }
}

struct Rendered {
    cpu: Layers,
    gpu: Option<Layers>,
    cpu_seconds: f64,
    gpu_seconds: f64,
    /// The GPU adapter, empty without one.
    gpu_device: String,
}

impl Rendered {
    fn timings(&self) -> String {
        match &self.gpu {
            Some(_) => format!(
                "cpu {:.2} s, gpu {:.2} s on {}",
                self.cpu_seconds, self.gpu_seconds, self.gpu_device
            ),
            None => format!("cpu {:.2} s, no GPU", self.cpu_seconds),
        }
    }
}

/// Renders on the CPU backend and, when given, the GPU backend.
fn render_both(scene: &Scene, prepared: &Prepared, gpu: Option<&GpuBackend>) -> Rendered {
    let start = Instant::now();
    let cpu = Layers::of(&render_whitted(scene, prepared, &RenderOptions::default()));
    let cpu_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let gpu_frame = gpu.map(|backend| {
        backend
            .render_frame(scene, prepared, &RenderOptions::default())
            .unwrap()
    });
    Rendered {
        cpu,
        gpu: gpu_frame.as_ref().map(Layers::of),
        cpu_seconds,
        gpu_seconds: start.elapsed().as_secs_f64(),
        gpu_device: gpu_frame.map_or(String::new(), |f| f.metadata.device),
    }
}

/// The camera ray through the centre of pixel `i` (the scenes use `sampler independent`, whose
/// single sample is the pixel centre; pinhole).
fn camera_ray(scene: &Scene, i: usize) -> (Vec3, Vec3) {
    let camera = CameraModel::new(&scene.camera, &scene.film);
    let (x, y) = (i as u32 % camera.width, i as u32 / camera.width);
    camera.generate_ray(Vec2::new(x as f32 + 0.5, y as f32 + 0.5), Vec2::splat(0.5))
}

/// The GPU frame agrees with the CPU frame pixel by pixel. Both backends choose a patch's level
/// from the same camera rays (accel::vd_frame) and build the same grid, so they trace the same
/// triangles: the depth agrees to float rounding (1e-3 relative) and so does the facet normal
/// (1e-3 in length; both are computed from the same corners). The normal is what would show a
/// patch built at another level: the depth moves by only the deviation between two levels
/// (~1e-4 relative here), the facet normal by about half the turning between facets (degrees).
/// A pixel whose ray grazes the shared edge of two cells may see the other cell on one side,
/// hence 99.5% and not all.
fn assert_gpu_matches_cpu(name: &str, gpu: &Layers, cpu: &Layers) {
    let n = cpu.depth.len();
    let (mut depth_agree, mut normal_agree, mut hits) = (0usize, 0usize, 0usize);
    let (mut worst_normal, mut worst_depth) = (0.0f32, 0.0f32);
    for i in 0..n {
        let (g, c) = (gpu.depth[i], cpu.depth[i]);
        let same_depth = (g.is_infinite() && c.is_infinite()) || (g - c).abs() <= 1e-3 * c.abs();
        depth_agree += same_depth as usize;
        if same_depth && c.is_finite() {
            worst_depth = worst_depth.max((g - c).abs() / c);
        }
        if c.is_finite() {
            hits += 1;
            let d = gpu.normal[i].distance(cpu.normal[i]);
            if same_depth {
                worst_normal = worst_normal.max(d);
            }
            normal_agree += (d <= 1e-3) as usize;
        }
    }
    let depth_share = depth_agree as f64 / n as f64;
    let normal_share = normal_agree as f64 / hits.max(1) as f64;
    eprintln!(
        "{name}: GPU vs CPU: depth within 1e-3 on {:.2}% of {n} pixels, normal within 1e-3 on \
         {:.2}% of {hits} hits; where the depths agree, largest relative depth difference \
         {worst_depth:.2e}, largest normal difference {worst_normal:.2e}",
        depth_share * 100.0,
        normal_share * 100.0
    );
    assert!(hits > 0, "{name}: the CPU frame hits nothing");
    assert!(
        depth_share >= 0.995,
        "{name}: GPU and CPU depths agree on only {:.2}% of the pixels",
        depth_share * 100.0
    );
    assert!(
        normal_share >= 0.995,
        "{name}: GPU and CPU normals agree on only {:.2}% of the hits",
        normal_share * 100.0
    );
}

// ---------------------------------------------------------------------------------------------
// The displaced teapot against its Bézier reference
// ---------------------------------------------------------------------------------------------

const TEAPOT_DIR: &str = "../shared/assets/displacement/bezier_teaset_vdm";

/// Reference quads per Bézier patch in teapot_bezier_ref.obj (16 × 16, patch after patch): the
/// level-4 tessellation of the surface the maps were baked from.
const REF_QUADS_PER_PATCH: usize = 16 * 16;
const REF_LEVEL: u32 = 4;

/// Patches 18 and 19 have zero-area base quads: their tangent frame is undefined, so the
/// tangent-space map cannot reproduce them (by design of the asset; see teapot_vdm.json).
const ZERO_AREA_PATCHES: [usize; 2] = [18, 19];

/// The whole teapot (x ∈ [−3, 3.4], y ∈ [−2, 2], z ∈ [0, 3.15], Z up) from above the spout's
/// side, with room around it; small and at 1 spp for lavapipe.
fn teapot_scene_text(mesh: &str, vdmap: &str) -> String {
    format!(
        r#"
camera {{ position 4.5 -9 6  look_at 0.2 0 1.4  up 0 0 1  fov 28 }}
film   {{ resolution 128 96 spp 1 sampler independent max_depth 0 vd_max_level 6 }}
material clay {{ diffuse 0.8 0.7 0.6 }}
{vdmap}
mesh teapot {{ {mesh} }}
instance {{ mesh teapot material clay }}
light directional {{ direction -0.3 0.5 -1 irradiance 2 }}
output {{ path "unused.exr" layers normal position id }}
"#
    )
}

/// The facet normals of a patch's tessellation at one level: per cell (row-major, `s` along a
/// row) the unit normals of its triangles `(v00, v10, v11)` and `(v00, v11, v01)`, as
/// accel::vd_bottom splits a cell; zero for a degenerate triangle.
struct Facets {
    side: usize,
    normals: Vec<[Vec3; 2]>,
}

impl Facets {
    fn new(
        corners: &[Vec3; 4],
        uvs: &[Vec2; 4],
        map: caustica::scene::vdmap::VdSurface,
        level: u32,
    ) -> Facets {
        let side = 1usize << level;
        let at = |i: usize, j: usize| {
            map.displaced_point(corners, uvs, i as f32 / side as f32, j as f32 / side as f32)
        };
        let mut normals = Vec::with_capacity(side * side);
        for y in 0..side {
            for x in 0..side {
                let (v00, v10, v11, v01) = (at(x, y), at(x + 1, y), at(x + 1, y + 1), at(x, y + 1));
                normals.push([
                    (v10 - v00).cross(v11 - v00).normalize_or_zero(),
                    (v11 - v00).cross(v01 - v00).normalize_or_zero(),
                ]);
            }
        }
        Facets { side, normals }
    }

    /// The largest angle in degrees between two edge-sharing facets of the cells that overlap
    /// the parameter rectangle `s ∈ [s0, s1]`, `t ∈ [t0, t1]` (degenerate facets left out).
    fn turning_in(&self, s0: f32, s1: f32, t0: f32, t1: f32) -> f32 {
        let n = self.side;
        let range = |a: f32, b: f32| {
            let lo = ((a * n as f32).floor().max(0.0) as usize).min(n - 1);
            let hi = ((b * n as f32).ceil() as usize).clamp(lo + 1, n);
            lo..hi
        };
        let (xs, ys) = (range(s0, s1), range(t0, t1));
        let angle = |a: Vec3, b: Vec3| {
            if a == Vec3::ZERO || b == Vec3::ZERO {
                0.0
            } else {
                a.dot(b).clamp(-1.0, 1.0).acos().to_degrees()
            }
        };
        let mut worst = 0.0f32;
        for y in ys.clone() {
            for x in xs.clone() {
                let [a, b] = self.normals[y * n + x];
                worst = worst.max(angle(a, b));
                // The right neighbour's second triangle shares this cell's right edge with the
                // first; the upper neighbour's first shares the top edge with the second.
                if x + 1 < xs.end {
                    worst = worst.max(angle(a, self.normals[y * n + x + 1][1]));
                }
                if y + 1 < ys.end {
                    worst = worst.max(angle(b, self.normals[(y + 1) * n + x][0]));
                }
            }
        }
        worst
    }
}

/// Per-patch measures of the VD tessellation at the frame's levels and at the reference's.
struct PatchMeasures {
    levels: Vec<u32>,
    /// Deviation (object units) at the frame's level, and at [`REF_LEVEL`].
    deviation: Vec<f32>,
    deviation_ref: Vec<f32>,
    /// Facet normals at the frame's level, and at [`REF_LEVEL`].
    facets: Vec<Facets>,
    facets_ref: Vec<Facets>,
}

fn measure_patches(prepared: &Prepared, levels: Vec<u32>) -> PatchMeasures {
    let mut m = PatchMeasures {
        levels,
        deviation: Vec::new(),
        deviation_ref: Vec::new(),
        facets: Vec::new(),
        facets_ref: Vec::new(),
    };
    for p in 0..prepared.vd_patches.len() {
        let (corners, uvs, map) = prepared.vd_patch_geometry(p as u32);
        let level = m.levels[p];
        m.deviation
            .push(vd_tessellation_deviation(&corners, &uvs, map, level));
        m.deviation_ref
            .push(vd_tessellation_deviation(&corners, &uvs, map, REF_LEVEL));
        m.facets.push(Facets::new(&corners, &uvs, map, level));
        m.facets_ref
            .push(Facets::new(&corners, &uvs, map, REF_LEVEL));
    }
    m
}

fn percentile(values: &[f32], q: f64) -> f32 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f32::total_cmp);
    sorted
        .get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0)
}

fn mean(values: &[f32]) -> f32 {
    values.iter().sum::<f32>() / values.len().max(1) as f32
}

/// Compares a VD frame's layers with the reference mesh's, pixel by pixel (see the test).
fn assert_matches_reference(
    name: &str,
    scene: &Scene,
    vd: &Layers,
    reference: &Layers,
    m: &PatchMeasures,
    skip_zero_area: bool,
) {
    let mut either = 0usize;
    let mut excluded = 0usize;
    let mut hit_miss = 0usize;
    let mut too_far = 0usize;
    let mut errors = Vec::new();
    let mut ratios = Vec::new();
    let mut angles = Vec::new();
    let mut angle_bounds = Vec::new();
    let mut seams = 0usize;
    for i in 0..vd.depth.len() {
        let (d_vd, d_ref) = (vd.depth[i], reference.depth[i]);
        if d_vd.is_infinite() && d_ref.is_infinite() {
            continue;
        }
        // One mesh, all quads: the VD prim is the patch; the reference's is quad / 256.
        let p_vd = (vd.id[i][1] >= 0.0).then_some(vd.id[i][1] as usize);
        let ref_quad = (reference.id[i][1] >= 0.0).then_some(reference.id[i][1] as usize);
        let p_ref = ref_quad.map(|q| q / REF_QUADS_PER_PATCH);
        if skip_zero_area
            && [p_vd, p_ref]
                .iter()
                .any(|p| p.is_some_and(|p| ZERO_AREA_PATCHES.contains(&p)))
        {
            excluded += 1;
            continue;
        }
        either += 1;
        let (Some(p_vd), Some(p_ref)) = (p_vd, p_ref) else {
            hit_miss += 1;
            continue;
        };
        let (_, dir) = camera_ray(scene, i);
        let n_ref = reference.normal[i];
        let cos = n_ref.dot(dir).abs();
        // Both tessellations lie within their deviation (support::vd_tessellation_deviation)
        // of the VD surface, the reference being its level-4 tessellation (the maps hold 64
        // texel steps a patch, so level 4 samples the texels the reference's vertices came
        // from), so two nearly parallel facets over the same spot are at most the sum apart
        // along the normal: |Δdepth| · cos θ ≤ δ_vd + δ_ref, θ between the ray and the
        // reference's facet normal. Near a patch edge the two hits may be on neighbouring
        // patches: take the larger of both patches' deviations. Float rounding of a distance of
        // ~10 adds a few ulps.
        let dev = m.deviation[p_vd].max(m.deviation[p_ref]);
        let dev_ref = m.deviation_ref[p_vd].max(m.deviation_ref[p_ref]);
        let bound = dev + dev_ref + 8.0 * f32::EPSILON * d_ref;
        let error = (d_vd - d_ref).abs() * cos;
        if error > bound {
            too_far += 1;
            continue;
        }
        errors.push(error);
        ratios.push(error / bound);
        let angle = vd.normal[i].dot(n_ref).clamp(-1.0, 1.0).acos().to_degrees();
        angles.push(angle);
        // The reference quad is cell (i, j) of its patch at level 4 (row-major, s along a row).
        // The VD hit lies in that cell or a neighbouring one (the hits are within the deviation
        // of each other); on the same patch, take the turning of both tessellations over that
        // 3 × 3 block of level-4 cells; across a patch seam, the VD patch's turning overall.
        let cell = ref_quad.unwrap() % REF_QUADS_PER_PATCH;
        let side = (1u32 << REF_LEVEL) as f32;
        let (ci, cj) = ((cell % 16) as f32, (cell / 16) as f32);
        let (s0, s1, t0, t1) = (
            (ci - 1.0) / side,
            (ci + 2.0) / side,
            (cj - 1.0) / side,
            (cj + 2.0) / side,
        );
        let turning_ref = m.facets_ref[p_ref].turning_in(s0, s1, t0, t1);
        let turning = if p_vd == p_ref {
            m.facets[p_vd].turning_in(s0, s1, t0, t1)
        } else {
            seams += 1;
            m.facets[p_vd].turning_in(0.0, 1.0, 0.0, 1.0)
        };
        angle_bounds.push(turning + turning_ref);
    }
    let outliers = hit_miss + too_far;
    let outlier_share = outliers as f64 / either.max(1) as f64;
    let within = angles
        .iter()
        .zip(&angle_bounds)
        .filter(|(a, b)| a <= b)
        .count() as f64
        / angles.len().max(1) as f64;
    eprintln!(
        "{name}: {either} pixels hit on either side ({excluded} on patches 18/19 left out): \
         {hit_miss} hit on one side only, {too_far} beyond the bound ({:.2}%); position error \
         |Δdepth|·cos θ max {:.5} mean {:.6}, error/bound max {:.3} mean {:.3}",
        outlier_share * 100.0,
        errors.iter().copied().fold(0.0, f32::max),
        mean(&errors),
        ratios.iter().copied().fold(0.0, f32::max),
        mean(&ratios),
    );
    eprintln!(
        "{name}: normal angle to the reference mean {:.3}° p95 {:.3}° max {:.3}°; turning bound \
         mean {:.3}° p95 {:.3}°; {:.2}% within their bound ({seams} hits across a patch seam)",
        mean(&angles),
        percentile(&angles, 0.95),
        angles.iter().copied().fold(0.0, f32::max),
        mean(&angle_bounds),
        percentile(&angle_bounds, 0.95),
        within * 100.0
    );
    assert!(
        errors.len() > 1000,
        "{name}: only {} pixels compared",
        errors.len()
    );
    // Along a silhouette a pixel centre can fall inside one tessellation's outline and outside
    // the other's (they differ by up to the deviation), and where the surface turns away (the
    // handle's and spout's rims, cos θ → 0) the flat-facet bound no longer holds: allow 2% of
    // the pixels where either side hits.
    assert!(
        outlier_share <= 0.02,
        "{name}: {outliers} of {either} pixels disagree ({hit_miss} hit/miss, {too_far} too far)"
    );
    // Facet normals of two tessellations of one smooth surface. A facet's normal is the
    // surface's normal somewhere inside its cell (the cell's mean normal, to first order), so at
    // the hit it is off by at most the turning to the neighbouring facets; the angle between the
    // two sides' normals is at most the sum of both turnings around the hit (`angle_bounds`).
    // Where the hits straddle a crease (the lid's rim; the spout and handle where they meet the
    // body) or lie on a grazing silhouette this may fail: ask it of 95% of the pixels (the 95th
    // percentile of angle / bound is at most 1). On average a hit lies a quarter of a cell from
    // the point where its facet's normal is exact, where the normal is off by a quarter of the
    // turning: the mean angle is expected near a quarter of the mean bound; ask for half.
    assert!(
        within >= 0.95,
        "{name}: only {:.2}% of the normals within the turning bound",
        within * 100.0
    );
    assert!(
        mean(&angles) <= 0.5 * mean(&angle_bounds),
        "{name}: mean normal angle {}° against a mean bound of {}°",
        mean(&angles),
        mean(&angle_bounds)
    );
}

/// The teapot's 32 base quads displaced by the object-space map and by the tangent-space map,
/// rendered by the CPU and GPU backends, match the reference tessellation of the exact Bézier
/// teapot (depth and facet normal per pixel), and the GPU frame matches the CPU frame.
#[test]
fn displaced_teapot_renders_match_the_bezier_reference_on_cpu_and_gpu() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(TEAPOT_DIR);
    let files = [
        "teapot_base_quads.obj",
        "teapot_bezier_ref.obj",
        "teapot_vdm_object.exr",
        "teapot_vdm_tangent.exr",
    ];
    let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
    if let Some(absent) = paths.iter().find(|p| !p.exists()) {
        assert!(
            !support::assets_required(),
            "CAUSTICA_REQUIRE_ASSETS is set but {} is absent",
            absent.display()
        );
        eprintln!("skipping: {} is absent", absent.display());
        return;
    }
    let abs = |p: &PathBuf| p.canonicalize().unwrap().display().to_string();
    let (base, reference_obj, object_map, tangent_map) = (
        abs(&paths[0]),
        abs(&paths[1]),
        abs(&paths[2]),
        abs(&paths[3]),
    );
    let gpu = gpu_backend();

    let (ref_scene, ref_prepared) = load(
        "teapot_reference.csc",
        &teapot_scene_text(&format!("file \"{reference_obj}\""), ""),
    );
    let reference = render_both(&ref_scene, &ref_prepared, gpu.as_ref());
    eprintln!("reference: {}", reference.timings());
    // The camera sees the whole teapot: nothing is hit on the border of the image.
    let (w, h) = (
        ref_scene.film.width as usize,
        ref_scene.film.height as usize,
    );
    let border_hits = (0..w * h)
        .filter(|i| i % w == 0 || i % w == w - 1 || i / w == 0 || i / w == h - 1)
        .filter(|&i| reference.cpu.depth[i].is_finite())
        .count();
    assert_eq!(border_hits, 0, "the teapot reaches the border of the image");
    if let Some(g) = &reference.gpu {
        assert_gpu_matches_cpu("reference", g, &reference.cpu);
    }

    for (space, map) in [("object", &object_map), ("tangent", &tangent_map)] {
        let name = format!("teapot {space}");
        let (scene, prepared) = load(
            &format!("teapot_{space}.csc"),
            &teapot_scene_text(
                &format!("file \"{base}\" displacement tp"),
                &format!("vdmap tp {{ file \"{map}\" space {space} }}"),
            ),
        );
        assert_eq!(prepared.vd_patches.len(), 32);
        // The levels the CPU renderer chooses for this frame, from its camera rays.
        let levels = Tracer::new(&scene, &prepared).vd.levels;
        let measures = measure_patches(&prepared, levels);
        let mut histogram = [0usize; 9];
        for &l in &measures.levels {
            histogram[l as usize] += 1;
        }
        eprintln!(
            "{name}: patches at levels 0..8 (chosen by the camera rays) {histogram:?}; \
             deviation at those levels max {:.5} mean {:.5}, at level {REF_LEVEL} max {:.5}",
            measures.deviation.iter().copied().fold(0.0, f32::max),
            mean(&measures.deviation),
            measures.deviation_ref.iter().copied().fold(0.0, f32::max),
        );
        let rendered = render_both(&scene, &prepared, gpu.as_ref());
        eprintln!("{name}: {}", rendered.timings());
        let skip = space == "tangent";
        assert_matches_reference(
            &format!("{name} cpu"),
            &scene,
            &rendered.cpu,
            &reference.cpu,
            &measures,
            skip,
        );
        if let Some(g) = &rendered.gpu {
            assert_matches_reference(
                &format!("{name} gpu"),
                &scene,
                g,
                reference.gpu.as_ref().unwrap(),
                &measures,
                skip,
            );
            assert_gpu_matches_cpu(&name, g, &rendered.cpu);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The overhang's underside
// ---------------------------------------------------------------------------------------------

/// A mushroom cap (scenes/vd_patches.csc's `cap`: scenes/maps/overhang.exr on a 0.7 quad in the
/// XZ plane facing +Y, centred at the origin) seen from outside, with the eye just above the
/// base plane and below the rim, looking up at the underside of the fold.
#[test]
fn overhang_undersides_are_hit_and_face_down_on_cpu_and_gpu() {
    overhang_undersides_are_hit_and_face_down("qbvh");
}

/// The same through the wide layout, whose traversal records the VD patches for the batched
/// bottom level in its own order: the GPU still renders what the CPU twin does.
#[test]
fn overhang_undersides_are_hit_and_face_down_on_cpu_and_gpu_in_the_wide_layout() {
    overhang_undersides_are_hit_and_face_down("wide");
}

fn overhang_undersides_are_hit_and_face_down(accel: &str) {
    let map = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenes/maps/overhang.exr")
        .canonicalize()
        .expect("scenes/maps/overhang.exr is part of the repository")
        .display()
        .to_string();
    let text = format!(
        r#"
camera {{ position 0.6 0.03 0.25  look_at 0 0.1 0  fov 40 }}
film   {{ resolution 96 72 spp 1 sampler independent max_depth 0 vd_max_level 6 accel {accel} }}
material copper {{ diffuse 0.75 0.35 0.2 }}
vdmap overhang {{ file "{map}" space tangent scale 0.7 }}
mesh cap {{ quad size 0.7 0.7 displacement overhang }}
instance {{ mesh cap material copper }}
light point {{ position 1.5 2.5 1.5 power 150 }}
output {{ path "unused.exr" layers normal position }}
"#
    );
    let (scene, prepared) = load("overhang.csc", &text);
    assert_eq!(prepared.layout.name(), accel);
    let gpu = gpu_backend();
    let rendered = render_both(&scene, &prepared, gpu.as_ref());
    eprintln!("overhang ({accel}): {}", rendered.timings());
    let frames: Vec<(&str, &Layers)> = std::iter::once(("cpu", &rendered.cpu))
        .chain(rendered.gpu.as_ref().map(|g| ("gpu", g)))
        .collect();
    for (device, layers) in frames {
        let (mut hits, mut underside, mut highest) = (0, 0, f32::NEG_INFINITY);
        for i in 0..layers.depth.len() {
            let depth = layers.depth[i];
            if depth.is_infinite() {
                continue;
            }
            hits += 1;
            let (origin, dir) = camera_ray(&scene, i);
            let p = origin + dir * depth;
            let n = layers.normal[i];
            // Above the base plane (y = 0) by more than rounding, facing down, and facing the
            // camera: the front of the fold's underside. A height field over the plane has
            // normals with y > 0 everywhere.
            if p.y > 1e-3 && n.y < 0.0 && n.dot(dir) < 0.0 {
                underside += 1;
                highest = highest.max(p.y);
            }
        }
        eprintln!(
            "overhang {device}: {hits} hits, {underside} on the underside above the base \
             (highest at y = {highest:.4})"
        );
        assert!(
            underside >= 20,
            "{accel} {device}: only {underside} of {hits} hits on a downward-facing underside"
        );
    }
    if let Some(g) = &rendered.gpu {
        assert_gpu_matches_cpu("overhang", g, &rendered.cpu);
    }
}

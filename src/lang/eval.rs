//! Evaluation: walks the statements for one frame and builds the scene IR, collecting every
//! semantic error on the way.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use glam::{Affine3A, Mat3, Mat4, Vec2, Vec3};

use super::ast::{Block, Expr, ExprKind, Statement};
use super::params::{
    self, check_whole, names, numbers, repeated, text, Ctx, ParamSpec, Params, Word,
};
use super::suggest;
use super::value::{Binding, Env, EvalError, Value, Variable, BUILTIN_VARIABLES};
use super::{Diagnostic, SourceMap};
use crate::scene::vdmap::UDIM_TOKENS;
use crate::scene::{
    self, limits, shapes, Aov, AssetLoader, Camera, EnvMap, Environment, FaceCounts, FileMaterial,
    FrameRange, FresnelMode, GatherSettings, Instance, Light, LightKind, Material, MaterialId,
    MaterialKind, Mesh, MeshAsset, MeshData, MeshId, MeshOrigin, OutputSettings, PhotonFilter,
    PhotonSettings, Scene, Span, SphereLight, Texture, VdLayout, VdMap, VdSpace,
};

/// Evaluates only the `frames` statement (and the constant `let`s it may use).
pub fn frame_range(
    statements: &[Statement],
    sources: &SourceMap,
) -> Result<FrameRange, Vec<Diagnostic>> {
    let mut ctx = Ctx {
        env: Env::default(),
        errors: Vec::new(),
        sources,
    };
    let mut range = FrameRange::default();
    let mut seen: Option<Span> = None;
    for statement in statements {
        match statement {
            Statement::Let {
                name,
                name_span,
                value,
                ..
            } => {
                if ctx.env.variables.contains_key(name)
                    || BUILTIN_VARIABLES.contains(&name.as_str())
                {
                    continue; // reported by `evaluate`
                }
                let binding = match ctx.env.eval(value) {
                    Ok(v) => Binding::Value(v),
                    Err(_) if mentions_time(value, &ctx.env) => Binding::DependsOnTime,
                    Err(_) => Binding::Failed,
                };
                ctx.env.variables.insert(
                    name.clone(),
                    Variable {
                        binding,
                        span: *name_span,
                        used: true.into(),
                    },
                );
            }
            Statement::Frames {
                first,
                last,
                fps,
                span,
            } => {
                if let Some(previous) = seen {
                    let note = format!("first given at {}", ctx.place(previous));
                    ctx.errors.push(
                        Diagnostic::error(*span, "the frame range is given twice").with_note(note),
                    );
                    continue;
                }
                seen = Some(*span);
                range.span = *span;
                let first_frame = whole_frame(&mut ctx, first);
                let last_frame = whole_frame(&mut ctx, last);
                if let (Some(a), Some(b)) = (first_frame, last_frame) {
                    if b < a {
                        ctx.error(
                            last.span,
                            format!("the last frame ({b}) comes before the first ({a})"),
                        );
                    } else {
                        range.first = a;
                        range.last = b;
                    }
                }
                if let Some(fps) = fps {
                    if let Some(v) = ctx.eval(fps) {
                        match v {
                            Value::Number(f) if f > 0.0 && f.is_finite() => range.fps = f as f32,
                            other => ctx.error(
                                fps.span,
                                format!(
                                    "fps must be a positive number, but it is {}",
                                    show(&other)
                                ),
                            ),
                        }
                    }
                }
            }
            Statement::Block(_) | Statement::Import { .. } => {}
        }
    }
    if ctx.errors.is_empty() {
        Ok(range)
    } else {
        Err(ctx.errors)
    }
}

/// `d` as a unit vector, normalized in f64 so that neither a tiny (1e-30) nor a huge (1e38)
/// direction is lost to f32's underflow or overflow; `None` for a zero one.
fn unit_direction(d: Vec3) -> Option<Vec3> {
    let d = d.as_dvec3();
    (d.length_squared() > 0.0 && d.is_finite()).then(|| d.normalize().as_vec3())
}

/// Whether an expression uses `frame`, `time`, or a variable that depends on them.
fn mentions_time(expr: &Expr, env: &Env) -> bool {
    match &expr.kind {
        ExprKind::Ident(name) => {
            name == "frame"
                || name == "time"
                || env
                    .variables
                    .get(name)
                    .is_some_and(|v| matches!(v.binding, Binding::DependsOnTime))
        }
        ExprKind::Number(_) | ExprKind::Str(_) => false,
        ExprKind::Neg(e) | ExprKind::Paren(e) => mentions_time(e, env),
        ExprKind::Binary(_, a, b) => mentions_time(a, env) || mentions_time(b, env),
        ExprKind::Call { args, .. } | ExprKind::Vector(args) => {
            args.iter().any(|a| mentions_time(a, env))
        }
    }
}

fn show(value: &Value) -> String {
    let parts: Vec<String> = value.components().iter().map(|c| c.to_string()).collect();
    match value {
        Value::Number(_) => parts.join(""),
        Value::Vector(_) => format!("[{}]", parts.join(", ")),
        Value::Str(text) => format!("{text:?}"),
    }
}

fn whole_frame(ctx: &mut Ctx, expr: &Expr) -> Option<i64> {
    match ctx.eval(expr)? {
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => Some(n as i64),
        other => {
            ctx.error(
                expr.span,
                format!(
                    "a frame number must be a whole number, but it is {}",
                    show(&other)
                ),
            );
            None
        }
    }
}

/// Names declared so far of one kind: name to (index, or `None` if its declaration failed).
#[derive(Default)]
struct Names {
    map: HashMap<String, (Option<u32>, Span)>,
}

impl Names {
    /// Registers a name; reports a duplicate and returns false.
    fn declare(&mut self, ctx: &mut Ctx, kind: &str, name: &str, span: Span) -> bool {
        if let Some((_, first)) = self.map.get(name) {
            let note = format!("first declared at {}", ctx.place(*first));
            ctx.errors.push(
                Diagnostic::error(span, format!("duplicate {kind} \"{name}\"")).with_note(note),
            );
            return false;
        }
        self.map.insert(name.to_string(), (None, span));
        true
    }

    fn set(&mut self, name: &str, index: u32) {
        if let Some(entry) = self.map.get_mut(name) {
            entry.0 = Some(index);
        }
    }

    /// Looks a reference up; reports unknown names (with a suggestion). Names whose
    /// declaration failed resolve to `None` silently (their error is already reported).
    fn resolve(&self, ctx: &mut Ctx, kind: &str, name: &str, span: Span) -> Option<u32> {
        match self.map.get(name) {
            Some((index, _)) => *index,
            None => {
                let hint = suggest::did_you_mean(name, self.map.keys().map(String::as_str));
                ctx.error(span, format!("unknown {kind} \"{name}\"{hint}"));
                None
            }
        }
    }
}

struct PendingInstance {
    mesh: Option<(String, Span)>,
    material: Option<(String, Span)>,
    /// `replace "FILE MATERIAL" material`: one of the file's materials replaced by a scene
    /// material, with the place of each name.
    replacements: Vec<Replacement>,
    transform: Affine3A,
    span: Span,
}

/// One `replace` of an instance.
struct Replacement {
    file_material: (String, Span),
    material: (String, Span),
    span: Span,
}

/// A mesh block loaded from a file: one scene mesh per part of `asset`, the first at the key of
/// [`Builder::mesh_parts`].
struct FileParts {
    mesh: String,
    asset: Arc<MeshAsset>,
    span: Span,
    /// The scene material of each of the file's materials, made when an instance first uses it
    /// (so that a material no instance uses loads no texture); `Some(None)` when its texture
    /// failed to load, which was reported.
    materials: Vec<Option<Option<MaterialId>>>,
}

/// Builds a scene from the statements, one block at a time.
struct Builder<'s, 'l> {
    ctx: Ctx<'s>,
    loader: &'l dyn AssetLoader,
    scene: Scene,
    /// The first place each single block (camera, film, ...) was given.
    singles: HashMap<&'static str, Span>,
    texture_names: Names,
    material_names: Names,
    mesh_names: Names,
    vdmap_names: Names,
    /// Material index → the named texture it refers to.
    material_textures: Vec<(u32, String, Span)>,
    /// Mesh indices (the parts of one mesh block) → the vdmap they refer to.
    mesh_displacements: Vec<(std::ops::Range<u32>, String, Span)>,
    /// First mesh index of a mesh block → the file it was loaded from, whose parts are the
    /// meshes from there on.
    mesh_parts: HashMap<MeshId, FileParts>,
    /// The material of faces that neither their file nor their instance gives one, once made.
    default_material: Option<MaterialId>,
    instances: Vec<PendingInstance>,
    /// The first camera an `import`ed file brought, and the place of the import.
    imported_camera: Option<(scene::FileCamera, Span)>,
}

/// Evaluates the scene for `frame`.
pub fn evaluate(
    statements: &[Statement],
    sources: &SourceMap,
    frame: i64,
    loader: &dyn AssetLoader,
) -> Result<Scene, Vec<Diagnostic>> {
    let (frames, errors) = match frame_range(statements, sources) {
        Ok(range) => (range, Vec::new()),
        Err(errors) => (FrameRange::default(), errors),
    };
    let time = frames.time_of(frame);
    let env = Env {
        variables: HashMap::new(),
        frame_time: Some((frame as f64, time as f64)),
    };
    let mut b = Builder {
        ctx: Ctx {
            env,
            errors,
            sources,
        },
        loader,
        scene: Scene {
            frame,
            time,
            frames,
            ..Scene::default()
        },
        singles: HashMap::new(),
        texture_names: Names::default(),
        material_names: Names::default(),
        mesh_names: Names::default(),
        vdmap_names: Names::default(),
        material_textures: Vec::new(),
        mesh_displacements: Vec::new(),
        mesh_parts: HashMap::new(),
        default_material: None,
        instances: Vec::new(),
        imported_camera: None,
    };
    for statement in statements {
        match statement {
            Statement::Let {
                name,
                name_span,
                value,
                ..
            } => b.define(name, *name_span, value),
            Statement::Frames { .. } => {}
            Statement::Block(block) => b.block(block),
            Statement::Import {
                path, path_span, ..
            } => b.import(path, *path_span),
        }
    }
    b.use_imported_camera();
    b.resolve_references();
    b.warn_about_unused_and_empty();
    if b.ctx.errors.is_empty() {
        b.scene.add_light_surfaces();
        b.scene.add_emissive_lights();
        Ok(b.scene)
    } else {
        Err(b.ctx.errors)
    }
}

const CAMERA: &[ParamSpec] = &[
    numbers("position"),
    numbers("look_at"),
    numbers("up"),
    numbers("fov"),
    numbers("aperture"),
    numbers("focus_distance"),
];
/// The most progressive passes of `film { passes }`.
const MAX_PASSES: u64 = 1 << 20;
const FILM: &[ParamSpec] = &[
    numbers("resolution"),
    numbers("spp"),
    numbers("passes"),
    names("sampler"),
    numbers("max_depth"),
    numbers("seed"),
    numbers("vd_max_level"),
    names("integrator"),
    names("quality"),
    names("devices"),
    names("accel"),
];
const MATERIAL: &[ParamSpec] = &[
    numbers("diffuse"),
    numbers("mirror"),
    numbers("dielectric"),
    numbers("emissive"),
    text("texture"),
    numbers("ior"),
    numbers("tint"),
    names("fresnel"),
    numbers("conductor"),
    numbers("plastic"),
    numbers("eta"),
    numbers("k"),
    names("metal"),
    numbers("roughness"),
    numbers("samples"),
];
const MATERIAL_KINDS: [&str; 6] = [
    "diffuse",
    "mirror",
    "dielectric",
    "conductor",
    "plastic",
    "emissive",
];
/// The Fresnel formulas a dielectric may choose.
const FRESNEL_MODES: [&str; 2] = ["exact", "schlick"];
const TEXTURE: &[ParamSpec] = &[text("file"), numbers("scale"), numbers("offset")];
const MESH: &[ParamSpec] = &[
    text("file"),
    numbers("sphere"),
    numbers("quad"),
    numbers("box"),
    numbers("vertices"),
    numbers("normals"),
    numbers("uvs"),
    numbers("triangles"),
    numbers("quads"),
    numbers("radius"),
    numbers("segments"),
    numbers("size"),
    numbers("divisions"),
    numbers("repeat"),
    numbers("analytic"),
    names("displacement"),
];
const MESH_KINDS: [&str; 5] = ["file", "sphere", "quad", "box", "vertices"];
const VDMAP: &[ParamSpec] = &[
    text("file"),
    names("space"),
    numbers("channels"),
    numbers("scale"),
    numbers("midlevel"),
    numbers("padding"),
    names("layout"),
    numbers("tile"),
];
const INSTANCE: &[ParamSpec] = &[
    names("mesh"),
    names("material"),
    repeated("translate"),
    repeated("rotate"),
    repeated("scale"),
    repeated("matrix"),
    repeated("look_at"),
    ParamSpec {
        name: "replace",
        ty: params::ParamType::Text,
        repeatable: true,
    },
];
const TRANSFORMS: [&str; 5] = ["translate", "rotate", "scale", "matrix", "look_at"];
const LIGHT: &[ParamSpec] = &[
    numbers("position"),
    numbers("power"),
    numbers("look_at"),
    numbers("direction"),
    numbers("cone"),
    numbers("irradiance"),
    numbers("corner"),
    numbers("edge_u"),
    numbers("edge_v"),
    numbers("center"),
    numbers("size"),
    numbers("radiance"),
    numbers("angle"),
    numbers("samples"),
    text("file"),
    numbers("scale"),
    numbers("rotate"),
];
const LIGHT_KINDS: [&str; 6] = ["point", "spot", "directional", "sun", "quad", "environment"];
/// The sun's apparent diameter seen from the earth, in degrees: `light sun`'s default `angle`.
const SUN_ANGLE_DEG: f32 = 0.53;
const PHOTONS: &[ParamSpec] = &[
    numbers("global"),
    numbers("caustic"),
    numbers("max_bounces"),
    numbers("knn"),
    numbers("max_radius"),
    names("filter"),
];
const GATHER: &[ParamSpec] = &[
    numbers("seeds"),
    numbers("rays"),
    numbers("quadtree_levels"),
    numbers("min_density"),
    numbers("precomputed_irradiance"),
];
const OUTPUT: &[ParamSpec] = &[text("path"), names("layers")];

/// The block keywords, for suggestions.
const BLOCKS: [&str; 11] = [
    "camera", "film", "material", "texture", "mesh", "vdmap", "instance", "light", "photons",
    "gather", "output",
];

const MAX_U32: u64 = u32::MAX as u64;
/// The largest k of a radiance estimate: the GPU's per-thread heap (`KNN_MAX_K` in
/// `shaders/shared/knn.wgsl`).
const MAX_KNN: u64 = 128;

/// `filter none`, `filter cone [k]` or `filter epanechnikov`.
fn photon_filter(p: &params::Params, ctx: &mut Ctx, default: PhotonFilter) -> PhotonFilter {
    let words = p.words(ctx, "filter");
    match words.as_slice() {
        [] => default,
        [(w, _)] if w == "none" => PhotonFilter::None,
        [(w, _)] if w == "epanechnikov" => PhotonFilter::Epanechnikov,
        [(w, _)] if w == "cone" => PhotonFilter::Cone { k: 1.1 },
        [(w, span), ..] => {
            let hint = suggest::did_you_mean(w, ["none", "cone", "epanechnikov"]);
            ctx.error(
                *span,
                format!("unknown photon filter \"{w}\"{hint}: expected none, cone or epanechnikov"),
            );
            default
        }
    }
}

fn nonnegative(v: f32) -> bool {
    v >= 0.0
}
fn positive(v: f32) -> bool {
    v > 0.0
}

impl Builder<'_, '_> {
    fn define(&mut self, name: &str, span: Span, value: &Expr) {
        if BUILTIN_VARIABLES.contains(&name) {
            self.ctx.error(
                span,
                format!("\"{name}\" is a built-in variable and cannot be redefined"),
            );
            return;
        }
        if let Some(first) = self.ctx.env.variables.get(name) {
            let note = format!("first defined at {}", self.ctx.place(first.span));
            self.ctx.errors.push(
                Diagnostic::error(span, format!("variable \"{name}\" is already defined"))
                    .with_note(note),
            );
            return;
        }
        let binding = match self.ctx.env.eval(value) {
            Ok(v) => Binding::Value(v),
            Err(EvalError::Diagnostic(d)) => {
                self.ctx.errors.push(*d);
                Binding::Failed
            }
            Err(EvalError::Reported) => Binding::Failed,
        };
        self.ctx.env.variables.insert(
            name.to_string(),
            Variable {
                binding,
                span,
                used: false.into(),
            },
        );
    }

    fn block(&mut self, block: &Block) {
        let keyword = block.keyword.as_str();
        let needs_name = matches!(keyword, "material" | "texture" | "mesh" | "vdmap");
        let takes_kind = keyword == "light";
        if !BLOCKS.contains(&keyword) {
            let hint = suggest::did_you_mean(keyword, BLOCKS);
            self.ctx.error(
                block.keyword_span,
                format!("unknown block \"{keyword}\"{hint}"),
            );
            return;
        }
        let name = match (&block.header, needs_name || takes_kind) {
            (Some(h), true) => h.clone(),
            (None, true) => {
                let what = if takes_kind {
                    "a kind (point, spot, directional, sun or quad)"
                } else {
                    "a name"
                };
                self.ctx.error(
                    block.keyword_span,
                    format!("{keyword} needs {what}: `{keyword} NAME {{ ... }}`"),
                );
                return;
            }
            (Some((h, span)), false) => {
                self.ctx
                    .error(*span, format!("{keyword} takes no name, found \"{h}\""));
                return;
            }
            (None, false) => (String::new(), Span::NONE),
        };
        if !needs_name && !takes_kind && keyword != "instance" {
            // Blocks that describe the one camera, film, ...: only one of each.
            let keyword: &'static str = BLOCKS
                .iter()
                .copied()
                .find(|k| *k == keyword)
                .unwrap_or("block");
            if let Some(first) = self.singles.get(keyword) {
                let note = format!("first given at {}", self.ctx.place(*first));
                self.ctx.errors.push(
                    Diagnostic::error(block.keyword_span, format!("{keyword} is given twice"))
                        .with_note(note),
                );
                return;
            }
            self.singles.insert(keyword, block.keyword_span);
        }
        match keyword {
            "camera" => self.camera(block),
            "film" => self.film(block),
            "material" => self.material(block, name),
            "texture" => self.texture(block, name),
            "mesh" => self.mesh(block, name),
            "vdmap" => self.vdmap(block, name),
            "instance" => self.instance(block),
            "light" => self.light(block, name),
            "photons" => self.photons(block),
            "gather" => self.gather(block),
            _ => self.output(block),
        }
    }

    fn camera(&mut self, block: &Block) {
        let ctx = &mut self.ctx;
        let p = params::split(block, CAMERA, "camera", ctx);
        let d = Camera::default();
        let position = p.vec3(ctx, "position", d.position);
        let look_at = p.vec3(ctx, "look_at", d.look_at);
        let up = p.vec3(ctx, "up", d.up);
        let fov_deg = p.float(
            ctx,
            "fov",
            d.fov_deg,
            |v| v > 0.0 && v < 180.0,
            "between 0 and 180 degrees",
        );
        let lens_radius = p.float(ctx, "aperture", d.lens_radius, nonnegative, "at least 0");
        let focus_distance = p.float(
            ctx,
            "focus_distance",
            d.focus_distance,
            positive,
            "greater than 0",
        );
        // In f64, so that a tiny but valid up vector (1e-30) does not underflow to zero, nor
        // a far look_at overflow; the camera keeps up as a unit vector.
        let direction = look_at.as_dvec3() - position.as_dvec3();
        let up64 = up.as_dvec3();
        if direction.length_squared() == 0.0 {
            ctx.error(block.span, "the camera looks at its own position");
        } else if up64.length_squared() == 0.0 || !up64.is_finite() {
            ctx.error(block.span, "the camera's up vector has no direction");
        } else if direction
            .normalize()
            .cross(up64.normalize())
            .length_squared()
            < 1e-12
        {
            ctx.error(
                block.span,
                "the camera's up vector is parallel to its viewing direction",
            );
        }
        p.finish(ctx, "the camera");
        let up = up64.normalize_or_zero().as_vec3();
        self.scene.camera = Camera {
            position,
            look_at,
            up,
            fov_deg,
            lens_radius,
            focus_distance,
            span: block.span,
        };
    }

    fn film(&mut self, block: &Block) {
        let ctx = &mut self.ctx;
        let p = params::split(block, FILM, "film", ctx);
        let mut film = scene::Film {
            span: block.span,
            ..scene::Film::default()
        };
        if let Some((v, span)) = p.numbers(ctx, "resolution", &[2]) {
            let w = check_whole(ctx, "resolution", v[0], span, 1, 65536);
            let h = check_whole(ctx, "resolution", v[1], span, 1, 65536);
            if let (Some(w), Some(h)) = (w, h) {
                film.width = w as u32;
                film.height = h as u32;
            }
        }
        film.spp = p.whole(ctx, "spp", film.spp.into(), 1, limits::MAX_SPP) as u32;
        // How much the image asks for, blamed on what makes it too much.
        let resolution = p.span_of("resolution").unwrap_or(block.span);
        if let Err(message) = limits::image(film.width, film.height) {
            ctx.error(resolution, message);
        } else if let Err(message) = limits::camera_rays(film.width, film.height, film.spp) {
            ctx.error(p.span_of("spp").unwrap_or(resolution), message);
        }
        film.passes = p.whole(ctx, "passes", film.passes.into(), 1, MAX_PASSES) as u32;
        film.max_depth = p.whole(ctx, "max_depth", film.max_depth.into(), 0, 1000) as u32;
        film.seed = p.whole(ctx, "seed", film.seed, 0, 1 << 53);
        film.vd_max_level = p.whole(
            ctx,
            "vd_max_level",
            film.vd_max_level.into(),
            0,
            scene::VD_LEVEL_LIMIT.into(),
        ) as u32;
        match p.words(ctx, "sampler").as_slice() {
            [] => {}
            [(w, _)] if w == "sobol" => film.sampler = scene::Sampler::Sobol,
            [(w, _)] if w == "independent" => film.sampler = scene::Sampler::Independent,
            [(w, span), ..] => {
                let hint = suggest::did_you_mean(w, ["sobol", "independent"]);
                ctx.error(
                    *span,
                    format!("unknown sampler \"{w}\"{hint}: expected sobol or independent"),
                );
            }
        }
        match p.words(ctx, "integrator").as_slice() {
            [] => {}
            [(w, _)] if w == "whitted" => film.integrator = scene::Integrator::Whitted,
            [(w, _)] if w == "photon_map" => film.integrator = scene::Integrator::PhotonMap,
            [(w, span), ..] => {
                let hint = suggest::did_you_mean(w, ["whitted", "photon_map"]);
                ctx.error(
                    *span,
                    format!("unknown integrator \"{w}\"{hint}: expected whitted or photon_map"),
                );
            }
        }
        match p.words(ctx, "accel").as_slice() {
            [] => {}
            // A structure of its own (`accel grid`) sits under the wide layout's top level.
            [(w, _)] if scene::BvhBuilder::from_name(w).is_some_and(|b| b.is_structure()) => {
                film.accel = Some(scene::BvhLayout::Wide);
                film.builder = scene::BvhBuilder::from_name(w);
            }
            [(w, span), rest @ ..] => match scene::BvhLayout::from_name(w) {
                Some(layout) => {
                    film.accel = Some(layout);
                    match rest {
                        [] => {}
                        [(b, span)] => match scene::BvhBuilder::from_name(b) {
                            Some(builder) if builder.builds(layout) => film.builder = Some(builder),
                            Some(builder) => ctx.error(
                                *span,
                                format!(
                                    "{} builds the wide layout only, not {}",
                                    builder.name(),
                                    layout.name()
                                ),
                            ),
                            None => {
                                let names = scene::BvhBuilder::ALL.map(|b| b.name());
                                let hint = suggest::did_you_mean(b, names);
                                ctx.error(
                                    *span,
                                    format!(
                                        "unknown BVH builder \"{b}\"{hint}: expected {}",
                                        names.join(", ")
                                    ),
                                );
                            }
                        },
                        [_, (w, span), ..] => ctx.error(
                            *span,
                            format!("accel takes a layout and a builder, not also \"{w}\""),
                        ),
                    }
                }
                None => {
                    let names = scene::BvhLayout::ALL.map(|l| l.name());
                    let hint = suggest::did_you_mean(w, names);
                    ctx.error(
                        *span,
                        format!(
                            "unknown BVH layout \"{w}\"{hint}: expected {}",
                            names.join(", ")
                        ),
                    );
                }
            },
        }
        match p.words(ctx, "quality").as_slice() {
            [] => {}
            [(w, _)] if w == "quick" => film.quality = scene::Quality::Quick,
            [(w, _)] if w == "default" => film.quality = scene::Quality::Default,
            [(w, _)] if w == "reference" => film.quality = scene::Quality::Reference,
            [(w, span), ..] => {
                let hint = suggest::did_you_mean(w, ["quick", "default", "reference"]);
                ctx.error(
                    *span,
                    format!("unknown quality \"{w}\"{hint}: expected quick, default or reference"),
                );
            }
        }
        // `devices all`, `devices auto`, or a list in quotes: `devices "0,1"`, `devices "H200"`.
        if let Some(word) = p.word(ctx, "devices") {
            let (text, span) = match word {
                Word::Name(w, span) | Word::Str(w, span) => (w, span),
            };
            match scene::DeviceList::parse(&text) {
                Ok(list) => film.devices = list,
                Err(message) => ctx.error(span, format!("\"devices\": {message}")),
            }
        }
        p.finish(ctx, "film");
        self.scene.film = film;
    }

    /// Loads a file through the loader and reports failures at the file string.
    fn load<T>(
        &mut self,
        what: &str,
        written: &str,
        span: Span,
        load: impl FnOnce(&dyn AssetLoader, &std::path::Path) -> Result<T, String>,
    ) -> Option<(T, PathBuf)> {
        let path = self.ctx.sources.resolve(span.file, written);
        match load(self.loader, &path) {
            Ok(value) => Some((value, path)),
            Err(message) => {
                let d = if path.exists() {
                    Diagnostic::error(span, format!("cannot load {what} \"{written}\": {message}"))
                } else {
                    Diagnostic::error(span, format!("missing file \"{written}\": {message}"))
                        .with_note(format!("looked for {}", path.display()))
                };
                self.ctx.errors.push(d);
                None
            }
        }
    }

    fn texture(&mut self, block: &Block, (name, name_span): (String, Span)) {
        let declared = self
            .texture_names
            .declare(&mut self.ctx, "texture", &name, name_span);
        let p = params::split(
            block,
            TEXTURE,
            &format!("texture \"{name}\""),
            &mut self.ctx,
        );
        let file = if p.require(&mut self.ctx, "file", "a texture") {
            p.string(&mut self.ctx, "file")
        } else {
            None
        };
        let ctx = &mut self.ctx;
        let mut uv_scale = Vec2::ONE;
        if let Some((v, span)) = p.numbers(ctx, "scale", &[1, 2]) {
            let s = if v.len() == 1 {
                Vec2::splat(v[0] as f32)
            } else {
                Vec2::new(v[0] as f32, v[1] as f32)
            };
            if s.x == 0.0 || s.y == 0.0 || !s.is_finite() {
                ctx.error(span, "a texture's \"scale\" must be finite and not zero");
            } else {
                uv_scale = s;
            }
        }
        let uv_offset = p
            .numbers(ctx, "offset", &[2])
            .map_or(Vec2::ZERO, |(v, _)| Vec2::new(v[0] as f32, v[1] as f32));
        p.finish(&mut self.ctx, "a texture");
        let Some((written, span)) = file else { return };
        let Some((image, path)) = self.load("texture", &written, span, |l, p| l.load_texture(p))
        else {
            return;
        };
        if declared {
            self.scene.textures.push(Texture {
                name: name.clone(),
                path,
                image,
                uv_scale,
                uv_offset,
                span: block.span,
            });
            self.texture_names
                .set(&name, (self.scene.textures.len() - 1) as u32);
        }
    }

    /// A texture named by its file inside a material; the same file is loaded once.
    fn inline_texture(&mut self, written: &str, span: Span) -> Option<u32> {
        let path = self.ctx.sources.resolve(span.file, written);
        if let Some(i) = self.scene.textures.iter().position(|t| {
            t.path == path
                && t.name == written
                && t.uv_scale == Vec2::ONE
                && t.uv_offset == Vec2::ZERO
        }) {
            return Some(i as u32);
        }
        let (image, path) = self.load("texture", written, span, |l, p| l.load_texture(p))?;
        self.scene.textures.push(Texture {
            name: written.to_string(),
            path,
            image,
            uv_scale: Vec2::ONE,
            uv_offset: Vec2::ZERO,
            span,
        });
        Some((self.scene.textures.len() - 1) as u32)
    }

    fn material(&mut self, block: &Block, (name, name_span): (String, Span)) {
        let declared = self
            .material_names
            .declare(&mut self.ctx, "material", &name, name_span);
        let p = params::split(
            block,
            MATERIAL,
            &format!("material \"{name}\""),
            &mut self.ctx,
        );
        let kinds: Vec<&str> = MATERIAL_KINDS.into_iter().filter(|k| p.has(k)).collect();
        let kind = match kinds.as_slice() {
            [] => {
                self.ctx.error(
                    block.span,
                    format!(
                        "material \"{name}\" needs a kind: diffuse, mirror, dielectric, conductor, plastic or emissive"
                    ),
                );
                "diffuse"
            }
            [one] => one,
            [first, second, ..] => {
                let span = p.take(second).map_or(block.span, |s| s.name_span);
                self.ctx.error(
                    span,
                    format!("material \"{name}\" has two kinds: {first} and {second}"),
                );
                first
            }
        };
        let ctx = &mut self.ctx;
        let mut texture_ref = None;
        let material_kind = match kind {
            "diffuse" => {
                let albedo = kind_color(&p, ctx, "diffuse", Vec3::splat(0.8), true);
                texture_ref = p.word(ctx, "texture");
                MaterialKind::Diffuse {
                    albedo,
                    texture: None,
                }
            }
            "plastic" => {
                let albedo = kind_color(&p, ctx, "plastic", Vec3::splat(0.8), true);
                texture_ref = p.word(ctx, "texture");
                let ior = p.float(ctx, "ior", 1.5, positive, "greater than 0");
                MaterialKind::plastic(albedo, None, ior, roughness(&p, ctx))
            }
            "mirror" => MaterialKind::Mirror {
                reflectance: kind_color(&p, ctx, "mirror", Vec3::ONE, true),
            },
            "emissive" => MaterialKind::Emissive {
                radiance: kind_color(&p, ctx, "emissive", Vec3::ONE, false),
                samples: p.whole(ctx, "samples", 1, 1, 65536) as u32,
            },
            "conductor" => {
                let _ = p.numbers(ctx, "conductor", &[0]);
                let (eta, k) = match metal_preset(&p, ctx) {
                    Some(index) => index,
                    None => (
                        conductor_index(&p, ctx, "eta", block.span, positive, "greater than 0"),
                        conductor_index(&p, ctx, "k", block.span, nonnegative, "at least 0"),
                    ),
                };
                texture_ref = p.word(ctx, "texture");
                MaterialKind::Conductor {
                    eta,
                    k,
                    tint: tint(&p, ctx, block.span),
                    roughness: roughness(&p, ctx),
                    texture: None,
                }
            }
            _ => {
                let _ = p.numbers(ctx, "dielectric", &[0]);
                let ior = p.float(ctx, "ior", 1.5, positive, "greater than 0");
                let tint = tint(&p, ctx, block.span);
                let fresnel = fresnel_mode(&p, ctx);
                MaterialKind::Dielectric {
                    ior,
                    tint,
                    fresnel,
                    roughness: roughness(&p, ctx),
                }
            }
        };
        p.finish(ctx, &format!("a {kind} material"));
        let mut material_kind = material_kind;
        if let Some(word) = texture_ref {
            match word {
                Word::Str(file, span) => {
                    let id = self.inline_texture(&file, span);
                    if let Some(texture) = material_kind.texture_mut() {
                        *texture = id;
                    }
                }
                Word::Name(texture, span) => {
                    self.material_textures
                        .push((self.scene.materials.len() as u32, texture, span))
                }
            }
        }
        if declared {
            self.scene.materials.push(Material {
                name: name.clone(),
                kind: material_kind,
                span: block.span,
            });
            self.material_names
                .set(&name, (self.scene.materials.len() - 1) as u32);
        } else {
            // Keep the pending texture reference pointing at a real material slot.
            self.material_textures
                .retain(|(m, _, _)| (*m as usize) < self.scene.materials.len());
        }
    }

    fn vdmap(&mut self, block: &Block, (name, name_span): (String, Span)) {
        let declared = self
            .vdmap_names
            .declare(&mut self.ctx, "vdmap", &name, name_span);
        let ctx = &mut self.ctx;
        let p = params::split(block, VDMAP, &format!("vdmap \"{name}\""), ctx);
        let file = if p.require(ctx, "file", "a vdmap") {
            p.string(ctx, "file")
        } else {
            None
        };
        let space = match p.words(ctx, "space").as_slice() {
            [] => VdSpace::Tangent,
            [(w, _)] if w == "tangent" => VdSpace::Tangent,
            [(w, _)] if w == "object" => VdSpace::Object,
            [(w, span)] => {
                ctx.error(
                    *span,
                    format!("unknown space \"{w}\": expected object or tangent"),
                );
                VdSpace::Tangent
            }
            [_, (_, span), ..] => {
                ctx.error(*span, "\"space\" takes 1 value: object or tangent");
                VdSpace::Tangent
            }
        };
        let mut channels = [0u8, 1, 2];
        if let Some((v, span)) = p.numbers(ctx, "channels", &[3]) {
            for (slot, value) in channels.iter_mut().zip(&v) {
                if let Some(c) = check_whole(ctx, "channels", *value, span, 0, 2) {
                    *slot = c as u8;
                }
            }
        }
        let scale = p.float(ctx, "scale", 1.0, |_| true, "a finite number");
        let midlevel = p.float(ctx, "midlevel", 0.0, |_| true, "a finite number");
        let padding = p.float(ctx, "padding", 0.0, nonnegative, "at least 0");
        let layout_word = match p.words(ctx, "layout").as_slice() {
            [] => None,
            [(w, span)] if ["uv", "udim", "per_face"].contains(&w.as_str()) => {
                Some((w.clone(), *span))
            }
            [(w, span)] => {
                let hint = suggest::did_you_mean(w, ["uv", "udim", "per_face"]);
                ctx.error(
                    *span,
                    format!("unknown layout \"{w}\": expected uv, udim or per_face{hint}"),
                );
                None
            }
            [_, (_, span), ..] => {
                ctx.error(*span, "\"layout\" takes 1 value: uv, udim or per_face");
                None
            }
        };
        let tile = p
            .numbers(ctx, "tile", &[1])
            .and_then(|(v, span)| Some((check_whole(ctx, "tile", v[0], span, 1, 65536)?, span)));
        p.finish(ctx, "a vdmap");
        let Some((written, span)) = file else { return };
        let token = UDIM_TOKENS.into_iter().find(|t| written.contains(t));
        let kind = match (&layout_word, token) {
            (None, Some(_)) => "udim",
            (None, None) => "uv",
            (Some((w, _)), _) => w.as_str(),
        };
        let layout = match (kind, token, tile) {
            (k, Some(t), _) if k != "udim" => {
                ctx.error(
                    span,
                    format!("{t} in the file name makes a udim map, but the layout is {k}"),
                );
                return;
            }
            (k, _, Some((_, at))) if k != "per_face" => {
                ctx.error(
                    at,
                    format!("\"tile\" belongs to layout per_face, but the layout is {k}"),
                );
                return;
            }
            ("udim", None, _) => {
                let at = layout_word.as_ref().map_or(span, |(_, s)| *s);
                ctx.error(
                    at,
                    format!(
                        "a udim map names its tiles in its file: write <UDIM> (1001, 1002, …) or \
                         <UVTILE> (u1_v1, …) where the tile's number goes, as in \"{}\"",
                        udim_example(&written)
                    ),
                );
                return;
            }
            ("udim", Some(_), _) => VdLayout::Udim {
                numbers: Vec::new(),
            },
            ("per_face", _, Some((tile, _))) => VdLayout::PerFace { tile: tile as u32 },
            ("per_face", _, None) => {
                let at = layout_word.as_ref().map_or(span, |(_, s)| *s);
                ctx.error(
                    at,
                    "a per_face map needs \"tile N\": the side in texels of every face's square",
                );
                return;
            }
            _ => VdLayout::Uv,
        };
        let (images, layout, path) = match layout {
            VdLayout::Udim { .. } => {
                let Some(found) = self.udim_tiles(&written, span) else {
                    return;
                };
                found
            }
            layout => {
                let Some((image, path)) =
                    self.load("vdmap", &written, span, |l, p| l.load_vd_image(p))
                else {
                    return;
                };
                if let VdLayout::PerFace { tile } = layout {
                    if image.width < tile || image.height < tile {
                        self.ctx.error(
                            span,
                            format!(
                                "the {}x{} map holds no {tile}x{tile} square (\"tile {tile}\")",
                                image.width, image.height
                            ),
                        );
                        return;
                    }
                }
                (vec![image], layout, path)
            }
        };
        if declared {
            let span = block.span;
            self.scene.vdmaps.push(VdMap {
                name: name.clone(),
                path,
                images,
                layout,
                space,
                channels,
                scale,
                midlevel,
                padding,
                span,
            });
            self.vdmap_names
                .set(&name, (self.scene.vdmaps.len() - 1) as u32);
        }
    }

    /// Loads every tile of the UDIM map written `written` (its file name holds a tile token):
    /// the tiles' images, the layout with their numbers, and the resolved pattern. Errors go to
    /// `span`.
    fn udim_tiles(
        &mut self,
        written: &str,
        span: Span,
    ) -> Option<(Vec<Arc<crate::scene::VdImage>>, VdLayout, PathBuf)> {
        let pattern = self.ctx.sources.resolve(span.file, written);
        let tiles = match self.loader.find_udim_tiles(&pattern) {
            Ok(tiles) => tiles,
            Err(message) => {
                self.ctx.error(
                    span,
                    format!("cannot list the tiles of \"{written}\": {message}"),
                );
                return None;
            }
        };
        if tiles.is_empty() {
            self.ctx.errors.push(
                Diagnostic::error(span, format!("no tile of \"{written}\" exists"))
                    .with_note(format!("looked for {}", pattern.display())),
            );
            return None;
        }
        let mut images = Vec::with_capacity(tiles.len());
        let mut numbers = Vec::with_capacity(tiles.len());
        for (number, path) in tiles {
            match self.loader.load_vd_image(&path) {
                Ok(image) => images.push(image),
                Err(message) => {
                    self.ctx.error(
                        span,
                        format!("cannot load tile {number} ({}): {message}", path.display()),
                    );
                    return None;
                }
            }
            numbers.push(number);
        }
        Some((images, VdLayout::Udim { numbers }, pattern))
    }

    fn mesh(&mut self, block: &Block, (name, name_span): (String, Span)) {
        let declared = self
            .mesh_names
            .declare(&mut self.ctx, "mesh", &name, name_span);
        let p = params::split(block, MESH, &format!("mesh \"{name}\""), &mut self.ctx);
        let kinds: Vec<&str> = MESH_KINDS.into_iter().filter(|k| p.has(k)).collect();
        let kind = match kinds.as_slice() {
            [one] => *one,
            [] => {
                self.ctx.error(
                    block.span,
                    format!("mesh \"{name}\" needs a source: file, sphere, quad, box or vertices"),
                );
                p.finish(&mut self.ctx, "a mesh without a source");
                return;
            }
            [first, second, ..] => {
                let span = p.take(second).map_or(block.span, |s| s.name_span);
                self.ctx.error(
                    span,
                    format!("mesh \"{name}\" has two sources: {first} and {second}"),
                );
                first
            }
        };
        let displacement = p.word(&mut self.ctx, "displacement");
        let single = |data: MeshData| Arc::new(MeshAsset::single(data));
        let built: Option<(Arc<MeshAsset>, MeshOrigin)> = match kind {
            "file" => {
                let file = p.string(&mut self.ctx, "file");
                p.finish(&mut self.ctx, "a mesh from a file");
                file.and_then(|(written, span)| {
                    let (asset, path) = self.load("mesh", &written, span, |l, p| l.load_mesh(p))?;
                    for part in &asset.parts {
                        if let Err(message) = part.data.validate() {
                            self.ctx
                                .error(span, format!("invalid mesh in \"{written}\": {message}"));
                            return None;
                        }
                    }
                    Some((asset, MeshOrigin::File(path)))
                })
            }
            "sphere" => {
                let ctx = &mut self.ctx;
                let _ = p.numbers(ctx, "sphere", &[0]);
                let radius = p.float(ctx, "radius", 1.0, positive, "greater than 0");
                let segments = p.whole(ctx, "segments", 32, 3, 4096) as u32;
                let analytic = p.numbers(ctx, "analytic", &[0]).is_some();
                if let (true, Some(d)) = (analytic, p.take("displacement")) {
                    ctx.error(
                        d.name_span,
                        "an analytic sphere has no quads to displace: leave out \"analytic\" to displace its tessellation",
                    );
                }
                p.finish(ctx, "a sphere mesh");
                let origin = if analytic {
                    MeshOrigin::AnalyticSphere { radius }
                } else {
                    MeshOrigin::Sphere
                };
                Some((single(shapes::uv_sphere(radius, segments)), origin))
            }
            "quad" => {
                let ctx = &mut self.ctx;
                let _ = p.numbers(ctx, "quad", &[0]);
                let size = positive_sizes(&p, ctx, 2).map_or(Vec2::ONE, |s| Vec2::new(s[0], s[1]));
                let mut divisions = [1u32, 1];
                if let Some((v, span)) = p.numbers(ctx, "divisions", &[2]) {
                    for (slot, value) in divisions.iter_mut().zip(&v) {
                        if let Some(d) = check_whole(ctx, "divisions", *value, span, 1, 4096) {
                            *slot = d as u32;
                        }
                    }
                }
                // UV repeats: the texture coordinates run 0..U and 0..V across the quad.
                let mut repeat = Vec2::ONE;
                if let Some((v, span)) = p.numbers(ctx, "repeat", &[1, 2]) {
                    let r = Vec2::new(v[0] as f32, *v.last().unwrap_or(&v[0]) as f32);
                    if r.x > 0.0 && r.y > 0.0 && r.is_finite() {
                        repeat = r;
                    } else {
                        ctx.error(span, "\"repeat\" must be greater than 0");
                    }
                }
                p.finish(ctx, "a quad mesh");
                let mut quad = shapes::grid_quad(size, divisions);
                for uv in &mut quad.uvs {
                    *uv *= repeat;
                }
                Some((single(quad), MeshOrigin::Quad))
            }
            "box" => {
                let ctx = &mut self.ctx;
                let _ = p.numbers(ctx, "box", &[0]);
                let size =
                    positive_sizes(&p, ctx, 3).map_or(Vec3::ONE, |s| Vec3::new(s[0], s[1], s[2]));
                p.finish(ctx, "a box mesh");
                Some((single(shapes::box_mesh(size)), MeshOrigin::Box))
            }
            _ => self
                .inline_mesh(&p, &name, block.span)
                .map(|m| (single(m), MeshOrigin::Inline)),
        };
        if let (Some((asset, origin)), true) = (built, declared) {
            let first = self.scene.meshes.len() as u32;
            let count = asset.parts.len() as u32;
            if let Some(word) = displacement {
                match word {
                    Word::Name(map, span) => {
                        self.mesh_displacements
                            .push((first..first + count, map, span))
                    }
                    Word::Str(_, span) => self.ctx.error(
                        span,
                        "\"displacement\" takes the name of a vdmap, not a string",
                    ),
                }
                if asset.parts.iter().all(|part| part.data.quads.is_empty()) {
                    log::warn!(
                        "{}: mesh \"{name}\" has a displacement map but no quads",
                        self.ctx.place(block.span)
                    );
                }
            } else if !matches!(origin, MeshOrigin::AnalyticSphere { .. }) {
                // Faces without an area render as nothing unless a displacement gives them one.
                // The counts were taken when the asset was built; a file's loader has warned
                // about its faces and normals once already.
                let FaceCounts {
                    faces,
                    without_area: flat,
                    normals,
                    unusable_normals: bad,
                } = asset.counts;
                if asset.counts.nothing_renders() {
                    self.ctx.error(
                        block.span,
                        format!(
                            "mesh \"{name}\" has no face with an area ({faces} faces, {flat} of \
                             them without one): nothing of it can render"
                        ),
                    );
                    return;
                }
                let place = self.ctx.place(block.span);
                if bad > 0 && !matches!(origin, MeshOrigin::File(_)) {
                    log::warn!(
                        "{place}: mesh \"{name}\": {bad} of its {normals} vertex normals are zero or \
                         not finite: where they leave no normal, the face's own stands in"
                    );
                }
                if flat > 0 && !matches!(origin, MeshOrigin::File(_)) {
                    log::warn!(
                        "{place}: mesh \"{name}\": {flat} of its {faces} faces have no area \
                         (collinear or repeated corners): they render as nothing"
                    );
                }
            }
            self.add_mesh_parts(&name, asset, origin, block.span);
        }
    }

    /// Adds one scene mesh per part of `asset` (named `name/material` when there are several)
    /// as the mesh `name`, whose parts take the file's materials unless an instance overrides
    /// them.
    fn add_mesh_parts(
        &mut self,
        name: &str,
        asset: Arc<MeshAsset>,
        origin: MeshOrigin,
        span: Span,
    ) -> MeshId {
        let first = self.scene.meshes.len() as u32;
        let count = asset.parts.len() as u32;
        for part in asset.parts.iter() {
            let part_name = match (count, part.material) {
                (1, _) => name.to_string(),
                (_, Some(m)) => format!("{name}/{}", asset.materials[m].name),
                (_, None) => format!("{name}/(no material)"),
            };
            self.scene.meshes.push(Mesh {
                name: part_name,
                origin: origin.clone(),
                data: Arc::clone(&part.data),
                displacement: None,
                span,
            });
        }
        self.mesh_names.set(name, first);
        self.mesh_parts.insert(
            first,
            FileParts {
                mesh: name.to_string(),
                materials: vec![None; asset.materials.len()],
                asset,
                span,
            },
        );
        first
    }

    /// `import "scene.glb"`: every mesh of the file becomes the mesh `FILE/MESH` (the file's
    /// name, and the mesh's), every node that places one an instance with the file's
    /// materials, the file's punctual lights lights of the scene, and its first camera the
    /// scene's camera unless the scene has a `camera` block.
    fn import(&mut self, written: &str, span: Span) {
        let Some((asset, path)) =
            self.load("scene file", written, span, |l, p| l.load_scene_file(p))
        else {
            return;
        };
        let file = path
            .file_name()
            .map_or_else(|| written.to_string(), |n| n.to_string_lossy().into_owned());
        let mut names = Vec::with_capacity(asset.meshes.len());
        for (k, mesh) in asset.meshes.iter().enumerate() {
            let given = asset.mesh_names.get(k).cloned().unwrap_or_default();
            let mut name = format!("{file}/{given}");
            // Files may repeat a mesh name: the later ones take their index.
            if self.mesh_names.map.contains_key(&name) {
                name = format!("{file}/{given}#{k}");
            }
            if !self.mesh_names.declare(&mut self.ctx, "mesh", &name, span) {
                names.push(None);
                continue;
            }
            self.add_mesh_parts(
                &name,
                Arc::clone(mesh),
                MeshOrigin::File(path.clone()),
                span,
            );
            names.push(Some(name));
        }
        for placement in &asset.placements {
            let Some(Some(name)) = names.get(placement.mesh) else {
                continue;
            };
            self.instances.push(PendingInstance {
                mesh: Some((name.clone(), span)),
                material: None,
                replacements: Vec::new(),
                transform: placement.transform,
                span,
            });
        }
        for light in &asset.lights {
            self.scene.lights.push(Light {
                kind: light.clone(),
                span,
            });
        }
        if let (Some(camera), None) = (&asset.camera, &self.imported_camera) {
            self.imported_camera = Some((camera.clone(), span));
        }
    }

    /// The first imported camera, unless the scene has a `camera` block.
    fn use_imported_camera(&mut self) {
        if self.singles.contains_key("camera") {
            return;
        }
        if let Some((c, span)) = self.imported_camera.take() {
            self.scene.camera = Camera {
                position: c.position,
                look_at: c.look_at,
                up: c.up,
                fov_deg: c.fov_deg,
                span,
                ..Camera::default()
            };
        }
    }

    /// The scene material for material `index` of the mesh file whose first part is `first`,
    /// named `mesh/material`, made (with its texture loaded) on first use; `None` when its
    /// texture fails to load, which is reported once.
    /// The scene material each `replace` of `pending` gives a file material (by the file
    /// material's index), for the file mesh whose first part is `mesh`; `None` after an error:
    /// a file material the file does not have, an unknown material, or `replace` beside
    /// `material` (which replaces them all).
    fn replacements(
        &mut self,
        mesh: MeshId,
        overridden: bool,
        pending: &PendingInstance,
    ) -> Option<HashMap<usize, MaterialId>> {
        let mut out = HashMap::new();
        let mut ok = true;
        for r in &pending.replacements {
            let ctx = &mut self.ctx;
            if overridden {
                ctx.error(
                    r.span,
                    "\"replace\" changes one of the file's materials, but \"material\" already replaces them all",
                );
                return None;
            }
            // A mesh without file materials has errored already: it needs "material", which
            // the check above refuses beside "replace".
            let file = self.mesh_parts.get(&mesh)?;
            let (wanted, wanted_span) = &r.file_material;
            let names = file.asset.materials.iter().map(|m| m.name.as_str());
            let Some(index) = file.asset.materials.iter().position(|m| &m.name == wanted) else {
                let hint = suggest::did_you_mean(wanted, names);
                ctx.error(
                    *wanted_span,
                    format!("mesh \"{}\" has no material \"{wanted}\"{hint}", file.mesh),
                );
                ok = false;
                continue;
            };
            let (name, span) = &r.material;
            match self.material_names.resolve(ctx, "material", name, *span) {
                Some(m) => {
                    out.insert(index, m);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn file_material(&mut self, first: MeshId, index: usize) -> Option<MaterialId> {
        let parts = self.mesh_parts.get(&first)?;
        if let Some(made) = parts.materials[index] {
            return made;
        }
        let (mesh, span) = (parts.mesh.clone(), parts.span);
        let material = parts.asset.materials[index].clone();
        let mut kind = material.kind.clone();
        let mut made = Some(());
        if let (true, Some(texture)) = (material.texture_file.is_some(), kind.texture_mut()) {
            *texture = self.file_texture(&material, &mesh, span);
            made = texture.map(|_| ());
        }
        let id = made.map(|()| {
            self.scene.materials.push(Material {
                name: format!("{mesh}/{}", material.name),
                kind,
                span,
            });
            (self.scene.materials.len() - 1) as MaterialId
        });
        if let Some(parts) = self.mesh_parts.get_mut(&first) {
            parts.materials[index] = Some(id);
        }
        id
    }

    /// The texture named by a mesh file's material (a path already resolved, with its UV scale
    /// and offset); each file and transform is loaded once.
    fn file_texture(&mut self, material: &FileMaterial, mesh: &str, span: Span) -> Option<u32> {
        let path = material.texture_file.as_deref()?;
        let (uv_scale, uv_offset) = (material.texture_scale, material.texture_offset);
        if let Some(i) = self
            .scene
            .textures
            .iter()
            .position(|t| t.path == path && t.uv_scale == uv_scale && t.uv_offset == uv_offset)
        {
            return Some(i as u32);
        }
        let loaded = match &material.texture_image {
            // An image the mesh file holds itself (glTF), decoded with it.
            Some(image) => Ok(Arc::clone(image)),
            None => self.loader.load_texture(path),
        };
        match loaded {
            Ok(image) => {
                self.scene.textures.push(Texture {
                    name: path.display().to_string(),
                    path: path.to_path_buf(),
                    image,
                    uv_scale,
                    uv_offset,
                    span,
                });
                Some((self.scene.textures.len() - 1) as u32)
            }
            Err(message) => {
                self.ctx.error(
                    span,
                    format!(
                        "mesh \"{mesh}\": cannot load the texture \"{}\" its materials name: {message}",
                        path.display()
                    ),
                );
                None
            }
        }
    }

    /// The grey diffuse material that faces of a mesh file without a material of their own get
    /// when the instance names none either (as in pbrt and Mitsuba).
    fn default_material(&mut self) -> MaterialId {
        if let Some(id) = self.default_material {
            return id;
        }
        self.scene.materials.push(Material {
            name: "(default)".to_string(),
            kind: MaterialKind::Diffuse {
                albedo: Vec3::splat(0.5),
                texture: None,
            },
            span: Span::NONE,
        });
        let id = (self.scene.materials.len() - 1) as MaterialId;
        self.default_material = Some(id);
        id
    }

    fn inline_mesh(&mut self, p: &Params, name: &str, span: Span) -> Option<MeshData> {
        let ctx = &mut self.ctx;
        let vertices = p.number_list(ctx, "vertices", 3);
        let normals = p.number_list(ctx, "normals", 3);
        let uvs = p.number_list(ctx, "uvs", 2);
        let triangles = p.number_list(ctx, "triangles", 3);
        let quads = p.number_list(ctx, "quads", 4);
        p.finish(ctx, "an inline mesh");
        if !p.has("triangles") && !p.has("quads") {
            ctx.error(
                span,
                format!("mesh \"{name}\" needs \"triangles\" or \"quads\""),
            );
            return None;
        }
        let mut mesh = MeshData::default();
        let vec3s = |v: &[f64]| {
            v.chunks_exact(3)
                .map(|c| Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32))
                .collect()
        };
        mesh.positions = vec3s(&vertices?.0);
        if let Some((n, _)) = &normals {
            mesh.normals = vec3s(n);
        }
        if let Some((uv, _)) = &uvs {
            mesh.uvs = uv
                .chunks_exact(2)
                .map(|c| Vec2::new(c[0] as f32, c[1] as f32))
                .collect();
        }
        let mut ok = true;
        let mut indices = |list: &Option<(Vec<f64>, Span)>, what: &str| -> Vec<u32> {
            let Some((values, span)) = list else {
                return Vec::new();
            };
            let mut out = Vec::with_capacity(values.len());
            for v in values {
                match check_whole(ctx, what, *v, *span, 0, MAX_U32 - 1) {
                    Some(i) => out.push(i as u32),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            out
        };
        mesh.triangles = indices(&triangles, "triangles")
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        mesh.quads = indices(&quads, "quads")
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect();
        if (p.has("triangles") && triangles.is_none()) || (p.has("quads") && quads.is_none()) || !ok
        {
            return None;
        }
        if let Err(message) = mesh.validate() {
            ctx.error(span, format!("invalid mesh \"{name}\": {message}"));
            return None;
        }
        Some(mesh)
    }

    fn instance(&mut self, block: &Block) {
        let ctx = &mut self.ctx;
        let p = params::split(block, INSTANCE, "instance", ctx);
        let mesh = name_word(&p, ctx, "mesh");
        let material = name_word(&p, ctx, "material");
        if !p.has("mesh") {
            ctx.error(block.span, "an instance needs \"mesh\"");
        }
        let mut transform = Affine3A::IDENTITY;
        for param in p.take_all(&TRANSFORMS) {
            let step = match param.name {
                "translate" => {
                    counted(ctx, param, &[3]).map(|v| Affine3A::from_translation(vec3(&v)))
                }
                "rotate" => {
                    counted(ctx, param, &[3]).map(|v| Affine3A::from_mat3(euler_rotation(vec3(&v))))
                }
                "scale" => counted(ctx, param, &[1, 3]).and_then(|v| {
                    let s = if v.len() == 1 {
                        Vec3::splat(v[0] as f32)
                    } else {
                        vec3(&v)
                    };
                    if s.x * s.y * s.z == 0.0 {
                        ctx.error(param.span, "\"scale\" must not be zero");
                        return None;
                    }
                    Some(Affine3A::from_scale(s))
                }),
                "matrix" => counted(ctx, param, &[16]).and_then(|v| {
                    let m: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                    if m[12..16] != [0.0, 0.0, 0.0, 1.0] {
                        ctx.error(param.span, "the last row of \"matrix\" must be 0 0 0 1");
                        return None;
                    }
                    // Row-major in the file; glam wants columns.
                    let matrix = Mat4::from_cols_slice(&m).transpose();
                    let affine = Affine3A::from_mat4(matrix);
                    if affine.matrix3.determinant() == 0.0 {
                        ctx.error(param.span, "\"matrix\" is singular");
                        return None;
                    }
                    Some(affine)
                }),
                _ => counted(ctx, param, &[9]).and_then(|v| {
                    let (from, to, up) = (vec3(&v[0..3]), vec3(&v[3..6]), vec3(&v[6..9]));
                    let forward = (to - from).normalize_or_zero();
                    let right = up.cross(forward).normalize_or_zero();
                    if forward == Vec3::ZERO || right == Vec3::ZERO {
                        ctx.error(
                            param.span,
                            "\"look_at\" needs FROM and TO apart and UP not along TO - FROM",
                        );
                        return None;
                    }
                    let new_up = forward.cross(right);
                    Some(Affine3A::from_mat3_translation(
                        Mat3::from_cols(right, new_up, forward),
                        from,
                    ))
                }),
            };
            if let Some(step) = step {
                transform = step * transform;
            }
        }
        let mut replacements = Vec::new();
        for param in p.take_all(&["replace"]) {
            match param.values.as_slice() {
                [Expr {
                    kind: ExprKind::Str(file_material),
                    span: file_span,
                }, Expr {
                    kind: ExprKind::Ident(material),
                    span: material_span,
                }] => replacements.push(Replacement {
                    file_material: (file_material.clone(), *file_span),
                    material: (material.clone(), *material_span),
                    span: param.span,
                }),
                _ => ctx.error(
                    param.span,
                    "\"replace\" takes the name of one of the file's materials in quotes and a material: replace \"FILE MATERIAL\" material",
                ),
            }
        }
        p.finish(ctx, "an instance");
        self.instances.push(PendingInstance {
            mesh,
            material,
            replacements,
            transform,
            span: block.span,
        });
    }

    fn light(&mut self, block: &Block, (kind, kind_span): (String, Span)) {
        let ctx = &mut self.ctx;
        if !LIGHT_KINDS.contains(&kind.as_str()) {
            let hint = suggest::did_you_mean(&kind, LIGHT_KINDS);
            ctx.error(kind_span, format!("unknown light kind \"{kind}\"{hint}: expected point, spot, directional, sun, quad or environment"));
            return;
        }
        if kind == "environment" {
            self.environment_light(block);
            return;
        }
        let p = params::split(block, LIGHT, &format!("{kind} light"), ctx);
        let who = format!("a {kind} light");
        let light = match kind.as_str() {
            "point" => {
                p.require(ctx, "position", &who);
                let position = p.vec3(ctx, "position", Vec3::ZERO);
                let power = p.color(ctx, "power", Vec3::ONE);
                Some(LightKind::Point { position, power })
            }
            "spot" => {
                p.require(ctx, "position", &who);
                let position = p.vec3(ctx, "position", Vec3::ZERO);
                let power = p.color(ctx, "power", Vec3::ONE);
                let target = p.vec3_opt(ctx, "look_at").map(|(t, s)| (t - position, s));
                let along = p.vec3_opt(ctx, "direction");
                let direction = match (target, along, p.has("look_at") || p.has("direction")) {
                    (Some(_), Some((_, span)), _) => {
                        ctx.error(
                            span,
                            "a spot light takes \"look_at\" or \"direction\", not both",
                        );
                        None
                    }
                    (Some((d, span)), None, _) | (None, Some((d, span)), _) => {
                        let unit = unit_direction(d);
                        if unit.is_none() {
                            ctx.error(span, "the spot light's direction is zero");
                        }
                        unit
                    }
                    (None, None, false) => {
                        ctx.error(
                            block.span,
                            "a spot light needs \"look_at\" or \"direction\"",
                        );
                        None
                    }
                    (None, None, true) => None,
                };
                let (mut inner, mut outer) = (30.0, 45.0);
                if let Some((v, span)) = p.numbers(ctx, "cone", &[2]) {
                    let (i, o) = (v[0] as f32, v[1] as f32);
                    if 0.0 <= i && i <= o && o <= 180.0 {
                        (inner, outer) = (i, o);
                    } else {
                        ctx.error(span, format!("\"cone\" needs 0 <= inner <= outer <= 180 degrees, but it is {i} {o}"));
                    }
                }
                direction.map(|direction| LightKind::Spot {
                    position,
                    direction,
                    power,
                    cone_inner_deg: inner,
                    cone_outer_deg: outer,
                })
            }
            "directional" | "sun" => {
                p.require(ctx, "direction", &who);
                let direction = p.vec3_opt(ctx, "direction");
                let irradiance = p.color(ctx, "irradiance", Vec3::ONE);
                let default_angle = if kind == "sun" { SUN_ANGLE_DEG } else { 0.0 };
                let angle_deg = p.float(
                    ctx,
                    "angle",
                    default_angle,
                    |a| (0.0..=90.0).contains(&a),
                    "between 0 and 90 degrees",
                );
                direction.and_then(|(d, span)| {
                    let Some(direction) = unit_direction(d) else {
                        ctx.error(span, "the light's direction is zero");
                        return None;
                    };
                    Some(LightKind::Directional {
                        direction,
                        irradiance,
                        angle_deg,
                    })
                })
            }
            _ => {
                let radiance = p.color(ctx, "radiance", Vec3::ONE);
                let samples = p.whole(ctx, "samples", 1, 1, 65536) as u32;
                let edges = if p.has("center") || p.has("size") {
                    if p.has("corner") || p.has("edge_u") || p.has("edge_v") {
                        ctx.error(
                            block.span,
                            "a quad light takes corner/edge_u/edge_v or center/size, not both",
                        );
                    }
                    p.require(ctx, "center", &who);
                    p.require(ctx, "size", &who);
                    let center = p.vec3_opt(ctx, "center");
                    let size = positive_sizes(&p, ctx, 2);
                    center.zip(size).map(|((c, _), s)| {
                        // Horizontal, emitting downwards: X × Z = -Y.
                        let (u, v) = (Vec3::new(s[0], 0.0, 0.0), Vec3::new(0.0, 0.0, s[1]));
                        (c - 0.5 * (u + v), u, v)
                    })
                } else {
                    let all = ["corner", "edge_u", "edge_v"].map(|n| p.require(ctx, n, &who));
                    let corner = p.vec3_opt(ctx, "corner");
                    let u = p.vec3_opt(ctx, "edge_u");
                    let v = p.vec3_opt(ctx, "edge_v");
                    match (corner, u, v, all.iter().all(|x| *x)) {
                        (Some((c, _)), Some((u, _)), Some((v, span)), true) => {
                            if u.cross(v).length_squared() == 0.0 {
                                ctx.error(span, "the quad light's edges are parallel or zero");
                                None
                            } else {
                                Some((c, u, v))
                            }
                        }
                        _ => None,
                    }
                };
                edges.map(|(corner, edge_u, edge_v)| LightKind::Quad {
                    corner,
                    edge_u,
                    edge_v,
                    radiance,
                    samples,
                })
            }
        };
        p.finish(ctx, &who);
        if let Some(light) = light {
            let strength = match light {
                LightKind::Point { power, .. } | LightKind::Spot { power, .. } => power,
                LightKind::Directional { irradiance, .. } => irradiance,
                LightKind::Quad { radiance, .. } => radiance,
                _ => Vec3::ONE,
            };
            if strength == Vec3::ZERO {
                log::warn!(
                    "{}: the {kind} light's strength is 0: it lights nothing",
                    ctx.place(block.span),
                );
            }
            self.scene.lights.push(Light {
                kind: light,
                span: block.span,
            });
        }
    }

    /// `light environment { file | radiance, scale, rotate, samples }`: one per scene.
    fn environment_light(&mut self, block: &Block) {
        let who = "an environment light";
        let p = params::split(block, LIGHT, "environment light", &mut self.ctx);
        let ctx = &mut self.ctx;
        if p.has("file") && p.has("radiance") {
            ctx.error(
                block.span,
                "an environment light takes \"file\" or \"radiance\", not both",
            );
        }
        let radiance = p.color(ctx, "radiance", Vec3::ONE);
        let scale = p.float(ctx, "scale", 1.0, nonnegative, "at least 0");
        let samples = p.whole(ctx, "samples", 1, 1, 65536) as u32;
        let to_world = p
            .numbers(ctx, "rotate", &[3])
            .map_or(Mat3::IDENTITY, |(v, _)| euler_rotation(vec3(&v)));
        let file = p.string(ctx, "file");
        p.finish(ctx, who);
        if let Some(first) = self
            .scene
            .lights
            .iter()
            .find(|l| matches!(l.kind, LightKind::Environment(_)))
        {
            let d = Diagnostic::error(block.span, "a scene takes one environment light")
                .with_note(format!("the first is at {}", self.ctx.place(first.span)));
            self.ctx.errors.push(d);
            return;
        }
        let map = match file {
            Some((written, span)) => {
                let Some((map, _)) = self.load("environment map", &written, span, |l, p| {
                    l.load_environment(p)
                }) else {
                    return;
                };
                map
            }
            None => Arc::new(EnvMap::uniform(radiance)),
        };
        self.scene.lights.push(Light {
            kind: LightKind::Environment(Environment {
                map,
                scale,
                to_world,
                samples,
            }),
            span: block.span,
        });
    }

    fn photons(&mut self, block: &Block) {
        let ctx = &mut self.ctx;
        let p = params::split(block, PHOTONS, "photons", ctx);
        let d = PhotonSettings::default();
        self.scene.photons = PhotonSettings {
            global: p.whole(ctx, "global", d.global.into(), 0, limits::MAX_PHOTONS) as u32,
            caustic: p.whole(ctx, "caustic", d.caustic.into(), 0, limits::MAX_PHOTONS) as u32,
            max_bounces: p.whole(ctx, "max_bounces", d.max_bounces.into(), 1, 1000) as u32,
            knn: p.whole(ctx, "knn", d.knn.into(), 1, MAX_KNN) as u32,
            max_radius: p.float(ctx, "max_radius", d.max_radius, nonnegative, "at least 0"),
            filter: photon_filter(&p, ctx, d.filter),
            span: block.span,
            ..d
        };
        p.finish(ctx, "photons");
    }

    fn gather(&mut self, block: &Block) {
        let ctx = &mut self.ctx;
        let p = params::split(block, GATHER, "gather", ctx);
        let d = GatherSettings::default();
        self.scene.gather = GatherSettings {
            seeds: p.whole(ctx, "seeds", d.seeds.into(), 1, MAX_U32) as u32,
            rays: p.whole(ctx, "rays", d.rays.into(), 1, limits::MAX_GATHER_RAYS) as u32,
            quadtree_levels: p.whole(ctx, "quadtree_levels", d.quadtree_levels.into(), 1, 16)
                as u32,
            min_density: p.float(
                ctx,
                "min_density",
                d.min_density,
                |b| (0.0..=1.0).contains(&b),
                "between 0 and 1",
            ),
            precomputed_irradiance: p.whole(
                ctx,
                "precomputed_irradiance",
                d.precomputed_irradiance.into(),
                0,
                MAX_U32,
            ) as u32,
            span: block.span,
        };
        let gather = &self.scene.gather;
        if let Err(message) = limits::gather_rays(gather.seeds, gather.rays) {
            ctx.error(p.span_of("seeds").unwrap_or(block.span), message);
        }
        p.finish(ctx, "gather");
    }

    fn output(&mut self, block: &Block) {
        let ctx = &mut self.ctx;
        let p = params::split(block, OUTPUT, "output", ctx);
        let mut output = OutputSettings {
            span: block.span,
            ..OutputSettings::default()
        };
        if let Some((path, span)) = p.string(ctx, "path") {
            if path.is_empty() {
                ctx.error(span, "the output path is empty");
            } else {
                output.path = path;
            }
        }
        for (layer, span) in p.words(ctx, "layers") {
            if layer == "color" {
                continue; // always written
            }
            match Aov::from_name(&layer) {
                Some(aov) if !output.layers.contains(&aov) => output.layers.push(aov),
                Some(_) => {}
                None => {
                    let names = Aov::ALL.map(Aov::name);
                    let hint =
                        suggest::did_you_mean(&layer, names.iter().copied().chain(["color"]));
                    ctx.error(
                        span,
                        format!(
                            "unknown layer \"{layer}\"{hint}: expected color, {}",
                            names.join(", ")
                        ),
                    );
                }
            }
        }
        p.finish(ctx, "output");
        self.scene.output = output;
    }

    /// Resolves names used before or after their declaration.
    fn resolve_references(&mut self) {
        let ctx = &mut self.ctx;
        for (material, texture, span) in std::mem::take(&mut self.material_textures) {
            let id = self.texture_names.resolve(ctx, "texture", &texture, span);
            if let Some(texture) = self
                .scene
                .materials
                .get_mut(material as usize)
                .and_then(|m| m.kind.texture_mut())
            {
                *texture = id;
            }
        }
        for (meshes, map, span) in std::mem::take(&mut self.mesh_displacements) {
            let id = self.vdmap_names.resolve(ctx, "vdmap", &map, span);
            for mesh in meshes {
                if let Some(m) = self.scene.meshes.get_mut(mesh as usize) {
                    m.displacement = id;
                }
            }
        }
        let mut warned_default = std::collections::HashSet::new();
        for pending in std::mem::take(&mut self.instances) {
            let ctx = &mut self.ctx;
            let mesh = pending
                .mesh
                .as_ref()
                .and_then(|(n, s)| self.mesh_names.resolve(ctx, "mesh", n, *s));
            // `None`: not given; `Some(None)`: given but unknown (already reported).
            let material = pending
                .material
                .as_ref()
                .map(|(n, s)| self.material_names.resolve(ctx, "material", n, *s));
            let (Some(mesh), Some(Some(_)) | None) = (mesh, material) else {
                continue;
            };
            // Each part with the material its file gives it.
            let parts: Vec<(MeshId, Option<usize>)> = match self.mesh_parts.get(&mesh) {
                Some(file) => (file.asset.parts.iter().enumerate())
                    .map(|(k, part)| (mesh + k as u32, part.material))
                    .collect(),
                None => vec![(mesh, None)],
            };
            let material = material.flatten();
            if material.is_none() && parts.iter().all(|&(_, own)| own.is_none()) {
                let name = &self.scene.meshes[mesh as usize].name;
                ctx.errors.push(
                    Diagnostic::error(pending.span, "an instance needs \"material\"").with_note(
                        format!(
                            "mesh \"{name}\" has no materials of its own (an OBJ file's usemtl)"
                        ),
                    ),
                );
                continue;
            }
            let Some(replaced) = self.replacements(mesh, material.is_some(), &pending) else {
                continue;
            };
            for (part, own) in parts {
                let material = match (material, own) {
                    (Some(m), _) => m,
                    (None, Some(index)) => match replaced.get(&index) {
                        Some(&m) => m,
                        None => match self.file_material(mesh, index) {
                            Some(m) => m,
                            None => continue,
                        },
                    },
                    (None, None) => {
                        if warned_default.insert(mesh) {
                            log::warn!(
                                "{}: mesh \"{}\" has faces without a material of their own; they are grey diffuse (0.5)",
                                self.ctx.place(pending.span),
                                self.scene.meshes[part as usize].name
                            );
                        }
                        self.default_material()
                    }
                };
                self.scene.instances.push(Instance {
                    mesh: part,
                    material,
                    transform: pending.transform,
                    span: pending.span,
                });
            }
        }
        // An emissive analytic sphere is sampled as a sphere, which an uneven scale would make
        // an ellipsoid.
        for instance in &self.scene.instances {
            let (Some(mesh), Some(material)) = (
                self.scene.meshes.get(instance.mesh as usize),
                self.scene.materials.get(instance.material as usize),
            ) else {
                continue;
            };
            if let (MeshOrigin::AnalyticSphere { radius }, MaterialKind::Emissive { .. }) =
                (&mesh.origin, &material.kind)
            {
                if SphereLight::placed(*radius, &instance.transform).is_none() {
                    self.ctx.error(
                        instance.span,
                        format!(
                            "mesh \"{}\" is an analytic sphere and material \"{}\" emits: an emissive analytic sphere must be scaled alike along every axis (leave out \"analytic\" to emit from a stretched tessellation)",
                            mesh.name, material.name
                        ),
                    );
                }
            }
        }
    }

    fn warn_about_unused_and_empty(&self) {
        if !self.ctx.errors.is_empty() {
            return;
        }
        let mut unused: Vec<(&String, &Variable)> = self
            .ctx
            .env
            .variables
            .iter()
            .filter(|(_, v)| !v.used.get())
            .collect();
        unused.sort_by_key(|(_, v)| (v.span.file, v.span.start));
        for (name, variable) in unused {
            log::warn!(
                "{}: variable \"{name}\" is never used",
                self.ctx.place(variable.span)
            );
        }
        if self.scene.instances.is_empty() {
            log::warn!("the scene has no instances: the image will show nothing");
        }
        self.warn_about_undisplaced_quads();
        if self.scene.lights.is_empty()
            && !self
                .scene
                .materials
                .iter()
                .any(|m| matches!(m.kind, MaterialKind::Emissive { .. }))
        {
            log::warn!("the scene has no lights: the image will be black");
        }
    }
}

impl Builder<'_, '_> {
    /// A displaced mesh whose quads lie in UDIM tiles its map lacks, or past a per-face map's
    /// last square, renders them flat: said once per mesh, at the map.
    fn warn_about_undisplaced_quads(&self) {
        for mesh in &self.scene.meshes {
            let Some(map) = mesh
                .displacement
                .and_then(|id| self.scene.vdmaps.get(id as usize))
            else {
                continue;
            };
            if map.layout == VdLayout::Uv {
                continue;
            }
            let mut flat = 0usize;
            let mut tiles: Vec<u32> = Vec::new();
            let mut more = false;
            for q in 0..mesh.data.quads.len() {
                let uvs = mesh.data.quad_uvs(q);
                if map.surface(q as u32, &uvs).0.window.is_empty() {
                    flat += 1;
                    if let VdLayout::Udim { .. } = map.layout {
                        if let Some((n, _)) = scene::vdmap::quad_udim_tile(&uvs) {
                            if !tiles.contains(&n) {
                                if tiles.len() < 8 {
                                    tiles.push(n);
                                } else {
                                    more = true;
                                }
                            }
                        }
                    }
                }
            }
            if flat == 0 {
                continue;
            }
            let why = match &map.layout {
                VdLayout::Udim { .. } if tiles.is_empty() => {
                    "lie outside the UDIM tiles (u in 0..10, v ≥ 0)".to_string()
                }
                VdLayout::Udim { .. } => {
                    tiles.sort_unstable();
                    let list: Vec<String> = tiles.iter().map(u32::to_string).collect();
                    let more = if more { ", …" } else { "" };
                    format!(
                        "lie in UDIM tiles the map has no file for ({}{more})",
                        list.join(", ")
                    )
                }
                _ => "come after the image's last square".to_string(),
            };
            log::warn!(
                "{}: {flat} of the {} quads of mesh \"{}\" {why}: they are not displaced",
                self.ctx.place(map.span),
                mesh.data.quads.len(),
                mesh.name
            );
        }
    }
}

/// The colour given after a material kind (`diffuse 0.7 0.7 0.7`), or `default` when the kind
/// stands alone. `at_most_one` rejects reflectances above 1.
fn kind_color(p: &Params, ctx: &mut Ctx, name: &str, default: Vec3, at_most_one: bool) -> Vec3 {
    let empty = p.take(name).is_none_or(|param| param.values.is_empty());
    if empty {
        return default;
    }
    let color = p.color(ctx, name, default);
    if at_most_one && color.max_element() > 1.0 {
        let span = p.take(name).map_or(Span::NONE, |param| param.span);
        ctx.error(
            span,
            format!(
                "\"{name}\" reflects more light than it receives: each channel must be at most 1"
            ),
        );
        return default;
    }
    color
}

/// A material's `tint`: a colour of at most 1 per channel, 1 when absent.
fn tint(p: &Params, ctx: &mut Ctx, block_span: Span) -> Vec3 {
    let tint = p.color(ctx, "tint", Vec3::ONE);
    if tint.max_element() > 1.0 {
        let span = p.take("tint").map_or(block_span, |t| t.span);
        ctx.error(span, "\"tint\" must be at most 1 in each channel");
        return Vec3::ONE;
    }
    tint
}

/// A conductor's `eta` or `k`: required, three numbers (RGB) or one for all channels, each
/// satisfying `valid` (which `requirement` says).
fn conductor_index(
    p: &Params,
    ctx: &mut Ctx,
    name: &str,
    block_span: Span,
    valid: fn(f32) -> bool,
    requirement: &str,
) -> Vec3 {
    // Gold's index, only used to go on after an error has been reported.
    let fallback = if name == "eta" {
        Vec3::new(0.143, 0.374, 1.442)
    } else {
        Vec3::new(3.983, 2.386, 1.603)
    };
    if !p.has(name) {
        ctx.error(block_span, format!("a conductor material needs \"{name}\""));
        return fallback;
    }
    let Some((v, span)) = p.numbers(ctx, name, &[1, 3]) else {
        return fallback;
    };
    let v = if v.len() == 1 {
        Vec3::splat(v[0] as f32)
    } else {
        Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
    };
    if !v.is_finite() || !v.to_array().into_iter().all(valid) {
        ctx.error(
            span,
            format!(
                "\"{name}\" must be {requirement} in each channel, but it is {} {} {}",
                v.x, v.y, v.z
            ),
        );
        return fallback;
    }
    v
}

/// The complex indices (`eta`, `k`, RGB) of the `metal` presets: fits to measured data at
/// 650, 550 and 450 nm, as renderers' RGB modes use them.
pub const METALS: [(&str, [f32; 3], [f32; 3]); 4] = [
    (
        "gold",
        [0.143119, 0.374957, 1.44248],
        [3.98316, 2.38572, 1.60322],
    ),
    (
        "silver",
        [0.155265, 0.116723, 0.138342],
        [4.82835, 3.12225, 2.14696],
    ),
    (
        "copper",
        [0.200438, 0.924033, 1.10221],
        [3.91295, 2.45285, 2.14219],
    ),
    (
        "aluminium",
        [1.65746, 0.880369, 0.521229],
        [9.22387, 6.26952, 4.837],
    ),
];

/// A conductor's `metal NAME` preset: its (`eta`, `k`), or `None` when the block has no
/// `metal` (or a wrong one, reported). `metal` with `eta` or `k` is an error.
fn metal_preset(p: &Params, ctx: &mut Ctx) -> Option<(Vec3, Vec3)> {
    let param = p.take("metal")?;
    let names: Vec<&str> = METALS.iter().map(|m| m.0).collect();
    let words = p.words(ctx, "metal");
    let preset = match words.as_slice() {
        [(w, span)] => match METALS.iter().find(|m| m.0 == w) {
            Some(m) => Some((Vec3::from(m.1), Vec3::from(m.2))),
            None => {
                let hint = suggest::did_you_mean(w, names.iter().copied());
                ctx.error(
                    *span,
                    format!(
                        "unknown metal \"{w}\"{hint}: expected gold, silver, copper or aluminium"
                    ),
                );
                None
            }
        },
        _ => {
            ctx.error(
                param.span,
                "\"metal\" takes 1 name: gold, silver, copper or aluminium",
            );
            None
        }
    };
    for other in p.take_all(&["eta", "k"]) {
        ctx.error(
            other.name_span,
            format!(
                "a conductor takes \"metal\" or \"{}\", not both",
                other.name
            ),
        );
    }
    // Gold after an error, so that checking goes on.
    Some(preset.unwrap_or((Vec3::from(METALS[0].1), Vec3::from(METALS[0].2))))
}

/// A rough material's `roughness` in [0, 1] (0, smooth, when absent).
fn roughness(p: &Params, ctx: &mut Ctx) -> f32 {
    p.float(
        ctx,
        "roughness",
        0.0,
        |r| (0.0..=1.0).contains(&r),
        "between 0 and 1",
    )
}

/// `fresnel exact` (the default) or `fresnel schlick`.
fn fresnel_mode(p: &Params, ctx: &mut Ctx) -> FresnelMode {
    let words = p.words(ctx, "fresnel");
    match words.as_slice() {
        [] => {
            if let Some(param) = p.take("fresnel").filter(|param| param.values.is_empty()) {
                ctx.error(param.span, "\"fresnel\" takes a name: exact or schlick");
            }
            FresnelMode::Exact
        }
        [(w, _)] if w == "exact" => FresnelMode::Exact,
        [(w, _)] if w == "schlick" => FresnelMode::Schlick,
        [(w, span)] => {
            let hint = suggest::did_you_mean(w, FRESNEL_MODES);
            ctx.error(
                *span,
                format!("unknown fresnel mode \"{w}\"{hint}: expected exact or schlick"),
            );
            FresnelMode::Exact
        }
        [_, (_, span), ..] => {
            ctx.error(*span, "\"fresnel\" takes 1 name: exact or schlick");
            FresnelMode::Exact
        }
    }
}

/// A `size` with `count` values, all greater than zero.
fn positive_sizes(p: &Params, ctx: &mut Ctx, count: usize) -> Option<Vec<f32>> {
    let (v, span) = p.numbers(ctx, "size", &[count])?;
    if v.iter().any(|&s| s <= 0.0) {
        ctx.error(span, "\"size\" must be greater than 0");
        return None;
    }
    Some(v.iter().map(|&s| s as f32).collect())
}

/// A parameter that names something declared elsewhere.
fn name_word(p: &Params, ctx: &mut Ctx, name: &str) -> Option<(String, Span)> {
    match p.word(ctx, name)? {
        Word::Name(n, s) => Some((n, s)),
        Word::Str(_, s) => {
            ctx.error(s, format!("\"{name}\" takes a name without quotes"));
            None
        }
    }
}

/// The numbers of one occurrence of a repeatable parameter, checked in count.
/// `rotate X Y Z` (degrees): about x, then y, then z, as an instance's and an environment
/// light's.
fn euler_rotation(degrees: Vec3) -> Mat3 {
    let r = degrees * (std::f32::consts::PI / 180.0);
    Mat3::from_rotation_z(r.z) * Mat3::from_rotation_y(r.y) * Mat3::from_rotation_x(r.x)
}

fn counted(ctx: &mut Ctx, param: &params::Param, counts: &[usize]) -> Option<Vec<f64>> {
    let values = params::param_numbers(param, ctx)?;
    if !counts.contains(&values.len()) {
        let expected: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
        ctx.error(
            param.span,
            format!(
                "\"{}\" takes {} values, but {} were given",
                param.name,
                expected.join(" or "),
                values.len()
            ),
        );
        return None;
    }
    Some(values)
}

fn vec3(v: &[f64]) -> Vec3 {
    Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
}

/// `written` with a `<UDIM>` token before its extension, for a message.
fn udim_example(written: &str) -> String {
    match written.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') => format!("{stem}.<UDIM>.{ext}"),
        _ => format!("{written}.<UDIM>"),
    }
}

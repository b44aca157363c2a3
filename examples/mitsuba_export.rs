//! Writes a Caustica scene as a Mitsuba 3 scene (XML and one binary PLY per instance, in world
//! space), so that an independent path tracer can render a reference of the same scene
//! (`tools/mitsuba_reference.py`; docs/reference.md).
//!
//! `cargo run --release --example mitsuba_export -- SCENE.csc OUT_DIR [--spp N] [--max-depth N]
//! [--resolution WxH]`
//!
//! Translations: diffuse → `twosided(diffuse)`; mirror → `twosided(conductor none)` scaled by
//! its reflectance; conductor → `twosided(conductor)` with `eta` and `k` as RGB and the tint as
//! `specular_reflectance`; dielectric → `dielectric` (exact Fresnel: a `fresnel schlick`
//! material is exported with a warning) with the tint as transmittance; emissive → an area
//! emitter on a black surface;
//! point, directional and quad lights → `point`, `directional` and a `rectangle` area emitter;
//! an environment light → `envmap` (its map written as `environment.exr`) or, when uniform,
//! `constant`; an analytic sphere → Mitsuba's `sphere`; a texture → a `bitmap` of the
//! material's albedo (a conductor's tint, as `specular_reflectance`) times the texels as Caustica decoded them (linear, written as
//! `textures/material_M.exr`), looked up bilinearly with wrap-around at the instance's UVs
//! (through the texture's scale and offset, written into the PLY).
//! Spot lights (Mitsuba's falloff differs) and VD maps are refused with a message.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use caustica::scene::{FresnelMode, LightKind, MaterialKind, MeshOrigin, Scene, Texture};
use glam::{Vec2, Vec3};

fn fail(message: String) -> ! {
    eprintln!("mitsuba_export: {message}");
    std::process::exit(1);
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn rgb(v: Vec3) -> String {
    format!("{:.9}, {:.9}, {:.9}", v.x, v.y, v.z)
}

fn v3(v: Vec3) -> String {
    format!("{:.9}, {:.9}, {:.9}", v.x, v.y, v.z)
}

/// A transform as Mitsuba's `<matrix value>`: the 4×4 matrix row by row.
fn matrix_value(m: &glam::Affine3A) -> String {
    let (a, t) = (m.matrix3, m.translation);
    let rows = [
        [a.x_axis.x, a.y_axis.x, a.z_axis.x, t.x],
        [a.x_axis.y, a.y_axis.y, a.z_axis.y, t.y],
        [a.x_axis.z, a.y_axis.z, a.z_axis.z, t.z],
    ];
    let numbers: Vec<String> = rows.iter().flatten().map(|v| v.to_string()).collect();
    format!("{} 0 0 0 1", numbers.join(" "))
}

/// A binary little-endian PLY of triangles with per-vertex normals and, when `uvs` is not
/// empty, per-vertex texture coordinates.
fn write_ply(
    path: &Path,
    positions: &[Vec3],
    normals: &[Vec3],
    uvs: &[Vec2],
    triangles: &[[u32; 3]],
) {
    let mut out = Vec::new();
    let uv_properties = if uvs.is_empty() {
        ""
    } else {
        "property float u\nproperty float v\n"
    };
    let header = format!(
        "ply\nformat binary_little_endian 1.0\nelement vertex {}\nproperty float x\nproperty float y\nproperty float z\nproperty float nx\nproperty float ny\nproperty float nz\n{uv_properties}element face {}\nproperty list uchar int vertex_indices\nend_header\n",
        positions.len(),
        triangles.len()
    );
    out.extend_from_slice(header.as_bytes());
    for (i, (p, n)) in positions.iter().zip(normals).enumerate() {
        for c in [p.x, p.y, p.z, n.x, n.y, n.z] {
            out.extend_from_slice(&c.to_le_bytes());
        }
        if let Some(uv) = uvs.get(i) {
            out.extend_from_slice(&uv.x.to_le_bytes());
            out.extend_from_slice(&uv.y.to_le_bytes());
        }
    }
    for t in triangles {
        out.push(3);
        for &i in t {
            out.extend_from_slice(&(i as i32).to_le_bytes());
        }
    }
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(&out))
        .unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
}

/// `rough` for a rough conductor, dielectric or plastic (Mitsuba's `roughconductor`,
/// `roughdielectric`, `roughplastic`), nothing for a smooth one.
fn rough_prefix(kind: &MaterialKind) -> &'static str {
    if kind.alpha().is_some() {
        "rough"
    } else {
        ""
    }
}

/// A rough material's GGX distribution in Mitsuba's terms: `alpha` is Caustica's roughness²,
/// with visible-normal sampling. Mitsuba's Smith masking-shadowing is the separable product
/// `G1(wi) G1(wo)` where Caustica's is height-correlated: a conductor's albedos differ by under
/// 0.3% up to 80° from the normal at roughness 0.3, and at roughness 0.5 by 0.7% at 70° and
/// 2.4% at 80°.
fn ggx_params(kind: &MaterialKind) -> String {
    match kind.alpha() {
        Some(alpha) => format!(
            "<string name=\"distribution\" value=\"ggx\"/><float name=\"alpha\" value=\"{alpha}\"/><boolean name=\"sample_visible\" value=\"true\"/>"
        ),
        None => String::new(),
    }
}

/// The albedo (a conductor's tint) and texture of a textured diffuse, plastic or conductor
/// material.
fn texture_of(kind: &MaterialKind) -> Option<(Vec3, u32)> {
    match *kind {
        MaterialKind::Diffuse {
            albedo,
            texture: Some(t),
        }
        | MaterialKind::Plastic {
            albedo,
            texture: Some(t),
            ..
        }
        | MaterialKind::Conductor {
            tint: albedo,
            texture: Some(t),
            ..
        } => Some((albedo, t)),
        _ => None,
    }
}

/// A colour parameter: the RGB value, or the bitmap `texture` (a file beside the scene) when
/// the material is textured.
fn colour(name: &str, value: Vec3, texture: Option<&str>) -> String {
    match texture {
        Some(file) => format!(
            "<texture type=\"bitmap\" name=\"{name}\"><string name=\"filename\" value=\"{file}\"/><string name=\"filter_type\" value=\"bilinear\"/><string name=\"wrap_mode\" value=\"repeat\"/></texture>"
        ),
        None => format!("<rgb name=\"{name}\" value=\"{}\"/>", rgb(value)),
    }
}

/// An emissive material's area emitter, nothing for other materials.
fn emitter(kind: &MaterialKind) -> String {
    match kind {
        MaterialKind::Emissive { radiance, .. } => format!(
            "<emitter type=\"area\"><rgb name=\"radiance\" value=\"{}\"/></emitter>",
            rgb(*radiance)
        ),
        _ => String::new(),
    }
}

/// A plastic's `plastic` or `roughplastic` in its linear form.
fn plastic_bsdf(kind: &MaterialKind, albedo: Vec3, ior: f32, texture: Option<&str>) -> String {
    format!(
        "<bsdf type=\"twosided\"><bsdf type=\"{}plastic\">{}<float name=\"int_ior\" value=\"{ior}\"/><float name=\"ext_ior\" value=\"1.0\"/>{}<boolean name=\"nonlinear\" value=\"false\"/></bsdf></bsdf>",
        rough_prefix(kind),
        ggx_params(kind),
        colour("diffuse_reflectance", albedo, texture)
    )
}

/// A material's BSDF; `texture` names the bitmap holding a textured material's albedo.
fn bsdf(kind: &MaterialKind, texture: Option<&str>) -> String {
    match kind {
        MaterialKind::Diffuse { albedo, .. } => format!(
            "<bsdf type=\"twosided\"><bsdf type=\"diffuse\">{}</bsdf></bsdf>",
            colour("reflectance", *albedo, texture)
        ),
        // Mitsuba's plastic in its linear form: the base's light divided by 1 − F̄_inside, as
        // Caustica's. A rough coat's transmittance Mitsuba tabulates where Caustica keeps the
        // smooth coat's 1 − F (they differ at grazing angles).
        MaterialKind::Plastic {
            albedo,
            ior,
            roughness,
            ..
        } => {
            if *roughness > 0.3 {
                eprintln!(
                    "mitsuba_export: a plastic of roughness {roughness}: Mitsuba's roughplastic returns less light than Caustica's as the roughness grows (white furnace, albedo 0.9, seen head-on: 0.84, 0.58, 0.31 against 0.91, 0.90, 0.88 at roughness 0.3, 0.6, 0.97; docs/reference.md)"
                );
            }
            plastic_bsdf(kind, *albedo, *ior, texture)
        }
        MaterialKind::Mirror { reflectance } => format!(
            "<bsdf type=\"twosided\"><bsdf type=\"conductor\"><string name=\"material\" value=\"none\"/><rgb name=\"specular_reflectance\" value=\"{}\"/></bsdf></bsdf>",
            rgb(*reflectance)
        ),
        MaterialKind::Conductor { eta, k, tint, .. } => format!(
            "<bsdf type=\"twosided\"><bsdf type=\"{}conductor\">{}<rgb name=\"eta\" value=\"{}\"/><rgb name=\"k\" value=\"{}\"/>{}</bsdf></bsdf>",
            rough_prefix(kind),
            ggx_params(kind),
            rgb(*eta),
            rgb(*k),
            colour("specular_reflectance", *tint, texture)
        ),
        MaterialKind::Dielectric {
            ior, tint, fresnel, ..
        } => {
            if *fresnel == FresnelMode::Schlick {
                eprintln!(
                    "mitsuba_export: a dielectric with \"fresnel schlick\" is exported with Mitsuba's exact Fresnel equations"
                );
            }
            format!(
                "<bsdf type=\"{}dielectric\">{}<float name=\"int_ior\" value=\"{ior}\"/><float name=\"ext_ior\" value=\"1.0\"/><rgb name=\"specular_transmittance\" value=\"{}\"/></bsdf>",
                rough_prefix(kind),
                ggx_params(kind),
                rgb(*tint)
            )
        }
        MaterialKind::Emissive { .. } | MaterialKind::LightSurface { .. } => {
            "<bsdf type=\"diffuse\"><rgb name=\"reflectance\" value=\"0, 0, 0\"/></bsdf>".into()
        }
    }
}

/// A texture's texels as Caustica decoded them (linear RGB, row 0 at the top) times `albedo`,
/// as an EXR that Mitsuba reads without conversion.
fn write_texture(path: &Path, texture: &Texture, albedo: Vec3) {
    let image = &texture.image;
    let (w, h) = (image.width as usize, image.height as usize);
    exr::prelude::write_rgb_file(path, w, h, |x, y| {
        let t = image.texels[y * w + x] * albedo;
        (t.x, t.y, t.z)
    })
    .unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
}

fn export(scene: &Scene, dir: &Path, spp: u32, max_depth: i32) {
    for sub in ["meshes", "textures"] {
        let folder = dir.join(sub);
        std::fs::create_dir_all(&folder)
            .unwrap_or_else(|e| fail(format!("{}: {e}", folder.display())));
    }
    let mut written = std::collections::HashSet::new();
    let mut xml = String::new();
    let c = &scene.camera;
    let _ = writeln!(xml, "<scene version=\"3.0.0\">");
    let _ = writeln!(
        xml,
        "  <integrator type=\"path\"><integer name=\"max_depth\" value=\"{max_depth}\"/></integrator>"
    );
    let _ = writeln!(
        xml,
        "  <sensor type=\"perspective\"><float name=\"fov\" value=\"{}\"/><string name=\"fov_axis\" value=\"y\"/>\
         <transform name=\"to_world\"><lookat origin=\"{}\" target=\"{}\" up=\"{}\"/></transform>\
         <sampler type=\"independent\"><integer name=\"sample_count\" value=\"{spp}\"/></sampler>\
         <film type=\"hdrfilm\"><integer name=\"width\" value=\"{}\"/><integer name=\"height\" value=\"{}\"/>\
         <string name=\"pixel_format\" value=\"rgb\"/><rfilter type=\"box\"/></film></sensor>",
        c.fov_deg,
        v3(c.position),
        v3(c.look_at),
        v3(c.up),
        scene.film.width,
        scene.film.height
    );
    for (k, instance) in scene.instances.iter().enumerate() {
        let mesh = &scene.meshes[instance.mesh as usize];
        if matches!(
            scene.materials[instance.material as usize].kind,
            MaterialKind::LightSurface { .. }
        ) {
            continue; // a quad light's surface: Mitsuba's rectangle emitter is its shape
        }
        if mesh.displacement.is_some() {
            fail(format!(
                "mesh \"{}\" has a VD map, which is not exported",
                mesh.name
            ));
        }
        let material = &scene.materials[instance.material as usize].kind;
        if let MeshOrigin::AnalyticSphere { radius } = mesh.origin {
            if texture_of(material).is_some() {
                fail(format!(
                    "mesh \"{}\" is an analytic sphere with a textured material, which is not exported (Mitsuba's sphere has its own UVs)",
                    mesh.name
                ));
            }
            // Mitsuba's own analytic sphere, placed by the instance's transform.
            let _ = writeln!(
                xml,
                "  <shape type=\"sphere\"><float name=\"radius\" value=\"{radius}\"/><transform name=\"to_world\"><matrix value=\"{}\"/></transform>{}{}</shape>",
                matrix_value(&instance.transform),
                bsdf(material, None),
                emitter(material)
            );
            continue;
        }
        let data = &mesh.data;
        let t = instance.transform;
        let normal_matrix = t.matrix3.inverse().transpose();
        let positions: Vec<Vec3> = data
            .positions
            .iter()
            .map(|&p| t.transform_point3(p))
            .collect();
        let mut triangles: Vec<[u32; 3]> = data.triangles.clone();
        for q in &data.quads {
            triangles.push([q[0], q[1], q[2]]);
            triangles.push([q[0], q[2], q[3]]);
        }
        // Face normals averaged per vertex when the mesh has none.
        let normals: Vec<Vec3> = if data.normals.len() == data.positions.len() {
            data.normals
                .iter()
                .map(|&n| (normal_matrix * n).normalize_or_zero())
                .collect()
        } else {
            let mut acc = vec![Vec3::ZERO; positions.len()];
            for tri in &triangles {
                let [a, b, c] = tri.map(|i| positions[i as usize]);
                let n = (b - a).cross(c - a);
                for &i in tri {
                    acc[i as usize] += n;
                }
            }
            acc.iter().map(|n| n.normalize_or_zero()).collect()
        };
        // A textured material's albedo times its texels, once per material, and the UVs the
        // texture is looked up at: through its scale and offset, and with v turned over
        // (Caustica's v = 1 is the image's top row, Mitsuba's v = 0).
        let (uvs, texture_file) = match texture_of(material) {
            Some((albedo, t)) => {
                let texture = &scene.textures[t as usize];
                let name = format!("textures/material_{}.exr", instance.material);
                if written.insert(instance.material) {
                    write_texture(&dir.join(&name), texture, albedo);
                }
                let uvs = (0..positions.len())
                    .map(|i| {
                        let uv = data.uvs.get(i).copied().unwrap_or(Vec2::ZERO) * texture.uv_scale
                            + texture.uv_offset;
                        Vec2::new(uv.x, 1.0 - uv.y)
                    })
                    .collect();
                (uvs, Some(name))
            }
            None => (Vec::new(), None),
        };
        let file = format!("meshes/instance_{k}.ply");
        write_ply(&dir.join(&file), &positions, &normals, &uvs, &triangles);
        let _ = writeln!(
            xml,
            "  <shape type=\"ply\"><string name=\"filename\" value=\"{file}\"/><boolean name=\"face_normals\" value=\"{}\"/>{}{}</shape>",
            data.normals.len() != data.positions.len(),
            bsdf(material, texture_file.as_deref()),
            emitter(material)
        );
    }
    for light in &scene.lights {
        match light.kind {
            LightKind::Point { position, power } => {
                let _ = writeln!(
                    xml,
                    "  <emitter type=\"point\"><point name=\"position\" value=\"{}\"/><rgb name=\"intensity\" value=\"{}\"/></emitter>",
                    v3(position),
                    rgb(power / (4.0 * std::f32::consts::PI))
                );
            }
            LightKind::Directional {
                direction,
                irradiance,
                angle_deg,
            } => {
                if angle_deg > 0.0 {
                    eprintln!(
                        "mitsuba_export: a sun's {angle_deg}° disk is exported as Mitsuba's directional light, from one direction"
                    );
                }
                let _ = writeln!(
                    xml,
                    "  <emitter type=\"directional\"><vector name=\"direction\" value=\"{}\"/><rgb name=\"irradiance\" value=\"{}\"/></emitter>",
                    v3(direction.normalize()),
                    rgb(irradiance)
                );
            }
            LightKind::Quad {
                corner,
                edge_u,
                edge_v,
                radiance,
                ..
            } => {
                // Mitsuba's rectangle spans [−1, 1]² in z = 0 and emits towards +z.
                let n = edge_u.cross(edge_v).normalize();
                let centre = corner + (edge_u + edge_v) * 0.5;
                let (a, b) = (edge_u * 0.5, edge_v * 0.5);
                let m = glam::Affine3A::from_cols(a.into(), b.into(), n.into(), centre.into());
                let _ = writeln!(
                    xml,
                    "  <shape type=\"rectangle\"><transform name=\"to_world\"><matrix value=\"{}\"/></transform>\
                     <bsdf type=\"diffuse\"><rgb name=\"reflectance\" value=\"0, 0, 0\"/></bsdf>\
                     <emitter type=\"area\"><rgb name=\"radiance\" value=\"{}\"/></emitter></shape>",
                    matrix_value(&m),
                    rgb(radiance)
                );
            }
            LightKind::Spot { .. } => {
                fail("spot lights are not exported (Mitsuba's spot falloff differs)".into())
            }
            // An emissive instance: its shape above carries an area emitter.
            LightKind::Mesh { .. } | LightKind::Sphere { .. } => {}
            LightKind::Environment(ref env) => {
                let map = &env.map;
                let first = map.texels.first().copied().unwrap_or(Vec3::ZERO);
                if map.texels.iter().all(|t| *t == first) {
                    let _ = writeln!(
                        xml,
                        "  <emitter type=\"constant\"><rgb name=\"radiance\" value=\"{}\"/></emitter>",
                        rgb(first * env.scale)
                    );
                    continue;
                }
                // The map as Caustica reads it (negative and non-finite texels zeroed), in
                // Mitsuba's envmap conventions, which are Caustica's (scene::environment).
                let (w, h) = (map.width as usize, map.height as usize);
                exr::prelude::write_rgb_file(dir.join("environment.exr"), w, h, |x, y| {
                    let t = map.texels[y * w + x];
                    (t.x, t.y, t.z)
                })
                .unwrap_or_else(|e| fail(format!("environment.exr: {e}")));
                let _ = writeln!(
                    xml,
                    "  <emitter type=\"envmap\"><string name=\"filename\" value=\"environment.exr\"/><float name=\"scale\" value=\"{}\"/>\
                     <transform name=\"to_world\"><matrix value=\"{}\"/></transform></emitter>",
                    env.scale,
                    matrix_value(&glam::Affine3A::from_mat3(env.to_world))
                );
            }
        }
    }
    let _ = writeln!(xml, "</scene>");
    std::fs::write(dir.join("scene.xml"), xml)
        .unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!(
            "usage: mitsuba_export SCENE.csc OUT_DIR [--spp N] [--max-depth N] [--resolution WxH]"
        );
        std::process::exit(2);
    }
    let spp: u32 = arg(&args, "--spp")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let max_depth: i32 = arg(&args, "--max-depth")
        .and_then(|s| s.parse().ok())
        .unwrap_or(32);
    let resolution = arg(&args, "--resolution").map(|r| {
        r.split_once('x')
            .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
            .unwrap_or_else(|| fail(format!("--resolution {r}: expected WxH")))
    });
    let overrides = caustica::Overrides {
        resolution,
        ..Default::default()
    };
    let assets = caustica::io::AssetCache::default();
    let scene = caustica::load_scene(Path::new(&args[0]))
        .and_then(|f| caustica::evaluate_frame(&f, 1, &assets, &overrides))
        .unwrap_or_else(|e| fail(e.to_string()));
    export(&scene, Path::new(&args[1]), spp, max_depth);
}

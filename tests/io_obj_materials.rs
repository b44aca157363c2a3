//! OBJ files with MTL libraries: faces split by material, MTL statements translated to
//! Caustica materials, attributes kept per face, vertices shared by value, and malformed input
//! reported at `file:line:col`.

mod support;

use std::path::{Path, PathBuf};

use caustica::io::{load_mesh, load_mesh_asset};
use caustica::scene::{FresnelMode, MaterialKind, MeshAsset};
use glam::{Vec2, Vec3};
use support::shared_asset;

fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Loads `obj` (and `mtl` as `m.mtl` beside it) from a fresh folder.
fn load(obj: &str, mtl: &str) -> MeshAsset {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "m.mtl", mtl);
    load_mesh_asset(&write_file(dir.path(), "m.obj", obj)).unwrap()
}

fn load_error(obj: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    load_mesh_asset(&write_file(dir.path(), "m.obj", obj))
        .unwrap_err()
        .to_string()
}

const FOUR_MATERIALS_MTL: &str = "\
newmtl wall
Ka 0.1 0.1 0.1
Kd 0.63 0.065 0.05
Ks 0 0 0
map_Kd -s 2 3 1 -o 0.5 0 -bm 0.5 bricks.png
newmtl lamp
Kd 0.78 0.78 0.78
Ke 17 12 4
newmtl glass
Ni 1.33
Tf 0.9 1 0.9
illum 7
newmtl chrome
Ks 0.95 0.95 0.95
Ns 1000
illum 5
newmtl hazy
Kd 0.5 0.5 0.5
d 0.5
Pr 0.4
Pr 0.5
";

const FOUR_SQUARES_OBJ: &str = "\
mtllib m.mtl
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
f 1 2 3 4
usemtl wall
f 1 2 3 4
usemtl lamp
f 1 2 3
usemtl glass
f 1 2 3 4
usemtl wall
f 2 3 4
usemtl chrome
f 1 2 3 4
usemtl hazy
f 1 2 3 4
";

#[test]
fn faces_are_split_into_one_part_per_material_in_order_of_first_use() {
    let asset = load(FOUR_SQUARES_OBJ, FOUR_MATERIALS_MTL);
    let names: Vec<Option<&str>> = asset
        .parts
        .iter()
        .map(|p| p.material.map(|m| asset.materials[m].name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            None,
            Some("wall"),
            Some("lamp"),
            Some("glass"),
            Some("chrome"),
            Some("hazy")
        ]
    );
    let wall = &asset.parts[1].data;
    assert_eq!(
        (wall.quads.len(), wall.triangles.len()),
        (1, 1),
        "both uses of wall"
    );
    assert_eq!(
        wall.positions.len(),
        4,
        "the part keeps only the vertices it uses"
    );
    assert_eq!(asset.parts[2].data.positions.len(), 3);
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "m.mtl", FOUR_MATERIALS_MTL);
    let merged = load_mesh(&write_file(dir.path(), "m.obj", FOUR_SQUARES_OBJ)).unwrap();
    assert_eq!(merged.face_count(), 7, "load_mesh merges the parts");
}

#[test]
fn mtl_statements_become_diffuse_emissive_dielectric_and_mirror_materials() {
    let asset = load(FOUR_SQUARES_OBJ, FOUR_MATERIALS_MTL);
    let kind = |name: &str| {
        let m = asset.materials.iter().find(|m| m.name == name).unwrap();
        (m.kind.clone(), m.texture_file.clone())
    };
    let (wall, texture) = kind("wall");
    assert_eq!(
        wall,
        MaterialKind::Diffuse {
            albedo: Vec3::new(0.63, 0.065, 0.05),
            texture: None
        }
    );
    assert!(
        texture.unwrap().ends_with("bricks.png"),
        "options before the file name are skipped"
    );
    let wall = asset.materials.iter().find(|m| m.name == "wall").unwrap();
    assert_eq!(
        (wall.texture_scale, wall.texture_offset),
        (Vec2::new(2.0, 3.0), Vec2::new(0.5, 0.0)),
        "-s and -o give the texture's UV scale and offset"
    );
    assert_eq!(
        kind("lamp").0,
        MaterialKind::Emissive {
            radiance: Vec3::new(17.0, 12.0, 4.0),
            samples: 1
        },
        "Ke makes a material emissive"
    );
    assert_eq!(
        kind("glass").0,
        MaterialKind::Dielectric {
            ior: 1.33,
            tint: Vec3::new(0.9, 1.0, 0.9),
            fresnel: FresnelMode::Exact,
            roughness: 0.0,
        },
        "illum 7 is glass of index Ni, tinted by Tf"
    );
    assert_eq!(
        kind("chrome").0,
        MaterialKind::Mirror {
            reflectance: Vec3::splat(0.95)
        },
        "illum 5 is a mirror of reflectance Ks"
    );
}

/// Blender's reading of the specular exponent, roughness 1 − √(Ns / 1000): a reflective
/// material (illum 3) with Ns 250 is a conductor of roughness 0.5 reflecting Ks at normal
/// incidence; with Ns 1000 it stays a mirror.
#[test]
fn a_reflective_mtl_material_below_the_largest_exponent_is_a_rough_conductor() {
    let asset = load(
        "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nusemtl brushed\nf 1 2 3\nusemtl polished\nf 1 2 3\n",
        "newmtl brushed\nKs 0.9 0.9 0.9\nNs 250\nillum 3\nnewmtl polished\nKs 0.9 0.9 0.9\nNs 1000\nillum 3\n",
    );
    let MaterialKind::Conductor {
        eta, k, roughness, ..
    } = asset.materials[0].kind
    else {
        panic!("{:?}", asset.materials[0].kind)
    };
    assert_eq!(roughness, 0.5);
    let normal = caustica::cpu::optics::conductor_fresnel(1.0, eta, k);
    assert!(
        (normal - Vec3::splat(0.9)).abs().max_element() < 1e-4,
        "{normal}"
    );
    assert_eq!(
        asset.materials[1].kind,
        MaterialKind::Mirror {
            reflectance: Vec3::splat(0.9)
        }
    );
}

/// A diffuse material with a glossy layer (Ks above 0 under illum 2) is a plastic of its Kd,
/// its coat's roughness read from Ns as for a reflective material; Ks's strength is not
/// modelled and is warned about.
#[test]
fn a_diffuse_mtl_material_with_a_glossy_layer_is_a_plastic() {
    let asset = load(
        "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nusemtl varnish\nf 1 2 3\n",
        "newmtl varnish\nKd 0.5 0.3 0.2\nKs 0.3 0.3 0.3\nNs 250\nillum 2\n",
    );
    assert_eq!(
        asset.materials[0].kind,
        MaterialKind::plastic(Vec3::new(0.5, 0.3, 0.2), None, 1.5, 0.5)
    );
    assert!(
        asset
            .warnings
            .iter()
            .any(|w| w.contains("m.mtl:3:1") && w.contains("strength of a glossy layer")),
        "{:?}",
        asset.warnings
    );
}

#[test]
fn what_a_material_cannot_say_is_warned_once_with_its_line() {
    let asset = load(FOUR_SQUARES_OBJ, FOUR_MATERIALS_MTL);
    let find = |needle: &str| {
        asset
            .warnings
            .iter()
            .find(|w| w.contains(needle))
            .unwrap_or_else(|| panic!("no warning with {needle:?} in {:#?}", asset.warnings))
            .clone()
    };
    let pr = find("\"Pr\"");
    assert!(
        pr.contains("m.mtl:20:1: the MTL statement \"Pr\" is not supported and was ignored (and on 1 more line)"),
        "{pr}"
    );
    let option = find("\"-bm\"");
    assert!(option.contains("m.mtl:5:26:"), "{option}");
    let opacity = find("partial opacity");
    assert!(
        opacity.contains("m.mtl:19:1: material \"hazy\""),
        "{opacity}"
    );
    assert_eq!(
        asset
            .warnings
            .iter()
            .filter(|w| w.contains("\"Pr\""))
            .count(),
        1
    );
}

#[test]
fn an_undefined_material_or_a_missing_library_is_a_warning_and_its_faces_get_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        "m.obj",
        "mtllib gone.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl nowhere\nf 1 2 3\n",
    );
    let asset = load_mesh_asset(&path).unwrap();
    assert_eq!(asset.parts.len(), 1);
    assert_eq!(asset.parts[0].material, None);
    assert!(
        asset
            .warnings
            .iter()
            .any(|w| w.contains("m.obj:1:8: cannot read the material library \"gone.mtl\"")),
        "{:#?}",
        asset.warnings
    );
    assert!(
        asset
            .warnings
            .iter()
            .any(|w| w.contains("m.obj:5:1: material \"nowhere\" is not defined")),
        "{:#?}",
        asset.warnings
    );
}

#[test]
fn uvs_are_kept_for_the_faces_that_have_them() {
    // A quad with UVs beside a triangle without: the quad keeps its UVs, and the triangle's
    // corners get its own parameterisation (0,0) (1,0) (0,1).
    let asset = load(
        "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 2 0 0\nvt 0.25 0.25\nvt 0.75 0.25\nvt 0.75 0.75\nvt 0.25 0.75\nf 1/1 2/2 3/3 4/4\nf 2 5 3\n",
        "",
    );
    let mesh = &asset.parts[0].data;
    assert_eq!(mesh.uvs.len(), mesh.positions.len());
    assert_eq!(
        mesh.quad_uvs(0),
        [
            Vec2::new(0.25, 0.25),
            Vec2::new(0.75, 0.25),
            Vec2::new(0.75, 0.75),
            Vec2::new(0.25, 0.75)
        ]
    );
    let triangle = mesh.triangles[0].map(|v| mesh.uvs[v as usize]);
    assert_eq!(triangle, [Vec2::ZERO, Vec2::X, Vec2::Y]);
    assert_eq!(
        mesh.positions.len(),
        4 + 3,
        "the triangle's corners differ from the quad's by UV"
    );
}

#[test]
fn corners_without_normals_take_their_faces_normal() {
    let asset = load(
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 -1\nf 1//1 2//1 3//1\nf 1 2 4\n",
        "",
    );
    let mesh = &asset.parts[0].data;
    assert_eq!(mesh.normals.len(), mesh.positions.len());
    let second = mesh.triangles[1].map(|v| mesh.normals[v as usize]);
    assert!(
        second.iter().all(|n| (*n - Vec3::NEG_Y).length() < 1e-6),
        "{second:?}"
    );
}

#[test]
fn vertices_are_shared_by_position_normal_and_uv_not_by_index() {
    // Two copies of every corner (as exporters write per-face vertices): the copies merge.
    let asset = load(
        "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvn 0 0 1\nvn 0 0 1\nf 1//1 2//1 3//1\nf 5//2 7//2 8//2\n",
        "",
    );
    let mesh = &asset.parts[0].data;
    assert_eq!(mesh.positions.len(), 4);
    assert_eq!(mesh.triangles, [[0, 1, 2], [0, 2, 3]]);
}

#[test]
fn malformed_lines_are_errors_at_their_line_and_column() {
    let cases = [
        ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n", "m.obj:4:7: face corner \"7\": vertex 7 is out of bounds (3 defined above this line)"),
        ("v 0 0 0\nv 1 x 0\n", "m.obj:2:5: \"x\" is not a finite number"),
        ("v 0 0\n", "m.obj:1:1: \"v\" needs 3 numbers"),
        ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2/1 3\n", "m.obj:4:5: face corner \"2/1\": texture coordinate 1 is out of bounds (0 defined above this line)"),
        ("v 0 0 0\nf 1 1/2/3/4 1\n", "m.obj:2:5: face corner \"1/2/3/4\" has more than three indices"),
        ("v 1e39 0 0\n", "m.obj:1:3: \"1e39\" is not a finite number"),
        ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "m.obj:4:3: face corner \"0\": vertex 0 is out of bounds"),
    ];
    for (obj, expected) in cases {
        let error = load_error(obj);
        assert!(
            error.contains(expected),
            "{obj:?}:\n{error}\nshould contain\n{expected}"
        );
    }
}

#[test]
fn negative_indices_count_back_from_the_vertices_above() {
    let asset = load(
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nf -3 -2 -1\nv 5 5 5\nf -4 -3 -1\n",
        "",
    );
    let mesh = &asset.parts[0].data;
    let corners = |t: [u32; 3]| t.map(|v| mesh.positions[v as usize]);
    assert_eq!(corners(mesh.triangles[0]), [Vec3::ZERO, Vec3::X, Vec3::Y]);
    assert_eq!(
        corners(mesh.triangles[1]),
        [Vec3::ZERO, Vec3::X, Vec3::splat(5.0)]
    );
}

#[test]
fn mcguires_cornell_box_brings_its_walls_and_its_emissive_light() {
    let Some(path) = shared_asset("scenes/cornell_mcguire/CornellBox-Original.obj") else {
        return;
    };
    let asset = load_mesh_asset(&path).unwrap();
    assert_eq!(
        asset.parts.len(),
        8,
        "floor, ceiling, back, right, left, two boxes, light"
    );
    let light = asset.materials.iter().find(|m| m.name == "light").unwrap();
    assert_eq!(
        light.kind,
        MaterialKind::Emissive {
            radiance: Vec3::new(17.0, 12.0, 4.0),
            samples: 1
        }
    );
    let left = asset
        .materials
        .iter()
        .find(|m| m.name == "leftWall")
        .unwrap();
    assert!(
        matches!(left.kind, MaterialKind::Diffuse { albedo, .. } if albedo == Vec3::new(0.63, 0.065, 0.05))
    );
    assert!(asset.warnings.is_empty(), "{:#?}", asset.warnings);
}

#[test]
fn sponza_loads_its_twenty_materials_and_shares_vertices() {
    let Some(path) = shared_asset("scenes/dabrovic_sponza/sponza.obj") else {
        return;
    };
    let asset = load_mesh_asset(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let positions_in_file = text.lines().filter(|l| l.starts_with("v ")).count();
    let vertices: usize = asset.parts.iter().map(|p| p.data.positions.len()).sum();
    let faces: usize = asset.parts.iter().map(|p| p.data.face_count()).sum();
    eprintln!(
        "sponza: {} parts, {} materials, {faces} faces, {vertices} vertices ({positions_in_file} positions in the file)",
        asset.parts.len(),
        asset.materials.len()
    );
    assert_eq!(asset.materials.len(), asset.parts.len());
    let textured = asset
        .materials
        .iter()
        .filter(|m| m.texture_file.as_ref().is_some_and(|f| f.exists()))
        .count();
    assert!(
        textured >= 15,
        "{textured} materials with a texture file that exists"
    );
    assert!(asset.warnings.iter().any(|w| w.contains("\"bump\"")));
}

#[test]
fn sponza_with_its_textured_materials_renders_lit_by_a_sun_and_a_sky_on_the_cpu() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenes/sponza_sun.csc");
    let file = caustica::load_scene(&path).unwrap();
    let overrides = caustica::Overrides {
        resolution: Some((64, 40)),
        spp: Some(1),
        ..Default::default()
    };
    let assets = caustica::io::AssetCache::default();
    let mut scene = caustica::evaluate_frame(&file, 1, &assets, &overrides).unwrap();
    scene.photons.global = 20_000;
    scene.gather.seeds = 256;
    scene.gather.rays = 32;
    assert_eq!(scene.instances.len(), 20, "one instance per material part");
    assert!(
        scene.textures.len() >= 10,
        "{} textures loaded",
        scene.textures.len()
    );
    let prepared = caustica::prepare(&scene).unwrap();
    let frame = caustica::cpu::render_whitted(&scene, &prepared, &Default::default());
    assert!(frame.color.iter().all(|c| c.is_finite()));
    let lit = frame
        .color
        .iter()
        .filter(|c| c.max_element() > 1e-3)
        .count();
    assert!(
        lit > frame.color.len() / 2,
        "{lit} of {} pixels lit",
        frame.color.len()
    );
}

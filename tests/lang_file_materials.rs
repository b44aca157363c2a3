//! Instances of mesh files that bring their own materials (an OBJ file's `usemtl`/`mtllib`):
//! which material each part gets, and the errors when none can be found.

mod lang_support;

use caustica::scene::{MaterialKind, MeshOrigin};
use glam::Vec3;
use lang_support::{errors, scene};

#[test]
fn an_instance_without_material_gives_each_part_the_files_material() {
    let s = scene("mesh box { file \"parts.obj\" }\ninstance { mesh box translate 0 1 0 }");
    let names: Vec<&str> = s.meshes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["box/red", "box/lamp"], "one scene mesh per part");
    assert!(s
        .meshes
        .iter()
        .all(|m| matches!(&m.origin, MeshOrigin::File(p) if p.ends_with("parts.obj"))));
    assert_eq!(s.instances.len(), 2, "the instance places every part");
    assert!(s
        .instances
        .iter()
        .all(|i| i.transform.translation == Vec3::Y.into()));
    let material_of = |mesh: u32| {
        let instance = s.instances.iter().find(|i| i.mesh == mesh).unwrap();
        &s.materials[instance.material as usize]
    };
    let red = material_of(0);
    assert_eq!(red.name, "box/red");
    let MaterialKind::Diffuse { albedo, texture } = &red.kind else {
        panic!("red is diffuse: {:?}", red.kind);
    };
    assert_eq!(*albedo, Vec3::new(0.8, 0.1, 0.1));
    let texture = &s.textures[texture.expect("the map_Kd texture is loaded") as usize];
    assert!(texture.path.ends_with("wood.png"));
    let lamp = material_of(1);
    assert_eq!(lamp.name, "box/lamp");
    assert!(
        matches!(lamp.kind, MaterialKind::Emissive { radiance, .. } if radiance == Vec3::new(17.0, 12.0, 4.0))
    );
}

#[test]
fn a_material_on_the_instance_overrides_every_part() {
    let s = scene(
        "material grey { diffuse 0.5 0.5 0.5 }\nmesh box { file \"parts.obj\" }\ninstance { mesh box material grey }",
    );
    assert_eq!(s.instances.len(), 2);
    assert!(s
        .instances
        .iter()
        .all(|i| s.materials[i.material as usize].name == "grey"));
}

#[test]
fn two_instances_share_the_parts_and_the_files_materials() {
    let s = scene(
        "mesh box { file \"parts.obj\" }\ninstance { mesh box }\ninstance { mesh box translate 2 0 0 }",
    );
    assert_eq!(s.meshes.len(), 2);
    assert_eq!(s.instances.len(), 4);
    assert_eq!(
        s.materials.len(),
        2,
        "a file's materials are added once per mesh"
    );
    assert_eq!(s.textures.len(), 1, "the texture is loaded once");
}

#[test]
fn faces_without_a_material_get_grey_diffuse_when_the_instance_names_none() {
    let s = scene("mesh m { file \"partial.obj\" }\ninstance { mesh m }");
    let names: Vec<&str> = s.meshes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["m/red", "m/(no material)"]);
    let default = &s.materials[s.instances[1].material as usize];
    assert_eq!(default.name, "(default)");
    assert_eq!(
        default.kind,
        MaterialKind::Diffuse {
            albedo: Vec3::splat(0.5),
            texture: None
        }
    );
}

#[test]
fn a_mesh_without_materials_of_its_own_still_needs_one_on_the_instance() {
    let rendered = errors("mesh m { file \"plain.obj\" }\ninstance { mesh m }");
    assert!(
        rendered.starts_with("scene.csc:2:1: error: an instance needs \"material\"\n"),
        "{rendered}"
    );
    assert!(
        rendered.contains("mesh \"m\" has no materials of its own"),
        "{rendered}"
    );
}

#[test]
fn a_missing_texture_of_a_file_material_is_an_error_at_the_mesh() {
    let rendered = errors("mesh m { file \"badtexture.obj\" }\ninstance { mesh m }");
    assert!(
        rendered.starts_with("scene.csc:1:1: error: mesh \"m\": cannot load the texture"),
        "{rendered}"
    );
    assert!(rendered.contains("missing.png"), "{rendered}");
}

#[test]
fn displacement_applies_to_every_part() {
    let s = scene(
        "vdmap bumps { file \"bumps.exr\" }\nmesh box { file \"parts.obj\" displacement bumps }\ninstance { mesh box }",
    );
    assert!(s.meshes.iter().all(|m| m.displacement == Some(0)));
}

#[test]
fn file_materials_no_instance_uses_are_not_made_and_load_no_texture() {
    let s = scene(
        "material grey { diffuse 0.5 0.5 0.5 }\nmesh box { file \"parts.obj\" }\ninstance { mesh box material grey }",
    );
    assert_eq!(s.materials.len(), 1, "only grey: {:?}", s.materials);
    assert!(s.textures.is_empty(), "wood.png is not loaded");
}

#[test]
fn replace_swaps_one_file_material_for_a_scene_material_and_keeps_the_others() {
    let s = scene(
        "material grey { diffuse 0.5 0.5 0.5 }\nmesh box { file \"parts.obj\" }\ninstance { mesh box replace \"red\" grey }",
    );
    let names: Vec<&str> = s
        .instances
        .iter()
        .map(|i| s.materials[i.material as usize].name.as_str())
        .collect();
    assert_eq!(names, ["grey", "box/lamp"]);
    assert!(
        s.textures.is_empty(),
        "the replaced material's wood.png is not loaded"
    );
}

#[test]
fn replace_errors_name_the_files_materials_and_refuse_material_beside_it() {
    let grey = "material grey { diffuse 0.5 0.5 0.5 }\nmesh box { file \"parts.obj\" }\n";
    for (instance, expected) in [
        (
            "instance { mesh box replace \"rde\" grey }",
            "scene.csc:3:29: error: mesh \"box\" has no material \"rde\" (did you mean \"red\"?)",
        ),
        (
            "instance { mesh box material grey replace \"red\" grey }",
            "scene.csc:3:35: error: \"replace\" changes one of the file's materials, but \"material\" already replaces them all",
        ),
        (
            "instance { mesh box replace \"red\" gery }",
            "scene.csc:3:35: error: unknown material \"gery\"",
        ),
        (
            "instance { mesh box replace red grey }",
            "scene.csc:3:21: error: \"replace\" takes the name of one of the file's materials in quotes and a material",
        ),
    ] {
        let rendered = errors(&format!("{grey}{instance}"));
        assert!(rendered.starts_with(expected), "{rendered}");
    }
    // A mesh of no file has no materials to replace: "material" is needed, and refuses it.
    let rendered = errors(
        "material grey { diffuse 0.5 0.5 0.5 }\nmesh box { box }\ninstance { mesh box material grey replace \"red\" grey }",
    );
    assert!(
        rendered.contains("error: \"replace\" changes one of the file's materials"),
        "{rendered}"
    );
}

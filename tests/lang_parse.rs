//! Parsing and evaluating each construct of the scene language: values, counts and defaults.

mod lang_support;

use caustica::lang::SceneFile;
use caustica::scene::{
    Aov, Camera, FresnelMode, GatherSettings, LightKind, MaterialKind, MeshOrigin, PhotonFilter,
    PhotonSettings, Sampler, VdLayout, VdSpace,
};
use glam::{Vec2, Vec3};
use lang_support::{close, scene, scene_at, MemoryLoader};

#[test]
fn empty_file_gives_the_defaults() {
    let s = scene("# nothing here\n");
    assert_eq!(s.camera, Camera::default());
    assert_eq!(s.photons, PhotonSettings::default());
    assert_eq!(s.gather, GatherSettings::default());
    assert_eq!(s.film.width, 640);
    assert_eq!(s.output.path, "out/frame_####.exr");
    assert_eq!((s.frames.first, s.frames.last, s.frames.fps), (1, 1, 24.0));
}

#[test]
fn camera_reads_three_values_per_vector_with_negative_numbers() {
    let s =
        scene("camera { position 0 -1 3  look_at 0 1 0  fov 40 aperture 0.1 focus_distance 2.5 }");
    assert_eq!(s.camera.position, Vec3::new(0.0, -1.0, 3.0));
    assert_eq!(s.camera.look_at, Vec3::new(0.0, 1.0, 0.0));
    assert_eq!(s.camera.up, Vec3::Y, "up defaults to +Y");
    assert_eq!(s.camera.fov_deg, 40.0);
    assert_eq!(s.camera.lens_radius, 0.1);
    assert_eq!(s.camera.focus_distance, 2.5);
    assert!(!s.camera.span.is_none());
}

#[test]
fn a_vector_value_fills_as_many_slots_as_it_has_components() {
    let s =
        scene("let eye = [0, 1, 3.5]\ncamera { position eye look_at vec3(0, 1, 0) up 0 [1, 0] }");
    assert_eq!(s.camera.position, Vec3::new(0.0, 1.0, 3.5));
    assert_eq!(s.camera.look_at, Vec3::new(0.0, 1.0, 0.0));
    assert_eq!(s.camera.up, Vec3::new(0.0, 1.0, 0.0));
}

#[test]
fn film_settings() {
    let s = scene("film { resolution 320 240 spp 16 max_depth 5 seed 7 }");
    assert_eq!(
        (
            s.film.width,
            s.film.height,
            s.film.spp,
            s.film.max_depth,
            s.film.seed
        ),
        (320, 240, 16, 5, 7)
    );
}

#[test]
fn materials_of_every_kind() {
    let s = scene(
        "material white { diffuse 0.73 0.73 0.73 }
         material grey { diffuse 0.5 }
         material chrome { mirror 0.9 0.8 0.7 }
         material glass { dielectric ior 1.33 tint 0.9 1 0.9 }
         material plain_glass { dielectric }
         material lamp { emissive 10 10 8 samples 4 }",
    );
    let kinds: Vec<&MaterialKind> = s.materials.iter().map(|m| &m.kind).collect();
    assert_eq!(
        kinds[0],
        &MaterialKind::Diffuse {
            albedo: Vec3::splat(0.73),
            texture: None
        }
    );
    assert_eq!(
        kinds[1],
        &MaterialKind::Diffuse {
            albedo: Vec3::splat(0.5),
            texture: None
        }
    );
    assert_eq!(
        kinds[2],
        &MaterialKind::Mirror {
            reflectance: Vec3::new(0.9, 0.8, 0.7)
        }
    );
    assert_eq!(
        kinds[3],
        &MaterialKind::Dielectric {
            ior: 1.33,
            tint: Vec3::new(0.9, 1.0, 0.9),
            fresnel: FresnelMode::Exact,
            roughness: 0.0,
        }
    );
    assert_eq!(
        kinds[4],
        &MaterialKind::Dielectric {
            ior: 1.5,
            tint: Vec3::ONE,
            fresnel: FresnelMode::Exact,
            roughness: 0.0,
        }
    );
    assert_eq!(
        kinds[5],
        &MaterialKind::Emissive {
            radiance: Vec3::new(10.0, 10.0, 8.0),
            samples: 4,
        }
    );
    assert_eq!(s.materials[3].name, "glass");
}

#[test]
fn dielectric_fresnel_is_exact_by_default_and_schlick_on_request() {
    let s = scene(
        "material a { dielectric ior 1.5 }
         material b { dielectric ior 1.5 fresnel exact }
         material c { dielectric ior 1.5 fresnel schlick }",
    );
    let modes: Vec<FresnelMode> = s
        .materials
        .iter()
        .map(|m| match m.kind {
            MaterialKind::Dielectric { fresnel, .. } => fresnel,
            ref other => panic!("expected a dielectric, got {other:?}"),
        })
        .collect();
    assert_eq!(
        modes,
        [FresnelMode::Exact, FresnelMode::Exact, FresnelMode::Schlick]
    );
}

#[test]
fn conductor_takes_rgb_eta_and_k_with_an_optional_tint() {
    let s = scene(
        "material gold { conductor eta 0.143 0.374 1.442 k 3.983 2.386 1.603 }
         material grey_metal { conductor eta 2 k 3 tint 0.5 0.6 0.7 }",
    );
    assert_eq!(
        s.materials[0].kind,
        MaterialKind::Conductor {
            eta: Vec3::new(0.143, 0.374, 1.442),
            k: Vec3::new(3.983, 2.386, 1.603),
            tint: Vec3::ONE,
            roughness: 0.0,
            texture: None,
        }
    );
    assert_eq!(
        s.materials[1].kind,
        MaterialKind::Conductor {
            eta: Vec3::splat(2.0),
            k: Vec3::splat(3.0),
            tint: Vec3::new(0.5, 0.6, 0.7),
            roughness: 0.0,
            texture: None,
        }
    );
}

#[test]
fn rough_materials_take_a_roughness_and_conductors_a_metal_preset() {
    let s = scene(
        "material gold { conductor metal gold roughness 0.3 }
         material frosted { dielectric ior 1.5 roughness 0.2 }
         material copper { conductor metal copper tint 0.9 0.9 0.9 }",
    );
    match s.materials[0].kind {
        MaterialKind::Conductor {
            eta, k, roughness, ..
        } => {
            assert_eq!((eta.x, k.x, roughness), (0.143119, 3.98316, 0.3));
        }
        ref other => panic!("expected a conductor, got {other:?}"),
    }
    assert!((s.materials[0].kind.alpha().unwrap() - 0.09).abs() < 1e-6);
    match s.materials[1].kind {
        MaterialKind::Dielectric { ior, roughness, .. } => assert_eq!((ior, roughness), (1.5, 0.2)),
        ref other => panic!("expected a dielectric, got {other:?}"),
    }
    match s.materials[2].kind {
        MaterialKind::Conductor {
            eta,
            roughness,
            tint,
            ..
        } => {
            assert_eq!((eta.y, roughness, tint.x), (0.924033, 0.0, 0.9));
        }
        ref other => panic!("expected a conductor, got {other:?}"),
    }
    assert_eq!(s.materials[2].kind.alpha(), None);
}

#[test]
fn textures_named_and_inline_load_once_each() {
    let s = scene(
        "material wood { diffuse 1 1 1 texture planks }
         texture planks { file \"planks.png\" }
         material tiles { diffuse texture \"tiles.png\" }
         material tiles2 { diffuse texture \"tiles.png\" }",
    );
    assert_eq!(s.textures.len(), 2);
    assert_eq!(s.textures[0].name, "planks");
    let texture_of = |i: usize| match &s.materials[i].kind {
        MaterialKind::Diffuse { texture, .. } => *texture,
        other => panic!("not diffuse: {other:?}"),
    };
    assert_eq!(
        texture_of(0),
        Some(0),
        "a texture may be declared after its use"
    );
    assert_eq!(texture_of(1), Some(1));
    assert_eq!(texture_of(2), Some(1));
}

#[test]
fn a_conductor_takes_a_texture_that_tints_it() {
    let s = scene(
        "texture patina { file \"planks.png\" }
         material brass { conductor metal gold roughness 0.2 texture patina }",
    );
    assert!(
        matches!(
            s.materials[0].kind,
            MaterialKind::Conductor {
                texture: Some(0),
                ..
            }
        ),
        "{:?}",
        s.materials[0].kind
    );
}

#[test]
fn textures_take_a_uv_scale_and_offset_and_quads_uv_repeats() {
    let s = scene(
        "texture tiles { file \"tiles.png\" scale 4 2 offset 0.5 0.25 }
         texture even { file \"tiles.png\" scale 3 }
         texture plain { file \"tiles.png\" }
         mesh floor { quad size 2 2 repeat 8 4 }",
    );
    let transform = |i: usize| (s.textures[i].uv_scale, s.textures[i].uv_offset);
    assert_eq!(transform(0), (Vec2::new(4.0, 2.0), Vec2::new(0.5, 0.25)));
    assert_eq!(transform(1), (Vec2::splat(3.0), Vec2::ZERO));
    assert_eq!(transform(2), (Vec2::ONE, Vec2::ZERO));
    let uvs = &s.meshes[0].data.uvs;
    assert_eq!(
        uvs.iter().fold(Vec2::ZERO, |m, uv| m.max(*uv)),
        Vec2::new(8.0, 4.0),
        "the quad's UVs run to its repeats"
    );
    // A lookup goes through the transform: uv (0.125, 0.375) reads the image at (1, 1).
    let texture = &s.textures[0];
    assert_eq!(
        texture.sample(Vec2::new(0.125, 0.375)),
        texture.image.sample(Vec2::ONE)
    );
}

#[test]
fn built_in_shapes_and_inline_meshes() {
    let s = scene(
        "mesh ball { sphere radius 2 segments 8 }
         mesh floor { quad size 4 2 divisions 4 2 }
         mesh crate { box size 1 2 3 }
         mesh tri { vertices 0 0 0  1 0 0  0 1 0  uvs 0 0 1 0 0 1  triangles 0 1 2 }
         mesh patch { vertices [0,0,0] [1,0,0] [1,0,-1] [0,0,-1] normals 0 1 0 0 1 0 0 1 0 0 1 0 quads 0 1 2 3 }",
    );
    assert_eq!(s.meshes[0].origin, MeshOrigin::Sphere);
    assert!(s.meshes[0]
        .data
        .positions
        .iter()
        .all(|p| (p.length() - 2.0).abs() < 1e-5));
    assert_eq!(s.meshes[1].origin, MeshOrigin::Quad);
    assert_eq!(s.meshes[1].data.quads.len(), 8);
    assert_eq!(
        s.meshes[1].data.bounds(),
        Some((Vec3::new(-2.0, 0.0, -1.0), Vec3::new(2.0, 0.0, 1.0)))
    );
    assert_eq!(
        s.meshes[2].data.bounds(),
        Some((Vec3::new(-0.5, -1.0, -1.5), Vec3::new(0.5, 1.0, 1.5)))
    );
    assert_eq!(s.meshes[3].origin, MeshOrigin::Inline);
    assert_eq!(s.meshes[3].data.triangles, vec![[0, 1, 2]]);
    assert_eq!(s.meshes[3].data.uvs[2], Vec2::new(0.0, 1.0));
    assert_eq!(s.meshes[4].data.quads, vec![[0, 1, 2, 3]]);
    assert_eq!(s.meshes[4].data.normals.len(), 4);
}

#[test]
fn mesh_files_resolve_relative_to_the_scene_file_and_carry_displacement() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scene.csc");
    std::fs::write(
        &path,
        "vdmap bark { file \"maps/bark.exr\" space object channels 0 2 1 scale 0.05 midlevel 0.5 padding 0.01 }
         mesh trunk { file \"trunk.obj\" displacement bark }",
    )
    .unwrap();
    let s = SceneFile::load(&path)
        .unwrap()
        .eval(1, &MemoryLoader)
        .unwrap();
    assert_eq!(
        s.meshes[0].origin,
        MeshOrigin::File(dir.path().join("trunk.obj"))
    );
    assert_eq!(s.meshes[0].displacement, Some(0));
    let map = &s.vdmaps[0];
    assert_eq!(map.path, dir.path().join("maps/bark.exr"));
    assert_eq!(
        (
            map.space,
            map.channels,
            map.scale,
            map.midlevel,
            map.padding
        ),
        (VdSpace::Object, [0, 2, 1], 0.05, 0.5, 0.01)
    );
}

#[test]
fn vdmap_defaults() {
    let s = scene("vdmap v { file \"v.exr\" }");
    let map = &s.vdmaps[0];
    assert_eq!(
        (
            map.space,
            map.channels,
            map.scale,
            map.midlevel,
            map.padding
        ),
        (VdSpace::Tangent, [0, 1, 2], 1.0, 0.0, 0.0)
    );
}

#[test]
fn vdmap_layouts_default_to_uv_and_a_tile_token_makes_a_udim_map() {
    let s = scene("vdmap v { file \"v.exr\" }");
    assert_eq!(s.vdmaps[0].layout, VdLayout::Uv);
    assert_eq!(s.vdmaps[0].images.len(), 1);
    for file in ["sculpt.<UDIM>.exr", "sculpt_<UVTILE>.exr"] {
        let s = scene(&format!("vdmap v {{ file \"{file}\" }}"));
        let map = &s.vdmaps[0];
        assert_eq!(
            map.layout,
            VdLayout::Udim {
                numbers: vec![1001, 1012]
            },
            "{file}"
        );
        assert_eq!(map.images.len(), 2);
        assert!(map.path.ends_with(file));
    }
    let s = scene("vdmap v { file \"s.<UDIM>.exr\" layout udim }");
    assert!(matches!(s.vdmaps[0].layout, VdLayout::Udim { .. }));
}

#[test]
fn vdmap_per_face_layout_takes_the_side_of_its_squares() {
    let s = scene("vdmap v { file \"faces.exr\" layout per_face tile 2 }");
    assert_eq!(s.vdmaps[0].layout, VdLayout::PerFace { tile: 2 });
}

const UNIT: &str = "mesh m { box } material w { diffuse 0.5 }\n";

fn transform_of(instance: &str) -> glam::Affine3A {
    scene(&format!(
        "{UNIT}instance {{ mesh m material w {instance} }}"
    ))
    .instances[0]
        .transform
}

#[test]
fn instance_transforms_compose_in_the_order_written() {
    // Scale first, then translate: the point (1,0,0) goes to (2,0,0) and then to (2,0,5).
    let t = transform_of("scale 2 translate 0 0 5");
    assert!(close(t.transform_point3(Vec3::X), Vec3::new(2.0, 0.0, 5.0)));
    // Translate first, then scale: (1,0,0) → (1,0,5) → (2,0,10).
    let t = transform_of("translate 0 0 5 scale 2");
    assert!(close(
        t.transform_point3(Vec3::X),
        Vec3::new(2.0, 0.0, 10.0)
    ));
}

#[test]
fn rotate_turns_about_x_then_y_then_z_in_degrees() {
    let t = transform_of("rotate 0 90 0");
    assert!(close(
        t.transform_point3(Vec3::X),
        Vec3::new(0.0, 0.0, -1.0)
    ));
    // X by 90 takes +Y to +Z; Y by 90 then takes +Z to +X.
    let t = transform_of("rotate 90 90 0");
    assert!(close(t.transform_point3(Vec3::Y), Vec3::X));
}

#[test]
fn matrix_is_row_major_and_scale_takes_three_values() {
    let t = transform_of("matrix 1 0 0 3  0 1 0 4  0 0 1 5  0 0 0 1");
    assert!(close(
        t.transform_point3(Vec3::ZERO),
        Vec3::new(3.0, 4.0, 5.0)
    ));
    let t = transform_of("scale 1 2 3");
    assert!(close(
        t.transform_point3(Vec3::ONE),
        Vec3::new(1.0, 2.0, 3.0)
    ));
}

#[test]
fn look_at_places_the_object_at_from_with_plus_z_towards_to() {
    let t = transform_of("look_at 1 2 3  1 2 10  0 1 0");
    assert!(close(
        t.transform_point3(Vec3::ZERO),
        Vec3::new(1.0, 2.0, 3.0)
    ));
    assert!(close(t.transform_vector3(Vec3::Z), Vec3::Z));
    let t = transform_of("look_at 0 0 0  5 0 0  0 1 0");
    assert!(close(t.transform_vector3(Vec3::Z), Vec3::X));
    assert!(close(t.transform_vector3(Vec3::Y), Vec3::Y));
}

#[test]
fn lights_of_every_kind() {
    let s = scene(
        "light point { position 0 1.9 0 power 40 40 40 }
         light spot { position 0 2 0 look_at 0 0 0 power 10 cone 20 30 }
         light spot { position 0 2 0 direction 1 0 0 }
         light directional { direction 0 -2 0 irradiance 3 }
         light quad { corner -0.5 1.98 -0.5 edge_u 1 0 0 edge_v 0 0 1 radiance 17 12 4 samples 4 }
         light quad { center 0 2 0 size 1 0.5 }",
    );
    assert_eq!(
        s.lights[0].kind,
        LightKind::Point {
            position: Vec3::new(0.0, 1.9, 0.0),
            power: Vec3::splat(40.0)
        }
    );
    assert_eq!(
        s.lights[1].kind,
        LightKind::Spot {
            position: Vec3::new(0.0, 2.0, 0.0),
            direction: Vec3::NEG_Y,
            power: Vec3::splat(10.0),
            cone_inner_deg: 20.0,
            cone_outer_deg: 30.0
        }
    );
    assert!(matches!(s.lights[2].kind, LightKind::Spot { direction, .. } if direction == Vec3::X));
    assert_eq!(
        s.lights[3].kind,
        LightKind::Directional {
            direction: Vec3::NEG_Y,
            irradiance: Vec3::splat(3.0),
            angle_deg: 0.0,
        }
    );
    assert!(
        matches!(s.lights[4].kind, LightKind::Quad { samples: 4, radiance, .. } if radiance == Vec3::new(17.0, 12.0, 4.0))
    );
    let suns = scene(
        "light sun { direction 0 -1 0 irradiance 1000 }\nlight sun { direction 1 -1 0 angle 2 }\nlight directional { direction 0 -1 0 angle 0.5 }",
    );
    let angles: Vec<f32> = suns
        .lights
        .iter()
        .map(|l| match l.kind {
            LightKind::Directional { angle_deg, .. } => angle_deg,
            _ => panic!("not directional: {:?}", l.kind),
        })
        .collect();
    assert_eq!(
        angles,
        [0.53, 2.0, 0.5],
        "the sun's default is 0.53 degrees"
    );
    let LightKind::Quad {
        corner,
        edge_u,
        edge_v,
        ..
    } = s.lights[5].kind
    else {
        panic!("not a quad light")
    };
    assert_eq!(corner, Vec3::new(-0.5, 2.0, -0.25));
    assert!(
        edge_u.cross(edge_v).y < 0.0,
        "the center/size form emits downwards"
    );
}

#[test]
fn environment_lights_from_a_file_or_a_uniform_radiance() {
    let s = scene("light environment { file \"sky.hdr\" scale 2.5 rotate 0 90 0 samples 8 }");
    let LightKind::Environment(env) = &s.lights[0].kind else {
        panic!("not an environment light: {:?}", s.lights[0].kind)
    };
    // MemoryLoader's maps are 4×2.
    assert_eq!((env.map.width, env.map.height), (4, 2));
    assert_eq!((env.scale, env.samples), (2.5, 8));
    // Turned 90° about +Y: the map's +Z looks down world +X.
    assert!((env.to_world * Vec3::Z - Vec3::X).length() < 1e-6);
    let uniform = scene("light environment { radiance 0.2 0.3 0.5 }");
    let LightKind::Environment(env) = &uniform.lights[0].kind else {
        panic!("not an environment light")
    };
    assert_eq!((env.scale, env.samples), (1.0, 1));
    assert_eq!(env.radiance(Vec3::NEG_Y), Vec3::new(0.2, 0.3, 0.5));
    assert_eq!(uniform.environment(), Some(env));
}

#[test]
fn photon_gather_output_and_frame_settings() {
    let s = scene(
        "photons { global 500000 caustic 200000 max_bounces 5 knn 32 max_radius 0.1 }
         gather { seeds 1024 rays 256 quadtree_levels 6 min_density 0.4 }
         output { path \"out/cornell_####.exr\" layers color albedo normal depth }
         frames 1..48 fps 30",
    );
    assert_eq!(
        (
            s.photons.global,
            s.photons.caustic,
            s.photons.max_bounces,
            s.photons.knn
        ),
        (500000, 200000, 5, 32)
    );
    assert_eq!(s.photons.max_radius, 0.1);
    assert_eq!(
        s.photons.filter,
        PhotonFilter::Cone { k: 1.1 },
        "the default filter"
    );
    for (word, filter) in [
        ("none", PhotonFilter::None),
        ("cone", PhotonFilter::Cone { k: 1.1 }),
        ("epanechnikov", PhotonFilter::Epanechnikov),
    ] {
        let s = scene(&format!("photons {{ filter {word} }}"));
        assert_eq!(s.photons.filter, filter);
    }
    assert_eq!(
        (
            s.gather.seeds,
            s.gather.rays,
            s.gather.quadtree_levels,
            s.gather.min_density
        ),
        (1024, 256, 6, 0.4)
    );
    assert_eq!(
        scene("gather { seeds 10 }").gather.min_density,
        caustica::scene::DEFAULT_MIN_SEED_DENSITY,
        "the default minimum density"
    );
    assert_eq!(s.output.path, "out/cornell_####.exr");
    assert_eq!(s.output.layers, vec![Aov::Albedo, Aov::Normal, Aov::Depth]);
    assert_eq!((s.frames.first, s.frames.last, s.frames.fps), (1, 48, 30.0));
}

#[test]
fn expressions_follow_precedence_and_functions() {
    let s = scene(
        "let a = 1 + 2 * 3 - -1
         let b = (1 + 2) * 3 / 2
         let c = max(2, sqrt(16)) + clamp(5, 0, 1) + lerp(0, 10, 0.5) + abs(-1) + floor(1.7) + pow(2, 3)
         let d = degrees(radians(90)) + sin(0) + cos(0)
         let v = [1, 2, 3] * 2 + 1
         film { resolution (a) (b * 2) spp (c) max_depth (d) }
         camera { position v look_at (v - [0, 0, 1]) }",
    );
    assert_eq!((s.film.width, s.film.height), (8, 9));
    assert_eq!(s.film.spp, 4 + 1 + 5 + 1 + 1 + 8);
    assert_eq!(s.film.max_depth, 91);
    assert_eq!(s.camera.position, Vec3::new(3.0, 5.0, 7.0));
}

#[test]
fn frame_and_time_animate_a_translation() {
    let text = "mesh m { box } material w { diffuse 0.5 }
                instance { mesh m material w translate (2 * time) frame 0 }
                frames 1..48 fps 24";
    let at = |frame| scene_at(text, frame).instances[0].transform.translation;
    assert_eq!(Vec3::from(at(1)), Vec3::new(0.0, 1.0, 0.0));
    assert_eq!(Vec3::from(at(25)), Vec3::new(2.0, 25.0, 0.0));
    assert_eq!(scene_at(text, 25).time, 1.0);
}

#[test]
fn frame_range_needs_no_evaluation_of_the_rest() {
    let file = SceneFile::from_str(
        "scene.csc",
        "let n = 12 * 2\ninstance { mesh nowhere }\nframes 0..n fps 12",
    )
    .unwrap();
    let range = file.frame_range().unwrap();
    assert_eq!((range.first, range.last, range.fps), (0, 24, 12.0));
}

#[test]
fn spans_point_at_the_declaring_text() {
    let file =
        SceneFile::from_str("scene.csc", "# a light\n\n  light point { position 0 1 0 }").unwrap();
    let s = file.eval(1, &MemoryLoader).unwrap();
    let (path, line, col) = file.sources().line_col(s.lights[0].span).unwrap();
    assert_eq!((path.to_str(), line, col), (Some("scene.csc"), 3, 3));
}

#[test]
fn comments_run_to_the_end_of_the_line_but_not_inside_strings() {
    let s = scene("output { path \"a_####.exr\" } # layers albedo\n# film { spp 2 }");
    assert_eq!(s.output.path, "a_####.exr");
    assert!(s.output.layers.is_empty());
    assert_eq!(s.film.spp, 4);
}

#[test]
fn the_example_scene_evaluates() {
    let s = scene(EXAMPLE);
    // Four instances of the scene's own, then the quad light's surface.
    assert_eq!(s.instances.len(), 5);
    assert_eq!(s.meshes.len(), 5);
    assert!(s.environment().is_some());
    assert_eq!(s.meshes[1].displacement, Some(0));
}

#[test]
fn a_quad_light_gets_a_black_surface_after_the_scenes_own_geometry() {
    let s = scene(
        "material m { diffuse 0.5 }\nmesh q { quad size 2 2 }\ninstance { mesh q material m }\n\
         light point { position 0 1 0 power 1 1 1 }\n\
         light quad { center 0 2 0 size 0.5 0.5 radiance 3 3 3 }",
    );
    assert_eq!(s.instances.len(), 2);
    assert_eq!(s.instances[0].material, 0);
    let surface = &s.instances[1];
    assert_eq!(
        s.materials[surface.material as usize].kind,
        MaterialKind::LightSurface {
            radiance: Vec3::splat(3.0)
        }
    );
    let mesh = &s.meshes[surface.mesh as usize];
    assert_eq!(mesh.origin, MeshOrigin::Light(1));
    let LightKind::Quad {
        corner,
        edge_u,
        edge_v,
        ..
    } = s.lights[1].kind
    else {
        panic!("the second light is a quad");
    };
    // Two triangles over the light's corners, just behind its plane, wound like its normal.
    let n = edge_u.cross(edge_v).normalize();
    let p = &mesh.data.positions;
    assert_eq!(mesh.data.triangles, vec![[0, 1, 2], [0, 2, 3]]);
    for (v, c) in p.iter().zip([
        corner,
        corner + edge_u,
        corner + edge_u + edge_v,
        corner + edge_v,
    ]) {
        let behind = (c - *v).dot(n);
        assert!(behind > 0.0 && behind < 1e-4, "{behind}");
        assert!((*v + n * behind - c).length() < 1e-6);
    }
    assert!((p[1] - p[0]).cross(p[2] - p[0]).normalize().dot(n) > 0.999);
}

pub const EXAMPLE: &str = include_str!("data/lang/example.csc");

#[test]
fn film_sampler_is_sobol_unless_independent_is_asked_for() {
    assert_eq!(scene("film { spp 8 }").film.sampler, Sampler::Sobol);
    let s = scene("film { sampler independent }");
    assert_eq!(s.film.sampler, Sampler::Independent);
    assert_eq!(scene("film { sampler sobol }").film.sampler, Sampler::Sobol);
}

#[test]
fn film_integrator_defaults_to_photon_map_and_quality_to_default() {
    let s = scene("film { integrator photon_map quality reference }");
    assert_eq!(s.film.integrator, caustica::scene::Integrator::PhotonMap);
    assert_eq!(s.film.quality, caustica::scene::Quality::Reference);
    let s = scene("film { integrator whitted }");
    assert_eq!(s.film.integrator, caustica::scene::Integrator::Whitted);
    // Photon mapping is the default, as the renderer's purpose.
    let s = scene("film { spp 2 }");
    assert_eq!(s.film.integrator, caustica::scene::Integrator::PhotonMap);
    assert_eq!(s.film.quality, caustica::scene::Quality::Default);
}

#[test]
fn a_string_let_names_a_path_once_and_plus_joins_strings() {
    let s = scene(
        "let root = \"renders/\"\nlet shot = root + \"shot\"\noutput { path (shot + \"_####.exr\") }",
    );
    assert_eq!(s.output.path, "renders/shot_####.exr");
    // A bare string variable where a parameter takes a string.
    let s = scene("let p = \"out/x_##.exr\"\noutput { path p }");
    assert_eq!(s.output.path, "out/x_##.exr");
}

#[test]
fn a_define_replaces_a_top_level_let_before_evaluation() {
    let mut file = SceneFile::from_str(
        "scene.csc",
        "let n = 2\nlet root = \"a/\"\nframes 1..n\noutput { path (root + \"f_####.exr\") }",
    )
    .unwrap();
    file.define("n=5").unwrap();
    file.define("root=b/").unwrap();
    assert_eq!(file.frame_range().unwrap().last, 5);
    let s = file.eval(1, &MemoryLoader).unwrap();
    assert_eq!(s.output.path, "b/f_####.exr");
    assert!(file
        .define("m=1")
        .unwrap_err()
        .contains("it defines n, root"));
}

#[test]
fn plastic_takes_a_base_colour_a_texture_an_ior_and_a_roughness() {
    let s = scene(
        "material red { plastic 0.7 0.1 0.1 roughness 0.3 ior 1.4 }
         material white { plastic }",
    );
    match s.materials[0].kind {
        MaterialKind::Plastic {
            albedo,
            ior,
            roughness,
            fdr_outside,
            ..
        } => {
            assert_eq!(
                (albedo, ior, roughness),
                (Vec3::new(0.7, 0.1, 0.1), 1.4, 0.3)
            );
            assert!(fdr_outside > 0.05 && fdr_outside < 0.1, "{fdr_outside}");
        }
        ref other => panic!("expected a plastic, got {other:?}"),
    }
    assert_eq!(
        s.materials[1].kind,
        MaterialKind::plastic(Vec3::splat(0.8), None, 1.5, 0.0)
    );
}

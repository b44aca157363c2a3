//! Every example scene in `scenes/` goes through the whole library pipeline (load, evaluate,
//! prepare, render on the CPU) at a tiny resolution and gives a sane image.

use std::path::PathBuf;

use caustica::io::AssetCache;
use caustica::render::{Frame, RenderOptions};
use caustica::{Device, Overrides};

/// The include-only scene: walls and materials, no camera settings or lights of its own.
const INCLUDE_ONLY: &str = "cornell_walls.csc";

fn example_scenes() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut scenes: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("csc"))
        .collect();
    scenes.sort();
    scenes
}

fn tiny() -> Overrides {
    Overrides {
        resolution: Some((32, 24)),
        spp: Some(1),
        ..Overrides::default()
    }
}

/// Loads `path`, evaluates its first frame at 32x24 and 1 spp, prepares it and renders it on the
/// CPU.
fn render_tiny(path: &std::path::Path) -> (caustica::scene::Scene, Frame) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let file = caustica::load_scene(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let first = file
        .frame_range()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .first;
    let assets = AssetCache::default();
    let scene = caustica::evaluate_frame(&file, first, &assets, &tiny())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        (scene.film.width, scene.film.height, scene.film.spp),
        (32, 24, 1)
    );
    let prepared = caustica::prepare(&scene).unwrap_or_else(|e| panic!("{name}: {e}"));
    let backend = caustica::select_backend(Device::Cpu).unwrap();
    assert_eq!(backend.name(), "cpu");
    let frame = backend
        .render_frame(&scene, &prepared, &RenderOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (scene, frame)
}

fn assert_well_formed(name: &str, scene: &caustica::scene::Scene, frame: &Frame) {
    assert_eq!((frame.width, frame.height), (32, 24), "{name}");
    assert_eq!(frame.color.len(), 32 * 24, "{name}");
    for (i, c) in frame.color.iter().enumerate() {
        assert!(
            c.is_finite() && c.min_element() >= 0.0,
            "{name}: pixel {i} has colour {c}"
        );
    }
    let asked: Vec<&str> = scene
        .output
        .layers
        .iter()
        .flat_map(|&l| caustica::render::layer_names(l).iter().copied())
        .collect();
    let got: Vec<&str> = frame.aovs.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(got, asked, "{name}: the layers the scene asks for");
    for layer in &frame.aovs {
        assert_eq!(
            layer.pixels.len(),
            32 * 24 * layer.channels.len(),
            "{name}: layer {}",
            layer.name
        );
    }
    assert_eq!(frame.metadata.spp, 1, "{name}");
    assert_eq!(frame.metadata.device, "cpu", "{name}");
}

#[test]
fn the_example_scenes_are_the_expected_set() {
    let names: Vec<String> = example_scenes()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "animated.csc",
        "bunny.csc",
        "cornell_mcguire.csc",
        "cornell_metals.csc",
        "cornell_point.csc",
        "cornell_spheres.csc",
        INCLUDE_ONLY,
        "sphere_lights.csc",
        "sponza.csc",
        "sun.csc",
        "vd_patches.csc",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} is missing from {names:?}"
        );
    }
}

#[test]
fn every_example_scene_with_lights_renders_a_finite_lit_image_on_the_cpu() {
    let mut rendered = 0;
    for path in example_scenes() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == INCLUDE_ONLY {
            continue;
        }
        let (scene, frame) = render_tiny(&path);
        assert!(!scene.instances.is_empty(), "{name} has no instances");
        let emissive = scene.instances.iter().any(|i| {
            matches!(
                scene.materials[i.material as usize].kind,
                caustica::scene::MaterialKind::Emissive { .. }
            )
        });
        assert!(
            !scene.lights.is_empty() || emissive,
            "{name} has no lights and no emissive surfaces"
        );
        assert_well_formed(&name, &scene, &frame);
        let lit = frame
            .color
            .iter()
            .filter(|c| c.max_element() > 1e-3)
            .count();
        assert!(
            lit >= frame.color.len() / 4,
            "{name}: only {lit} of {} pixels are lit",
            frame.color.len()
        );
        rendered += 1;
    }
    assert!(rendered >= 5, "only {rendered} scenes rendered");
}

#[test]
fn the_include_only_cornell_walls_evaluates_to_five_walls_without_lights_and_renders_black() {
    let path = example_scenes()
        .into_iter()
        .find(|p| p.ends_with(INCLUDE_ONLY))
        .unwrap();
    let file = caustica::SceneFile::load(&path).unwrap();
    let scene = file.eval(1, &AssetCache::default()).unwrap();
    let materials: Vec<&str> = scene.materials.iter().map(|m| m.name.as_str()).collect();
    for m in ["white", "red", "green"] {
        assert!(materials.contains(&m), "{m} not in {materials:?}");
    }
    assert_eq!(scene.instances.len(), 5);
    assert!(scene.lights.is_empty());

    // It still goes through the pipeline; with no light the image is black.
    let (scene, frame) = render_tiny(&path);
    assert_well_formed(INCLUDE_ONLY, &scene, &frame);
    assert!(frame.color.iter().all(|c| c.max_element() == 0.0));
}

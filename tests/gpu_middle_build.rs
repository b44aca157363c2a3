//! Middle levels that the GPU builds itself (`--accel wide:gpu_lbvh`, `wide:gpu_sah`,
//! `wide:gpu_hybrid`, `wide:gpu_ploc`): the frame renders the same bits as with the trees the
//! CPU twins build, a deforming mesh is rebuilt on the device every frame it changes (and only
//! it), a frame that changes nothing builds nothing, a later frame renders what a fresh
//! process renders, and a file's parts merged into one device-built tree render as they do apart.
//! The two-level grids of `--accel grid`, which the GPU builds too, are held to the same, and
//! the kd-trees of `--accel kdtree`, which the GPU builds for `Prepared`, give the twin's words.

use std::sync::Arc;

use caustica::accel::{MeshBuildCache, PrepareOptions};
use caustica::gpu::{test_context, GpuBackend};
use caustica::io::AssetCache;
use caustica::render::{Backend, Frame};
use caustica::scene::Scene;
use caustica::{Overrides, SceneFile};

/// A sphere that grows from frame to frame (its vertices move: a deforming mesh), a box and a
/// floor of quads, in the wide layout built by the GPU.
const SCENE: &str = r#"
frames 1..3
camera { position 0 1.2 3  look_at 0 0.3 0  fov 50 }
film   { resolution 40 30 spp 1 sampler independent max_depth 2 accel wide gpu_lbvh }
material clay   { diffuse 0.8 0.7 0.6 }
material chrome { mirror 0.9 0.9 0.9 }
mesh blob  { sphere radius (0.3 + 0.05 * frame) segments 24 }
mesh block { box size 0.4 0.4 0.4 }
mesh floor { quad size 4 4 divisions 6 6 }
instance { mesh floor material clay }
instance { mesh blob  material chrome translate -0.4 0.4 0 }
instance { mesh block material clay rotate 0 30 0 translate 0.5 0.2 0.2 }
light point { position 1 2.5 2 power 60 60 60 }
output { path "unused.exr" layers position normal }
"#;

fn frame_scene(file: &SceneFile, frame: i64) -> Scene {
    let whitted = Overrides {
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Overrides::default()
    };
    caustica::evaluate_frame(file, frame, &AssetCache::default(), &whitted).unwrap()
}

fn stat(frame: &Frame, name: &str) -> f64 {
    frame
        .metadata
        .stat(name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// The colour and the position layer, as bits.
fn bits(frame: &Frame) -> (Vec<[u32; 3]>, Vec<u32>) {
    let color = frame
        .color
        .iter()
        .map(|c| c.to_array().map(f32::to_bits))
        .collect();
    let p = frame
        .aov("P")
        .unwrap()
        .pixels
        .iter()
        .map(|x| x.to_bits())
        .collect();
    (color, p)
}

fn render(
    backend: &GpuBackend,
    scene: &Scene,
    options: PrepareOptions,
    cache: &MeshBuildCache,
) -> Frame {
    let prepared = caustica::prepare_cached_as(scene, cache, options).unwrap();
    backend
        .render_frame(scene, &prepared, &Default::default())
        .unwrap()
}

#[test]
fn gpu_built_middle_levels_of_every_gpu_builder_render_the_bits_of_the_cpu_twins_trees() {
    let Some(ctx) = test_context() else {
        return;
    };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    for builder in ["gpu_lbvh", "gpu_sah", "gpu_hybrid", "gpu_ploc", "grid"] {
        let text = SCENE.replace("accel wide gpu_lbvh", &format!("accel wide {builder}"));
        let file = SceneFile::from_str("deforming.csc", &text).unwrap();
        let scene = frame_scene(&file, 1);
        let on_device = caustica::prepare_options_for(&scene, &[&backend]);
        assert_eq!(on_device.builder.name(), builder);
        assert!(
            on_device.device_builds,
            "the GPU backend builds its trees itself"
        );
        let twins = PrepareOptions {
            device_builds: false,
            ..on_device
        };
        let built = render(&backend, &scene, on_device, &MeshBuildCache::default());
        assert_eq!(
            stat(&built, "bvh/device_builds"),
            3.0,
            "{builder}: the sphere, the box and the floor"
        );
        if builder != "grid" {
            // A grid holds words, not nodes.
            assert!(stat(&built, "bvh/device_build_nodes") >= 3.0);
        }
        assert!(stat(&built, "bvh/device_build_ms") > 0.0);
        let twin = render(&backend, &scene, twins, &MeshBuildCache::default());
        assert_eq!(stat(&twin, "bvh/device_builds"), 0.0);
        assert!(
            bits(&built) == bits(&twin),
            "{builder}: the image differs from the twins' trees'"
        );
        let p = &built.aov("P").unwrap().pixels;
        let hit = p.chunks(3).filter(|p| p.iter().any(|&x| x != 0.0)).count();
        assert!(hit > 600, "most of the 1200 pixels see the scene: {hit}");
    }
}

#[test]
fn a_deforming_mesh_is_rebuilt_on_the_gpu_every_frame_and_nothing_else_is_tree_or_grid() {
    let Some(ctx) = test_context() else {
        return;
    };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    for builder in ["gpu_lbvh", "grid"] {
        let text = SCENE.replace("accel wide gpu_lbvh", &format!("accel wide {builder}"));
        let file = SceneFile::from_str("deforming.csc", &text).unwrap();
        let cache = MeshBuildCache::default();
        let options = |scene: &Scene| caustica::prepare_options_for(scene, &[&backend]);
        let first_scene = frame_scene(&file, 1);
        let first = render(&backend, &first_scene, options(&first_scene), &cache);
        assert_eq!(stat(&first, "bvh/device_builds"), 3.0);
        let again = render(&backend, &first_scene, options(&first_scene), &cache);
        assert_eq!(stat(&again, "bvh/device_builds"), 0.0, "nothing changed");
        assert!(bits(&again) == bits(&first));
        let mut last = None;
        for n in [2, 3] {
            let scene = frame_scene(&file, n);
            let frame = render(&backend, &scene, options(&scene), &cache);
            assert_eq!(
                stat(&frame, "bvh/device_builds"),
                1.0,
                "frame {n}: only the sphere"
            );
            assert_ne!(bits(&frame), bits(&first), "frame {n}: the sphere grew");
            last = Some((scene, frame));
        }
        // Frame 3 from a fresh backend and cache: the same bits.
        let (scene, frame) = last.unwrap();
        let Some(ctx) = test_context() else {
            return;
        };
        let fresh_backend = GpuBackend::new(Arc::new(ctx)).unwrap();
        let fresh = render(
            &fresh_backend,
            &scene,
            options(&scene),
            &MeshBuildCache::default(),
        );
        assert_eq!(stat(&fresh, "bvh/device_builds"), 3.0);
        assert!(
            bits(&frame) == bits(&fresh),
            "{builder}: frame 3 renders as in a fresh process"
        );
    }
}

#[test]
fn a_merged_tree_of_a_files_parts_built_on_the_gpu_renders_the_bits_of_the_parts_apart() {
    let Some(ctx) = test_context() else {
        return;
    };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    // The OBJ's eight material parts share one transform: one merged tree, built by the device.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/cornell_mcguire.csc");
    let obj = path.with_file_name("meshes/CornellBox-Original.obj");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace(
            "film   { resolution 256 256 spp 4 max_depth 8 }",
            "film   { resolution 40 40 spp 1 sampler independent max_depth 3 accel wide gpu_lbvh }",
        )
        .replace("meshes/CornellBox-Original.obj", &obj.to_string_lossy())
        .replace(
            "output  { path \"out/cornell_mcguire_####.exr\" }",
            "output  { path \"unused.exr\" layers position normal }",
        );
    for builder in ["gpu_lbvh", "gpu_ploc"] {
        let text = text.replace("accel wide gpu_lbvh", &format!("accel wide {builder}"));
        let file = SceneFile::from_str(&path.to_string_lossy(), &text).unwrap();
        let scene = frame_scene(&file, 1);
        let on_device = caustica::prepare_options_for(&scene, &[&backend]);
        assert!(on_device.device_builds && on_device.merge_instances);
        let prepared = caustica::prepare_cached_as(&scene, &MeshBuildCache::default(), on_device);
        let prepared = prepared.unwrap();
        assert!(prepared.merged_instances >= 2 && prepared.top_instance_refs.len() == 1);
        let built = render(&backend, &scene, on_device, &MeshBuildCache::default());
        assert_eq!(
            stat(&built, "bvh/device_builds"),
            1.0,
            "{builder}: one merged tree"
        );
        let apart = PrepareOptions {
            device_builds: false,
            merge_instances: false,
            ..on_device
        };
        let twin = render(&backend, &scene, apart, &MeshBuildCache::default());
        assert_eq!(stat(&twin, "bvh/device_builds"), 0.0);
        assert!(
            bits(&built) == bits(&twin),
            "{builder}: the merged tree's image differs from the parts' apart"
        );
        let lit = built.color.iter().filter(|c| c.max_element() > 0.0).count();
        assert!(lit > 800, "most of the 1600 pixels see the lit box: {lit}");
    }
}

#[test]
fn a_deforming_mesh_gets_its_kdtree_from_the_gpu_every_frame_with_the_cpu_twins_words() {
    let Some(ctx) = test_context() else {
        return;
    };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let text = SCENE.replace("accel wide gpu_lbvh", "accel wide kdtree");
    let file = SceneFile::from_str("deforming.csc", &text).unwrap();
    let cache = MeshBuildCache::default();
    for n in 1..=3 {
        let scene = frame_scene(&file, n);
        let on_device = caustica::prepare_for(&scene, &cache, &[&backend]).unwrap();
        let options = caustica::prepare_options_for(&scene, &[&backend]);
        let twin = caustica::accel::Prepared::build(&scene, &options).unwrap();
        let stats = on_device.stats();
        assert_eq!(
            stats.kdtrees, 3,
            "frame {n}: the sphere, the box and the floor"
        );
        assert_eq!(
            stats.kdtrees_on_device, 3,
            "frame {n}: every kd-tree came from the device"
        );
        assert_eq!(twin.stats().kdtrees_on_device, 0);
        // Frame 1 builds all three; later frames only the sphere, whose vertices moved.
        assert_eq!(stats.meshes_reused, if n == 1 { 0 } else { 2 }, "frame {n}");
        assert!(
            on_device.grid_cells == twin.grid_cells,
            "frame {n}: the device's kd-tree words are the CPU twin's"
        );
        let frame = backend
            .render_frame(&scene, &on_device, &Default::default())
            .unwrap();
        let twin_frame = backend
            .render_frame(&scene, &twin, &Default::default())
            .unwrap();
        assert!(bits(&frame) == bits(&twin_frame), "frame {n}");
    }
}

#[test]
fn a_files_merged_parts_get_one_kdtree_from_the_gpu_with_the_cpu_twins_words() {
    let Some(ctx) = test_context() else {
        return;
    };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let file = caustica::load_scene(&root.join("scenes/cornell_mcguire.csc")).unwrap();
    let mut scene = frame_scene(&file, 1);
    scene.film.builder = Some(caustica::accel::BvhBuilder::Kdtree);
    let on_device = caustica::prepare_for(&scene, &MeshBuildCache::default(), &[&backend]).unwrap();
    let twin = caustica::accel::Prepared::build(
        &scene,
        &caustica::prepare_options_for(&scene, &[&backend]),
    )
    .unwrap();
    let stats = on_device.stats();
    assert!(stats.merged_instances > 1, "{stats:?}");
    assert!(stats.kdtrees >= 1);
    assert_eq!(stats.kdtrees_on_device, stats.kdtrees);
    assert!(on_device.grid_cells == twin.grid_cells);
}

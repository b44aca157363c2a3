//! A displaced mesh that deforms from frame to frame: its quads, UVs and map stay, so the next
//! frame builds only its patch bounds and its tree (the patches' reaches come from the mesh
//! cache), and the GPU sends only the patch records (the map's texels stay on the device). Both
//! give what a fresh process gives.

use std::path::Path;
use std::sync::Arc;

use caustica::accel::MeshBuildCache;
use caustica::gpu::{test_context, GpuBackend};
use caustica::io::vdgen::{ripples, write_vd_image};
use caustica::io::AssetCache;
use caustica::render::{Backend, Frame};
use caustica::scene::Scene;
use caustica::{Overrides, SceneFile};

/// A floor of 6 × 6 displaced quads whose width grows with the frame, seen from above.
fn scene_text(dir: &Path) -> String {
    format!(
        r#"
frames 1..3
let width = 2 + 0.25 * frame
camera {{ position 0 2.5 1.5  look_at 0 0 0  fov 60 }}
film   {{ resolution 48 32 spp 1 sampler independent max_depth 0 vd_max_level 4 }}
material clay {{ diffuse 0.8 0.7 0.6 }}
vdmap waves {{ file "{}/ripples.exr" scale 0.3 }}
mesh floor {{ quad size width 2 divisions 6 6 displacement waves }}
instance {{ mesh floor material clay }}
light directional {{ direction -0.3 -1 -0.5 irradiance 2 }}
output {{ path "unused.exr" layers position }}
"#,
        dir.display()
    )
}

fn frame_scene(file: &SceneFile, assets: &AssetCache, frame: i64) -> Scene {
    let whitted = Overrides {
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Overrides::default()
    };
    caustica::evaluate_frame(file, frame, assets, &whitted).unwrap()
}

fn stat(frame: &Frame, name: &str) -> f64 {
    frame
        .metadata
        .stat(name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn setup() -> (tempfile::TempDir, SceneFile) {
    let dir = tempfile::tempdir().unwrap();
    write_vd_image(&dir.path().join("ripples.exr"), &ripples(64)).unwrap();
    let file = SceneFile::from_str("deforming.csc", &scene_text(dir.path())).unwrap();
    (dir, file)
}

#[test]
fn a_deforming_displaced_mesh_rebuilds_only_its_patch_bounds_and_tree() {
    let (_dir, file) = setup();
    let assets = AssetCache::default();
    let cache = MeshBuildCache::default();
    let first = frame_scene(&file, &assets, 1);
    let built = caustica::prepare_cached(&first, &cache).unwrap();
    assert_eq!(built.vd_patches.len(), 36);
    assert_eq!(built.vd_reaches_reused, 0);
    for n in [2, 3] {
        let scene = frame_scene(&file, &assets, n);
        let cached = caustica::prepare_cached(&scene, &cache).unwrap();
        assert_eq!(cached.meshes_reused, 0, "frame {n}: the floor deformed");
        assert_eq!(
            cached.vd_reaches_reused, 1,
            "frame {n}: the floor's reaches come from the cache"
        );
        let fresh = caustica::prepare(&scene).unwrap();
        assert_eq!(fresh.vd_reaches_reused, 0);
        assert!(
            cached.vd_patches == fresh.vd_patches && cached.vd_seams == fresh.vd_seams,
            "frame {n}: the patch records differ from a fresh build's"
        );
        assert_ne!(
            cached.vd_patches, built.vd_patches,
            "frame {n}: the bounds follow the deformed floor"
        );
    }
}

#[test]
fn a_deforming_displaced_mesh_sends_the_gpu_only_its_patch_records() {
    let Some(ctx) = test_context() else {
        return;
    };
    let (_dir, file) = setup();
    let assets = AssetCache::default();
    let cache = MeshBuildCache::default();
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let render = |backend: &GpuBackend, n: i64, cache: &MeshBuildCache| {
        let scene = frame_scene(&file, &assets, n);
        let prepared = caustica::prepare_cached(&scene, cache).unwrap();
        let frame = backend
            .render_frame(&scene, &prepared, &Default::default())
            .unwrap();
        (frame, prepared)
    };
    let (first, _) = render(&backend, 1, &cache);
    let texels = 64.0 * 64.0 * 16.0;
    assert!(
        stat(&first, "vd/scene_uploaded_bytes") >= texels,
        "frame 1 sends the map's texels"
    );
    let (again, _) = render(&backend, 1, &cache);
    assert_eq!(
        stat(&again, "vd/scene_uploaded_bytes"),
        0.0,
        "the same frame again sends nothing of the VD scene"
    );
    assert_eq!(
        again.aov("P").unwrap().pixels,
        first.aov("P").unwrap().pixels
    );
    let (second, prepared) = render(&backend, 2, &cache);
    let patch_records = (prepared.vd_patches.len()
        * std::mem::size_of::<caustica::gpu::vd_batch::VdBatchPatch>())
        as f64;
    assert_eq!(
        stat(&second, "vd/scene_uploaded_bytes"),
        patch_records,
        "frame 2 sends its patch records and nothing else"
    );
    // The same frame from a fresh backend and cache: the same bits.
    let Some(ctx) = test_context() else {
        return;
    };
    let fresh_backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let (fresh, _) = render(&fresh_backend, 2, &MeshBuildCache::default());
    assert_eq!(
        second.aov("P").unwrap().pixels,
        fresh.aov("P").unwrap().pixels,
        "frame 2 renders as it does in a fresh process"
    );
}

//! The "Party" scene (`scenes/party/party.csc`): at least 10,000 VD patches in the world, none of them
//! instanced, and its committed base meshes and map atlas equal what the generator
//! (`examples/make_party.rs`, `caustica::io::vdgen_party`) writes, so the files and the tool
//! cannot drift apart.

use std::collections::HashMap;
use std::path::PathBuf;

use caustica::io::{load_vd_image, vdgen_party, AssetCache};
use caustica::Overrides;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes")
}

#[test]
fn the_party_scene_has_ten_thousand_uninstanced_vd_patches() {
    let path = scenes().join("party").join("party.csc");
    let file = caustica::load_scene(&path).unwrap_or_else(|e| panic!("{e}"));
    let first = file.frame_range().unwrap().first;
    let scene =
        caustica::evaluate_frame(&file, first, &AssetCache::default(), &Overrides::default())
            .unwrap_or_else(|e| panic!("{e}"));

    let mut uses: HashMap<u32, usize> = HashMap::new();
    for instance in &scene.instances {
        *uses.entry(instance.mesh).or_default() += 1;
    }
    let mut patches = 0;
    for (m, mesh) in scene.meshes.iter().enumerate() {
        if mesh.displacement.is_none() {
            continue;
        }
        let count = uses.get(&(m as u32)).copied().unwrap_or(0);
        assert!(count <= 1, "mesh {} is instanced {count} times", mesh.name);
        assert!(
            mesh.data.triangles.is_empty(),
            "mesh {} has triangles",
            mesh.name
        );
        patches += count * mesh.data.quads.len();
    }
    assert!(patches >= 10_000, "only {patches} VD patches in the world");
    let (_, generated) = vdgen_party::party_meshes();
    assert_eq!(patches, generated as usize);
}

#[test]
fn the_committed_party_files_are_what_the_generator_writes() {
    let committed = scenes().join("party");
    let dir = tempfile::tempdir().unwrap();
    let written = vdgen_party::write_party(dir.path()).unwrap();
    assert_eq!(written.len(), 7);
    for path in &written {
        let name = path.file_name().unwrap();
        let fresh = std::fs::read(path).unwrap();
        let old = std::fs::read(committed.join(name))
            .unwrap_or_else(|e| panic!("scenes/party/{}: {e}", name.to_string_lossy()));
        if name == vdgen_party::ATLAS_FILE {
            // Compare the values first for a readable failure, then the bytes.
            let a = load_vd_image(path).unwrap();
            let b = load_vd_image(&committed.join(name)).unwrap();
            assert_eq!((a.width, a.height), (b.width, b.height));
            let differing = a
                .texels
                .iter()
                .zip(&b.texels)
                .filter(|(x, y)| x != y)
                .count();
            assert_eq!(
                differing, 0,
                "{differing} atlas texels differ from the generator's"
            );
        }
        assert!(
            fresh == old,
            "scenes/party/{} differs from the generator's output; regenerate it with \
             `cargo run --release --example make_party -- scenes/party`",
            name.to_string_lossy()
        );
    }
    // No stray files beside the generated ones and the hand-written scene file.
    let mut names: Vec<String> = std::fs::read_dir(&committed)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "party.csc")
        .collect();
    names.sort();
    let mut expected: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    assert_eq!(names, expected);
}

#[test]
fn the_atlas_is_zero_on_every_tile_border_so_patches_meet_without_cracks() {
    let atlas = load_vd_image(&scenes().join("party").join(vdgen_party::ATLAS_FILE)).unwrap();
    let cells = vdgen_party::TILE_CELLS;
    for y in 0..atlas.height {
        for x in 0..atlas.width {
            if x % cells == 0 || y % cells == 0 {
                let t = atlas.texels[(y * atlas.width + x) as usize];
                assert_eq!(t, glam::Vec3::ZERO, "texel ({x}, {y})");
            }
        }
    }
}

//! Meshes in: OBJ and PLY files (written here or taken from `shared/assets`) load into the right `MeshData`.

mod support;

use support::shared_asset;

use std::io::Write;
use std::path::{Path, PathBuf};

use caustica::io::{load_mesh, AssetCache};
use caustica::scene::AssetLoader;
use glam::{Vec2, Vec3};

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

const QUAD_AND_TRIANGLE_OBJ: &str = "\
# a quad with UVs and normals, a triangle, and a pentagon in a second object
o first
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
vt 0 0
vt 1 0
vt 1 1
vt 0 1
vn 0 0 1
f 1/1/1 2/2/1 3/3/1 4/4/1
f 1/1/1 2/2/1 3/3/1
o second
v 0 0 1
v 1 0 1
v 1 1 1
v 0.5 1.5 1
v 0 1 1
vt 0 0
vn 0 0 1
f 5/5/2 6/5/2 7/5/2 8/5/2 9/5/2
";

#[test]
fn obj_quads_stay_quads_and_pentagons_become_fans() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = load_mesh(&write_file(
        dir.path(),
        "m.obj",
        QUAD_AND_TRIANGLE_OBJ.as_bytes(),
    ))
    .unwrap();
    assert_eq!(mesh.quads.len(), 1);
    assert_eq!(mesh.triangles.len(), 1 + 3);
    assert_eq!(mesh.normals.len(), mesh.positions.len());
    assert_eq!(mesh.uvs.len(), mesh.positions.len());
    let quad = mesh.quads[0];
    assert_eq!(
        mesh.quad_corners(0),
        [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y]
    );
    assert_eq!(mesh.quad_uvs(0), [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y]);
    assert!(quad.iter().all(|&v| mesh.normals[v as usize] == Vec3::Z));
    // The fan of the pentagon (second object) starts at its first corner, after the first object's vertices.
    let fan_apex = mesh.triangles[1][0];
    assert!(mesh.triangles[1..].iter().all(|t| t[0] == fan_apex));
    assert_eq!(mesh.positions[fan_apex as usize], Vec3::new(0.0, 0.0, 1.0));
}

#[test]
fn obj_with_an_out_of_range_index_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        "bad.obj",
        b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n",
    );
    let error = load_mesh(&path).unwrap_err().to_string();
    assert!(
        error.contains("bad.obj") && error.contains("out of bounds"),
        "{error}"
    );
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let error = load_mesh(Path::new("/no/such/dir/mesh.ply")).unwrap_err();
    assert_eq!(error.reason(), "No such file or directory");
    assert!(error.to_string().contains("/no/such/dir/mesh.ply"));
}

#[test]
fn an_unknown_extension_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = load_mesh(&write_file(dir.path(), "mesh.stl", b"solid"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown mesh format"), "{error}");
}

const ASCII_PLY: &str = "\
ply
format ascii 1.0
comment a quad, a triangle and a pentagon; colours are ignored
element vertex 6
property float x
property float y
property float z
property float nx
property float ny
property float nz
property float s
property float t
property uchar red
element face 3
property list uchar int vertex_indices
end_header
0 0 0 0 0 1 0 0 255
1 0 0 0 0 1 1 0 255
1 1 0 0 0 1 1 1 255
0 1 0 0 0 1 0 1 255
2 0 0 0 0 1 0.5 0.5 255
2 1 0 0 0 1 0.25 0.75 255
4 0 1 2 3
3 1 4 5
5 0 1 4 5 2
";

#[test]
fn ascii_ply_keeps_quads_normals_and_texture_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = load_mesh(&write_file(dir.path(), "m.ply", ASCII_PLY.as_bytes())).unwrap();
    assert_eq!(mesh.positions.len(), 6);
    assert_eq!(mesh.quads, vec![[0, 1, 2, 3]]);
    assert_eq!(
        mesh.triangles,
        vec![[1, 4, 5], [0, 1, 4], [0, 4, 5], [0, 5, 2]]
    );
    assert_eq!(mesh.normals, vec![Vec3::Z; 6]);
    assert_eq!(mesh.uvs[5], Vec2::new(0.25, 0.75));
}

/// A binary little-endian PLY with double positions, uint indices and an extra element.
fn binary_ply() -> Vec<u8> {
    let mut bytes = b"ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty double x\nproperty double y\nproperty double z\nelement face 2\nproperty list uchar uint vertex_index\nelement edge 1\nproperty int vertex1\nproperty int vertex2\nend_header\n".to_vec();
    for p in [
        [0.0f64, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
    ] {
        for c in p {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
    }
    bytes.push(4);
    for i in [0u32, 1, 2, 3] {
        bytes.extend_from_slice(&i.to_le_bytes());
    }
    bytes.push(3);
    for i in [0u32, 2, 3] {
        bytes.extend_from_slice(&i.to_le_bytes());
    }
    bytes.extend_from_slice(&0i32.to_le_bytes());
    bytes.extend_from_slice(&1i32.to_le_bytes());
    bytes
}

#[test]
fn binary_ply_loads_with_vertex_index_lists_and_extra_elements() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = load_mesh(&write_file(dir.path(), "m.ply", &binary_ply())).unwrap();
    assert_eq!(mesh.positions[2], Vec3::new(1.0, 1.0, 0.0));
    assert_eq!(mesh.quads, vec![[0, 1, 2, 3]]);
    assert_eq!(mesh.triangles, vec![[0, 2, 3]]);
    assert!(mesh.normals.is_empty() && mesh.uvs.is_empty());
}

#[test]
fn gzip_compressed_ply_loads_like_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&binary_ply()).unwrap();
    let gz = write_file(dir.path(), "m.ply.gz", &encoder.finish().unwrap());
    let plain = write_file(dir.path(), "plain.ply", &binary_ply());
    assert_eq!(load_mesh(&gz).unwrap(), load_mesh(&plain).unwrap());
}

#[test]
fn truncated_ply_is_an_error_that_names_the_element() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = binary_ply();
    let binary = write_file(dir.path(), "short.ply", &bytes[..bytes.len() - 30]);
    let error = load_mesh(&binary).unwrap_err().to_string();
    assert!(
        error.contains("short.ply") && error.contains("\"face\""),
        "{error}"
    );

    let ascii = ASCII_PLY.lines().take(18).collect::<Vec<_>>().join("\n");
    let error = load_mesh(&write_file(dir.path(), "short_ascii.ply", ascii.as_bytes()))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("vertex") && error.contains("Line"),
        "{error}"
    );

    let header_only = write_file(
        dir.path(),
        "header.ply",
        b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n",
    );
    let error = load_mesh(&header_only).unwrap_err().to_string();
    assert!(error.contains("PLY header"), "{error}");
}

#[test]
fn ply_faces_pointing_past_the_vertices_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let text = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 9\n";
    let error = load_mesh(&write_file(dir.path(), "m.ply", text.as_bytes()))
        .unwrap_err()
        .to_string();
    assert!(error.contains("uses vertex 9"), "{error}");
    let negative = text.replace("3 0 1 9", "3 0 1 -1");
    let error = load_mesh(&write_file(dir.path(), "n.ply", negative.as_bytes()))
        .unwrap_err()
        .to_string();
    assert!(error.contains("negative vertex index"), "{error}");
}

#[test]
fn the_stanford_bunny_loads_from_ply_and_obj() {
    let Some(dir) = shared_asset("meshes/stanford/bunny") else {
        return;
    };
    let ply = load_mesh(&dir.join("bun_zipper.ply")).unwrap();
    assert_eq!(
        (ply.positions.len(), ply.triangles.len(), ply.quads.len()),
        (35947, 69451, 0)
    );
    let obj = load_mesh(&dir.join("bun_zipper_res4.obj")).unwrap();
    assert!(
        obj.triangles.len() > 900,
        "{} triangles",
        obj.triangles.len()
    );
    let (lo, hi) = ply.bounds().unwrap();
    assert!(
        (hi - lo).max_element() < 0.2,
        "the bunny is about 0.15 units tall"
    );
}

#[test]
fn quad_meshes_from_the_assets_keep_their_quads_and_uvs() {
    let Some(teapot) = shared_asset("displacement/bezier_teaset_vdm/teapot_base_quads.obj") else {
        return;
    };
    let mesh = load_mesh(&teapot).unwrap();
    assert_eq!(mesh.quads.len(), 32, "one base quad per Bézier patch");
    assert_eq!(mesh.uvs.len(), mesh.positions.len());
    let Some(suzanne) = shared_asset("meshes/c3d/suzanne.obj") else {
        return;
    };
    let mesh = load_mesh(&suzanne).unwrap();
    assert!(
        mesh.quads.len() > mesh.triangles.len(),
        "{} quads, {} triangles",
        mesh.quads.len(),
        mesh.triangles.len()
    );
}

#[test]
fn the_dragon_loads_in_a_few_seconds() {
    let Some(dragon) = shared_asset("meshes/stanford/dragon/dragon_vrip.ply.gz") else {
        return;
    };
    let start = std::time::Instant::now();
    let mesh = load_mesh(&dragon).unwrap();
    eprintln!(
        "dragon: {} triangles in {:?}",
        mesh.triangles.len(),
        start.elapsed()
    );
    assert_eq!(mesh.triangles.len(), 871_414);
}

#[test]
fn the_asset_cache_loads_each_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "m.obj", QUAD_AND_TRIANGLE_OBJ.as_bytes());
    let cache = AssetCache::new();
    let first = cache.load_mesh(&path).unwrap();
    // Another spelling of the same file hits the same entry.
    let second = cache
        .load_mesh(&dir.path().join(".").join("m.obj"))
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &second));
    assert_eq!(cache.len(), 1);
    let missing = cache.load_mesh(&dir.path().join("gone.obj")).unwrap_err();
    assert_eq!(missing, "No such file or directory");
}

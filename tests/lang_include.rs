//! `include`: paths relative to the including file, cycle detection and the depth limit.

mod lang_support;

use std::path::{Path, PathBuf};

use caustica::lang::SceneFile;
use caustica::scene::{MaterialKind, MeshOrigin};
use glam::Vec3;
use lang_support::MemoryLoader;

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lang")
        .join(path)
}

#[test]
fn includes_and_their_assets_resolve_relative_to_the_including_file() {
    let file = SceneFile::load(&data("include/main.csc")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.sources().len(), 3);
    let scene = file
        .eval(1, &MemoryLoader)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        scene.materials[0].kind,
        MaterialKind::Diffuse {
            albedo: Vec3::new(0.8, 0.1, 0.1),
            texture: None
        }
    );
    assert_eq!(
        scene.meshes[0].origin,
        MeshOrigin::File(data("include/parts/teapot.obj"))
    );
    assert_eq!(scene.instances.len(), 1);
    // The material's span points into the included file.
    let (path, line, col) = file.sources().line_col(scene.materials[0].span).unwrap();
    assert_eq!(
        (path, line, col),
        (data("include/parts/materials.csc"), 2, 1)
    );
}

#[test]
fn an_include_cycle_is_an_error_that_names_the_cycle_at_the_include() {
    let error = SceneFile::load(&data("cycle/a.csc"))
        .unwrap_err()
        .to_string();
    let b = data("cycle/b.csc");
    let a = data("cycle/a.csc");
    let expected = format!(
        "{}:2:1: error: include cycle: {} -> {} -> {}\ninclude \"a.csc\"\n^^^^^^^^^^^^^^^\n",
        b.display(),
        a.display(),
        b.display(),
        a.display()
    );
    assert!(
        error.starts_with(&expected),
        "expected\n{expected}\ngot\n{error}"
    );
}

#[test]
fn a_file_including_itself_is_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("self.csc");
    std::fs::write(&path, "include \"self.csc\"\n").unwrap();
    let error = SceneFile::load(&path).unwrap_err().to_string();
    assert!(error.contains(":1:1: error: include cycle: "), "{error}");
}

#[test]
fn includes_nested_too_deep_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..40 {
        std::fs::write(
            dir.path().join(format!("f{i}.csc")),
            format!("include \"f{}.csc\"\n", i + 1),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("f40.csc"), "let deepest = 1\n").unwrap();
    let error = SceneFile::load(&dir.path().join("f0.csc"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("error: includes are nested more than 32 levels deep"),
        "{error}"
    );
    assert_eq!(error.matches("error:").count(), 1, "{error}");
}

/// An include bomb: 30 files, each including the next twice, within the depth limit, would
/// make 2³⁰ includes (issue 15). The 1025th include is an error, reported once, at the include.
#[test]
fn an_include_bomb_stops_at_the_total_include_limit_with_one_error() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..30 {
        std::fs::write(
            dir.path().join(format!("f{i}.csc")),
            format!("include \"f{n}.csc\"\ninclude \"f{n}.csc\"\n", n = i + 1),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("f30.csc"), "let leaf = 1\n").unwrap();
    let error = SceneFile::load(&dir.path().join("f0.csc"))
        .unwrap_err()
        .to_string();
    assert!(
        error
            .contains("error: more than 1024 includes in all (a file included twice counts twice)"),
        "{error}"
    );
    assert_eq!(error.matches("error:").count(), 1, "{error}");
}

#[test]
fn a_missing_include_points_at_the_path_string() {
    let error = SceneFile::from_str("scene.csc", "let a = 1\ninclude \"nowhere/missing.csc\"")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("scene.csc:2:9: error: cannot include \"nowhere/missing.csc\": "),
        "{error}"
    );
}

#[test]
fn syntax_errors_in_an_included_file_name_that_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("part.csc"), "camera {\n  fov 40 = }\n").unwrap();
    std::fs::write(dir.path().join("main.csc"), "include \"part.csc\"\n").unwrap();
    let error = SceneFile::load(&dir.path().join("main.csc"))
        .unwrap_err()
        .to_string();
    let expected = format!(
        "{}:2:10: error: expected a value, a parameter name or `}}`",
        dir.path().join("part.csc").display()
    );
    assert!(error.starts_with(&expected), "{error}");
}

#[test]
fn from_str_resolves_includes_against_the_current_directory() {
    // Integration tests run in the package root.
    let file = SceneFile::from_str(
        "inline.csc",
        "include \"tests/data/lang/include/parts/colors.csc\"\nlet x = red_albedo",
    )
    .unwrap();
    assert_eq!(file.sources().len(), 2);
    assert!(file.eval(1, &MemoryLoader).is_ok());
}

//! End-to-end tests of the `caustica` command line: real processes, real files, each test in
//! its own temporary directory (which is also the process's current directory, so that relative
//! output paths land there).

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::cli::{
    assert_clean_failure, assert_success, caustica, files_under, repo, scene, stderr, stdout,
    write_scene,
};

use glam::Vec3;

fn luminance(c: Vec3) -> f32 {
    0.2126 * c.x + 0.7152 * c.y + 0.0722 * c.z
}

/// Sum of the colour over columns `x0..x1` and rows `y0..y1`.
fn region_sum(frame: &caustica::render::Frame, x0: u32, x1: u32, y0: u32, y1: u32) -> Vec3 {
    let mut sum = Vec3::ZERO;
    for y in y0..y1 {
        for x in x0..x1 {
            sum += frame.color[(y * frame.width + x) as usize];
        }
    }
    sum
}

/// A small valid scene: one lit floor quad.
const SMALL_SCENE: &str = "\
camera { position 0 1 4  look_at 0 0 0  fov 40 }
material white { diffuse 0.7 0.7 0.7 }
mesh floor { quad size 4 4 }
instance { mesh floor material white }
light point { position 0 2 0 power 50 50 50 }
output { path \"out/small_####.exr\" }
";

#[test]
fn render_cornell_point_writes_a_lit_64x64_exr_with_layers_metadata_and_png_preview() {
    let dir = tempfile::tempdir().unwrap();
    let exr_pattern = dir.path().join("c_####.exr");
    let png = dir.path().join("c.png");
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--resolution",
            "64x64",
            "--spp",
            "1",
            "--device",
            "cpu",
            "-q",
            "-o",
            exr_pattern.to_str().unwrap(),
            "--preview",
            png.to_str().unwrap(),
        ],
    );
    assert_success(&out);
    assert!(
        !stderr(&out).contains("panicked"),
        "stderr:\n{}",
        stderr(&out)
    );

    // Exactly the EXR (frame 1 of the scene's range, `####` expanded) and the PNG: no temporaries.
    assert_eq!(
        files_under(dir.path()),
        vec![PathBuf::from("c.png"), PathBuf::from("c_0001.exr")]
    );

    let frame = caustica::io::read_frame(&dir.path().join("c_0001.exr")).unwrap();
    assert_eq!((frame.width, frame.height), (64, 64));
    assert_eq!(frame.color.len(), 64 * 64);
    for (i, c) in frame.color.iter().enumerate() {
        assert!(
            c.is_finite() && c.min_element() >= 0.0,
            "pixel {i} has colour {c}"
        );
    }
    let mean_luminance =
        frame.color.iter().map(|&c| luminance(c)).sum::<f32>() / frame.color.len() as f32;
    assert!(
        mean_luminance > 0.1,
        "the box is barely lit: mean luminance {mean_luminance}"
    );

    // The red wall shows in the leftmost columns and the green wall in the rightmost ones
    // (the box spans x -1..1 and nearly fills the view; the walls cover about 12 columns each).
    let left = region_sum(&frame, 3, 10, 16, 48);
    let right = region_sum(&frame, 54, 61, 16, 48);
    assert!(
        left.x > 2.0 * left.y && left.x > 2.0 * left.z,
        "left wall is not red: {left}"
    );
    assert!(
        right.y > 1.5 * right.x && right.y > 1.5 * right.z,
        "right wall is not green: {right}"
    );

    // The scene asks for albedo, normal and depth, in that order: pbrt's G-buffer names
    // (`Albedo.*`, `N.*` geometric and `Ns.*` shading normals, `Z` in the default layer).
    let names: Vec<&str> = frame.aovs.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["Albedo", "N", "Ns", caustica::render::DEPTH_LAYER]);
    let albedo = frame.aov("Albedo").unwrap();
    let geometric = frame.aov("N").unwrap();
    let normal = frame.aov("Ns").unwrap();
    let depth = frame.aov(caustica::render::DEPTH_LAYER).unwrap();
    assert_eq!(albedo.channels, ["R", "G", "B"]);
    assert_eq!(normal.channels, ["X", "Y", "Z"]);
    assert_eq!(depth.channels, ["Z"]);
    for layer in [albedo, geometric, normal, depth] {
        assert_eq!(layer.pixels.len(), 64 * 64 * layer.channels.len());
    }
    // One sample a pixel: the coverage is 0 or 1. The box fills the middle of the image;
    // the top and bottom rows look past the opening's edges into the void.
    assert_eq!(frame.alpha.len(), 64 * 64);
    assert!(frame.alpha.iter().all(|&a| a == 0.0 || a == 1.0));
    assert!(frame.alpha[..64].contains(&0.0), "the top row sees nothing");
    for y in 16..48 {
        assert!(frame.alpha[y * 64 + 16..y * 64 + 48]
            .iter()
            .all(|&a| a == 1.0));
    }
    // A pixel on the left wall has the red material's albedo and a normal facing +x.
    let i = (32 * 64 + 6) as usize;
    let a = Vec3::new(albedo.get(i, 0), albedo.get(i, 1), albedo.get(i, 2));
    assert!(
        (a - Vec3::new(0.63, 0.065, 0.05)).abs().max_element() < 1e-4,
        "albedo {a}"
    );
    let n = Vec3::new(normal.get(i, 0), normal.get(i, 1), normal.get(i, 2));
    assert!((n - Vec3::X).length() < 1e-3, "normal {n}");
    let ng = Vec3::new(
        geometric.get(i, 0),
        geometric.get(i, 1),
        geometric.get(i, 2),
    );
    assert!((ng - Vec3::X).length() < 1e-3, "geometric normal {ng}");
    // Everything in the middle of the image is inside the box: between the opening (2.9 in
    // front of the camera) and the back wall (4.9).
    for y in 16..48 {
        for x in 16..48 {
            let d = depth.get((y * 64 + x) as usize, 0);
            assert!((2.9..5.1).contains(&d), "depth {d} at ({x}, {y})");
        }
    }

    let meta = &frame.metadata;
    assert_eq!(meta.frame, 1);
    assert_eq!(meta.time, 0.0);
    assert_eq!(meta.spp, 1);
    assert_eq!(meta.device, "cpu");
    assert_eq!(meta.camera_position, Vec3::new(0.0, 1.0, 3.9));
    assert_eq!(meta.camera_look_at, Vec3::new(0.0, 1.0, 0.0));
    assert_eq!(meta.camera_fov_deg, 39.0);
    assert!(!meta.stats.is_empty());
    // The scene names no integrator: photon mapping, the default, gathered irradiance.
    assert!(
        meta.stat("gather/seeds").is_some_and(|s| s > 0.0),
        "not photon-mapped: {:?}",
        meta.stats
    );
    let primary = meta.stat("rays/primary");
    assert_eq!(primary, Some(64.0 * 64.0), "stats: {:?}", meta.stats);
    assert!(
        meta.stats
            .entries()
            .iter()
            .any(|(name, _)| name.starts_with("bvh/")),
        "the hierarchy counters are missing: {:?}",
        meta.stats
    );

    assert_eq!(image::image_dimensions(&png).unwrap(), (64, 64));
}

#[test]
fn render_without_output_option_writes_the_scenes_output_path_relative_to_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let scene_dir = tempfile::tempdir().unwrap();
    let path = write_scene(scene_dir.path(), "small.csc", SMALL_SCENE);
    let out = caustica(
        dir.path(),
        &[
            "render",
            path.to_str().unwrap(),
            "--resolution",
            "16x8",
            "--spp",
            "1",
            "--device",
            "cpu",
        ],
    );
    assert_success(&out);
    let written = dir.path().join("out/small_0001.exr");
    assert_eq!(
        files_under(dir.path()),
        vec![PathBuf::from("out/small_0001.exr")]
    );
    // Not next to the scene file.
    assert_eq!(
        files_under(scene_dir.path()),
        vec![PathBuf::from("small.csc")]
    );
    assert!(
        stdout(&out).contains("frame 1:"),
        "stdout:\n{}",
        stdout(&out)
    );
    let frame = caustica::io::read_frame(&written).unwrap();
    assert_eq!((frame.width, frame.height), (16, 8));
    assert!(frame.aovs.is_empty(), "no layers were asked for");
}

#[test]
fn check_accepts_every_example_scene_and_prints_ok() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(repo().join("scenes")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("csc") {
            continue;
        }
        let out = caustica(dir.path(), &["check", path.to_str().unwrap()]);
        assert_success(&out);
        assert!(
            stdout(&out).contains(": ok ("),
            "{}: stdout:\n{}",
            path.display(),
            stdout(&out)
        );
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} example scenes found");
    // `check` never writes anything.
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn check_reports_the_number_of_frames_of_an_animation() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(
        dir.path(),
        &["check", scene("animated.csc").to_str().unwrap()],
    );
    assert_success(&out);
    assert!(stdout(&out).contains("ok (24 frames)"), "{}", stdout(&out));
}

/// A scene of a hundred trillion frames: `check` evaluates 1000 of them (the first, the last
/// and evenly spaced ones) and says so, where it used to evaluate every frame and never end.
#[test]
fn check_of_an_endless_animation_evaluates_a_sample_of_its_frames_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_scene(
        dir.path(),
        "long.csc",
        "camera { position 0 1 3 look_at 0 0 0 fov 40 }
         film { resolution 8 8 }
         frames 1..1e14
         material m { diffuse 0.5 }
         mesh q { quad size 1 1 }
         instance { mesh q material m translate 0 (frame / 1e14) 0 }
         light point { position 0 2 0 power 10 }",
    );
    let out = caustica(dir.path(), &["check", path.to_str().unwrap()]);
    assert_success(&out);
    assert!(
        stdout(&out).contains(
            "ok (100000000000000 frames; 1000 of them checked: the first, the last and evenly \
             spaced ones)"
        ),
        "{}",
        stdout(&out)
    );
}

/// Rendering a whole range of more frames than one render takes (a million) is a usage error
/// naming the range, its size and the limit, before any frame is evaluated or written; a shard
/// of it that is small enough is not.
#[test]
fn rendering_more_frames_than_one_render_takes_is_a_usage_error_that_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_scene(
        dir.path(),
        "long.csc",
        "camera { position 0 1 3 look_at 0 0 0 fov 40 }
         film { resolution 4 4 spp 1 integrator whitted }
         frames 1..1e14
         material m { diffuse 0.5 }
         mesh q { quad size 1 1 }
         instance { mesh q material m }
         light point { position 0 2 0 power 10 }",
    );
    let path = path.to_str().unwrap();
    let out = caustica(
        dir.path(),
        &["render", path, "--device", "cpu", "-o", "r_####.exr"],
    );
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains(
            "error: the scene's frames 1..100000000000000 are 100000000000000 frames, and one \
             render takes at most 1000000: choose some with --frames (e.g. --frames 1..100) or \
             split them with --shard"
        ),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(2), "a usage mistake");
    let images = || -> Vec<PathBuf> {
        files_under(dir.path())
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "exr"))
            .collect()
    };
    assert!(images().is_empty());
    // A shard of 2 × 10¹⁴ parts holds frame 4 alone.
    let out = caustica(
        dir.path(),
        &[
            "render",
            path,
            "--device",
            "cpu",
            "--shard",
            "3/200000000000000",
            "-o",
            "r_####.exr",
            "-q",
        ],
    );
    assert_success(&out);
    let written = images();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(written[0].ends_with("r_0004.exr"), "{written:?}");
}

#[test]
fn info_prints_instance_and_light_counts_and_world_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(
        dir.path(),
        &["info", scene("cornell_point.csc").to_str().unwrap()],
    );
    assert_success(&out);
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no \"{key}\" line in:\n{text}"))
            .to_string()
    };
    // 5 walls from cornell_walls.csc + 2 blocks.
    assert!(
        line("instances").split_whitespace().nth(1) == Some("7"),
        "{text}"
    );
    assert!(
        line("lights").split_whitespace().nth(1) == Some("1"),
        "{text}"
    );
    assert!(
        line("meshes").split_whitespace().nth(1) == Some("2"),
        "{text}"
    );
    assert_eq!(line("bounds"), "bounds       [-1, 0, -1] .. [1, 2, 1]");
    assert!(line("film").contains("512x512"), "{text}");
}

const BROKEN_SCENE: &str = "\
camera { position 0 1 4  look_at 0 1 0  fov 40 }
material white { diffuse 0.7 0.7 0.7 }
instance { mesh wall material shiny }
mesh wall { quad size 2 }
light point { position 0 1.8 0 power 10 10 10 }
output { path \"out/broken_####.exr\" }
";

/// `file:line:col: error:` for `needle` on 1-based `line` of `BROKEN_SCENE`, followed by the
/// source line and a caret under the column.
fn expect_diagnostic(stderr: &str, file: &str, line: usize, needle: &str) {
    let source_line = BROKEN_SCENE.lines().nth(line - 1).unwrap();
    let col = source_line.find(needle).unwrap() + 1;
    let head = format!("{file}:{line}:{col}: error: ");
    let at = stderr
        .find(&head)
        .unwrap_or_else(|| panic!("no \"{head}\" in stderr:\n{stderr}"));
    let mut rest = stderr[at..].lines().skip(1);
    assert_eq!(rest.next(), Some(source_line), "stderr:\n{stderr}");
    let caret = rest.next().unwrap_or("");
    assert!(
        caret.starts_with(&format!("{}^", " ".repeat(col - 1))),
        "caret line {caret:?} not under column {col}; stderr:\n{stderr}"
    );
}

#[test]
fn check_reports_all_errors_of_a_broken_scene_with_place_source_line_and_caret() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "broken.csc", BROKEN_SCENE);
    let out = caustica(dir.path(), &["check", "broken.csc"]);
    assert_clean_failure(&out);
    let err = stderr(&out);
    expect_diagnostic(&err, "broken.csc", 3, "shiny");
    expect_diagnostic(&err, "broken.csc", 4, "size");
    assert!(err.contains("unknown material \"shiny\""), "{err}");
    assert!(err.contains("\"size\" takes 2 values"), "{err}");
    assert!(err.contains("2 errors"), "{err}");
    assert!(!stdout(&out).contains("ok"), "{}", stdout(&out));
}

#[test]
fn render_of_a_broken_scene_fails_with_the_diagnostics_and_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "broken.csc", BROKEN_SCENE);
    let out = caustica(
        dir.path(),
        &[
            "render",
            "broken.csc",
            "--device",
            "cpu",
            "--resolution",
            "8x8",
            "--preview",
            "p.png",
        ],
    );
    assert_clean_failure(&out);
    let err = stderr(&out);
    expect_diagnostic(&err, "broken.csc", 3, "shiny");
    expect_diagnostic(&err, "broken.csc", 4, "size");
    assert_eq!(files_under(dir.path()), vec![PathBuf::from("broken.csc")]);
}

#[test]
fn an_error_in_a_later_frame_stops_the_render_before_any_frame_is_written() {
    let dir = tempfile::tempdir().unwrap();
    // sqrt(2 - frame) is fine for frames 1 and 2 and an error at frame 3.
    let text = SMALL_SCENE.replace(
        "light point { position 0 2 0",
        "let h = sqrt(2 - frame)\nlight point { position 0 (1 + h) 0",
    ) + "frames 1..3\n";
    write_scene(dir.path(), "late.csc", &text);
    let ok = caustica(
        dir.path(),
        &[
            "render",
            "late.csc",
            "--device",
            "cpu",
            "--resolution",
            "8x8",
            "--frames",
            "1..2",
            "-q",
            "-o",
            "ok_####.exr",
        ],
    );
    assert_success(&ok);
    assert!(dir.path().join("ok_0002.exr").is_file());

    let out = caustica(
        dir.path(),
        &[
            "render",
            "late.csc",
            "--device",
            "cpu",
            "--resolution",
            "8x8",
            "--frames",
            "1..3",
            "-o",
            "late_####.exr",
        ],
    );
    assert_clean_failure(&out);
    let err = stderr(&out);
    // The error points at the expression that fails (the `let` on line 5, column 9).
    assert!(
        err.contains("late.csc:5:9: error: the result is not a finite number"),
        "{err}"
    );
    assert!(
        err.contains("while evaluating frame 3"),
        "the failing frame is named: {err}"
    );
    assert!(
        !files_under(dir.path())
            .iter()
            .any(|p| p.to_string_lossy().starts_with("late_")),
        "frames were written before the failing one: {:?}",
        files_under(dir.path())
    );
}

#[test]
fn a_missing_mesh_file_is_reported_at_the_file_string_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = SMALL_SCENE.replace(
        "mesh floor { quad size 4 4 }",
        "mesh floor { file \"meshes/nowhere.obj\" }",
    );
    write_scene(dir.path(), "missing.csc", &text);
    for command in ["check", "render"] {
        let args: &[&str] = match command {
            "check" => &["check", "missing.csc"],
            _ => &[
                "render",
                "missing.csc",
                "--device",
                "cpu",
                "-o",
                "m_####.exr",
            ],
        };
        let out = caustica(dir.path(), args);
        assert_clean_failure(&out);
        let err = stderr(&out);
        // Line 3 is the mesh; column 19 is the opening quote of the file string.
        let col = text.lines().nth(2).unwrap().find('"').unwrap() + 1;
        assert!(
            err.contains(&format!("missing.csc:3:{col}: error:")),
            "{command}: {err}"
        );
        assert!(err.contains("nowhere.obj"), "{command}: {err}");
        assert!(err.contains("No such file"), "{command}: {err}");
        assert_eq!(files_under(dir.path()), vec![PathBuf::from("missing.csc")]);
    }
}

#[test]
fn device_gpu_renders_on_the_gpu_or_fails_clearly_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--device",
            "gpu",
            "--integrator",
            "whitted",
            "--resolution",
            "8x8",
            "-o",
            "g_####.exr",
            "--preview",
            "g.png",
        ],
    );
    if out.status.success() {
        let frame = caustica::io::read_frame(&dir.path().join("g_0001.exr")).unwrap();
        assert_ne!(
            frame.metadata.device, "cpu",
            "--device gpu rendered on the CPU"
        );
        assert!(dir.path().join("g.png").exists());
    } else {
        assert!(
            !caustica::gpu_required(),
            "CAUSTICA_REQUIRE_GPU is set, but --device gpu failed: {}",
            stderr(&out)
        );
        assert_clean_failure(&out);
        assert!(stderr(&out).contains("no GPU adapter"), "{}", stderr(&out));
        assert!(files_under(dir.path()).is_empty());
    }
}

#[test]
fn a_reversed_frame_range_is_a_usage_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--device",
            "cpu",
            "--frames",
            "3..1",
            "-o",
            "r_####.exr",
        ],
    );
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("bad frame range \"3..1\""), "{err}");
    assert!(err.contains("before the first"), "{err}");
    assert_eq!(
        out.status.code(),
        Some(2),
        "usage mistakes exit with 2 like clap's"
    );
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn malformed_command_line_values_are_rejected_by_the_argument_parser() {
    let dir = tempfile::tempdir().unwrap();
    let s = scene("cornell_point.csc");
    for args in [
        ["--resolution", "0x64"],
        ["--resolution", "64"],
        ["--device", "tpu"],
        ["--spp", "-1"],
        ["--devices", "0,,1"],
    ] {
        let mut full = vec!["render", s.to_str().unwrap()];
        full.extend(args);
        let out = caustica(dir.path(), &full);
        // clap's usage errors exit with 2.
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    assert!(files_under(dir.path()).is_empty());
}

/// No temporary twin (`.<name>.tmp-<pid>-<n>`) anywhere under `dir`.
fn assert_no_temporaries(dir: &Path) {
    let files = files_under(dir);
    assert!(
        !files.iter().any(|p| p.to_string_lossy().contains(".tmp")),
        "temporary files left behind: {files:?}"
    );
}

#[test]
fn output_under_a_regular_file_fails_naming_the_path_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blocker"), b"not a directory").unwrap();
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--device",
            "cpu",
            "--resolution",
            "8x8",
            "--spp",
            "1",
            "--integrator",
            "whitted",
            "-o",
            "blocker/frames/f_####.exr",
        ],
    );
    assert_clean_failure(&out);
    let err = stderr(&out);
    assert!(err.contains("cannot write"), "{err}");
    assert!(err.contains("blocker"), "{err}");
    assert!(err.contains("Not a directory"), "{err}");
    assert_eq!(files_under(dir.path()), vec![PathBuf::from("blocker")]);
    assert_eq!(
        std::fs::read(dir.path().join("blocker")).unwrap(),
        b"not a directory"
    );
    assert_no_temporaries(dir.path());
}

#[test]
fn output_onto_an_existing_directory_fails_and_removes_the_temporary_file() {
    // The EXR is fully written to its temporary twin, then the rename onto the directory fails:
    // the temporary file must be cleaned up.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    std::fs::write(dir.path().join("taken/keep.txt"), b"keep").unwrap();
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--device",
            "cpu",
            "--resolution",
            "8x8",
            "--spp",
            "1",
            "--integrator",
            "whitted",
            "-o",
            "taken",
        ],
    );
    assert_clean_failure(&out);
    let err = stderr(&out);
    assert!(err.contains("cannot write \"taken\""), "{err}");
    assert_eq!(
        files_under(dir.path()),
        vec![PathBuf::from("taken/keep.txt")]
    );
    assert_no_temporaries(dir.path());
}

#[test]
fn info_device_describes_the_gpu_adapter_or_says_why_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(dir.path(), &["info", "--device"]);
    if caustica::gpu_required() {
        // CI sets CAUSTICA_REQUIRE_GPU=1 with lavapipe installed: the adapter must be there.
        assert_success(&out);
        let text = stdout(&out);
        for line in [
            "adapter",
            "subgroups",
            "64-bit atomic min/max",
            "timestamps",
            "storage binding",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    } else if out.status.success() {
        assert!(stdout(&out).contains("adapter"), "{}", stdout(&out));
    } else {
        eprintln!("no GPU here: {}", stderr(&out));
        assert!(stderr(&out).contains("no GPU adapter"), "{}", stderr(&out));
    }
}

#[test]
fn render_layers_option_replaces_the_scenes_layers_and_rejects_unknown_names() {
    let dir = tempfile::tempdir().unwrap();
    let exr = dir.path().join("l.exr");
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--resolution",
            "16x16",
            "--spp",
            "1",
            "--device",
            "cpu",
            "-q",
            "-o",
            exr.to_str().unwrap(),
            "--layers",
            "depth,photons_global,photons_caustic",
        ],
    );
    assert_success(&out);
    let frame = caustica::io::read_frame(&exr).unwrap();
    let names: Vec<&str> = frame.aovs.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            caustica::render::DEPTH_LAYER,
            "photons_global",
            "photons_caustic"
        ]
    );
    // The global map lights the box; the Cornell box has no specular object, so no caustics.
    let global = frame.aov("photons_global").unwrap();
    assert!(global.pixels.iter().sum::<f32>() > 0.0);
    let caustic = frame.aov("photons_caustic").unwrap();
    assert!(caustic.pixels.iter().all(|&v| v == 0.0));

    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--device",
            "cpu",
            "-o",
            dir.path().join("x.exr").to_str().unwrap(),
            "--layers",
            "depth,photons",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--layers: unknown layer \"photons\""),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("x.exr").exists());
}

#[test]
fn info_gpu_lists_the_adapters_with_the_indices_devices_takes() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(dir.path(), &["info", "--gpu"]);
    assert_success(&out);
    let text = stdout(&out);
    if caustica::gpu_required() {
        // CI: lavapipe, a software adapter, listed first on Vulkan.
        assert!(text.starts_with("0  "), "{text}");
        assert!(text.contains("(Vulkan, Cpu"), "{text}");
    } else {
        assert!(
            text.starts_with("0  ") || text.contains("no GPU adapter found"),
            "{text}"
        );
    }
}

#[test]
fn render_on_a_device_that_does_not_exist_is_a_usage_error_listing_the_adapters() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--devices",
            "0,99",
            "-o",
            "d_####.exr",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // Adapter 0 is there in CI (lavapipe); on a machine with none, 0 is the one missing.
    assert!(
        err.contains("--devices 0,99: there is no GPU adapter "),
        "{err}"
    );
    assert!(
        err.contains("the adapters found:\n  0  ") || err.contains("no adapter was found"),
        "{err}"
    );
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn a_frame_that_cannot_be_written_stops_an_animation_with_no_partial_file() {
    // Frames are written on threads of their own while later frames render: a write that fails
    // must still stop the render with the path named, and leave only whole files.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("f_0002.exr")).unwrap();
    let out = render_animated(dir.path(), "1..4", "f_####.exr", &[]);
    assert_clean_failure(&out);
    let err = stderr(&out);
    assert!(err.contains("cannot write \"f_0002.exr\""), "{err}");
    assert_no_temporaries(dir.path());
    for file in files_under(dir.path()) {
        caustica::io::read_frame(&dir.path().join(&file))
            .unwrap_or_else(|e| panic!("{} is not a whole EXR: {e}", file.display()));
    }
}

#[test]
fn three_shards_render_the_range_exactly_once_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut rendered: Vec<String> = Vec::new();
    for shard in ["0/3", "1/3", "2/3"] {
        let out = render_animated(dir.path(), "1..7", "s_####.exr", &["--shard", shard]);
        assert_success(&out);
        rendered.extend(
            stdout(&out)
                .lines()
                .filter_map(|l| l.strip_prefix("frame "))
                .map(|l| l.split(':').next().unwrap().to_string()),
        );
    }
    rendered.sort_by_key(|f| f.parse::<i64>().unwrap());
    assert_eq!(
        rendered,
        ["1", "2", "3", "4", "5", "6", "7"],
        "each frame once"
    );
    let expected: Vec<PathBuf> = (1..=7)
        .map(|f| PathBuf::from(format!("s_{f:04}.exr")))
        .collect();
    assert_eq!(files_under(dir.path()), expected);
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("animated.csc").to_str().unwrap(),
            "--device",
            "cpu",
            "--frames",
            "1..2",
            "--shard",
            "5/8",
        ],
    );
    assert_success(&out);
    assert!(
        stdout(&out).contains("nothing to render"),
        "{}",
        stdout(&out)
    );
    let bad = caustica(dir.path(), &["render", "x.csc", "--shard", "3/3"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("0 <= I < N"), "{}", stderr(&bad));
}

#[test]
fn frame_lists_with_steps_render_exactly_the_frames_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = render_animated(dir.path(), "2,10..14:2,3", "l_####.exr", &["-q"]);
    assert_success(&out);
    let expected: Vec<PathBuf> = [2, 3, 10, 12, 14]
        .iter()
        .map(|f| PathBuf::from(format!("l_{f:04}.exr")))
        .collect();
    assert_eq!(files_under(dir.path()), expected);
}

#[test]
fn a_frame_outside_the_scenes_range_is_a_usage_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = render_animated(dir.path(), "20..30", "o_####.exr", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("frame 25 is outside the scene's frames 1..24"),
        "{}",
        stderr(&out)
    );
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn several_frames_into_a_pattern_without_hashes_get_their_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = render_animated(dir.path(), "1..2", "shot.exr", &["-q"]);
    assert_success(&out);
    assert_eq!(
        files_under(dir.path()),
        [
            PathBuf::from("shot_0001.exr"),
            PathBuf::from("shot_0002.exr")
        ]
    );
}

/// Renders `frames` of `animated.csc` at 8×6 on the CPU into `output`, with `extra` arguments.
fn render_animated(dir: &Path, frames: &str, output: &str, extra: &[&str]) -> Output {
    let s = scene("animated.csc");
    let mut args = vec![
        "render",
        s.to_str().unwrap(),
        "--device",
        "cpu",
        "--frames",
        frames,
        "--resolution",
        "8x6",
        // The frame bookkeeping is the subject, not the light: Whitted keeps these fast.
        "--integrator",
        "whitted",
        "-o",
        output,
    ];
    args.extend(extra);
    caustica(dir, &args)
}

#[test]
fn skip_existing_leaves_a_finished_frame_alone_and_renders_the_others() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s_0002.exr"), b"keep").unwrap();
    let out = render_animated(dir.path(), "1..3", "s_####.exr", &["--skip-existing"]);
    assert_success(&out);
    assert!(
        stdout(&out).contains("frame 2: skipped (s_0002.exr exists)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read(dir.path().join("s_0002.exr")).unwrap(),
        b"keep"
    );
    for f in [1, 3] {
        caustica::io::read_frame(&dir.path().join(format!("s_{f:04}.exr"))).unwrap();
    }
    assert_no_temporaries(dir.path());
}

#[test]
fn placeholders_skip_a_frame_another_job_claimed_and_replace_their_own_whole() {
    let dir = tempfile::tempdir().unwrap();
    // Another machine claimed frame 2 and is still rendering it.
    std::fs::write(dir.path().join("s_0002.exr"), b"").unwrap();
    let out = render_animated(dir.path(), "1..3", "s_####.exr", &["--placeholders"]);
    assert_success(&out);
    assert!(
        stdout(&out).contains("frame 2: skipped"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("s_0002.exr"))
            .unwrap()
            .len(),
        0
    );
    for f in [1, 3] {
        caustica::io::read_frame(&dir.path().join(format!("s_{f:04}.exr"))).unwrap();
    }
    assert_no_temporaries(dir.path());
    // Without --placeholders or --skip-existing, every frame is rendered again.
    let out = render_animated(dir.path(), "1..3", "s_####.exr", &[]);
    assert_success(&out);
    caustica::io::read_frame(&dir.path().join("s_0002.exr")).unwrap();
}

#[test]
fn compare_with_a_tolerance_exits_1_when_the_images_differ_by_more() {
    let dir = tempfile::tempdir().unwrap();
    for seed in ["1", "2"] {
        let out = caustica(
            dir.path(),
            &[
                "render",
                scene("cornell_point.csc").to_str().unwrap(),
                "--device",
                "cpu",
                "--resolution",
                "8x8",
                "--seed",
                seed,
                "--integrator",
                "whitted",
                "-q",
                "-o",
                &format!("seed{seed}_####.exr"),
            ],
        );
        assert_success(&out);
    }
    let compare = |a: &str, b: &str, tolerance: &str| {
        caustica(dir.path(), &["compare", a, b, "--tolerance", tolerance])
    };
    let same = compare("seed1_0001.exr", "seed1_0001.exr", "0");
    assert_success(&same);
    assert!(
        stdout(&same).starts_with("relmse 0.000000"),
        "{}",
        stdout(&same)
    );
    let apart = compare("seed1_0001.exr", "seed2_0001.exr", "0");
    assert_eq!(apart.status.code(), Some(1), "{}", stderr(&apart));
    assert!(
        stdout(&apart).starts_with("relmse "),
        "the figures are still printed"
    );
    assert!(
        stderr(&apart).contains("is above the tolerance 0"),
        "{}",
        stderr(&apart)
    );
    assert_success(&compare("seed1_0001.exr", "seed2_0001.exr", "1000"));
    let bad = compare("seed1_0001.exr", "seed2_0001.exr", "-1");
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

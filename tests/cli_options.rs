//! The command line's options for users of pbrt, Mitsuba and Blender (issue 13): `-D`
//! overrides and string variables, PNG output with exposure, `compare --diff` and PNG input,
//! quiet and verbose levels, `--threads`, warnings once per run, progress lines off a terminal,
//! and the exact text of the messages users meet first (golden tests).

mod support;

use std::path::Path;

use support::cli::{
    assert_clean_failure, assert_success, caustica, caustica_with, files_under, scene, stderr,
    stdout, write_scene,
};

/// One lit floor, three frames, Whitted (fast), with a top-level number, vector and string
/// that `-D` can override, and an unused variable (a warning).
const SCENE: &str = "\
let side = 4
let colour = [0.7, 0.7, 0.7]
let folder = \"out/\"
let unused = 1
camera { position 0 1 4  look_at 0 0 0  fov 40 }
film { resolution 8 6 spp 1 integrator whitted }
material white { diffuse (colour) }
mesh floor { quad size side side }
instance { mesh floor material white }
light point { position 0 2 0 power 50 50 50 }
output { path (folder + \"f_####.exr\") }
frames 1..3
";

fn mean_colour(path: &Path) -> f32 {
    let frame = caustica::io::read_frame(path).unwrap();
    frame.color.iter().map(|c| c.x + c.y + c.z).sum::<f32>() / frame.color.len() as f32
}

#[test]
fn a_define_overrides_a_number_a_vector_and_a_string_let() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let render = |defines: &[&str]| {
        let mut args = vec!["render", "s.csc", "--frames", "1", "-q"];
        for d in defines {
            args.extend(["-D", d]);
        }
        assert_success(&caustica(dir.path(), &args));
    };
    render(&[]);
    render(&["side=8", "folder=big/"]);
    render(&["side=8", "folder=dark/", "colour=[0.35, 0.35, 0.35]"]);
    let frame = |folder: &str| {
        caustica::io::read_frame(&dir.path().join(folder).join("f_0001.exr")).unwrap()
    };
    let coverage = |f: &caustica::render::Frame| f.alpha.iter().sum::<f32>();
    // The string named the folders; the larger floor covers more of the image; half the
    // albedo halves the (direct) light.
    let (plain, big, dark) = (frame("out"), frame("big"), frame("dark"));
    assert!(
        coverage(&big) > coverage(&plain),
        "side=8 did not enlarge the floor"
    );
    let (b, d) = (
        mean_colour(&dir.path().join("big/f_0001.exr")),
        mean_colour(&dir.path().join("dark/f_0001.exr")),
    );
    assert!(b > 0.0 && (d / b - 0.5).abs() < 1e-3, "{b} then {d}");
    assert_eq!(coverage(&dark), coverage(&big));
    let check = caustica(dir.path(), &["check", "s.csc", "-D", "side=2"]);
    assert_success(&check);
}

#[test]
fn define_errors_are_one_exact_line_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    for (define, expected) in [
        (
            "sied=2",
            "error: -D sied=2: the scene has no top-level `let sied` (did you mean \"side\"?); \
             it defines colour, folder, side, unused\n",
        ),
        ("side", "error: -D side: expected NAME=VALUE\n"),
        (
            "colour=[1,x]",
            "error: -D colour=[1,x]: \"x\" is not a finite number\n",
        ),
    ] {
        let out = caustica(dir.path(), &["render", "s.csc", "-D", define]);
        assert_eq!(out.status.code(), Some(2), "{define}: {}", stderr(&out));
        assert_eq!(stderr(&out), expected, "{define}");
    }
    // A string where the scene needs a number is an error at the place it is used.
    let out = caustica(dir.path(), &["check", "s.csc", "-D", "side=\"big\""]);
    assert_clean_failure(&out);
    assert!(
        stderr(&out).contains("s.csc:8:24: error: \"size\" takes numbers, found a string"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files_under(dir.path()), [Path::new("s.csc")]);
}

#[test]
fn frame_shard_spp_and_preview_errors_are_exact_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    for (args, expected) in [
        (
            &["--frames", "3..1"][..],
            "error: bad frame range \"3..1\": the last frame comes before the first\n",
        ),
        (
            &["--frames", "1..x"][..],
            "error: bad frame range \"1..x\": expected a frame number, A..B or A..B:STEP \
             (items separated by commas)\n",
        ),
        (
            &["--frames", "7"][..],
            "error: frame 7 is outside the scene's frames 1..3\n",
        ),
        (
            &["--spp", "0"][..],
            "error: invalid value '0' for '--spp <N>': 0 is not in 1..=16777216\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["--frames", "1", "-o", "one.exr", "--preview", "one.exr"][..],
            "warning: s.csc:4:5: variable \"unused\" is never used\n\
             error: --preview: \"one.exr\" is the frame's output image as well; give the preview \
             a path of its own\n",
        ),
        (
            &["--spp", "4294967295"][..],
            "error: invalid value '4294967295' for '--spp <N>': 4294967295 is not in \
             1..=16777216\n\nFor more information, try '--help'.\n",
        ),
        (
            &[
                "--frames",
                "1",
                "--resolution",
                "16384x16384",
                "--spp",
                "16777216",
            ][..],
            "warning: s.csc:4:5: variable \"unused\" is never used\n\
             error: with the command line's settings, 16384x16384 pixels at 16777216 samples \
             each are 4503599627370496 camera rays, more than the 1099511627776 one frame may \
             trace\n",
        ),
        (
            &["--frames", "1", "--resolution", "65536x65536"][..],
            "warning: s.csc:4:5: variable \"unused\" is never used\n\
             error: with the command line's settings, a 65536x65536 image has 4294967296 pixels, \
             more than the 268435456 (16384x16384) a frame may have\n",
        ),
        (
            &["--shard", "3/3"][..],
            "error: invalid value '3/3' for '--shard <I/N>': bad shard \"3/3\": expected I/N \
             with 0 <= I < N, e.g. 0/4\n\nFor more information, try '--help'.\n",
        ),
    ] {
        let mut full = vec!["render", "s.csc"];
        full.extend(args);
        let out = caustica(dir.path(), &full);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), expected, "{args:?}");
    }
}

/// The environment of a machine without a Vulkan driver: the loader is pointed at none.
const NO_GPU: [(&str, &str); 2] = [
    ("VK_ICD_FILENAMES", "/nonexistent/icd.json"),
    ("WGPU_BACKEND", "vulkan"),
];

#[test]
fn without_a_gpu_auto_warns_in_one_line_and_device_gpu_fails_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let auto = caustica_with(
        dir.path(),
        &["render", "s.csc", "--frames", "1", "-q"],
        &NO_GPU,
    );
    assert_success(&auto);
    // The scene's own warning comes first: the frames are evaluated before the devices open.
    assert_eq!(
        stderr(&auto),
        "warning: s.csc:4:5: variable \"unused\" is never used\nwarning: no GPU adapter found; \
         rendering on the CPU (set RUST_LOG=wgpu=warn for details)\n"
    );
    let gpu = caustica_with(
        dir.path(),
        &["render", "s.csc", "--frames", "1", "--device", "gpu"],
        &NO_GPU,
    );
    assert_clean_failure(&gpu);
    assert_eq!(
        stderr(&gpu),
        "warning: s.csc:4:5: variable \"unused\" is never used\nerror: --device gpu: no GPU adapter found\n  hint: install a Vulkan driver (`caustica \
         info --gpu` lists the adapters found), or render with --device cpu or --device auto; \
         RUST_LOG=wgpu=warn shows why none was found\n"
    );
    // --log-level error leaves only errors.
    let quiet = caustica_with(
        dir.path(),
        &[
            "render",
            "s.csc",
            "--frames",
            "1",
            "-q",
            "--log-level",
            "error",
        ],
        &NO_GPU,
    );
    assert_success(&quiet);
    assert_eq!(stderr(&quiet), "");
}

#[test]
fn a_warning_of_the_scene_is_printed_once_for_all_frames() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let out = caustica(dir.path(), &["render", "s.csc", "--device", "cpu", "-q"]);
    assert_success(&out);
    assert_eq!(
        stderr(&out)
            .matches("variable \"unused\" is never used")
            .count(),
        1,
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out).matches(": out/f_000").count(), 3);
}

#[test]
fn quiet_levels_hide_progress_then_frame_lines_and_progress_goes_to_stderr_as_lines() {
    let dir = tempfile::tempdir().unwrap();
    // Without the unused variable: no warning.
    write_scene(dir.path(), "s.csc", &SCENE.replace("let unused = 1\n", ""));
    let run = |extra: &[&str]| {
        let mut args = vec!["render", "s.csc", "--device", "cpu"];
        args.extend(extra);
        let out = caustica(dir.path(), &args);
        assert_success(&out);
        out
    };
    // Off a terminal: a line as each frame enters a phase, and the sequence's count and ETA.
    let loud = run(&[]);
    let err = stderr(&loud);
    for frame in 1..=3 {
        assert!(err.contains(&format!("frame {frame}: shading\n")), "{err}");
    }
    assert!(err.contains("3/3 frames, "), "{err}");
    assert!(err.contains(" elapsed, ETA "), "{err}");
    assert!(stdout(&loud).contains("frame 3: out/f_0003.exr"));
    let q = run(&["-q"]);
    assert_eq!(stderr(&q), "");
    assert_eq!(stdout(&q).lines().count(), 4, "{}", stdout(&q));
    let qq = run(&["-qq"]);
    assert_eq!((stdout(&qq).as_str(), stderr(&qq).as_str()), ("", ""));
}

#[test]
fn verbose_shows_info_lines_with_their_module() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let out = caustica(
        dir.path(),
        &[
            "render", "s.csc", "--device", "cpu", "--frames", "1", "--passes", "2", "-q", "-v",
        ],
    );
    assert_success(&out);
    assert!(
        stderr(&out).contains("info: caustica::jobs: frame 1: pass 2 done at"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn threads_sets_the_worker_count_and_does_not_change_the_image() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let mut images = Vec::new();
    for threads in ["1", "2"] {
        let out = caustica(
            dir.path(),
            &[
                "render",
                "s.csc",
                "--device",
                "cpu",
                "--frames",
                "1",
                "--threads",
                threads,
                "--stats",
                "-D",
                &format!("folder=t{threads}/"),
            ],
        );
        assert_success(&out);
        let line = stdout(&out)
            .lines()
            .find(|l| l.trim_start().starts_with("host threads"))
            .map(|l| l.split_whitespace().last().unwrap().to_string());
        assert_eq!(line.as_deref(), Some(threads), "{}", stdout(&out));
        let frame =
            caustica::io::read_frame(&dir.path().join(format!("t{threads}/f_0001.exr"))).unwrap();
        images.push(frame.color);
    }
    assert_eq!(images[0], images[1]);
    let zero = caustica(dir.path(), &["render", "s.csc", "--threads", "0"]);
    assert_eq!(zero.status.code(), Some(2));
}

#[test]
fn an_output_ending_in_png_writes_a_png_whose_exposure_follows_the_option() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let mut means = Vec::new();
    for (exposure, name) in [("0", "a_####.png"), ("-2", "b_####.png")] {
        let out = caustica(
            dir.path(),
            &[
                "render",
                "s.csc",
                "--frames",
                "2",
                "-q",
                "-o",
                name,
                "--exposure",
                exposure,
            ],
        );
        assert_success(&out);
        let png = dir.path().join(name.replace("####", "0002"));
        let image = image::open(&png)
            .unwrap_or_else(|e| panic!("{}: {e}", png.display()))
            .to_rgb8();
        assert_eq!(image.dimensions(), (8, 6));
        means.push(image.pixels().map(|p| p.0[1] as f32).sum::<f32>() / 48.0);
    }
    assert!(means[1] < means[0], "exposure -2 is not darker: {means:?}");
    assert!(!dir.path().join("a_0002.exr").exists());
}

#[test]
fn compare_reads_png_writes_a_false_colour_diff_and_refuses_other_sizes() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    for (define, output) in [
        ("colour=[0.7,0.7,0.7]", "a.exr"),
        ("colour=[0.35,0.35,0.35]", "b.png"),
    ] {
        let out = caustica(
            dir.path(),
            &[
                "render", "s.csc", "--frames", "1", "-q", "-D", define, "-o", output,
            ],
        );
        assert_success(&out);
    }
    // An EXR against a PNG of half the albedo: far apart, and the diff shows where.
    let out = caustica(
        dir.path(),
        &["compare", "a.exr", "b.png", "--diff", "diff.png"],
    );
    assert_success(&out);
    assert!(stdout(&out).starts_with("relmse "), "{}", stdout(&out));
    let diff = image::open(dir.path().join("diff.png")).unwrap().to_rgb8();
    assert_eq!(diff.dimensions(), (8, 6));
    assert!(diff.pixels().any(|p| p.0 != [0, 0, 0]));
    // The same PNG against itself: every pixel black.
    let same = caustica(
        dir.path(),
        &["compare", "b.png", "b.png", "--diff", "same.png"],
    );
    assert_success(&same);
    let same = image::open(dir.path().join("same.png")).unwrap().to_rgb8();
    assert!(same.pixels().all(|p| p.0 == [0, 0, 0]));
    // Another size is a usage error.
    let small = caustica(
        dir.path(),
        &[
            "render",
            "s.csc",
            "--frames",
            "1",
            "-q",
            "--resolution",
            "4x3",
            "-o",
            "c.exr",
        ],
    );
    assert_success(&small);
    let out = caustica(dir.path(), &["compare", "a.exr", "c.exr"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: a.exr is 8x6 but c.exr is 4x3\n");
}

/// An image holding NaN or infinity has no relative error to measure: `compare` refuses it,
/// naming the file, the count and the first such pixel (issue 15: it was accepted silently).
#[test]
fn compare_refuses_an_image_with_nan_or_infinite_pixels() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bad) in [
        ("good.exr", None),
        ("nan.exr", Some((f32::NAN, 5, 1))),
        ("inf.exr", Some((f32::INFINITY, 0, 0))),
    ] {
        exr::prelude::write_rgb_file(dir.path().join(name), 8, 6, |x, y| match bad {
            Some((v, bx, by)) if (x, y) == (bx, by) || (x, y) == (7, 5) => (v, 0.5, 0.5),
            _ => (0.5, 0.5, 0.5),
        })
        .unwrap();
    }
    for (args, expected) in [
        (
            ["compare", "nan.exr", "good.exr"],
            "error: nan.exr has 2 pixels that are not finite numbers (the first at x 5, y 1): they have no error to measure\n",
        ),
        (
            ["compare", "good.exr", "inf.exr"],
            "error: inf.exr has 2 pixels that are not finite numbers (the first at x 0, y 0): they have no error to measure\n",
        ),
    ] {
        let out = caustica(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), expected, "{args:?}");
    }
    assert_success(&caustica(dir.path(), &["compare", "good.exr", "good.exr"]));
}

#[test]
fn the_default_integrator_of_an_example_scene_is_photon_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let out = caustica(
        dir.path(),
        &[
            "render",
            scene("cornell_point.csc").to_str().unwrap(),
            "--device",
            "cpu",
            "--resolution",
            "8x8",
            "-q",
            "--stats",
            "-o",
            "p.exr",
        ],
    );
    assert_success(&out);
    assert!(stdout(&out).contains("gather/seeds"), "{}", stdout(&out));
}

#[test]
fn crop_writes_the_full_size_exr_with_the_window_as_data_window_and_rejects_bad_windows() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", &SCENE.replace("let unused = 1\n", ""));
    let render = |extra: &[&str], output: &str| {
        let mut args = vec!["render", "s.csc", "--frames", "1", "-q", "-o", output];
        args.extend(extra);
        caustica(dir.path(), &args)
    };
    assert_success(&render(&[], "full.exr"));
    assert_success(&render(&["--crop", "0.25,0.75,0,0.5"], "crop.exr"));
    let full = caustica::io::read_frame(&dir.path().join("full.exr")).unwrap();
    let crop = caustica::io::read_frame(&dir.path().join("crop.exr")).unwrap();
    // 8 × 6 pixels: columns 2..6 of rows 0..3.
    assert_eq!((crop.width, crop.height), (8, 6));
    // The header's standard camera matrices, primaries and render time.
    let meta = exr::meta::MetaData::read_from_file(dir.path().join("crop.exr"), false).unwrap();
    let header = &meta.headers[0];
    assert!(header.own_attributes.world_to_camera.is_some());
    assert!(header.own_attributes.world_to_normalized_device.is_some());
    assert!(header.shared_attributes.chromaticities.is_some());
    let time = exr::meta::attribute::Text::from("renderTimeSeconds");
    assert!(header.own_attributes.other.contains_key(&time));
    assert_eq!(crop.metadata.data_window, Some([2, 0, 6, 3]));
    for i in 0..48 {
        let (x, y) = (i % 8, i / 8);
        if (2..6).contains(&x) && y < 3 {
            assert_eq!(crop.color[i], full.color[i], "({x}, {y})");
        } else {
            assert_eq!(crop.alpha[i], 0.0, "({x}, {y})");
        }
    }
    for (bad, expected) in [
        (
            "0.5,0.25,0,1",
            "error: --crop: crop window 0.5,0.25,0,1: expected X0,X1,Y0,Y1 with 0 <= X0 < X1 <= \
             1 and 0 <= Y0 < Y1 <= 1\n",
        ),
        (
            "0,1,0",
            "error: --crop 0,1,0: expected four numbers X0,X1,Y0,Y1\n",
        ),
        (
            "0.01,0.02,0,1",
            "error: --crop: the window holds no pixel of the 8x6 image\n",
        ),
    ] {
        let out = render(&["--crop", bad], "bad.exr");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert_eq!(stderr(&out), expected, "{bad}");
    }
}

#[test]
fn a_preview_pattern_without_hashes_is_numbered_when_several_frames_render() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let out = caustica(
        dir.path(),
        &[
            "render",
            "s.csc",
            "--frames",
            "1,3",
            "-q",
            "--preview",
            "p.png",
        ],
    );
    assert_success(&out);
    let mut pngs: Vec<_> = files_under(dir.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    pngs.sort();
    assert_eq!(pngs, [Path::new("p_0001.png"), Path::new("p_0003.png")]);
}

/// On a terminal (a pseudo-terminal from util-linux's `script`), the progress is indicatif
/// bars: one for the sequence with its ETA and one per frame with its phase.
#[cfg(target_os = "linux")]
#[test]
fn on_a_terminal_progress_draws_a_sequence_bar_with_eta_and_a_bar_per_frame() {
    let dir = tempfile::tempdir().unwrap();
    // Photon-mapped frames of 200,000 + 100,000 photons: long enough for the bars to draw.
    write_scene(
        dir.path(),
        "s.csc",
        &SCENE
            .replace("let unused = 1\n", "")
            .replace(" integrator whitted", ""),
    );
    let command = format!(
        "{} render s.csc --device cpu --frames 1..2",
        env!("CARGO_BIN_EXE_caustica")
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .env_remove("RUST_LOG")
        .env("TERM", "xterm")
        .output()
        .expect("util-linux's script runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("/2 frames ["), "no sequence bar in {text:?}");
    assert!(text.contains("ETA"), "no ETA in {text:?}");
    assert!(
        ["photons", "shading", "gather"]
            .iter()
            .any(|phase| text.contains(phase)),
        "no phase in {text:?}"
    );
    // The plain lines are for logs only.
    assert!(!text.contains("frame 1: shading"), "{text:?}");
}

/// `--accel` picks the hierarchy's layout; the image does not depend on it, a bad layout or
/// builder is one usage error, and `info --accels` lists the choices.
#[test]
fn accel_picks_the_layout_without_changing_the_image_and_bad_choices_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", SCENE);
    let mut images = Vec::new();
    for accel in [
        "qbvh",
        "wide:cpu_sah",
        "binary",
        "wide:gpu_lbvh",
        "wide:gpu_sah",
        "wide:gpu_hybrid",
        "wide:gpu_ploc",
    ] {
        let folder = accel.replace(':', "_");
        let out = caustica(
            dir.path(),
            &[
                "render",
                "s.csc",
                "--device",
                "cpu",
                "--frames",
                "1",
                "--accel",
                accel,
                "-D",
                &format!("folder={folder}/"),
                "-q",
            ],
        );
        assert_success(&out);
        let frame =
            caustica::io::read_frame(&dir.path().join(format!("{folder}/f_0001.exr"))).unwrap();
        images.push(frame.color);
    }
    for (k, image) in images.iter().enumerate() {
        assert_eq!(&images[0], image, "image {k}");
    }
    for (accel, expected) in [
        (
            "octree",
            "error: --accel octree: unknown layout \"octree\": expected one of qbvh, wide, binary\n",
        ),
        (
            "wide:gpu_sha",
            "error: --accel wide:gpu_sha: unknown builder \"gpu_sha\": expected one of cpu_sah, gpu_lbvh, gpu_sah, gpu_hybrid, gpu_ploc, grid, kdtree\n",
        ),
        (
            "qbvh:gpu_lbvh",
            "error: --accel qbvh:gpu_lbvh: gpu_lbvh builds the wide layout only (use wide:gpu_lbvh, or qbvh:cpu_sah)\n",
        ),
    ] {
        let out = caustica(dir.path(), &["render", "s.csc", "--accel", accel]);
        assert_eq!(out.status.code(), Some(2), "{accel}");
        assert_eq!(stderr(&out), expected);
    }
    let info = caustica(dir.path(), &["info", "--accels"]);
    assert_success(&info);
    for choice in [
        "qbvh:cpu_sah",
        "wide:cpu_sah",
        "binary:cpu_sah",
        "wide:gpu_lbvh",
        "wide:gpu_sah",
        "wide:gpu_hybrid",
        "wide:gpu_ploc",
        "wide:grid",
        "qbvh:grid",
    ] {
        assert!(stdout(&info).contains(choice), "{}", stdout(&info));
    }
    assert!(
        !stdout(&info).contains("qbvh:gpu_lbvh"),
        "{}",
        stdout(&info)
    );
}

//! Hostile inputs (issue 15), end to end through `caustica check`: each gets its exact error or
//! warning, at its place, with no panic and nothing written. Limits on how much a frame asks
//! for are in `tests/lang_errors.rs`, frame ranges in `tests/cli.rs`, EXR headers in
//! `tests/io_maps.rs`.

mod support;

use std::path::Path;

use support::cli::{assert_clean_failure, assert_success, caustica, stderr, write_scene};

/// A camera, a material `m` and a point light, then `rest`.
fn scene_with(rest: &str) -> String {
    format!(
        "camera {{ position 0 1 3 look_at 0 0 0 fov 40 }}\n\
         material m {{ diffuse 0.5 }}\n\
         light point {{ position 0 2 0 power 10 }}\n\
         {rest}\n"
    )
}

/// `caustica check` of `text` (as `s.csc` in `dir`): its standard error, and whether it passed.
fn check(dir: &Path, text: &str) -> (String, bool) {
    write_scene(dir, "s.csc", text);
    let out = caustica(dir, &["check", "s.csc"]);
    let passed = out.status.success();
    if !passed {
        assert_clean_failure(&out);
    } else {
        assert_success(&out);
    }
    (stderr(&out), passed)
}

fn assert_fails_with(dir: &Path, text: &str, expected: &str) {
    let (err, passed) = check(dir, text);
    assert!(!passed, "expected a failure with {expected:?}, got:\n{err}");
    assert!(err.contains(expected), "expected\n{expected}\nin\n{err}");
}

fn assert_warns(dir: &Path, text: &str, expected: &str) {
    let (err, passed) = check(dir, text);
    assert!(passed, "expected success with a warning, got:\n{err}");
    assert!(err.contains(expected), "expected\n{expected}\nin\n{err}");
}

/// A name of 10 MB used to take minutes and gigabytes (its "did you mean" compared it with
/// every name); names longer than 256 characters and strings longer than 4096 bytes are errors
/// at their start, and the source line they are on is shown cut to 200 characters.
#[test]
fn overlong_names_and_strings_are_errors_and_long_lines_are_shown_cut() {
    let dir = tempfile::tempdir().unwrap();
    let name = "a".repeat(10_000_000);
    let text = scene_with(&format!("material {name} {{ diffuse 0.5 }}"));
    let (err, passed) = check(dir.path(), &text);
    assert!(!passed);
    assert!(
        err.starts_with("s.csc:4:10: error: a name longer than 256 characters\n"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(err.len() < 1000, "the message is {} bytes long", err.len());
    let long = "b".repeat(5000);
    assert_fails_with(
        dir.path(),
        &scene_with(&format!("let x = \"{long}\"")),
        "s.csc:4:9: error: a string longer than 4096 bytes",
    );
    // A name of 256 characters is fine.
    let name = "c".repeat(256);
    let (err, passed) = check(
        dir.path(),
        &scene_with(&format!(
            "material {name} {{ diffuse 0.5 }}\nmesh q {{ quad size 1 1 }}\n\
             instance {{ mesh q material {name} }}"
        )),
    );
    assert!(passed, "{err}");
}

/// Directions are normalized in double precision: `1e38 1e38 1e38`, whose length overflows
/// f32, is a direction like any other, and a zero one is an error.
#[test]
fn a_huge_direction_is_a_direction_and_a_zero_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let quad = "mesh q { quad size 1 1 }\ninstance { mesh q material m }";
    let (err, passed) = check(
        dir.path(),
        &scene_with(&format!(
            "{quad}\nlight sun {{ direction 1e38 1e38 -1e38 irradiance 1 }}\n\
             light spot {{ position 0 1 0 direction 1e38 -1e38 0 power 1 }}"
        )),
    );
    assert!(passed, "{err}");
    assert_fails_with(
        dir.path(),
        &scene_with(&format!(
            "{quad}\nlight sun {{ direction 0 0 0 irradiance 1 }}"
        )),
        "s.csc:6:13: error: the light's direction is zero",
    );
}

/// A light whose strength is zero lights nothing: a warning at the light.
#[test]
fn a_light_of_zero_strength_is_a_warning_at_the_light() {
    let dir = tempfile::tempdir().unwrap();
    assert_warns(
        dir.path(),
        &scene_with(
            "mesh q { quad size 1 1 }\ninstance { mesh q material m }\n\
             light quad { center 0 1 0 size 1 1 radiance 0 }",
        ),
        "warning: s.csc:6:1: the quad light's strength is 0: it lights nothing",
    );
}

/// Faces without an area render as nothing: a mesh of nothing else is an error, one with some
/// a warning; an OBJ file's warning names the line of the first such face, and of the first
/// statement skipped for having fewer than three corners.
#[test]
fn faces_without_an_area_are_a_warning_or_an_error_when_nothing_else_is_left() {
    let dir = tempfile::tempdir().unwrap();
    assert_fails_with(
        dir.path(),
        &scene_with(
            "mesh t { vertices 0 0 0 1 0 0 2 0 0 triangles 0 1 2 }\ninstance { mesh t material m }",
        ),
        "s.csc:4:1: error: mesh \"t\" has no face with an area (1 faces, 1 of them without one): nothing of it can render",
    );
    assert_warns(
        dir.path(),
        &scene_with(
            "mesh t { vertices 0 0 0 1 0 0 2 0 0 0 1 0 triangles 0 1 2 0 1 3 }\n\
             instance { mesh t material m }",
        ),
        "warning: s.csc:4:1: mesh \"t\": 1 of its 2 faces have no area (collinear or repeated corners): they render as nothing",
    );
    std::fs::write(
        dir.path().join("flat.obj"),
        "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 4\nl 1 2\n",
    )
    .unwrap();
    let (err, passed) = check(
        dir.path(),
        &scene_with("mesh t { file \"flat.obj\" }\ninstance { mesh t material m }"),
    );
    assert!(passed, "{err}");
    assert!(
        err.contains("flat.obj:5: 1 faces have no area (collinear or repeated corners; the first on this line): they render as nothing unless displaced"),
        "{err}"
    );
    assert!(
        err.contains("flat.obj:7: skipped 1 points, lines and faces with fewer than three corners (the first on this line)"),
        "{err}"
    );
}

/// An empty OBJ, one of lines only, and random bytes named `.obj` are errors at the file's
/// name: nothing to render, or binary data at the line and column of its first zero byte.
#[test]
fn empty_and_binary_obj_files_are_errors_at_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let use_file = |file: &str| {
        scene_with(&format!(
            "mesh t {{ file \"{file}\" }}\ninstance {{ mesh t material m }}"
        ))
    };
    std::fs::write(dir.path().join("empty.obj"), "").unwrap();
    assert_fails_with(
        dir.path(),
        &use_file("empty.obj"),
        "s.csc:4:15: error: cannot load mesh \"empty.obj\": nothing to render: it has no faces",
    );
    std::fs::write(dir.path().join("lines.obj"), "v 0 0 0\nv 1 0 0\nl 1 2\n").unwrap();
    assert_fails_with(
        dir.path(),
        &use_file("lines.obj"),
        "nothing to render: it has no faces, only 1 points, lines and faces of fewer than three corners",
    );
    let mut garbage = b"v 0 0 0\n".to_vec();
    garbage.extend([0x12u8, 0x00, 0xff, 0x7f]);
    std::fs::write(dir.path().join("garbage.obj"), garbage).unwrap();
    assert_fails_with(
        dir.path(),
        &use_file("garbage.obj"),
        "garbage.obj:2:2: a zero byte: this is binary data, not a text file",
    );
}

/// Texels a renderer cannot use: a texture's or an environment map's NaN or infinity, and a VD
/// map's displacement beyond ±1e6, are errors naming the texel; an albedo texture outside 0..1
/// is a warning naming the first texel there.
#[test]
fn unusable_texels_are_errors_naming_the_texel_and_out_of_range_albedo_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, texel: (f32, f32, f32)| {
        exr::prelude::write_rgb_file(dir.path().join(name), 4, 3, |x, y| {
            if (x, y) == (2, 1) {
                texel
            } else {
                (0.5, 0.5, 0.5)
            }
        })
        .unwrap();
    };
    write("nan.exr", (0.5, f32::NAN, 0.5));
    write("bright.exr", (0.5, 1.5, 0.5));
    write("far.exr", (0.0, 1e30, 0.0));
    let quad = "mesh q { quad size 1 1 }\ninstance { mesh q material t }";
    assert_fails_with(
        dir.path(),
        &scene_with(&format!(
            "texture x {{ file \"nan.exr\" }}\nmaterial t {{ diffuse 0.5 texture x }}\n{quad}"
        )),
        "texel (2, 1) is 0.5 NaN 0.5: not finite",
    );
    assert_fails_with(
        dir.path(),
        &scene_with("light environment { file \"nan.exr\" }"),
        "texel (2, 1) is 0.5 NaN 0.5: not finite",
    );
    assert_warns(
        dir.path(),
        &scene_with(&format!(
            "texture x {{ file \"bright.exr\" }}\nmaterial t {{ diffuse 0.5 texture x }}\n{quad}"
        )),
        "bright.exr: texel (2, 1) is 0.5 1.5 0.5, outside 0..1: a surface it colours reflects more light than it receives there",
    );
    assert_fails_with(
        dir.path(),
        &scene_with(
            "vdmap bumps { file \"far.exr\" }\n\
             mesh p { quad size 1 1 displacement bumps }\ninstance { mesh p material m }",
        ),
        "texel (2, 1) is 0 1000000000000000000000000000000 0: beyond ±1e6",
    );
}

/// Gzip bombs: a gzipped OBJ or PLY holding a line of 20 MiB (a few kB compressed) is an error
/// naming the limit, before the line is held in memory.
#[test]
fn a_gzipped_mesh_with_an_endless_line_is_an_error() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let gzip = |name: &str, head: &str, line_byte: u8, tail: &str| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(head.as_bytes()).unwrap();
        encoder.write_all(&vec![line_byte; 20 << 20]).unwrap();
        encoder.write_all(tail.as_bytes()).unwrap();
        let bytes = encoder.finish().unwrap();
        assert!(bytes.len() < 100_000, "{} bytes", bytes.len());
        std::fs::write(dir.path().join(name), bytes).unwrap();
    };
    gzip("long.obj.gz", "v 0 0 0\n# ", b'x', "\n");
    gzip(
        "long.ply.gz",
        "ply\nformat ascii 1.0\ncomment ",
        b'x',
        "\nelement vertex 0\nproperty float x\nend_header\n",
    );
    gzip(
        "body.ply.gz",
        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n\
         property float z\nend_header\n0 0 ",
        b'0',
        "\n",
    );
    let use_file = |file: &str| {
        scene_with(&format!(
            "mesh t {{ file \"{file}\" }}\ninstance {{ mesh t material m }}"
        ))
    };
    assert_fails_with(
        dir.path(),
        &use_file("long.obj.gz"),
        "long.obj.gz:2:1: the line is longer than 16 MiB",
    );
    assert_fails_with(
        dir.path(),
        &use_file("long.ply.gz"),
        "a line longer than 16 MiB",
    );
    assert_fails_with(
        dir.path(),
        &use_file("body.ply.gz"),
        "a line longer than 16 MiB",
    );
}

/// Includes stay in the scene's folder tree unless `--allow-includes-outside` is given; a
/// device, a folder or an oversized (sparse, 300 MB) file is refused whatever the flag, as a
/// device is where a mesh or texture file should be.
#[test]
fn includes_stay_in_the_scenes_folder_and_devices_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("shots");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(dir.path().join("shared.csc"), "let gain = 1\n").unwrap();
    write_scene(
        &inner,
        "shot.csc",
        &scene_with("include \"../shared.csc\"\nlet g = gain\nmesh q { quad size g g }\ninstance { mesh q material m }"),
    );
    let out = caustica(&inner, &["check", "shot.csc"]);
    assert_clean_failure(&out);
    let err = stderr(&out);
    assert!(
        err.starts_with("shot.csc:4:9: error: cannot include \"../shared.csc\": it is outside the scene's folder "),
        "{err}"
    );
    assert!(
        err.contains("= note: includes stay in the scene's folder and below it unless --allow-includes-outside is given"),
        "{err}"
    );
    let out = caustica(&inner, &["check", "shot.csc", "--allow-includes-outside"]);
    assert_success(&out);
    // Never a device, a folder or a file beyond 256 MiB, even when allowed outside.
    std::fs::File::create(dir.path().join("huge.csc"))
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    for (include, why) in [
        (
            "/dev/zero",
            "it is not a regular file (a folder, a device or a pipe)",
        ),
        (
            ".",
            "it is not a regular file (a folder, a device or a pipe)",
        ),
        (
            "huge.csc",
            "it has 314572800 bytes, more than the 256 MiB a scene file may have",
        ),
    ] {
        write_scene(
            dir.path(),
            "s.csc",
            &scene_with(&format!("include \"{include}\"")),
        );
        let out = caustica(dir.path(), &["check", "s.csc", "--allow-includes-outside"]);
        assert_clean_failure(&out);
        let expected = format!("s.csc:4:9: error: cannot read \"{include}\": {why}");
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    }
    assert_fails_with(
        dir.path(),
        &scene_with("texture x { file \"/dev/urandom\" }"),
        "s.csc:4:18: error: cannot load texture \"/dev/urandom\": it is not a regular file (a folder, a device or a pipe)",
    );
}

/// A process id that no running process has (Linux: no `/proc/<pid>`).
fn dead_pid() -> u32 {
    (4_000_000..)
        .find(|pid| !Path::new("/proc").join(pid.to_string()).exists())
        .unwrap()
}

const QUICK: &str = "camera { position 0 1 3 look_at 0 0 0 fov 40 }
film { resolution 16 16 spp 1 integrator whitted }
material m { diffuse 0.5 }
mesh q { quad size 1 1 }
instance { mesh q material m }
light point { position 0 2 0 power 10 }
output { path \"out_####.exr\" }
";

/// Two renders writing one output: the second finds the first's lock beside the EXR
/// (`.out_0001.exr.lock`, holding its process id) and fails naming it, writing nothing; a lock
/// or a temporary file that a killed process left (its process no longer runs) is taken over
/// or removed by the next render.
#[cfg(target_os = "linux")]
#[test]
fn a_second_writer_of_one_output_fails_clearly_and_leftovers_of_killed_renders_are_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", QUICK);
    // A running process (this test) holds the lock.
    let lock = dir.path().join(".out_0001.exr.lock");
    std::fs::write(&lock, std::process::id().to_string()).unwrap();
    let out = caustica(dir.path(), &["render", "s.csc", "--device", "cpu", "-q"]);
    assert_clean_failure(&out);
    let expected = format!(
        "error: cannot write \"out_0001.exr\": another render (process {}) is writing it: its \
         lock is .out_0001.exr.lock; two renders must not write one output",
        std::process::id(),
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    assert!(!dir.path().join("out_0001.exr").exists());
    // A killed render's lock and temporary file.
    let dead = dead_pid();
    std::fs::write(&lock, dead.to_string()).unwrap();
    let temp = dir.path().join(format!(".out_0001.exr.tmp-{dead}-0"));
    std::fs::write(&temp, b"half a frame").unwrap();
    let out = caustica(dir.path(), &["render", "s.csc", "--device", "cpu", "-q"]);
    assert_success(&out);
    assert!(dir.path().join("out_0001.exr").exists());
    assert!(!lock.exists(), "the lock is released");
    assert!(
        !temp.exists(),
        "the dead render's temporary file is removed"
    );
}

/// SIGTERM (a farm stopping a job) or Ctrl-C mid-render: the process removes its lock and its
/// empty placeholders and exits with 130, leaving no file behind but finished frames.
#[cfg(target_os = "linux")]
#[test]
fn a_render_stopped_by_sigterm_removes_its_lock_and_placeholders() {
    for placeholders in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        // Slow enough to be stopped mid-frame.
        write_scene(
            dir.path(),
            "s.csc",
            &QUICK.replace("resolution 16 16 spp 1", "resolution 512 512 spp 4096"),
        );
        let mut args = vec!["render", "s.csc", "--device", "cpu", "-q"];
        if placeholders {
            args.push("--placeholders");
        }
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_caustica"))
            .args(&args)
            .current_dir(dir.path())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let claim = if placeholders {
            dir.path().join("out_0001.exr")
        } else {
            dir.path().join(".out_0001.exr.lock")
        };
        let start = std::time::Instant::now();
        while !claim.exists() {
            assert!(
                start.elapsed().as_secs() < 60,
                "the render never claimed its frame"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("stopped: removed 1 unfinished file(s)"),
            "{}",
            stderr(&out)
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["s.csc"], "placeholders {placeholders}");
    }
}

/// A file-size limit (`ulimit -f 4`, 4 KiB) hit while the EXR is written: the write fails with
/// "File too large" instead of SIGXFSZ killing the process, and no temporary file or lock is
/// left (as for a full disk, whose error takes the same path).
#[cfg(target_os = "linux")]
#[test]
fn a_file_size_limit_hit_mid_write_is_an_error_that_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    write_scene(dir.path(), "s.csc", QUICK);
    let command = format!(
        "ulimit -f 4; exec '{}' render s.csc --device cpu -q",
        env!("CARGO_BIN_EXE_caustica")
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &command])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_clean_failure(&out);
    assert_eq!(
        stderr(&out),
        "error: cannot write \"out_0001.exr\": File too large\n"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["s.csc"]);
}

/// The same bad input fails the same way whichever device renders: the scene is checked
/// before a device is opened, so `--device gpu` and `--device cpu` print the same error and
/// exit with the same status.
#[test]
fn bad_scenes_fail_the_same_way_on_the_gpu_and_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    exr::prelude::write_rgb_file(dir.path().join("nan.exr"), 2, 2, |_, _| {
        (f32::NAN, 0.0f32, 0.0f32)
    })
    .unwrap();
    let quad = "mesh q { quad size 1 1 }\ninstance { mesh q material m }";
    for (i, rest) in [
        format!("{quad}\nfilm {{ resolution 16384 16384 spp 16777216 }}"),
        "mesh t { vertices 0 0 0 1 0 0 2 0 0 triangles 0 1 2 }\ninstance { mesh t material m }"
            .to_string(),
        format!("{quad}\nlight sun {{ direction 0 0 0 irradiance 1 }}"),
        format!("{quad}\ntexture x {{ file \"nan.exr\" }}\nmaterial t {{ diffuse 0.5 texture x }}"),
        format!("{quad}\nphotons {{ global 4294967295 }}"),
    ]
    .iter()
    .enumerate()
    {
        let name = format!("bad{i}.csc");
        write_scene(dir.path(), &name, &scene_with(rest));
        let run = |device: &str| {
            caustica(
                dir.path(),
                &["render", &name, "--device", device, "-q", "-o", "x.exr"],
            )
        };
        let (gpu, cpu) = (run("gpu"), run("cpu"));
        assert_clean_failure(&cpu);
        assert_eq!(gpu.status.code(), cpu.status.code(), "{name}");
        assert_eq!(stderr(&gpu), stderr(&cpu), "{name}");
        assert!(!dir.path().join("x.exr").exists());
    }
}

/// Vertex normals of no length (all zero, as some exporters write for flat parts) are a
/// warning naming how many; the renderer takes the face's normal where they leave none.
#[test]
fn zero_vertex_normals_are_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    assert_warns(
        dir.path(),
        &scene_with(
            "mesh t { vertices 0 0 0 1 0 0 0 1 0 normals 0 0 0 0 0 0 0 0 1 triangles 0 1 2 }\n\
             instance { mesh t material m }",
        ),
        "warning: s.csc:4:1: mesh \"t\": 2 of its 3 vertex normals are zero or not finite: where they leave no normal, the face's own stands in",
    );
}

/// A mesh file's faces and normals are counted when it is loaded: its warnings come once for
/// the whole animation, not once for every frame that uses it, and name the file.
#[test]
fn a_mesh_files_unusable_faces_and_normals_are_warned_about_once_per_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("flat.ply"),
        "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n\
         property float z\nproperty float nx\nproperty float ny\nproperty float nz\n\
         element face 2\nproperty list uchar int vertex_indices\nend_header\n\
         0 0 0 0 0 0\n1 0 0 0 0 1\n2 0 0 0 0 1\n0 1 0 0 0 1\n3 0 1 2\n3 0 1 3\n",
    )
    .unwrap();
    let (err, passed) = check(
        dir.path(),
        &scene_with(
            "frames 1..3\nmesh t { file \"flat.ply\" }\n\
             instance { mesh t material m translate 0 (0.1 * frame) 0 }",
        ),
    );
    assert!(passed, "{err}");
    let faces = "flat.ply: 1 of its 2 faces have no area (collinear or repeated corners): they \
                 render as nothing unless displaced";
    let normals = "flat.ply: 1 of its 4 vertex normals are zero or not finite: where they leave \
                   no normal, the face's own stands in";
    assert_eq!(err.matches(faces).count(), 1, "{err}");
    assert_eq!(err.matches(normals).count(), 1, "{err}");
}

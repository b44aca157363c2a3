//! Golden tests of the diagnostics: exact `file:line:col`, message, source line and caret.

mod lang_support;

use caustica::lang::{Diagnostic, Diagnostics, SceneFile, SourceMap};
use caustica::scene::Span;
use lang_support::{errors, MemoryLoader};

/// Asserts that the rendered errors contain `expected` (a whole first line, or more).
fn assert_error(text: &str, expected: &str) {
    let rendered = errors(text);
    assert!(
        rendered.contains(expected),
        "expected\n{expected}\nin\n{rendered}"
    );
}

#[test]
fn wrong_value_count_says_expected_and_given_with_source_and_caret() {
    let rendered = errors("camera {\n  fov 40\n  position 0 1 }");
    assert_eq!(
        rendered,
        "scene.csc:3:3: error: \"position\" takes 3 values, but 2 were given\n  position 0 1 }\n  ^^^^^^^^^^^^\n"
    );
}

#[test]
fn unknown_material_with_and_without_a_suggestion() {
    let base = "material white { diffuse 1 1 1 }\nmesh m { box }\n";
    assert_error(
        &format!("{base}instance {{ mesh m material gold }}"),
        "scene.csc:3:28: error: unknown material \"gold\"\n",
    );
    assert_error(
        &format!("{base}instance {{ mesh m material whit }}"),
        "scene.csc:3:28: error: unknown material \"whit\" (did you mean \"white\"?)\ninstance { mesh m material whit }\n                           ^^^^\n",
    );
}

#[test]
fn unknown_mesh_vdmap_and_texture_names() {
    assert_error(
        "material w { diffuse 1 }\ninstance { mesh bunny material w }",
        "scene.csc:2:17: error: unknown mesh \"bunny\"",
    );
    assert_error(
        "mesh m { box displacement bark }",
        "scene.csc:1:27: error: unknown vdmap \"bark\"",
    );
    assert_error(
        "material w { diffuse 1 texture wood }",
        "scene.csc:1:32: error: unknown texture \"wood\"",
    );
}

#[test]
fn syntax_errors_use_human_names_for_grammar_rules() {
    assert_error(
        "let x = 1 +\n",
        "scene.csc:2:1: error: expected a value, found end of file",
    );
    assert_error(
        "camera { position 0 1 3",
        "scene.csc:1:24: error: expected a value, a parameter name or `}`, found end of file",
    );
    assert_error("camera { fov 40 }}", "scene.csc:1:18: error: expected a statement (`let`, `include`, `import`, `frames` or a block) or end of file");
    assert_error(
        "let v = [1, 2",
        "scene.csc:1:14: error: expected an operator, `,` or `]`, found end of file",
    );
}

#[test]
fn infix_arithmetic_inside_a_block_asks_for_parentheses() {
    let rendered = errors("instance {\n  translate 1 + 2 0 }");
    assert!(
        rendered.starts_with("scene.csc:2:15: error: expected a value, a parameter name or `}`\n"),
        "{rendered}"
    );
    assert!(
        rendered.contains("note: inside a block, arithmetic needs parentheses"),
        "{rendered}"
    );
}

#[test]
fn a_string_where_a_number_belongs() {
    assert_error(
        "camera { fov \"wide\" }",
        "scene.csc:1:14: error: \"fov\" takes numbers, found a string",
    );
    // A string variable is a string wherever it is used.
    assert_error(
        "let x = \"wide\"\ncamera { fov x }",
        "scene.csc:2:14: error: \"fov\" takes numbers, found a string",
    );
}

#[test]
fn strings_join_with_plus_only() {
    assert_error(
        "let x = \"a\" * 2",
        "scene.csc:1:9: error: cannot apply `*` to a string",
    );
    assert_error(
        "let x = \"a\" + 2",
        "scene.csc:1:9: error: `+` joins two strings or adds numbers, but found a string and a \
         number",
    );
    assert_error(
        "let x = sqrt(\"a\")",
        "scene.csc:1:9: error: sqrt(): takes numbers, found a string",
    );
    // Strings that double in every `let` stop at a bound, not at the end of memory.
    let mut text = String::from("let s0 = \"abcdefgh\"\n");
    for i in 1..=12 {
        text += &format!("let s{i} = s{} + s{}\n", i - 1, i - 1);
    }
    text += "output { path s12 }";
    assert_error(&text, "error: the joined string is longer than 4096 bytes");
    // A joined path is the file read, and an error points at the expression.
    let text = "let root = \"no/such/\"\nmesh m { file (root + \"missing.obj\") }";
    assert_error(text, "scene.csc:2:15: error:");
    assert_error(text, "no/such/missing.obj");
}

#[test]
fn unknown_block_parameter_and_unused_parameter() {
    assert_error(
        "camra { fov 40 }",
        "scene.csc:1:1: error: unknown block \"camra\" (did you mean \"camera\"?)",
    );
    assert_error(
        "camera { fvo 40 }",
        "scene.csc:1:10: error: unknown parameter \"fvo\" for camera (did you mean \"fov\"?)",
    );
    assert_error(
        "material m { diffuse 0.5 ior 1.5 }",
        "scene.csc:1:26: error: unused parameter \"ior\": a diffuse material does not use it",
    );
    assert_error(
        "light point { position 0 1 0 cone 10 20 }",
        "scene.csc:1:30: error: unused parameter \"cone\": a point light does not use it",
    );
    assert_error(
        "light pont { position 0 0 0 }",
        "scene.csc:1:7: error: unknown light kind \"pont\" (did you mean \"point\"?)",
    );
    assert_error(
        "output { layers color albdo }",
        "scene.csc:1:23: error: unknown layer \"albdo\" (did you mean \"albedo\"?)",
    );
}

#[test]
fn duplicates_point_at_the_second_and_note_the_first() {
    assert_error(
        "material m { diffuse 0.5 }\nmaterial m { mirror 1 }",
        "scene.csc:2:10: error: duplicate material \"m\"\nmaterial m { mirror 1 }\n         ^\n  = note: first declared at scene.csc:1:10\n",
    );
    assert_error(
        "let x = 1\nlet x = 2",
        "scene.csc:2:5: error: variable \"x\" is already defined",
    );
    assert_error(
        "camera { fov 40 }\ncamera { fov 30 }",
        "scene.csc:2:1: error: camera is given twice",
    );
    assert_error(
        "camera { fov 40 fov 30 }",
        "scene.csc:1:17: error: parameter \"fov\" is given twice in camera",
    );
}

#[test]
fn arithmetic_errors_and_out_of_range_values() {
    assert_error(
        "let a = 2 / (1 - 1)",
        "scene.csc:1:9: error: division by zero",
    );
    assert_error(
        "let b = sqrt(-1)",
        "scene.csc:1:9: error: the result is not a finite number",
    );
    assert_error("let c = 1e400", "scene.csc:1:9: error: number is too large");
    assert_error(
        "film { resolution -640 480 }",
        "scene.csc:1:8: error: \"resolution\" must be a whole number from 1 to 65536, but it is -640",
    );
    assert_error(
        "film { spp 2.5 }",
        "scene.csc:1:8: error: \"spp\" must be a whole number from 1 to 16777216, but it is 2.5",
    );
    assert_error(
        "material g { dielectric ior 0 }",
        "scene.csc:1:25: error: \"ior\" must be greater than 0, but it is 0",
    );
    assert_error(
        "camera { fov 190 }",
        "scene.csc:1:10: error: \"fov\" must be between 0 and 180 degrees, but it is 190",
    );
    assert_error(
        "gather { min_density 1.5 }",
        "scene.csc:1:10: error: \"min_density\" must be between 0 and 1, but it is 1.5",
    );
    assert_error(
        "frames 5..1",
        "scene.csc:1:11: error: the last frame (1) comes before the first (5)",
    );
}

#[test]
fn expression_errors_name_what_is_wrong() {
    assert_error(
        "let y = foo(1)",
        "scene.csc:1:9: error: unknown function \"foo\"",
    );
    assert_error(
        "let y = sni(1)",
        "scene.csc:1:9: error: unknown function \"sni\" (did you mean \"sin\"?)",
    );
    assert_error(
        "let t2 = 1\nlet z = t3",
        "scene.csc:2:9: error: unknown variable \"t3\" (did you mean \"t2\"?)",
    );
    assert_error(
        "let a = [1,2] + [1,2,3]",
        "scene.csc:1:9: error: cannot apply `+`: vectors of 2 and 3 components do not match",
    );
    assert_error(
        "let a = clamp(1, 2)",
        "scene.csc:1:9: error: clamp() takes 3 arguments, but 2 were given",
    );
    assert_error(
        "let time = 3",
        "scene.csc:1:5: error: \"time\" is a built-in variable and cannot be redefined",
    );
}

#[test]
fn frame_range_must_be_constant() {
    assert_error(
        "frames 1..time",
        "scene.csc:1:11: error: `time` cannot be used here: the frame range must be constant",
    );
    assert_error(
        "let n = frame * 2\nframes 1..n",
        "scene.csc:2:11: error: \"n\" depends on frame or time, but the frame range must be constant",
    );
}

#[test]
fn missing_and_malformed_files_are_reported_at_the_file_string() {
    assert_error(
        "mesh m { file \"missing.ply\" }",
        "scene.csc:1:15: error: missing file \"missing.ply\": No such file or directory (os error 2)\nmesh m { file \"missing.ply\" }\n              ^^^^^^^^^^^^^\n",
    );
    // A file that exists but that the loader rejects.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.obj"), "v 1 2\n").unwrap();
    let path = dir.path().join("scene.csc");
    std::fs::write(&path, "mesh m {\n  file \"bad.obj\" }").unwrap();
    let rendered = SceneFile::load(&path)
        .unwrap()
        .eval(1, &MemoryLoader)
        .unwrap_err()
        .to_string();
    let expected = format!(
        "{}:2:8: error: cannot load mesh \"bad.obj\": line 3: expected 3 numbers after `v`",
        path.display()
    );
    assert!(rendered.starts_with(&expected), "{rendered}");
}

#[test]
fn invalid_inline_mesh_data_uses_the_mesh_validation_message() {
    assert_error(
        "mesh m { vertices 0 0 0 1 0 0 triangles 0 1 2 }",
        "scene.csc:1:1: error: invalid mesh \"m\": triangle 0 uses vertex 2, but there are only 2 vertices",
    );
    assert_error(
        "mesh m { vertices 0 0 0 1 0 triangles 0 1 2 }",
        "scene.csc:1:10: error: \"vertices\" takes a multiple of 3 values, but 5 were given",
    );
}

#[test]
fn several_semantic_errors_are_reported_in_one_run() {
    let rendered = errors(
        "camera { fov 0 }\nmaterial m { diffuse 2 }\nlight spot { position 0 0 0 }\ninstance { mesh nothing material m }",
    );
    for expected in [
        "scene.csc:1:10: error: \"fov\" must be between 0 and 180 degrees",
        "scene.csc:2:14: error: \"diffuse\" reflects more light than it receives",
        "scene.csc:3:1: error: a spot light needs \"look_at\" or \"direction\"",
        "scene.csc:4:17: error: unknown mesh \"nothing\"",
        "4 errors",
    ] {
        assert!(
            rendered.contains(expected),
            "missing {expected:?} in\n{rendered}"
        );
    }
}

#[test]
fn a_declaration_that_failed_does_not_cause_follow_up_errors() {
    let rendered = errors(
        "mesh m { file \"missing.obj\" }\nmaterial w { diffuse 1 }\ninstance { mesh m material w }",
    );
    assert!(!rendered.contains("unknown mesh"), "{rendered}");
    let rendered = errors("let a = 1 / 0\ncamera { fov (a) }");
    assert_eq!(rendered.matches("error:").count(), 1, "{rendered}");
}

#[test]
fn diagnostics_without_a_place_print_only_the_message() {
    let d = Diagnostics {
        sources: Default::default(),
        items: vec![Diagnostic::error(Span::NONE, "no scene given")],
    };
    assert_eq!(d.to_string(), "error: no scene given\n");
    assert_eq!(SourceMap::default().line_col(Span::NONE), None);
}

#[test]
fn columns_count_characters_and_carets_follow_tabs() {
    let rendered = errors("# é\n\tcamera { fov -1 }");
    assert!(
        rendered.contains("scene.csc:2:11: error: \"fov\" must be between"),
        "{rendered}"
    );
    assert!(rendered.contains("\n\t         ^^^^^^\n"), "{rendered}");
}

#[test]
fn photon_filter_and_knn_limits_are_reported_at_their_values() {
    assert_error(
        "photons { filter gauss }",
        "scene.csc:1:18: error: unknown photon filter \"gauss\": expected none, cone or epanechnikov\n",
    );
    assert_error(
        "photons { filter con }",
        "scene.csc:1:18: error: unknown photon filter \"con\" (did you mean \"cone\"?)",
    );
    assert_error(
        "photons { knn 129 }",
        "scene.csc:1:11: error: \"knn\" must be a whole number from 1 to 128, but it is 129\n",
    );
}

#[test]
fn unknown_integrator_and_quality_are_reported_with_suggestions() {
    assert_error(
        "film { integrator photon_mao }",
        "scene.csc:1:19: error: unknown integrator \"photon_mao\" (did you mean \"photon_map\"?): expected whitted or photon_map\n",
    );
    assert_error(
        "film { quality refrence }",
        "scene.csc:1:16: error: unknown quality \"refrence\" (did you mean \"reference\"?): expected quick, default or reference\n",
    );
}

#[test]
fn an_unknown_sampler_is_reported_at_its_name_with_a_suggestion() {
    assert_error(
        "film { spp 8 sampler halton }",
        "scene.csc:1:22: error: unknown sampler \"halton\": expected sobol or independent\n",
    );
    assert_error(
        "film { sampler sobel }",
        "scene.csc:1:16: error: unknown sampler \"sobel\" (did you mean \"sobol\"?)",
    );
}

#[test]
fn unknown_fresnel_mode_points_at_the_word_with_a_caret() {
    let rendered = errors("material g { dielectric fresnel cheap }");
    assert_eq!(
        rendered,
        "scene.csc:1:33: error: unknown fresnel mode \"cheap\": expected exact or schlick\nmaterial g { dielectric fresnel cheap }\n                                ^^^^^\n"
    );
    assert_error(
        "material g { dielectric fresnel schlik }",
        "scene.csc:1:33: error: unknown fresnel mode \"schlik\" (did you mean \"schlick\"?): expected exact or schlick",
    );
    assert_error(
        "material g { dielectric fresnel }",
        "scene.csc:1:25: error: \"fresnel\" takes a name: exact or schlick",
    );
    // Only dielectrics choose a Fresnel formula.
    assert_error(
        "material m { mirror 1 fresnel schlick }",
        "scene.csc:1:23: error: unused parameter \"fresnel\": a mirror material does not use it",
    );
}

#[test]
fn conductor_parameters_are_checked_at_their_place() {
    assert_error(
        "material m { conductor eta 0 0.4 1.4 k 4 2 1 }",
        "scene.csc:1:24: error: \"eta\" must be greater than 0 in each channel, but it is 0 0.4 1.4\nmaterial m { conductor eta 0 0.4 1.4 k 4 2 1 }\n                       ^^^^^^^^^^^^^\n",
    );
    assert_error(
        "material m { conductor eta 0.2 k 4 -2 1 }",
        "scene.csc:1:32: error: \"k\" must be at least 0 in each channel, but it is 4 -2 1",
    );
    assert_error(
        "material m { conductor eta 0.2 0.4 k 4 }",
        "scene.csc:1:24: error: \"eta\" takes 1 or 3 values, but 2 were given",
    );
    assert_error(
        "material m { conductor k 4 }",
        "scene.csc:1:1: error: a conductor material needs \"eta\"",
    );
    assert_error(
        "material m { conductor eta 0.2 k 4 tint 2 }",
        "scene.csc:1:36: error: \"tint\" must be at most 1 in each channel",
    );
    assert_error(
        "material m { conductor eta 0.2 k 4 ior 1.5 }",
        "scene.csc:1:36: error: unused parameter \"ior\": a conductor material does not use it",
    );
}

#[test]
fn roughness_and_metal_presets_are_checked_at_their_place() {
    assert_error(
        "material m { conductor metal gold roughness 1.5 }",
        "scene.csc:1:35: error: \"roughness\" must be between 0 and 1, but it is 1.5",
    );
    assert_error(
        "material m { dielectric roughness -0.1 }",
        "scene.csc:1:25: error: \"roughness\" must be between 0 and 1, but it is -0.1",
    );
    assert_error(
        "material m { conductor metal gould }",
        "scene.csc:1:30: error: unknown metal \"gould\" (did you mean \"gold\"?): expected gold, silver, copper or aluminium",
    );
    assert_error(
        "material m { conductor metal gold silver }",
        "scene.csc:1:24: error: \"metal\" takes 1 name: gold, silver, copper or aluminium",
    );
    assert_error(
        "material m { conductor metal gold eta 0.2 }",
        "scene.csc:1:35: error: a conductor takes \"metal\" or \"eta\", not both",
    );
    assert_error(
        "material m { mirror 1 roughness 0.3 }",
        "scene.csc:1:23: error: unused parameter \"roughness\": a mirror material does not use it",
    );
    assert_error(
        "material m { plastic 0.5 metal gold }",
        "scene.csc:1:26: error: unused parameter \"metal\": a plastic material does not use it",
    );
    assert_error(
        "material m { plastic 1.5 }",
        "scene.csc:1:14: error: \"plastic\" reflects more light than it receives: each channel must be at most 1",
    );
    assert_error(
        "material m { dielectric metal gold }",
        "scene.csc:1:25: error: unused parameter \"metal\": a dielectric material does not use it",
    );
}

#[test]
fn a_malformed_film_device_list_is_reported_at_its_text() {
    assert_error(
        "film { devices \"0,,1\" }",
        "scene.csc:1:16: error: \"devices\": bad device list \"0,,1\": expected auto, all, or indices and names separated by commas (see caustica info --gpu)\n",
    );
}

#[test]
fn a_zero_texture_scale_and_a_quad_repeat_of_zero_are_errors_at_their_values() {
    assert_error(
        "texture t { file \"a.png\" scale 0 1 }",
        "scene.csc:1:26: error: a texture's \"scale\" must be finite and not zero",
    );
    assert_error(
        "mesh m { quad repeat 0 2 }",
        "scene.csc:1:15: error: \"repeat\" must be greater than 0",
    );
}

#[test]
fn environment_light_combinations_and_a_second_environment_are_errors_at_their_place() {
    assert_error(
        "light environment { file \"sky.exr\" radiance 1 1 1 }",
        "scene.csc:1:1: error: an environment light takes \"file\" or \"radiance\", not both\n",
    );
    assert_error(
        "light environment { radiance 1 }\nlight environment { radiance 2 }",
        "scene.csc:2:1: error: a scene takes one environment light\nlight environment { radiance 2 }\n^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = note: the first is at scene.csc:1:1\n",
    );
    assert_error(
        "light environment { radiance 1 position 0 1 0 }",
        "scene.csc:1:32: error: unused parameter \"position\": an environment light does not use it\n",
    );
    assert_error(
        "light environment { file \"missing_sky.hdr\" }",
        "scene.csc:1:26: error: missing file \"missing_sky.hdr\"",
    );
    assert_error(
        "light environment { radiance 1 scale -2 }",
        "scene.csc:1:32: error: \"scale\" must be at least 0, but it is -2\n",
    );
    assert_error(
        "light environment { radiance 1 rotate 0 90 }",
        "scene.csc:1:32: error: \"rotate\" takes 3 values, but 2 were given",
    );
}

/// Minus signs in a row nest the parser and evaluator like brackets: twenty levels of 990 of
/// them overflowed the stack (issue 15). More than 64 in a row is an error at the 65th.
#[test]
fn too_many_minus_signs_in_a_row_are_an_error_not_a_stack_overflow() {
    let deep = format!(
        "let a = {}1{}",
        format!("({}", "-".repeat(990)).repeat(20),
        ")".repeat(20)
    );
    let rendered = errors(&deep);
    assert!(
        rendered.starts_with("scene.csc:1:74: error: more than 64 minus signs in a row"),
        "{}",
        &rendered[..rendered.len().min(200)]
    );
    // 64 in a row are fine.
    let ok = format!("let a = {}1\nlet b = -a", "-".repeat(64));
    assert!(SceneFile::from_str("scene.csc", &ok).is_ok());
}

/// A file whose lines end in a lone carriage return (old Mac OS) or in CR LF (Windows) reads as
/// one whose lines end in a line feed: a comment ends at its line's end, and errors count lines.
#[test]
fn carriage_return_line_ends_end_comments_and_count_lines() {
    let lines = [
        "# a comment on the first line",
        "material m { diffuse 0.5 }",
        "camera { fov 400 }",
    ];
    for end in ["\r", "\r\n"] {
        let text = lines.join(end);
        assert_error(
            &text,
            "scene.csc:3:10: error: \"fov\" must be between 0 and 180 degrees, but it is 400\ncamera { fov 400 }\n         ^^^^^^^",
        );
    }
}

/// A number finite as the language's f64 but beyond the f32 it becomes was accepted as
/// infinity (issue 15): it is an error at the number.
#[test]
fn a_number_beyond_the_f32_range_is_an_error_at_the_number() {
    assert_error(
        "camera { position 0 1e39 3 }",
        "scene.csc:1:21: error: 1e39 is too large: \"position\" takes 32-bit numbers, at most about 3.4e38\ncamera { position 0 1e39 3 }\n                    ^^^^",
    );
    assert_error(
        "let far = [0, -4e38, 0]\ncamera { position far }",
        "scene.csc:2:19: error: -4e38 is too large: \"position\" takes 32-bit numbers",
    );
}

/// The camera's up vector is checked in double precision: a tiny but valid one (1e-30, whose
/// square underflows in f32) was refused as parallel (issue 15); it is kept as a unit vector.
/// A zero one has no direction, and one along the view is parallel.
#[test]
fn a_tiny_camera_up_vector_is_a_direction_and_a_zero_one_is_an_error() {
    let scene = lang_support::scene("camera { position 0 0 5 look_at 0 0 0 up 0 1e-30 0 }");
    assert_eq!(scene.camera.up, glam::Vec3::Y);
    assert_error(
        "camera { position 0 0 5 look_at 0 0 0 up 0 0 0 }",
        "scene.csc:1:1: error: the camera's up vector has no direction",
    );
    assert_error(
        "camera { position 0 0 5 look_at 0 0 0 up 0 0 1e-30 }",
        "scene.csc:1:1: error: the camera's up vector is parallel to its viewing direction",
    );
}

/// What a frame asks for is bounded before anything is allocated (issue 15): the image's
/// pixels, the samples per pixel, the camera rays (pixels × spp), the photons per map, the
/// gather rays per irradiance sample and per frame. Each is an error at the value that makes it too much, naming the value
/// and the limit (`scene::limits`); `spp 1e9`, `photons { global 4294967295 }` and
/// `resolution 65536 65536` used to hang or exhaust memory.
#[test]
fn work_beyond_a_frames_limits_is_an_error_at_the_value_naming_the_limit() {
    assert_error(
        "film { resolution 64 64 spp 1e9 }",
        "scene.csc:1:25: error: \"spp\" must be a whole number from 1 to 16777216, but it is 1000000000",
    );
    assert_error(
        "film { resolution 16384 16384 spp 16777216 }",
        "scene.csc:1:31: error: 16384x16384 pixels at 16777216 samples each are 4503599627370496 camera rays, more than the 1099511627776 one frame may trace\nfilm { resolution 16384 16384 spp 16777216 }\n                              ^^^^^^^^^^^^",
    );
    assert_error(
        "film { resolution 65536 65536 }",
        "scene.csc:1:8: error: a 65536x65536 image has 4294967296 pixels, more than the 268435456 (16384x16384) a frame may have\nfilm { resolution 65536 65536 }\n       ^^^^^^^^^^^^^^^^^^^^^^",
    );
    assert_error(
        "photons { global 4294967295 }",
        "scene.csc:1:11: error: \"global\" must be a whole number from 0 to 67108864, but it is 4294967295",
    );
    assert_error(
        "gather { rays 4294967295 }",
        "scene.csc:1:10: error: \"rays\" must be a whole number from 1 to 65536, but it is 4294967295",
    );
    assert_error(
        "gather { seeds 4294967295 rays 65536 }",
        "scene.csc:1:10: error: 4294967295 irradiance samples of 65536 gather rays each are 281474976645120 gather rays, more than the 1099511627776 one frame may trace",
    );
    // The largest values within the limits are accepted.
    let scene = lang_support::scene(
        "film { resolution 16384 16384 spp 4096 }
         photons { global 67108864 caustic 67108864 }
         gather { seeds 16777216 rays 65536 }",
    );
    assert_eq!(scene.film.spp, 4096);
    assert_eq!(scene.photons.global, 1 << 26);
}

#[test]
fn an_unknown_bvh_layout_is_reported_at_its_name_with_a_suggestion() {
    assert_error(
        "film { accel octree }",
        "scene.csc:1:14: error: unknown BVH layout \"octree\": expected qbvh, wide, binary\n",
    );
    assert_error(
        "film { accel wid }",
        "scene.csc:1:14: error: unknown BVH layout \"wid\" (did you mean \"wide\"?)",
    );
}

#[test]
fn a_bvh_builder_is_checked_at_its_name_and_against_the_layout() {
    let scene = lang_support::scene("film { accel wide gpu_lbvh }");
    assert_eq!(scene.film.accel, Some(caustica::scene::BvhLayout::Wide));
    assert_eq!(
        scene.film.builder,
        Some(caustica::scene::BvhBuilder::GpuLbvh)
    );
    assert_error(
        "film { accel wide gpu_lvbh }",
        "scene.csc:1:19: error: unknown BVH builder \"gpu_lvbh\" (did you mean \"gpu_lbvh\"?)",
    );
    assert_error(
        "film { accel qbvh gpu_lbvh }",
        "scene.csc:1:19: error: gpu_lbvh builds the wide layout only, not qbvh",
    );
    assert_error(
        "film { accel wide cpu_sah extra }",
        "scene.csc:1:27: error: accel takes a layout and a builder, not also \"extra\"",
    );
}

#[test]
fn vdmap_layout_errors_point_at_the_parameter_at_fault() {
    assert_error(
        "vdmap v { file \"v.exr\" layout ptex }",
        "scene.csc:1:31: error: unknown layout \"ptex\": expected uv, udim or per_face",
    );
    assert_error(
        "vdmap v { file \"v.exr\" layout per_face }",
        "scene.csc:1:31: error: a per_face map needs \"tile N\"",
    );
    assert_error(
        "vdmap v { file \"v.exr\" tile 8 }",
        "scene.csc:1:24: error: \"tile\" belongs to layout per_face, but the layout is uv",
    );
    assert_error(
        "vdmap v { file \"v.exr\" layout udim }",
        "scene.csc:1:31: error: a udim map names its tiles in its file: write <UDIM> (1001, 1002, …) or <UVTILE> (u1_v1, …) where the tile's number goes, as in \"v.<UDIM>.exr\"",
    );
    assert_error(
        "vdmap v { file \"v.<UDIM>.exr\" layout per_face tile 4 }",
        "scene.csc:1:16: error: <UDIM> in the file name makes a udim map, but the layout is per_face",
    );
    assert_error(
        "vdmap v { file \"missing.<UDIM>.exr\" }",
        "scene.csc:1:16: error: no tile of \"missing.<UDIM>.exr\" exists",
    );
    assert_error(
        "vdmap v { file \"v.exr\" layout per_face tile 4 }",
        "scene.csc:1:16: error: the 2x2 map holds no 4x4 square (\"tile 4\")",
    );
}

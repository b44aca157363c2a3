//! No scene text, however broken, makes parsing or evaluation panic.

mod lang_support;

use std::panic::{catch_unwind, AssertUnwindSafe};

use caustica::lang::SceneFile;
use lang_support::MemoryLoader;

const EXAMPLE: &str = include_str!("data/lang/example.csc");

/// Parses and evaluates at two frames; every error must render without panicking either.
fn run(text: &str) {
    match SceneFile::from_str("fuzz.csc", text) {
        Err(e) => {
            let _ = e.to_string();
        }
        Ok(file) => {
            let _ = file.frame_range().map_err(|e| e.to_string());
            for frame in [1, 25] {
                if let Err(e) = file.eval(frame, &MemoryLoader) {
                    let _ = e.to_string();
                }
            }
        }
    }
}

fn assert_no_panic(text: &str) {
    let result = catch_unwind(AssertUnwindSafe(|| run(text)));
    assert!(result.is_ok(), "panicked on:\n{text}");
}

/// xorshift64*: a fixed-seed generator, so failures repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn every_prefix_of_the_example_is_handled_without_panic() {
    for end in (0..=EXAMPLE.len()).filter(|&i| EXAMPLE.is_char_boundary(i)) {
        assert_no_panic(&EXAMPLE[..end]);
    }
}

#[test]
fn random_deletions_and_insertions_are_handled_without_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let inserts = [
        "{", "}", "(", ")", "[", "]", "-", "/", "0", "\"", "#", "..", ",", "é", "\t", "1e999",
        "let", "frame", " x ",
    ];
    for _ in 0..1500 {
        let mut bytes = EXAMPLE.as_bytes().to_vec();
        for _ in 0..1 + rng.below(4) {
            if rng.below(2) == 0 && !bytes.is_empty() {
                let at = rng.below(bytes.len());
                let len = 1 + rng.below(6);
                bytes.drain(at..(at + len).min(bytes.len()));
            } else {
                let at = rng.below(bytes.len() + 1);
                let piece = inserts[rng.below(inserts.len())].as_bytes();
                bytes.splice(at..at, piece.iter().copied());
            }
        }
        assert_no_panic(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn hostile_values_are_errors_not_panics() {
    for text in [
        "film { resolution 1e30 1e30 spp 1e30 seed -1 }",
        "mesh m { sphere segments 1e12 radius 1e-40 }",
        "mesh m { quad divisions 0 -1 size 0 0 }",
        "mesh m { vertices 1e39 0 0 0 0 0 0 0 0 triangles 0 1 2 }",
        "mesh m { vertices 0 0 0 triangles 4294967295 0 0 }",
        "vdmap v { file \"v.exr\" channels 3 -1 0.5 }",
        "instance { mesh m material m matrix 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 scale 0 }",
        "instance { look_at 0 0 0 0 0 0 0 1 0 }",
        "let v = cross([1,2], [3]) let w = normalize([0,0,0]) let u = vec3([1,2,3], 1, 2)",
        "frames -9223372036854775808..9223372036854775807 fps 0",
        "light quad { corner 0 0 0 edge_u 0 0 0 edge_v 0 0 0 } light spot { position 0 0 0 look_at 0 0 0 }",
        "camera { position 0 0 0 look_at 0 0 0 up 0 0 0 }",
        "material { } mesh { } light { } instance x { } camera y { }",
        "let a = ((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))",
        "light environment { radiance 1e39 -1 0 scale 1e39 rotate 1e30 -1e30 0 samples 0 }",
        "light environment { file \"\" } light environment { file 3 }",
        "import \"\" import \"missing.glb\" import",
        "mesh m { sphere radius 1e-40 analytic 1 } mesh n { sphere analytic analytic }",
    ] {
        assert_no_panic(text);
    }
}

#[test]
fn deep_nesting_and_huge_expressions_are_errors_not_stack_overflows() {
    let deep = format!("let a = {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let error = SceneFile::from_str("deep.csc", &deep)
        .unwrap_err()
        .to_string();
    let first_line = error.lines().next().unwrap_or("");
    assert_eq!(
        first_line,
        "deep.csc:1:73: error: brackets are nested more than 64 deep"
    );
    let long = format!("let a = 1{}", " + 1".repeat(100_000));
    let error = SceneFile::from_str("long.csc", &long)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("long.csc:1:9: error: expression has more than 1000 terms"),
        "{}",
        &error[..200]
    );
    let negations = format!("let a = {}1", "- ".repeat(100_000));
    assert!(SceneFile::from_str("neg.csc", &negations).is_err());
    let fine = format!("let a = 1{}\nfilm {{ spp (a) }}", " + 1".repeat(500));
    assert_eq!(lang_support::scene(&fine).film.spp, 501);
}

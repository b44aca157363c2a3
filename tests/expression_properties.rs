//! Property tests (proptest) of the scene language's expression evaluator: random arithmetic
//! gives what f64 arithmetic gives, or the evaluator's error where f64 would divide by zero or
//! leave the finite numbers; and random text never panics.

mod lang_support;

use caustica::lang::SceneFile;
use lang_support::MemoryLoader;
use proptest::prelude::*;

/// An arithmetic expression as scene text (fully parenthesised) and its value by the
/// language's rules in plain f64: `None` where it divides by zero or a step is not finite.
#[derive(Clone, Debug)]
struct Arithmetic {
    text: String,
    value: Option<f64>,
}

fn number() -> impl Strategy<Value = Arithmetic> {
    prop_oneof![
        (0u32..1000).prop_map(|n| n as f64),
        (-1.0e3f64..1.0e3),
        Just(0.0),
        Just(1e200),
        Just(2.5e-300),
    ]
    .prop_map(|v| Arithmetic {
        // `{:e}` writes every f64 exactly, in a form the language reads.
        text: format!("{v:e}"),
        value: Some(v),
    })
}

fn step(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

fn arithmetic() -> impl Strategy<Value = Arithmetic> {
    number().prop_recursive(6, 48, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| Arithmetic {
                text: format!("-({})", a.text),
                value: a.value.and_then(|x| step(-x)),
            }),
            (inner.clone(), inner, 0..4usize).prop_map(|(a, b, op)| {
                let symbol = ["+", "-", "*", "/"][op];
                let value = match (a.value, b.value) {
                    (Some(x), Some(y)) => match op {
                        0 => step(x + y),
                        1 => step(x - y),
                        2 => step(x * y),
                        _ if y == 0.0 => None,
                        _ => step(x / y),
                    },
                    _ => None,
                };
                Arithmetic {
                    text: format!("({} {symbol} {})", a.text, b.text),
                    value,
                }
            }),
        ]
    })
}

proptest! {
    /// The value a camera position takes from `let x = EXPR` is f64 arithmetic's, rounded to
    /// f32; where f64 arithmetic divides by zero or overflows, or the value is beyond f32, the
    /// scene is an error.
    #[test]
    fn arithmetic_evaluates_as_f64_or_is_an_error_where_f64_fails(e in arithmetic()) {
        let text = format!("let x = {}\ncamera {{ position (x) 0 1 look_at 0 0 -5 }}", e.text);
        let file = SceneFile::from_str("scene.csc", &text).unwrap();
        let evaluated = file.eval(1, &MemoryLoader);
        match e.value.filter(|v| v.abs() <= f32::MAX as f64) {
            Some(v) => {
                let scene = evaluated.unwrap_or_else(|err| panic!("{}\n{err}", e.text));
                prop_assert_eq!(scene.camera.position.x, v as f32);
            }
            None => prop_assert!(evaluated.is_err(), "{} gave no error", e.text),
        }
    }

    /// Any text at all: parsing and evaluating it comes back, with a scene or an error.
    #[test]
    fn any_text_parses_and_evaluates_without_a_panic(text in "\\PC{0,200}") {
        if let Ok(file) = SceneFile::from_str("scene.csc", &text) {
            let _ = file.eval(1, &MemoryLoader);
        }
    }
}

//! Expression values (numbers, vectors and strings), variables, built-in functions and
//! evaluation.

use std::cell::Cell;
use std::collections::HashMap;

use super::ast::{BinaryOp, Expr, ExprKind};
use super::suggest;
use super::Diagnostic;
use crate::scene::Span;

/// The value of an expression: a number, a vector of numbers, or a string (which `let` may
/// name and `+` joins, for paths written once).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Number(f64),
    Vector(Vec<f64>),
    Str(String),
}

impl Value {
    /// The numbers this value puts into parameter slots: one for a number, one per component
    /// for a vector, none for a string (whose users check for it first).
    pub fn components(&self) -> &[f64] {
        match self {
            Value::Number(n) => std::slice::from_ref(n),
            Value::Vector(v) => v,
            Value::Str(_) => &[],
        }
    }

    /// `f` applied to every number; a string is left as it is (arithmetic rejects strings
    /// before it gets here).
    fn map(&self, f: impl Fn(f64) -> f64) -> Value {
        match self {
            Value::Number(n) => Value::Number(f(*n)),
            Value::Vector(v) => Value::Vector(v.iter().map(|&x| f(x)).collect()),
            Value::Str(s) => Value::Str(s.clone()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Value::Number(_) => "a number".into(),
            Value::Vector(v) => format!("a vector of {} components", v.len()),
            Value::Str(_) => "a string".into(),
        }
    }
}

/// Why an expression has no value. `Reported` means the cause was already reported (a `let`
/// whose own expression failed), so the use should stay silent.
#[derive(Debug)]
pub enum EvalError {
    Diagnostic(Box<Diagnostic>),
    Reported,
}

impl EvalError {
    fn at(span: Span, message: impl Into<String>) -> EvalError {
        EvalError::Diagnostic(Box::new(Diagnostic::error(span, message)))
    }
}

pub type EvalResult = Result<Value, EvalError>;

/// What a variable holds.
#[derive(Clone, Debug)]
pub enum Binding {
    Value(Value),
    /// Its expression failed; the error was reported where it was defined.
    Failed,
    /// It depends on `frame` or `time`, which do not exist while the frame range is evaluated.
    DependsOnTime,
}

#[derive(Debug)]
pub struct Variable {
    pub binding: Binding,
    pub span: Span,
    pub used: Cell<bool>,
}

/// The longest string `+` makes: far beyond any path, and no memory to speak of.
pub const MAX_STRING_BYTES: usize = 4096;

/// Names that cannot be defined with `let`.
pub const BUILTIN_VARIABLES: [&str; 3] = ["frame", "time", "pi"];

/// The variables visible to an expression.
#[derive(Debug, Default)]
pub struct Env {
    pub variables: HashMap<String, Variable>,
    /// `(frame, time)` while a frame is evaluated; `None` while the frame range is evaluated.
    pub frame_time: Option<(f64, f64)>,
}

impl Env {
    /// Whether `name` is a variable (built-in or defined with `let`).
    pub fn is_variable(&self, name: &str) -> bool {
        BUILTIN_VARIABLES.contains(&name) || self.variables.contains_key(name)
    }

    fn lookup(&self, name: &str, span: Span) -> EvalResult {
        match name {
            "pi" => return Ok(Value::Number(std::f64::consts::PI)),
            "frame" | "time" => {
                return match self.frame_time {
                    Some((frame, time)) => {
                        Ok(Value::Number(if name == "frame" { frame } else { time }))
                    }
                    None => Err(EvalError::at(
                        span,
                        format!("`{name}` cannot be used here: the frame range must be constant"),
                    )),
                };
            }
            _ => {}
        }
        match self.variables.get(name) {
            Some(variable) => {
                variable.used.set(true);
                match &variable.binding {
                    Binding::Value(v) => Ok(v.clone()),
                    Binding::Failed => Err(EvalError::Reported),
                    Binding::DependsOnTime => Err(EvalError::at(
                        span,
                        format!("\"{name}\" depends on frame or time, but the frame range must be constant"),
                    )),
                }
            }
            None => {
                let candidates = self
                    .variables
                    .keys()
                    .map(String::as_str)
                    .chain(BUILTIN_VARIABLES);
                Err(EvalError::at(
                    span,
                    format!(
                        "unknown variable \"{name}\"{}",
                        suggest::did_you_mean(name, candidates)
                    ),
                ))
            }
        }
    }

    /// Evaluates an expression; every result is checked to be finite.
    pub fn eval(&self, expr: &Expr) -> EvalResult {
        let value = match &expr.kind {
            ExprKind::Number(n) => {
                if !n.is_finite() {
                    return Err(EvalError::at(expr.span, "number is too large"));
                }
                Value::Number(*n)
            }
            ExprKind::Str(s) => Value::Str(s.clone()),
            ExprKind::Ident(name) => self.lookup(name, expr.span)?,
            ExprKind::Paren(inner) => self.eval(inner)?,
            ExprKind::Neg(inner) => match self.eval(inner)? {
                Value::Str(_) => return Err(EvalError::at(expr.span, "cannot negate a string")),
                v => v.map(|x| -x),
            },
            ExprKind::Vector(items) => {
                let mut components = Vec::with_capacity(items.len());
                for item in items {
                    match self.eval(item)? {
                        Value::Number(n) => components.push(n),
                        Value::Vector(_) | Value::Str(_) => {
                            return Err(EvalError::at(
                                item.span,
                                "a vector's components must be numbers",
                            ))
                        }
                    }
                }
                if components.is_empty() {
                    return Err(EvalError::at(
                        expr.span,
                        "a vector needs at least one component",
                    ));
                }
                Value::Vector(components)
            }
            ExprKind::Binary(op, lhs, rhs) => {
                let a = self.eval(lhs)?;
                let b = self.eval(rhs)?;
                match (op, &a, &b) {
                    (BinaryOp::Add, Value::Str(x), Value::Str(y)) => {
                        // Doubling a string in every `let` must not exhaust memory.
                        if x.len() + y.len() > MAX_STRING_BYTES {
                            return Err(EvalError::at(
                                expr.span,
                                format!(
                                    "the joined string is longer than {MAX_STRING_BYTES} bytes"
                                ),
                            ));
                        }
                        return Ok(Value::Str(format!("{x}{y}")));
                    }
                    (BinaryOp::Add, Value::Str(_), _) | (BinaryOp::Add, _, Value::Str(_)) => {
                        return Err(EvalError::at(
                            expr.span,
                            format!(
                                "`+` joins two strings or adds numbers, but found {} and {}",
                                a.describe(),
                                b.describe()
                            ),
                        ))
                    }
                    (_, Value::Str(_), _) | (_, _, Value::Str(_)) => {
                        return Err(EvalError::at(
                            expr.span,
                            format!("cannot apply `{}` to a string", op.symbol()),
                        ))
                    }
                    _ => {}
                }
                if *op == BinaryOp::Div && b.components().contains(&0.0) {
                    return Err(EvalError::at(expr.span, "division by zero"));
                }
                let f = match op {
                    BinaryOp::Add => |x: f64, y: f64| x + y,
                    BinaryOp::Sub => |x: f64, y: f64| x - y,
                    BinaryOp::Mul => |x: f64, y: f64| x * y,
                    BinaryOp::Div => |x: f64, y: f64| x / y,
                };
                componentwise(&[&a, &b], |c| f(c[0], c[1])).map_err(|m| {
                    EvalError::at(expr.span, format!("cannot apply `{}`: {m}", op.symbol()))
                })?
            }
            ExprKind::Call {
                name,
                name_span,
                args,
            } => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.eval(arg)?);
                }
                call(name, *name_span, &values, expr.span)?
            }
        };
        if value.components().iter().any(|c| !c.is_finite()) {
            return Err(EvalError::at(
                expr.span,
                "the result is not a finite number",
            ));
        }
        Ok(value)
    }
}

/// Applies `f` to matching components of `args`; numbers broadcast over vectors, and vectors
/// must have equal lengths.
fn componentwise(args: &[&Value], f: impl Fn(&[f64]) -> f64) -> Result<Value, String> {
    let mut length: Option<usize> = None;
    for arg in args {
        if let Value::Vector(v) = arg {
            match length {
                Some(n) if n != v.len() => {
                    return Err(format!(
                        "vectors of {} and {} components do not match",
                        n,
                        v.len()
                    ))
                }
                _ => length = Some(v.len()),
            }
        }
    }
    if args.iter().any(|a| matches!(a, Value::Str(_))) {
        return Err("takes numbers, found a string".into());
    }
    let pick = |arg: &Value, i: usize| match arg {
        Value::Number(n) => *n,
        Value::Vector(v) => v[i],
        Value::Str(_) => f64::NAN,
    };
    let mut scratch = vec![0.0; args.len()];
    match length {
        None => {
            for (s, a) in scratch.iter_mut().zip(args) {
                *s = pick(a, 0);
            }
            Ok(Value::Number(f(&scratch)))
        }
        Some(n) => Ok(Value::Vector(
            (0..n)
                .map(|i| {
                    for (s, a) in scratch.iter_mut().zip(args) {
                        *s = pick(a, i);
                    }
                    f(&scratch)
                })
                .collect(),
        )),
    }
}

/// The built-in functions, their argument counts, and a one-line description for the docs.
pub const FUNCTIONS: &[(&str, usize, &str)] = &[
    ("sin", 1, "sine of an angle in radians"),
    ("cos", 1, "cosine of an angle in radians"),
    ("tan", 1, "tangent of an angle in radians"),
    ("asin", 1, "arc sine, in radians"),
    ("acos", 1, "arc cosine, in radians"),
    ("atan", 1, "arc tangent, in radians"),
    (
        "atan2",
        2,
        "angle of the point (x, y) given as atan2(y, x), in radians",
    ),
    ("sqrt", 1, "square root"),
    ("abs", 1, "absolute value"),
    ("floor", 1, "largest whole number not above"),
    ("ceil", 1, "smallest whole number not below"),
    ("exp", 1, "e to the power"),
    ("pow", 2, "pow(x, y) is x to the power y"),
    ("min", 2, "the smaller of two values"),
    ("max", 2, "the larger of two values"),
    ("clamp", 3, "clamp(x, lo, hi)"),
    ("lerp", 3, "lerp(a, b, t) = a + (b - a) * t"),
    ("radians", 1, "degrees to radians"),
    ("degrees", 1, "radians to degrees"),
    ("vec3", 3, "the vector [x, y, z]"),
    ("length", 1, "length of a vector"),
    ("normalize", 1, "the vector divided by its length"),
    ("dot", 2, "dot product of two vectors"),
    ("cross", 2, "cross product of two 3-vectors"),
];

fn call(name: &str, name_span: Span, args: &[Value], span: Span) -> EvalResult {
    let Some(&(_, arity, _)) = FUNCTIONS.iter().find(|(n, _, _)| *n == name) else {
        let hint = suggest::did_you_mean(name, FUNCTIONS.iter().map(|(n, _, _)| *n));
        return Err(EvalError::at(
            name_span,
            format!("unknown function \"{name}\"{hint}"),
        ));
    };
    if args.len() != arity {
        let plural = if arity == 1 { "" } else { "s" };
        return Err(EvalError::at(
            span,
            format!(
                "{name}() takes {arity} argument{plural}, but {} were given",
                args.len()
            ),
        ));
    }
    let fail = |m: String| EvalError::at(span, format!("{name}(): {m}"));
    if args.iter().any(|a| matches!(a, Value::Str(_))) {
        return Err(fail("takes numbers, found a string".into()));
    }
    let unary = |f: fn(f64) -> f64| Ok(args[0].map(f));
    let refs: Vec<&Value> = args.iter().collect();
    match name {
        "sin" => unary(f64::sin),
        "cos" => unary(f64::cos),
        "tan" => unary(f64::tan),
        "asin" => unary(f64::asin),
        "acos" => unary(f64::acos),
        "atan" => unary(f64::atan),
        "sqrt" => unary(f64::sqrt),
        "abs" => unary(f64::abs),
        "floor" => unary(f64::floor),
        "ceil" => unary(f64::ceil),
        "exp" => unary(f64::exp),
        "radians" => unary(f64::to_radians),
        "degrees" => unary(f64::to_degrees),
        "atan2" => componentwise(&refs, |c| c[0].atan2(c[1])).map_err(fail),
        "pow" => componentwise(&refs, |c| c[0].powf(c[1])).map_err(fail),
        "min" => componentwise(&refs, |c| c[0].min(c[1])).map_err(fail),
        "max" => componentwise(&refs, |c| c[0].max(c[1])).map_err(fail),
        "clamp" => componentwise(&refs, |c| c[0].max(c[1]).min(c[2])).map_err(fail),
        "lerp" => componentwise(&refs, |c| c[0] + (c[1] - c[0]) * c[2]).map_err(fail),
        "vec3" => {
            let mut out = Vec::with_capacity(3);
            for (arg, i) in args.iter().zip(1..) {
                match arg {
                    Value::Number(n) => out.push(*n),
                    Value::Vector(_) | Value::Str(_) => {
                        return Err(fail(format!("argument {i} must be a number")))
                    }
                }
            }
            Ok(Value::Vector(out))
        }
        "length" => Ok(Value::Number(
            args[0]
                .components()
                .iter()
                .map(|c| c * c)
                .sum::<f64>()
                .sqrt(),
        )),
        "normalize" => {
            let length = args[0]
                .components()
                .iter()
                .map(|c| c * c)
                .sum::<f64>()
                .sqrt();
            if length == 0.0 {
                return Err(fail("cannot normalize a zero vector".into()));
            }
            Ok(args[0].map(|c| c / length))
        }
        "dot" => match componentwise(&refs, |c| c[0] * c[1]).map_err(fail)? {
            Value::Vector(v) => Ok(Value::Number(v.iter().sum())),
            n => Ok(n),
        },
        "cross" => match (&args[0], &args[1]) {
            (Value::Vector(a), Value::Vector(b)) if a.len() == 3 && b.len() == 3 => {
                Ok(Value::Vector(vec![
                    a[1] * b[2] - a[2] * b[1],
                    a[2] * b[0] - a[0] * b[2],
                    a[0] * b[1] - a[1] * b[0],
                ]))
            }
            (a, b) => Err(fail(format!(
                "needs two 3-vectors, found {} and {}",
                a.describe(),
                b.describe()
            ))),
        },
        // Every name in FUNCTIONS has an arm above; this keeps the match total.
        _ => Err(EvalError::at(
            name_span,
            format!("unknown function \"{name}\""),
        )),
    }
}

//! Block parameters: splitting a block's atoms into named parameters, and reading them as
//! typed values with the checks and messages every block shares.

use std::cell::Cell;

use glam::Vec3;

use super::ast::{Block, Expr, ExprKind};
use super::suggest;
use super::value::{Env, EvalError, Value};
use super::{Diagnostic, SourceMap};
use crate::scene::Span;

/// The evaluation state shared by all blocks: variables and the errors collected so far.
pub struct Ctx<'s> {
    pub env: Env,
    pub errors: Vec<Diagnostic>,
    pub sources: &'s SourceMap,
}

impl Ctx<'_> {
    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        self.errors.push(Diagnostic::error(span, message));
    }

    /// Evaluates an expression, recording its error.
    pub fn eval(&mut self, expr: &Expr) -> Option<Value> {
        match self.env.eval(expr) {
            Ok(v) => Some(v),
            Err(EvalError::Diagnostic(d)) => {
                self.errors.push(*d);
                None
            }
            Err(EvalError::Reported) => None,
        }
    }

    /// `file:line:col` of a span, for notes that point at a second place.
    pub fn place(&self, span: Span) -> String {
        match self.sources.line_col(span) {
            Some((path, line, col)) => format!("{}:{line}:{col}", path.display()),
            None => "(no place)".into(),
        }
    }
}

/// What kind of values a parameter takes; it decides how bare words after it are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// Numbers (expressions); a bare word is a variable.
    Numbers,
    /// One or more bare words naming something (a material, a layer, a space).
    Names,
    /// A string literal, or for `texture` in a material also a name.
    Text,
}

/// One parameter a block accepts.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub ty: ParamType,
    /// Whether it may be given several times (instance transforms).
    pub repeatable: bool,
}

pub const fn numbers(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty: ParamType::Numbers,
        repeatable: false,
    }
}
pub const fn names(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty: ParamType::Names,
        repeatable: false,
    }
}
pub const fn text(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty: ParamType::Text,
        repeatable: false,
    }
}
pub const fn repeated(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty: ParamType::Numbers,
        repeatable: true,
    }
}

/// A parameter as written: its name and the atoms after it.
#[derive(Debug)]
pub struct Param<'a> {
    pub name: &'static str,
    pub name_span: Span,
    pub values: Vec<&'a Expr>,
    /// From the name to the last value.
    pub span: Span,
    used: Cell<bool>,
}

/// The parameters of one block.
pub struct Params<'a> {
    pub block_span: Span,
    list: Vec<Param<'a>>,
}

/// Splits a block's atoms into parameters: a word that names one of `specs` starts a parameter,
/// everything else is a value of the parameter before it.
pub fn split<'a>(block: &'a Block, specs: &[ParamSpec], what: &str, ctx: &mut Ctx) -> Params<'a> {
    enum Current {
        Nothing,
        Param(usize, ParamType),
        /// Swallowing the values of a parameter that was already reported.
        Skipping,
    }
    let mut list: Vec<Param<'a>> = Vec::new();
    let mut current = Current::Nothing;
    for item in &block.items {
        if let ExprKind::Ident(word) = &item.kind {
            if let Some(spec) = specs.iter().find(|s| s.name == word) {
                if let Some(first) = list
                    .iter()
                    .find(|p| p.name == spec.name)
                    .filter(|_| !spec.repeatable)
                {
                    let note = format!("first given at {}", ctx.place(first.name_span));
                    ctx.errors.push(
                        Diagnostic::error(
                            item.span,
                            format!("parameter \"{word}\" is given twice in {what}"),
                        )
                        .with_note(note),
                    );
                    current = Current::Skipping;
                    continue;
                }
                list.push(Param {
                    name: spec.name,
                    name_span: item.span,
                    values: Vec::new(),
                    span: item.span,
                    used: Cell::new(false),
                });
                current = Current::Param(list.len() - 1, spec.ty);
                continue;
            }
            let takes_words = matches!(
                current,
                Current::Param(_, ParamType::Names | ParamType::Text)
            );
            if !takes_words && !ctx.env.is_variable(word) && !matches!(current, Current::Skipping) {
                let candidates = specs.iter().map(|s| s.name);
                let mut d = Diagnostic::error(
                    item.span,
                    format!(
                        "unknown parameter \"{word}\" for {what}{}",
                        suggest::did_you_mean(word, candidates)
                    ),
                );
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                d = d.with_note(format!("{what} takes: {}", known.join(", ")));
                ctx.errors.push(d);
                current = Current::Skipping;
                continue;
            }
        }
        match current {
            Current::Param(i, _) => {
                let param = &mut list[i];
                param.values.push(item);
                param.span = param.span.to(item.span);
            }
            Current::Skipping => {}
            Current::Nothing => {
                ctx.error(
                    item.span,
                    format!(
                        "expected a parameter name for {what}, found {}",
                        describe_atom(item)
                    ),
                );
                current = Current::Skipping;
            }
        }
    }
    Params {
        block_span: block.span,
        list,
    }
}

fn describe_atom(expr: &Expr) -> String {
    match &expr.kind {
        ExprKind::Number(_) => "a number".into(),
        ExprKind::Str(_) => "a string".into(),
        ExprKind::Ident(w) => format!("\"{w}\""),
        ExprKind::Vector(_) => "a vector".into(),
        _ => "an expression".into(),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// "1 or 3" for `[1, 3]`.
fn counts_text(counts: &[usize]) -> String {
    let words: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
    match words.len() {
        0 => "no".into(),
        1 => words[0].clone(),
        n => format!("{} or {}", words[..n - 1].join(", "), words[n - 1]),
    }
}

impl<'a> Params<'a> {
    /// Whether the parameter was written (does not mark it as used).
    pub fn has(&self, name: &str) -> bool {
        self.list.iter().any(|p| p.name == name)
    }

    /// Where the parameter is written, from its name to its last value (does not mark it as
    /// used).
    pub fn span_of(&self, name: &str) -> Option<Span> {
        self.list.iter().find(|p| p.name == name).map(|p| p.span)
    }

    /// The parameter, marked as used.
    pub fn take(&self, name: &str) -> Option<&Param<'a>> {
        let p = self.list.iter().find(|p| p.name == name)?;
        p.used.set(true);
        Some(p)
    }

    /// Every occurrence of a repeatable parameter among `names`, in the order written, marked
    /// as used.
    pub fn take_all(&self, names: &[&str]) -> Vec<&Param<'a>> {
        let all: Vec<&Param<'a>> = self
            .list
            .iter()
            .filter(|p| names.contains(&p.name))
            .collect();
        all.iter().for_each(|p| p.used.set(true));
        all
    }

    /// The numbers of a parameter (vectors fill one slot per component), checked to be one of
    /// `counts` in number. `None` when absent or wrong (the error is recorded).
    pub fn numbers(&self, ctx: &mut Ctx, name: &str, counts: &[usize]) -> Option<(Vec<f64>, Span)> {
        let param = self.take(name)?;
        let values = param_numbers(param, ctx)?;
        if !counts.contains(&values.len()) {
            let expected = counts_text(counts);
            let last = counts.last().copied().unwrap_or(0);
            ctx.error(
                param.span,
                format!(
                    "\"{name}\" takes {expected} value{}, but {} {} given",
                    plural(last),
                    values.len(),
                    if values.len() == 1 { "was" } else { "were" }
                ),
            );
            return None;
        }
        Some((values, param.span))
    }

    /// A list of numbers whose length is a multiple of `group` (inline mesh data).
    pub fn number_list(&self, ctx: &mut Ctx, name: &str, group: usize) -> Option<(Vec<f64>, Span)> {
        let param = self.take(name)?;
        let values = param_numbers(param, ctx)?;
        if values.is_empty() || values.len() % group != 0 {
            ctx.error(
                param.span,
                format!(
                    "\"{name}\" takes a multiple of {group} values, but {} were given",
                    values.len()
                ),
            );
            return None;
        }
        Some((values, param.span))
    }

    /// One number; `default` when absent. `valid` checks the range, `requirement` says it.
    pub fn float(
        &self,
        ctx: &mut Ctx,
        name: &str,
        default: f32,
        valid: impl Fn(f32) -> bool,
        requirement: &str,
    ) -> f32 {
        let Some((v, span)) = self.numbers(ctx, name, &[1]) else {
            return default;
        };
        let v = v[0] as f32;
        if !v.is_finite() || !valid(v) {
            ctx.error(
                span,
                format!("\"{name}\" must be {requirement}, but it is {}", v),
            );
            return default;
        }
        v
    }

    /// A whole number in `min..=max`; `default` when absent.
    pub fn whole(&self, ctx: &mut Ctx, name: &str, default: u64, min: u64, max: u64) -> u64 {
        let Some((v, span)) = self.numbers(ctx, name, &[1]) else {
            return default;
        };
        check_whole(ctx, name, v[0], span, min, max).unwrap_or(default)
    }

    /// Three numbers; `default` when absent.
    pub fn vec3(&self, ctx: &mut Ctx, name: &str, default: Vec3) -> Vec3 {
        self.vec3_opt(ctx, name).map_or(default, |(v, _)| v)
    }

    pub fn vec3_opt(&self, ctx: &mut Ctx, name: &str) -> Option<(Vec3, Span)> {
        let (v, span) = self.numbers(ctx, name, &[3])?;
        Some((Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32), span))
    }

    /// A colour or power: three numbers, or one for a grey; all must be at least zero.
    pub fn color(&self, ctx: &mut Ctx, name: &str, default: Vec3) -> Vec3 {
        let Some((v, span)) = self.numbers(ctx, name, &[1, 3]) else {
            return default;
        };
        let c = if v.len() == 1 {
            Vec3::splat(v[0] as f32)
        } else {
            Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
        };
        if !c.is_finite() || c.min_element() < 0.0 {
            ctx.error(
                span,
                format!(
                    "\"{name}\" must not be negative, but it is {} {} {}",
                    c.x, c.y, c.z
                ),
            );
            return default;
        }
        c
    }

    /// A parameter that takes one string: in quotes, or an expression whose value is a string
    /// (a `let` variable, strings joined with `+`).
    pub fn string(&self, ctx: &mut Ctx, name: &str) -> Option<(String, Span)> {
        let param = self.take(name)?;
        match param.values.as_slice() {
            [Expr {
                kind: ExprKind::Str(s),
                span,
            }] => Some((s.clone(), *span)),
            [other] => match ctx.eval(other)? {
                Value::Str(s) => Some((s, other.span)),
                value => {
                    ctx.error(
                        other.span,
                        format!(
                            "\"{name}\" takes a string in quotes, found {}",
                            value.describe()
                        ),
                    );
                    None
                }
            },
            values => {
                ctx.error(
                    param.span,
                    format!(
                        "\"{name}\" takes 1 string, but {} values were given",
                        values.len()
                    ),
                );
                None
            }
        }
    }

    /// A parameter that takes one bare name, or a string instead: in quotes, or an expression
    /// in parentheses whose value is a string (a bare name is always a name here).
    pub fn word(&self, ctx: &mut Ctx, name: &str) -> Option<Word> {
        let param = self.take(name)?;
        match param.values.as_slice() {
            [Expr {
                kind: ExprKind::Ident(w),
                span,
            }] => Some(Word::Name(w.clone(), *span)),
            [Expr {
                kind: ExprKind::Str(s),
                span,
            }] => Some(Word::Str(s.clone(), *span)),
            [other @ Expr {
                kind: ExprKind::Paren(_),
                ..
            }] => match ctx.eval(other)? {
                Value::Str(s) => Some(Word::Str(s, other.span)),
                value => {
                    ctx.error(
                        other.span,
                        format!("\"{name}\" takes a name, found {}", value.describe()),
                    );
                    None
                }
            },
            [other] => {
                ctx.error(
                    other.span,
                    format!("\"{name}\" takes a name, found {}", describe_atom(other)),
                );
                None
            }
            values => {
                ctx.error(
                    param.span,
                    format!(
                        "\"{name}\" takes 1 name, but {} values were given",
                        values.len()
                    ),
                );
                None
            }
        }
    }

    /// A parameter that takes a list of bare names.
    pub fn words(&self, ctx: &mut Ctx, name: &str) -> Vec<(String, Span)> {
        let Some(param) = self.take(name) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for value in &param.values {
            match &value.kind {
                ExprKind::Ident(w) => out.push((w.clone(), value.span)),
                _ => ctx.error(
                    value.span,
                    format!("\"{name}\" takes names, found {}", describe_atom(value)),
                ),
            }
        }
        out
    }

    /// Reports a missing required parameter.
    pub fn require(&self, ctx: &mut Ctx, name: &str, who: &str) -> bool {
        if self.has(name) {
            return true;
        }
        ctx.error(self.block_span, format!("{who} needs \"{name}\""));
        false
    }

    /// Reports every parameter nobody read: `who` (e.g. "a point light") does not use it.
    pub fn finish(&self, ctx: &mut Ctx, who: &str) {
        for p in self.list.iter().filter(|p| !p.used.get()) {
            ctx.error(
                p.name_span,
                format!("unused parameter \"{}\": {who} does not use it", p.name),
            );
        }
    }
}

/// A name or a string given where a name is expected.
#[derive(Clone, Debug)]
pub enum Word {
    Name(String, Span),
    Str(String, Span),
}

/// Checks that `v` is a whole number in `min..=max`.
pub fn check_whole(
    ctx: &mut Ctx,
    name: &str,
    v: f64,
    span: Span,
    min: u64,
    max: u64,
) -> Option<u64> {
    if v.fract() != 0.0 || v < min as f64 || v > max as f64 {
        let range = if max == u64::from(u32::MAX) || max == u64::MAX {
            format!("a whole number of at least {min}")
        } else {
            format!("a whole number from {min} to {max}")
        };
        ctx.error(span, format!("\"{name}\" must be {range}, but it is {v}"));
        return None;
    }
    Some(v as u64)
}

/// Evaluates the values of a numeric parameter into slots.
pub fn param_numbers(param: &Param<'_>, ctx: &mut Ctx) -> Option<Vec<f64>> {
    let mut out = Vec::new();
    let mut ok = true;
    for value in &param.values {
        match ctx.eval(value) {
            Some(Value::Str(_)) => {
                ctx.error(
                    value.span,
                    format!("\"{}\" takes numbers, found a string", param.name),
                );
                ok = false;
            }
            Some(v) => {
                // Every value becomes an f32 somewhere: one beyond its range would be infinite.
                if let Some(big) = v.components().iter().find(|c| c.abs() > f32::MAX as f64) {
                    ctx.error(
                        value.span,
                        format!(
                            "{big:e} is too large: \"{}\" takes 32-bit numbers, at most about 3.4e38",
                            param.name
                        ),
                    );
                    ok = false;
                }
                out.extend_from_slice(v.components());
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

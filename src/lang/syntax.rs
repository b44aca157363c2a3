//! Parsing: pest grammar to [`ast`] nodes, syntax errors in words people use, and `include`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser;

use super::ast::{BinaryOp, Block, Expr, ExprKind, Statement};
use super::{Diagnostic, Diagnostics, SceneFile, SourceMap};
use crate::scene::Span;

/// How deeply `include` may nest before it is reported as an error.
pub const MAX_INCLUDE_DEPTH: usize = 32;
/// How many includes one scene may make in all, a file included twice counting twice: files
/// that each include the next twice make 2³⁰ includes in 30 files, within the depth.
pub const MAX_INCLUDES: usize = 1024;
/// The largest scene file (the root or an include) that is read: 256 MiB, room for meshes
/// written out as `vertices` and `triangles`.
pub const MAX_SCENE_FILE_BYTES: u64 = 256 << 20;

/// Where a scene's includes may come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeScope {
    /// The root file's folder and the folders below it (`include "../x.csc"` that leaves them is
    /// an error).
    #[default]
    SceneFolder,
    /// Anywhere (`--allow-includes-outside`).
    Anywhere,
}

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/scene.pest"]
struct SceneParser;

/// What a grammar rule is called in an error message ("expected a number", not "expected
/// number"). Exhaustive, so a new rule cannot be forgotten.
fn describe_rule(rule: Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of file",
        Rule::WHITESPACE | Rule::COMMENT => "whitespace",
        Rule::file => "a scene file",
        // Silent rules: they never appear in errors, but the match stays exhaustive.
        Rule::statement | Rule::keyword_end | Rule::prefix | Rule::infix | Rule::primary => {
            "a statement"
        }
        Rule::atom | Rule::neg_target => "a value",
        Rule::include_stmt
        | Rule::import_stmt
        | Rule::let_stmt
        | Rule::frames_stmt
        | Rule::block => "a statement",
        Rule::kw_include => "`include`",
        Rule::kw_import => "`import`",
        Rule::kw_let => "`let`",
        Rule::kw_frames => "`frames`",
        Rule::kw_fps => "`fps`",
        Rule::range_dots => "`..`",
        Rule::block_open => "`{`",
        Rule::block_close => "`}`",
        Rule::equals => "`=`",
        Rule::comma => "`,`",
        Rule::close_paren => "`)`",
        Rule::close_bracket => "`]`",
        Rule::expr => "an expression",
        Rule::neg_op => "`-`",
        Rule::add_op | Rule::sub_op | Rule::mul_op | Rule::div_op => "an operator",
        Rule::negated => "a negated value",
        Rule::number => "a number",
        Rule::string | Rule::string_body => "a string",
        Rule::ident => "a name",
        Rule::vector => "a vector",
        Rule::call | Rule::call_args => "a function call",
        Rule::paren => "`(`",
    }
}

/// Turns pest's list of expected rules into one readable sentence.
fn expected_message(positives: &[Rule]) -> String {
    let has = |r: Rule| positives.contains(&r);
    let mut words: Vec<&'static str> = Vec::new();
    let value_starts = [
        Rule::number,
        Rule::vector,
        Rule::call,
        Rule::paren,
        Rule::negated,
        Rule::string,
    ];
    let statement_starts =
        has(Rule::kw_let) || has(Rule::kw_include) || has(Rule::kw_import) || has(Rule::kw_frames);
    let value_like = value_starts.iter().filter(|r| has(**r)).count() >= 2;
    if value_like {
        words.push("a value");
        if has(Rule::ident) && has(Rule::block_close) {
            words.push("a parameter name");
        }
    }
    if statement_starts {
        words.push("a statement (`let`, `include`, `import`, `frames` or a block)");
    }
    for &rule in positives {
        let skip = (value_like
            && (value_starts.contains(&rule)
                || matches!(rule, Rule::ident | Rule::expr | Rule::neg_op)))
            || (statement_starts
                && matches!(
                    rule,
                    Rule::kw_let
                        | Rule::kw_include
                        | Rule::kw_import
                        | Rule::kw_frames
                        | Rule::ident
                ));
        if skip {
            continue;
        }
        let word = describe_rule(rule);
        if !words.contains(&word) {
            words.push(word);
        }
    }
    match words.len() {
        0 => "syntax error".to_string(),
        1 => format!("expected {}", words[0]),
        n => format!("expected {} or {}", words[..n - 1].join(", "), words[n - 1]),
    }
}

/// How deeply brackets may nest, and how many terms one expression may have: both keep the
/// recursive parser and evaluator far from the end of the stack.
const MAX_NESTING: usize = 64;
const MAX_TERMS: usize = 1000;

/// The longest name (of a variable, material, mesh, ...) and the longest string in quotes: a
/// name beyond it is a mistake, and a string a path or a word (a path has at most 4096 bytes
/// on Linux). Both keep suggestions ("did you mean") and messages small.
const MAX_NAME: usize = 256;
const MAX_STRING: usize = 4096;

/// Finds the first bracket nested deeper than [`MAX_NESTING`], name longer than [`MAX_NAME`] or
/// string longer than [`MAX_STRING`] (outside strings and comments), before the parser sees the
/// text.
fn check_text(text: &str, file: u32) -> Result<(), Diagnostic> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut in_comment = false;
    let mut escaped = false;
    // Where the name or string being read began.
    let mut name_start: Option<usize> = None;
    let mut string_start = 0usize;
    for (i, c) in text.char_indices() {
        let in_name = !in_comment && !in_string && (c.is_ascii_alphanumeric() || c == '_');
        match name_start {
            Some(start) if in_name && i - start >= MAX_NAME => {
                return Err(Diagnostic::error(
                    Span::new(file, start, start + MAX_NAME),
                    format!("a name longer than {MAX_NAME} characters"),
                ));
            }
            Some(_) if in_name => {}
            Some(_) => name_start = None,
            // A word that starts with a letter or _ is a name; one with a digit a number.
            None if in_name && !c.is_ascii_digit() => {
                let after_word = text[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|p| p.is_ascii_alphanumeric() || p == '_' || p == '.');
                if !after_word {
                    name_start = Some(i);
                }
            }
            None => {}
        }
        if in_comment {
            in_comment = c != '\n';
        } else if in_string {
            in_string = escaped || (c != '"' && c != '\n');
            escaped = !escaped && c == '\\';
            if in_string && i - string_start > MAX_STRING {
                return Err(Diagnostic::error(
                    Span::new(file, string_start, string_start + 1),
                    format!("a string longer than {MAX_STRING} bytes"),
                ));
            }
        } else {
            match c {
                '"' => {
                    in_string = true;
                    string_start = i;
                }
                '#' => in_comment = true,
                '(' | '[' | '{' => {
                    depth += 1;
                    if depth > MAX_NESTING {
                        return Err(Diagnostic::error(
                            Span::new(file, i, i + 1),
                            format!("brackets are nested more than {MAX_NESTING} deep"),
                        ));
                    }
                }
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Parses one file's text into statements, or the first syntax error.
fn parse_statements(text: &str, file: u32) -> Result<Vec<RawStatement>, Diagnostic> {
    check_text(text, file)?;
    let mut pairs =
        SceneParser::parse(Rule::file, text).map_err(|e| syntax_error(e, file, text))?;
    // Invariant: a successful parse of `file` yields exactly one `file` pair.
    let root = pairs.next().expect("the file rule matched once");
    let mut statements = Vec::new();
    for pair in root.into_inner() {
        let span = span_of(&pair, file);
        match pair.as_rule() {
            Rule::include_stmt => {
                let string = pair.into_inner().find(|p| p.as_rule() == Rule::string);
                // Invariant: the grammar requires the string after `include`.
                let string = string.expect("include has a string");
                let path_span = span_of(&string, file);
                statements.push(RawStatement::Include {
                    path: string_value(string),
                    path_span,
                    span,
                });
            }
            Rule::import_stmt => {
                let string = pair.into_inner().find(|p| p.as_rule() == Rule::string);
                // Invariant: the grammar requires the string after `import`.
                let string = string.expect("import has a string");
                let path_span = span_of(&string, file);
                statements.push(RawStatement::Plain(Box::new(Statement::Import {
                    path: string_value(string),
                    path_span,
                    span,
                })));
            }
            Rule::let_stmt => {
                let mut name = None;
                let mut value = None;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::ident => name = Some((p.as_str().to_string(), span_of(&p, file))),
                        Rule::expr => value = Some(build_expr(p, file)?),
                        _ => {}
                    }
                }
                // Invariant: the grammar requires a name and an expression in `let`.
                let (name, name_span) = name.expect("let has a name");
                let value = value.expect("let has a value");
                statements.push(RawStatement::Plain(Box::new(Statement::Let {
                    name,
                    name_span,
                    value,
                    span,
                })));
            }
            Rule::frames_stmt => {
                let mut values: Vec<Expr> = Vec::new();
                let mut has_fps = false;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::kw_frames | Rule::range_dots => {}
                        Rule::kw_fps => has_fps = true,
                        _ => values.push(build_expr(p, file)?),
                    }
                }
                let mut values = values.into_iter();
                // Invariant: the grammar requires two atoms around `..`, and one after `fps`.
                let first = values.next().expect("frames has a first frame");
                let last = values.next().expect("frames has a last frame");
                let fps = if has_fps { values.next() } else { None };
                statements.push(RawStatement::Plain(Box::new(Statement::Frames {
                    first,
                    last,
                    fps,
                    span,
                })));
            }
            Rule::block => {
                let mut words = Vec::new();
                let mut items = Vec::new();
                let mut open = false;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::block_open => open = true,
                        Rule::block_close => {}
                        Rule::ident if !open => {
                            words.push((p.as_str().to_string(), span_of(&p, file)))
                        }
                        _ => items.push(build_expr(p, file)?),
                    }
                }
                let mut words = words.into_iter();
                // Invariant: the grammar requires the keyword before `{`.
                let (keyword, keyword_span) = words.next().expect("block has a keyword");
                let header = words.next();
                let block = Block {
                    keyword,
                    keyword_span,
                    header,
                    items,
                    span,
                };
                statements.push(RawStatement::Plain(Box::new(Statement::Block(block))));
            }
            _ => {}
        }
    }
    Ok(statements)
}

fn syntax_error(error: pest::error::Error<Rule>, file: u32, text: &str) -> Diagnostic {
    let (start, end) = match error.location {
        pest::error::InputLocation::Pos(p) => (p, p),
        pest::error::InputLocation::Span((s, e)) => (s, e),
    };
    // Point at the whole offending token (up to the next whitespace), or at end of file.
    let rest = &text[start.min(text.len())..];
    let token_len = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    let end = end.max(start + token_len);
    let message = match &error.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => {
            let message = expected_message(positives);
            if rest.is_empty() {
                format!("{message}, found end of file")
            } else {
                message
            }
        }
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    };
    let mut diagnostic = Diagnostic::error(Span::new(file, start, end), message);
    let before = text[..start.min(text.len())].trim_end();
    let after_value = before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == ')' || c == ']');
    if rest.starts_with(['+', '*', '/']) || (rest.starts_with("- ") && after_value) {
        diagnostic = diagnostic
            .with_note("inside a block, arithmetic needs parentheses: `translate (2 * t) 0 0`");
    }
    diagnostic
}

fn span_of(pair: &Pair<'_, Rule>, file: u32) -> Span {
    let s = pair.as_span();
    Span::new(file, s.start(), s.end())
}

fn string_value(pair: Pair<'_, Rule>) -> String {
    let body = pair.into_inner().next().map(|p| p.as_str()).unwrap_or("");
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn pratt() -> PrattParser<Rule> {
    PrattParser::new()
        .op(Op::infix(Rule::add_op, Assoc::Left) | Op::infix(Rule::sub_op, Assoc::Left))
        .op(Op::infix(Rule::mul_op, Assoc::Left) | Op::infix(Rule::div_op, Assoc::Left))
        .op(Op::prefix(Rule::neg_op))
}

/// Builds an expression from an `expr` pair or from one atom.
fn build_expr(pair: Pair<'_, Rule>, file: u32) -> Result<Expr, Diagnostic> {
    let span = span_of(&pair, file);
    Ok(match pair.as_rule() {
        Rule::expr => {
            if pair.clone().into_inner().count() > 2 * MAX_TERMS {
                return Err(Diagnostic::error(
                    span,
                    format!("expression has more than {MAX_TERMS} terms"),
                ));
            }
            // Each minus sign in a row nests the parser and the evaluator one level deeper, as
            // a bracket does.
            let mut run = 0usize;
            for p in pair.clone().into_inner() {
                run = if p.as_rule() == Rule::neg_op {
                    run + 1
                } else {
                    0
                };
                if run > MAX_NESTING {
                    return Err(Diagnostic::error(
                        span_of(&p, file),
                        format!("more than {MAX_NESTING} minus signs in a row"),
                    ));
                }
            }
            let parser = pratt();
            parser
                .map_primary(|p| build_expr(p, file))
                .map_prefix(|op, operand| {
                    let operand = operand?;
                    let span = span_of(&op, file).to(operand.span);
                    Ok(Expr {
                        kind: ExprKind::Neg(Box::new(operand)),
                        span,
                    })
                })
                .map_infix(|lhs, op, rhs| {
                    let (lhs, rhs) = (lhs?, rhs?);
                    let op = match op.as_rule() {
                        Rule::add_op => BinaryOp::Add,
                        Rule::sub_op => BinaryOp::Sub,
                        Rule::mul_op => BinaryOp::Mul,
                        _ => BinaryOp::Div,
                    };
                    let span = lhs.span.to(rhs.span);
                    Ok(Expr {
                        kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                        span,
                    })
                })
                .parse(pair.into_inner())?
        }
        Rule::number => {
            // Invariant: the grammar only matches valid float syntax; overflow gives infinity,
            // which evaluation reports.
            let value = pair.as_str().parse::<f64>().unwrap_or(f64::INFINITY);
            Expr {
                kind: ExprKind::Number(value),
                span,
            }
        }
        Rule::string => Expr {
            kind: ExprKind::Str(string_value(pair)),
            span,
        },
        Rule::ident => Expr {
            kind: ExprKind::Ident(pair.as_str().to_string()),
            span,
        },
        Rule::negated => {
            let inner = pair
                .into_inner()
                .next()
                .map(|p| build_expr(p, file))
                .transpose()?;
            let inner = inner.unwrap_or(Expr {
                kind: ExprKind::Number(0.0),
                span,
            });
            Expr {
                kind: ExprKind::Neg(Box::new(inner)),
                span,
            }
        }
        Rule::vector => {
            let items = pair
                .into_inner()
                .filter(|p| p.as_rule() == Rule::expr)
                .map(|p| build_expr(p, file));
            Expr {
                kind: ExprKind::Vector(items.collect::<Result<_, _>>()?),
                span,
            }
        }
        Rule::call => {
            let mut inner = pair.into_inner();
            let name_pair = inner.next();
            let (name, name_span) = name_pair
                .map(|p| (p.as_str().to_string(), span_of(&p, file)))
                .unwrap_or_default();
            let args = match inner.next() {
                Some(a) => a
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::expr)
                    .map(|p| build_expr(p, file))
                    .collect::<Result<_, _>>()?,
                None => Vec::new(),
            };
            Expr {
                kind: ExprKind::Call {
                    name,
                    name_span,
                    args,
                },
                span,
            }
        }
        Rule::paren => {
            let inner = pair
                .into_inner()
                .find(|p| p.as_rule() == Rule::expr)
                .map(|p| build_expr(p, file));
            let inner = inner.transpose()?.unwrap_or(Expr {
                kind: ExprKind::Number(0.0),
                span,
            });
            Expr {
                kind: ExprKind::Paren(Box::new(inner)),
                span,
            }
        }
        // Other rules never reach here (the grammar only puts the rules above in expression
        // position); a harmless zero keeps this total.
        _ => Expr {
            kind: ExprKind::Number(0.0),
            span,
        },
    })
}

/// A statement before includes are spliced in.
enum RawStatement {
    Plain(Box<Statement>),
    Include {
        path: String,
        path_span: Span,
        span: Span,
    },
}

/// State of loading a root file and its includes.
struct Loader {
    sources: SourceMap,
    statements: Vec<Statement>,
    errors: Vec<Diagnostic>,
    /// Includes made so far, for [`MAX_INCLUDES`].
    included: usize,
    /// The folder (canonical) includes must stay in; `None`: anywhere.
    confined_to: Option<PathBuf>,
}

impl Loader {
    /// Parses `text` as file `file` and splices in its includes. `chain` holds the canonical
    /// paths and display names of the files that include this one (outermost first).
    fn add_file(&mut self, file: u32, text: &str, chain: &mut Vec<(PathBuf, String)>) {
        let statements = match parse_statements(text, file) {
            Ok(s) => s,
            Err(e) => {
                self.errors.push(e);
                return;
            }
        };
        for statement in statements {
            match statement {
                RawStatement::Plain(s) => self.statements.push(*s),
                RawStatement::Include {
                    path,
                    path_span,
                    span,
                } => self.include(file, &path, path_span, span, chain),
            }
        }
    }

    fn include(
        &mut self,
        from: u32,
        written: &str,
        path_span: Span,
        span: Span,
        chain: &mut Vec<(PathBuf, String)>,
    ) {
        self.included += 1;
        if self.included > MAX_INCLUDES {
            // Reported once, at the include that went over; the rest are the same failure.
            if self.included == MAX_INCLUDES + 1 {
                self.errors.push(Diagnostic::error(
                    span,
                    format!(
                        "more than {MAX_INCLUDES} includes in all (a file included twice counts twice)"
                    ),
                ));
            }
            return;
        }
        let resolved = self.sources.resolve(from, written);
        let canonical = match std::fs::canonicalize(&resolved) {
            Ok(c) => c,
            Err(e) => {
                self.errors.push(
                    Diagnostic::error(path_span, format!("cannot include \"{written}\": {e}"))
                        .with_note(format!("looked for {}", resolved.display())),
                );
                return;
            }
        };
        if let Some(folder) = &self.confined_to {
            if !canonical.starts_with(folder) {
                self.errors.push(
                    Diagnostic::error(
                        path_span,
                        format!(
                            "cannot include \"{written}\": it is outside the scene's folder {}",
                            folder.display()
                        ),
                    )
                    .with_note(
                        "includes stay in the scene's folder and below it unless \
                         --allow-includes-outside is given",
                    ),
                );
                return;
            }
        }
        if let Some(position) = chain.iter().position(|(c, _)| *c == canonical) {
            let mut names: Vec<&str> = chain[position..].iter().map(|(_, n)| n.as_str()).collect();
            let display = resolved.display().to_string();
            names.push(&display);
            self.errors.push(Diagnostic::error(
                span,
                format!("include cycle: {}", names.join(" -> ")),
            ));
            return;
        }
        if chain.len() > MAX_INCLUDE_DEPTH {
            self.errors.push(Diagnostic::error(
                span,
                format!("includes are nested more than {MAX_INCLUDE_DEPTH} levels deep"),
            ));
            return;
        }
        let text = match read_scene_text(&resolved) {
            Ok(t) => t,
            Err(e) => {
                self.errors.push(Diagnostic::error(
                    path_span,
                    format!("cannot read \"{written}\": {e}"),
                ));
                return;
            }
        };
        let base = resolved.parent().map(Path::to_path_buf).unwrap_or_default();
        let file = self.sources.add(resolved.clone(), base, text.clone());
        chain.push((canonical, resolved.display().to_string()));
        self.add_file(file, &text, chain);
        chain.pop();
    }

    fn finish(self) -> Result<SceneFile, Diagnostics> {
        let sources = Arc::new(self.sources);
        if self.errors.is_empty() {
            Ok(SceneFile {
                sources,
                statements: self.statements,
            })
        } else {
            Err(Diagnostics {
                sources,
                items: self.errors,
            })
        }
    }
}

/// `text` with every line end a `\n`: Windows' `\r\n` and old Macs' lone `\r` alike, so that
/// comments end and lines count the same whatever wrote the file.
fn unix_line_ends(text: String) -> String {
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    }
}

/// A scene file's text with Unix line ends: a regular file (not a device, a pipe or a folder,
/// which could be endless) of at most [`MAX_SCENE_FILE_BYTES`].
fn read_scene_text(path: &Path) -> Result<String, String> {
    let metadata = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !metadata.is_file() {
        return Err("it is not a regular file (a folder, a device or a pipe)".to_string());
    }
    if metadata.len() > MAX_SCENE_FILE_BYTES {
        return Err(format!(
            "it has {} bytes, more than the {} MiB a scene file may have",
            metadata.len(),
            MAX_SCENE_FILE_BYTES >> 20
        ));
    }
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SCENE_FILE_BYTES).read_to_string(&mut text))
        .map_err(|e| e.to_string())?;
    Ok(unix_line_ends(text))
}

/// Reads and parses a scene file and its includes, which must stay in `scope`.
pub fn load_root(path: &Path, scope: IncludeScope) -> Result<SceneFile, Diagnostics> {
    let confined_to = match scope {
        IncludeScope::SceneFolder => std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf)),
        IncludeScope::Anywhere => None,
    };
    let mut loader = Loader {
        sources: SourceMap::default(),
        statements: Vec::new(),
        errors: Vec::new(),
        included: 0,
        confined_to,
    };
    let text = match read_scene_text(path) {
        Ok(t) => t,
        Err(e) => {
            loader.errors.push(Diagnostic::error(
                Span::NONE,
                format!("cannot read scene file \"{}\": {e}", path.display()),
            ));
            return loader.finish();
        }
    };
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let file = loader.sources.add(path.to_path_buf(), base, text.clone());
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut chain = vec![(canonical, path.display().to_string())];
    loader.add_file(file, &text, &mut chain);
    loader.finish()
}

/// Parses `text` named `name`; relative paths in it resolve against the current directory,
/// and includes may come from anywhere (it is no file in a folder).
pub fn load_text(name: &str, text: &str) -> Result<SceneFile, Diagnostics> {
    let mut loader = Loader {
        sources: SourceMap::default(),
        statements: Vec::new(),
        errors: Vec::new(),
        included: 0,
        confined_to: None,
    };
    let text = &unix_line_ends(text.to_string());
    let file = loader
        .sources
        .add(PathBuf::from(name), PathBuf::new(), text.to_string());
    // A name that is no real file can never be part of an include cycle.
    let canonical =
        std::fs::canonicalize(name).unwrap_or_else(|_| PathBuf::from(format!("<{name}>")));
    let mut chain = vec![(canonical, name.to_string())];
    loader.add_file(file, text, &mut chain);
    loader.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_numbers_in_a_block_are_separate_values() {
        let statements =
            parse_statements("camera { position 0 -1 3 }", 0).unwrap_or_default_for_test();
        let Some(RawStatement::Plain(statement)) = statements.first() else {
            panic!("expected a statement")
        };
        let Statement::Block(block) = statement.as_ref() else {
            panic!("expected a block")
        };
        assert_eq!(block.items.len(), 4);
        assert!(matches!(block.items[2].kind, ExprKind::Neg(_)));
    }

    #[test]
    fn infix_arithmetic_in_a_block_without_parentheses_is_a_syntax_error() {
        let error = parse_statements("instance { translate 1 + 2 0 }", 0)
            .err()
            .map(|e| e.message);
        assert_eq!(
            error.as_deref(),
            Some("expected a value, a parameter name or `}`")
        );
    }

    trait OrDefault {
        fn unwrap_or_default_for_test(self) -> Vec<RawStatement>;
    }
    impl OrDefault for Result<Vec<RawStatement>, Diagnostic> {
        fn unwrap_or_default_for_test(self) -> Vec<RawStatement> {
            match self {
                Ok(s) => s,
                Err(e) => panic!("unexpected syntax error: {}", e.message),
            }
        }
    }
}

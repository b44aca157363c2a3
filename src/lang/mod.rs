//! The scene language: pest grammar to AST, evaluation into the scene IR, and diagnostics.
//!
//! [`SceneFile::load`] reads a `.csc` file and the files it includes into one syntax tree;
//! [`SceneFile::eval`] turns it into a [`scene::Scene`] for one frame. Every failure comes back
//! as [`Diagnostics`], which print as `file:line:col: error: message` with the source line and a
//! caret. The language itself is described in `docs/language.md`.

mod ast;
mod eval;
mod params;
mod suggest;
mod syntax;
mod value;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::scene::{self, Span};

pub use syntax::IncludeScope;

/// The source files of one scene: the root file and everything it includes. The index of a file
/// is the `file` of a [`Span`].
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

#[derive(Clone, Debug)]
struct SourceFile {
    /// The path as it is printed in messages.
    path: PathBuf,
    /// The folder that relative paths inside this file are resolved against.
    base_dir: PathBuf,
    text: String,
}

impl SourceMap {
    /// Adds a file and returns its index.
    fn add(&mut self, path: PathBuf, base_dir: PathBuf, text: String) -> u32 {
        self.files.push(SourceFile {
            path,
            base_dir,
            text,
        });
        (self.files.len() - 1) as u32
    }

    /// The path of file `file` as given (the root path, or an include resolved against it).
    /// Panics if `file` is not an index of this map (see [`SourceMap::len`]).
    pub fn path(&self, file: u32) -> &Path {
        &self.files[file as usize].path
    }

    /// Number of files in the map.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The text of file `file`, if there is such a file.
    pub fn text(&self, file: u32) -> Option<&str> {
        self.files.get(file as usize).map(|f| f.text.as_str())
    }

    /// The folder relative paths in file `file` are resolved against.
    fn base_dir(&self, file: u32) -> &Path {
        self.files
            .get(file as usize)
            .map(|f| f.base_dir.as_path())
            .unwrap_or(Path::new(""))
    }

    /// Resolves a path written in file `file`: absolute paths stay, relative ones are joined to
    /// the folder of that file.
    fn resolve(&self, file: u32, written: &str) -> PathBuf {
        let written = Path::new(written);
        if written.is_absolute() {
            written.to_path_buf()
        } else {
            self.base_dir(file).join(written)
        }
    }

    /// File path, 1-based line and 1-based column (in characters) of the start of `span`;
    /// `None` for [`Span::NONE`] or a span outside the map.
    pub fn line_col(&self, span: Span) -> Option<(PathBuf, usize, usize)> {
        let (line, col, _) = self.locate(span)?;
        Some((self.path(span.file).to_path_buf(), line, col))
    }

    /// Line, column and the text of the line holding the start of `span`.
    fn locate(&self, span: Span) -> Option<(usize, usize, &str)> {
        if span.is_none() {
            return None;
        }
        let text = self.text(span.file)?;
        let start = floor_char_boundary(text, span.start as usize);
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let line = text[..start].matches('\n').count() + 1;
        let col = text[line_start..start].chars().count() + 1;
        Some((line, col, &text[line_start..line_end]))
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The most characters of a source line a diagnostic shows.
const MAX_SHOWN_LINE: usize = 200;

/// One error, pointing at the text that caused it.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
    /// Extra lines printed after the caret (`= note: ...`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            span,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    /// Adds a note line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Writes the diagnostic: `file:line:col: error: message`, the source line, a caret line
    /// under the span, and the notes.
    fn render(&self, sources: &SourceMap, out: &mut impl fmt::Write) -> fmt::Result {
        match sources.locate(self.span) {
            Some((line, col, line_text)) => {
                let path = sources.path(self.span.file).display();
                writeln!(out, "{path}:{line}:{col}: error: {}", self.message)?;
                let line_text = line_text.trim_end_matches('\r');
                // A long line shows a window of it from a little before the span, marked "…"
                // where it is cut.
                let skip = if line_text.chars().count() > MAX_SHOWN_LINE {
                    (col - 1).saturating_sub(MAX_SHOWN_LINE / 4)
                } else {
                    0
                };
                let shown: String = line_text.chars().skip(skip).take(MAX_SHOWN_LINE).collect();
                let (before, after) = (
                    if skip > 0 { "…" } else { "" },
                    if line_text.chars().count() > skip + MAX_SHOWN_LINE {
                        "…"
                    } else {
                        ""
                    },
                );
                writeln!(out, "{before}{shown}{after}")?;
                // The caret line copies tabs so that it lines up under the source line.
                let pad: String = before
                    .chars()
                    .map(|_| ' ')
                    .chain(shown.chars().take(col - 1 - skip).map(|c| {
                        if c == '\t' {
                            '\t'
                        } else {
                            ' '
                        }
                    }))
                    .collect();
                let span_chars = sources
                    .text(self.span.file)
                    .map(|text| {
                        let start = floor_char_boundary(text, self.span.start as usize);
                        let end = floor_char_boundary(text, (self.span.end as usize).max(start));
                        text[start..end]
                            .split('\n')
                            .next()
                            .unwrap_or("")
                            .chars()
                            .count()
                    })
                    .unwrap_or(1)
                    .clamp(1, (MAX_SHOWN_LINE + skip + 1).saturating_sub(col).max(1));
                writeln!(out, "{pad}{}", "^".repeat(span_chars))?;
            }
            None => writeln!(out, "error: {}", self.message)?,
        }
        for note in &self.notes {
            writeln!(out, "  = note: {note}")?;
        }
        Ok(())
    }
}

/// All the diagnostics of one failed step plus the sources they point into; `Display` renders
/// them all (each as `file:line:col: error: msg` + source line + caret; spans that are
/// [`Span::NONE`] print without place).
#[derive(Debug)]
pub struct Diagnostics {
    pub sources: Arc<SourceMap>,
    pub items: Vec<Diagnostic>,
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            item.render(&self.sources, f)?;
        }
        if self.items.len() > 1 {
            writeln!(f, "\n{} errors", self.items.len())?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// A parsed scene file: the statements of the root file with its includes spliced in, and the
/// sources they came from.
#[derive(Clone, Debug)]
pub struct SceneFile {
    sources: Arc<SourceMap>,
    statements: Vec<ast::Statement>,
}

impl SceneFile {
    /// Reads and parses the file at `path` and the files it includes (resolved relative to the
    /// file that includes them), which must lie in its folder or below it.
    pub fn load(path: &Path) -> Result<SceneFile, Diagnostics> {
        syntax::load_root(path, IncludeScope::SceneFolder)
    }

    /// [`SceneFile::load`] with includes allowed where `scope` says (the scene's folder tree,
    /// or anywhere).
    pub fn load_scoped(path: &Path, scope: IncludeScope) -> Result<SceneFile, Diagnostics> {
        syntax::load_root(path, scope)
    }

    /// Parses `text` as if it were the file `name`; includes and asset paths in it are resolved
    /// relative to the current directory.
    pub fn from_str(name: &str, text: &str) -> Result<SceneFile, Diagnostics> {
        syntax::load_text(name, text)
    }

    /// The frame range and frame rate, evaluated without the rest of the scene.
    pub fn frame_range(&self) -> Result<scene::FrameRange, Diagnostics> {
        eval::frame_range(&self.statements, &self.sources).map_err(|items| self.diagnostics(items))
    }

    /// Evaluates the scene for `frame`, loading every file it names through `loader`. All the
    /// semantic errors found are returned together.
    pub fn eval(
        &self,
        frame: i64,
        loader: &dyn scene::AssetLoader,
    ) -> Result<scene::Scene, Diagnostics> {
        eval::evaluate(&self.statements, &self.sources, frame, loader)
            .map_err(|items| self.diagnostics(items))
    }

    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }

    /// `-D NAME=VALUE`: gives every top-level `let NAME` (included files' too) the value
    /// `VALUE` instead of its expression, as Mitsuba's `-D` does. `VALUE` is a number, a vector
    /// `[x, y, z]`, or a string (in quotes or not). Errors are one line for the command line:
    /// an undefined name lists the names that can be overridden.
    pub fn define(&mut self, definition: &str) -> Result<(), String> {
        let Some((name, text)) = definition.split_once('=') else {
            return Err(format!("-D {definition}: expected NAME=VALUE"));
        };
        let name = name.trim();
        let kind = define_value(text.trim()).map_err(|why| format!("-D {definition}: {why}"))?;
        let mut found = false;
        for statement in &mut self.statements {
            if let ast::Statement::Let { name: n, value, .. } = statement {
                if n == name {
                    value.kind = kind.clone();
                    found = true;
                }
            }
        }
        if found {
            return Ok(());
        }
        let mut names: Vec<&str> = self
            .statements
            .iter()
            .filter_map(|s| match s {
                ast::Statement::Let { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        let hint = suggest::did_you_mean(name, names.iter().copied());
        Err(if names.is_empty() {
            format!("-D {definition}: the scene has no top-level `let` to override")
        } else {
            format!(
                "-D {definition}: the scene has no top-level `let {name}`{hint}; it defines {}",
                names.join(", ")
            )
        })
    }

    fn diagnostics(&self, items: Vec<Diagnostic>) -> Diagnostics {
        Diagnostics {
            sources: self.sources.clone(),
            items,
        }
    }
}

/// The expression a `-D` value stands for: a number, a vector of numbers in brackets, or else a
/// string (surrounding double quotes are removed).
fn define_value(text: &str) -> Result<ast::ExprKind, String> {
    let number = |t: &str| -> Result<f64, String> {
        match t.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(n),
            _ => Err(format!("\"{}\" is not a finite number", t.trim())),
        }
    };
    let at = |kind| ast::Expr {
        kind,
        span: Span::NONE,
    };
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or("a vector needs its closing `]`")?;
        let items = inner
            .split(',')
            .map(|t| number(t).map(|n| at(ast::ExprKind::Number(n))))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(ast::ExprKind::Vector(items));
    }
    if let Some(quoted) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return Ok(ast::ExprKind::Str(quoted.to_string()));
    }
    match text.parse::<f64>() {
        Ok(n) if n.is_finite() => Ok(ast::ExprKind::Number(n)),
        Ok(_) => Err(format!("\"{text}\" is not a finite number")),
        Err(_) => Ok(ast::ExprKind::Str(text.to_string())),
    }
}

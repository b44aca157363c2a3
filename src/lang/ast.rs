//! The syntax tree of a scene file: statements, blocks and expressions, each with its span.

use crate::scene::Span;

/// An arithmetic operator between two expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
        }
    }
}

/// An expression or, inside a block, one whitespace-separated atom.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Number(f64),
    /// A string literal, escapes already resolved.
    Str(String),
    /// A bare identifier: a variable, or a name/keyword where a block parameter expects one.
    Ident(String),
    Neg(Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Call {
        name: String,
        name_span: Span,
        args: Vec<Expr>,
    },
    Vector(Vec<Expr>),
    /// A parenthesised expression; an identifier in parentheses is always a variable.
    Paren(Box<Expr>),
}

/// `KEYWORD [HEADER] { items }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub keyword: String,
    pub keyword_span: Span,
    /// The word between the keyword and `{`: a name (`material white`) or a kind (`light point`).
    pub header: Option<(String, Span)>,
    pub items: Vec<Expr>,
    pub span: Span,
}

/// A top-level statement; `include` statements are replaced by the included file's statements.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    Let {
        name: String,
        name_span: Span,
        value: Expr,
        span: Span,
    },
    Frames {
        first: Expr,
        last: Expr,
        fps: Option<Expr>,
        span: Span,
    },
    Block(Block),
    /// `import "scene.glb"`: a scene file's meshes, instances, camera and lights.
    Import {
        path: String,
        path_span: Span,
        span: Span,
    },
}

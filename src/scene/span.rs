//! Source spans: which bytes of which scene file declared an entity.

/// A byte range in one of the source files of a scene (see `lang::SourceMap`). Line and column
/// are computed from the byte offsets only when a message is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// Index of the file in the source map; `u32::MAX` for entities that come from no text
    /// (defaults, command-line overrides).
    pub file: u32,
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The span of something that no source text declared.
    pub const NONE: Span = Span {
        file: u32::MAX,
        start: 0,
        end: 0,
    };

    pub fn new(file: u32, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    pub fn is_none(&self) -> bool {
        self.file == u32::MAX
    }

    /// The smallest span covering both (they must be in the same file to be merged).
    pub fn to(self, other: Span) -> Span {
        if self.is_none() || self.file != other.file {
            return if self.is_none() { other } else { self };
        }
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

impl Default for Span {
    fn default() -> Self {
        Span::NONE
    }
}

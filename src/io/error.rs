//! The error type of everything under `io`: each variant names the file it is about.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why reading or writing a file failed. `Display` names the path and the cause
/// (`cannot read "bunny.ply": No such file or directory`); [`IoError::reason`] gives the cause
/// alone, for callers that print the path themselves.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {}", quoted(path), describe_os_error(source))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file (or its temporary twin, or its directory) could not be written.
    #[error("cannot write {}: {}", quoted(path), describe_os_error(source))]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read but its contents are malformed or unsupported.
    #[error("{}: {message}", quoted(path))]
    Format { path: PathBuf, message: String },
    /// The file's contents are malformed at a known place (1-based line and column).
    #[error("{}:{line}:{column}: {message}", path.display())]
    At {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file name does not say which format to use, and the contents do not either.
    #[error("{}: {message}", quoted(path))]
    UnknownFormat { path: PathBuf, message: String },
    /// The data handed to a writer is inconsistent (e.g. a layer of the wrong size).
    #[error("cannot write {}: {message}", quoted(path))]
    InvalidData { path: PathBuf, message: String },
}

impl IoError {
    /// The file this error is about.
    pub fn path(&self) -> &Path {
        match self {
            IoError::Read { path, .. }
            | IoError::Write { path, .. }
            | IoError::Format { path, .. }
            | IoError::At { path, .. }
            | IoError::UnknownFormat { path, .. }
            | IoError::InvalidData { path, .. } => path,
        }
    }

    /// The cause without the path, e.g. "No such file or directory" or
    /// "PLY header: Line 3: ...", to follow a message that already names the file.
    pub fn reason(&self) -> String {
        match self {
            IoError::Read { source, .. } | IoError::Write { source, .. } => {
                describe_os_error(source)
            }
            // The place is the point of this error, so it stays in the reason.
            IoError::At { .. } => self.to_string(),
            IoError::Format { message, .. }
            | IoError::UnknownFormat { message, .. }
            | IoError::InvalidData { message, .. } => message.clone(),
        }
    }

    pub(crate) fn read(path: &Path, source: std::io::Error) -> IoError {
        IoError::Read {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn write(path: &Path, source: std::io::Error) -> IoError {
        IoError::Write {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn format(path: &Path, message: impl Into<String>) -> IoError {
        IoError::Format {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    pub(crate) fn invalid_data(path: &Path, message: impl Into<String>) -> IoError {
        IoError::InvalidData {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// `"path"` with the path shown as the user wrote it.
fn quoted(path: &Path) -> impl fmt::Display + '_ {
    struct Quoted<'a>(&'a Path);
    impl fmt::Display for Quoted<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "\"{}\"", self.0.display())
        }
    }
    Quoted(path)
}

/// The operating system's message without the trailing " (os error N)".
pub(crate) fn describe_os_error(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(cut) if text.ends_with(')') => text[..cut].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_reads_without_the_os_error_number() {
        let source = std::fs::File::open("/definitely/not/here.ply").unwrap_err();
        let error = IoError::read(Path::new("here.ply"), source);
        assert_eq!(error.reason(), "No such file or directory");
        assert_eq!(
            error.to_string(),
            "cannot read \"here.ply\": No such file or directory"
        );
    }
}

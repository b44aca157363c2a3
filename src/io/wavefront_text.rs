//! The text conventions that Wavefront's OBJ and MTL files share: logical lines (`#` comments,
//! `\` continuations), words with their columns, errors at `file:line:col`, and warnings told
//! once per kind with the count of their other places.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use super::IoError;

/// Longest line accepted (a line with millions of corners is not a mesh anyone writes).
const MAX_LINE_BYTES: usize = 1 << 24;

/// Logical lines of a text file: `#` comments removed, `\` continuations joined, invalid UTF-8
/// replaced. Each comes with the number of its first physical line.
pub(super) struct Lines<'r> {
    reader: &'r mut dyn BufRead,
    path: &'r Path,
    number: usize,
    bytes: Vec<u8>,
}

impl<'r> Lines<'r> {
    pub(super) fn new(reader: &'r mut dyn BufRead, path: &'r Path) -> Self {
        Lines {
            reader,
            path,
            number: 0,
            bytes: Vec::new(),
        }
    }

    /// Reads the next logical line into `joined` and returns its line number; `None` at the end.
    pub(super) fn next_line(&mut self, joined: &mut String) -> Result<Option<usize>, IoError> {
        joined.clear();
        let mut first = None;
        loop {
            self.bytes.clear();
            let read = std::io::Read::take(&mut self.reader, MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut self.bytes)
                .map_err(|e| IoError::read(self.path, e))?;
            if read == 0 {
                return Ok(first);
            }
            self.number += 1;
            if self.bytes.len() > MAX_LINE_BYTES {
                return Err(at(
                    self.path,
                    self.number,
                    1,
                    "the line is longer than 16 MiB",
                ));
            }
            // Text never holds a zero byte: stop at the first line of binary data.
            if let Some(zero) = self.bytes.iter().position(|&b| b == 0) {
                return Err(at(
                    self.path,
                    self.number,
                    zero + 1,
                    "a zero byte: this is binary data, not a text file",
                ));
            }
            first.get_or_insert(self.number);
            let content = match self.bytes.iter().position(|&b| b == b'#') {
                Some(comment) => &self.bytes[..comment],
                None => &self.bytes[..],
            };
            let text = match std::str::from_utf8(content) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(content),
            };
            let text = text.trim_end();
            match text.strip_suffix('\\') {
                Some(head) => {
                    joined.push_str(head);
                    joined.push(' ');
                }
                None => {
                    joined.push_str(text);
                    return Ok(first);
                }
            }
        }
    }
}

/// The whitespace-separated words of `line`, each with its 1-based column (in characters).
pub(super) fn words(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let ascii = line.is_ascii();
    line.split_whitespace().map(move |word| {
        let offset = word.as_ptr() as usize - line.as_ptr() as usize;
        let column = if ascii {
            offset + 1
        } else {
            line[..offset].chars().count() + 1
        };
        (column, word)
    })
}

/// What follows the first word of `line`, trimmed: a name that may contain spaces.
pub(super) fn rest_of_line(line: &str) -> &str {
    let line = line.trim_start();
    line.find(char::is_whitespace)
        .map_or("", |i| line[i..].trim())
}

pub(super) fn at(path: &Path, line: usize, column: usize, message: impl Into<String>) -> IoError {
    IoError::At {
        path: path.to_path_buf(),
        line,
        column,
        message: message.into(),
    }
}

pub(super) fn number(
    path: &Path,
    line: usize,
    (column, word): (usize, &str),
) -> Result<f32, IoError> {
    match word.parse::<f32>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(at(
            path,
            line,
            column,
            format!("\"{word}\" is not a finite number"),
        )),
    }
}

/// Warnings of one file: each kind is told once, at its first place, with how often it recurred.
pub(super) struct Warnings<'p> {
    path: &'p Path,
    told: BTreeMap<String, (usize, usize, String, usize)>,
}

impl<'p> Warnings<'p> {
    pub(super) fn new(path: &'p Path) -> Self {
        Warnings {
            path,
            told: BTreeMap::new(),
        }
    }

    pub(super) fn warn(
        &mut self,
        key: impl Into<String>,
        line: usize,
        column: usize,
        message: impl Into<String>,
    ) {
        self.told
            .entry(key.into())
            .and_modify(|entry| entry.3 += 1)
            .or_insert_with(|| (line, column, message.into(), 0));
    }

    /// The warnings in the order of their places, as `file:line:col: message`.
    pub(super) fn into_messages(self) -> Vec<String> {
        let mut told: Vec<_> = self.told.into_values().collect();
        told.sort_by_key(|&(line, column, ..)| (line, column));
        told.into_iter()
            .map(|(line, column, message, again)| {
                let again = match again {
                    0 => String::new(),
                    1 => " (and on 1 more line)".to_string(),
                    n => format!(" (and on {n} more lines)"),
                };
                format!("{}:{line}:{column}: {message}{again}", self.path.display())
            })
            .collect()
    }
}

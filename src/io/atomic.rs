//! Atomic file replacement: write a temporary file beside the target, then rename it into place.

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::IoError;

/// Distinguishes temporary files of concurrent writes within one process.
static NEXT_TEMP_ID: AtomicU64 = AtomicU64::new(0);

/// Writes `path` through `write_contents`, so that readers see either the old file or the whole
/// new one, never a truncated file. The contents go to `.<name>.tmp-<pid>-<n>` in the same
/// directory (created when missing), which is synced and renamed onto `path`; on any error the
/// temporary file is removed.
pub(crate) fn write_atomically(
    path: &Path,
    write_contents: impl FnOnce(&mut BufWriter<File>) -> Result<(), IoError>,
) -> Result<(), IoError> {
    let Some(file_name) = path.file_name() else {
        return Err(IoError::invalid_data(path, "the path does not name a file"));
    };
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&directory).map_err(|e| IoError::write(&directory, e))?;
    let temp_name = format!(
        ".{}.tmp-{}-{}",
        file_name.to_string_lossy(),
        std::process::id(),
        NEXT_TEMP_ID.fetch_add(1, Ordering::Relaxed)
    );
    let temp_path = directory.join(temp_name);
    let result = write_then_rename(path, &temp_path, write_contents);
    if result.is_err() {
        // The temporary file may not exist (e.g. creating it failed); nothing else to clean.
        let _ = std::fs::remove_file(&temp_path);
    }
    result
}

fn write_then_rename(
    path: &Path,
    temp_path: &Path,
    write_contents: impl FnOnce(&mut BufWriter<File>) -> Result<(), IoError>,
) -> Result<(), IoError> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(temp_path)
        .map_err(|e| IoError::write(temp_path, e))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    write_contents(&mut writer)?;
    let file = writer
        .into_inner()
        .map_err(|e| IoError::write(temp_path, e.into_error()))?;
    file.sync_all().map_err(|e| IoError::write(temp_path, e))?;
    drop(file);
    std::fs::rename(temp_path, path).map_err(|e| IoError::write(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_failed_write_leaves_neither_target_nor_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        let result = write_atomically(&target, |w| {
            w.write_all(b"partial").unwrap();
            Err(IoError::invalid_data(&target, "stopped on purpose"))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_successful_write_replaces_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::fs::write(&target, b"old").unwrap();
        write_atomically(&target, |w| {
            w.write_all(b"new").map_err(|e| IoError::write(&target, e))
        })
        .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

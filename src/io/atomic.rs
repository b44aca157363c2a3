//! Atomic file replacement: write a temporary file beside the target, then rename it into place;
//! the files a process must not leave behind when it is stopped ([`remove_pending_files`]); and
//! the lock that keeps two renders from writing one output ([`OutputLock`]).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::IoError;

/// Distinguishes temporary files of concurrent writes within one process.
static NEXT_TEMP_ID: AtomicU64 = AtomicU64::new(0);

/// Temporary files and locks this process has made and not yet renamed or removed.
static PENDING: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
/// Placeholders (`--placeholders`' empty claims) this process has made and not yet filled.
static PLACEHOLDERS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn pending() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

fn placeholders() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    PLACEHOLDERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Notes a placeholder this process made (`filled`: false) or filled or removed (true), so
/// that [`remove_pending_files`] removes it while it is still empty.
pub fn note_placeholder(path: &Path, filled: bool) {
    if filled {
        placeholders().remove(path);
    } else {
        placeholders().insert(path.to_path_buf());
    }
}

/// Removes every temporary file and lock this process has open, and its placeholders that are
/// still empty, for a process that is being stopped (SIGINT, SIGTERM: the command line's
/// handler calls it before exiting). Returns how many it removed.
pub fn remove_pending_files() -> usize {
    let mut files = pending();
    let mut removed = files
        .iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count();
    files.clear();
    let mut claims = placeholders();
    for path in claims.iter() {
        // Only an empty file is a placeholder; a whole frame is never removed.
        if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) && std::fs::remove_file(path).is_ok()
        {
            removed += 1;
        }
    }
    claims.clear();
    removed
}

/// Whether process `pid` is running: on Linux, whether `/proc/<pid>` exists; elsewhere it is
/// taken to be, so that nothing another process may still use is removed.
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// The folders this process has cleaned of stale temporary files: each once, not at every
/// write (an animation writes thousands of frames into one folder).
static CLEANED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Removes, the first time this process writes into `directory`, the temporary files
/// `.<name>.tmp-<pid>-<n>` there that processes no longer running left (killed with SIGKILL,
/// or by a power cut, mid-write).
fn remove_stale_temporaries(directory: &Path) {
    if !CLEANED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(directory.to_path_buf())
    {
        return;
    }
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .filter(|n| n.starts_with('.'))
            .and_then(|n| n.rsplit_once(".tmp-"))
            .map(|(_, rest)| rest)
        else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| p != std::process::id() && !process_alive(p)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A lock beside an output file (`.<name>.lock`, holding the writer's process id) while one
/// render writes it; dropping it removes the lock. A lock whose process no longer runs is
/// taken over.
#[derive(Debug)]
pub struct OutputLock {
    path: PathBuf,
}

impl OutputLock {
    /// Locks `output` for this process; an error naming the other process when one running
    /// holds it.
    pub fn acquire(output: &Path) -> Result<OutputLock, IoError> {
        let Some(file_name) = output.file_name() else {
            return Err(IoError::invalid_data(
                output,
                "the path does not name a file",
            ));
        };
        if let Some(directory) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(directory).map_err(|e| IoError::write(directory, e))?;
        }
        let path = output.with_file_name(format!(".{}.lock", file_name.to_string_lossy()));
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    use std::io::Write;
                    pending().insert(path.clone());
                    let _ = write!(file, "{}", std::process::id());
                    return Ok(OutputLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| t.trim().parse::<u32>().ok());
                    match holder {
                        Some(pid) if pid != std::process::id() && process_alive(pid) => {
                            return Err(IoError::invalid_data(
                                output,
                                format!(
                                    "another render (process {pid}) is writing it: its lock is \
                                     {}; two renders must not write one output",
                                    path.display()
                                ),
                            ));
                        }
                        // Left by a process that was killed: take it over.
                        _ => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(IoError::write(&path, e)),
            }
        }
        Err(IoError::invalid_data(
            output,
            format!("its lock {} keeps coming back", path.display()),
        ))
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        pending().remove(&self.path);
    }
}

/// Writes `path` through `write_contents`, so that readers see either the old file or the whole
/// new one, never a truncated file. The contents go to `.<name>.tmp-<pid>-<n>` in the same
/// directory (created when missing), which is synced and renamed onto `path`; on any error the
/// temporary file is removed, and [`remove_pending_files`] removes it when the process is
/// stopped. Temporary files that killed processes left in the folder are removed at its first
/// write.
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
    remove_stale_temporaries(&directory);
    let temp_path = directory.join(temp_name);
    pending().insert(temp_path.clone());
    let result = write_then_rename(path, &temp_path, write_contents);
    if result.is_err() {
        // The temporary file may not exist (e.g. creating it failed); nothing else to clean.
        let _ = std::fs::remove_file(&temp_path);
    }
    pending().remove(&temp_path);
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

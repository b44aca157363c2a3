//! Running the `caustica` binary in tests: a real process in a temporary directory (also its
//! current directory), its output as text, and the files it left.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn scene(name: &str) -> PathBuf {
    repo().join("scenes").join(name)
}

/// Runs `caustica ARGS` in `dir`.
pub fn caustica(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_caustica"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("the caustica binary runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "caustica failed with {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
}

/// Fails with exit status 1 (an error reported by caustica, not a crash or a signal) and
/// without panic text.
pub fn assert_clean_failure(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(1),
        "expected a reported error\nstdout:\n{}\nstderr:\n{}",
        stdout(out),
        stderr(out)
    );
    let err = stderr(out);
    assert!(!err.contains("panicked"), "panic in stderr:\n{err}");
    assert!(!err.contains("RUST_BACKTRACE"), "panic in stderr:\n{err}");
}

/// Every file (not directory) under `dir`, recursively, relative to `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found.sort();
    found
}

pub fn write_scene(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `caustica ARGS` in `dir` with `vars` set and the GPU requirement of CI lifted, as a user
/// would run it (e.g. without a GPU: `VK_ICD_FILENAMES` naming no driver).
pub fn caustica_with(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_caustica"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env_remove("CAUSTICA_REQUIRE_GPU")
        .envs(vars.iter().copied())
        .output()
        .expect("the caustica binary runs")
}

//! Embeds every WGSL file under `shaders/` into the binary as a table of (path, source), so that
//! kernels are found by name and `src/gpu/shader.rs` can join their includes. The sources are
//! validated by naga in that module's tests.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "wgsl") {
            out.push(
                path.strip_prefix(root)
                    .expect("collected under root")
                    .to_path_buf(),
            );
        }
    }
}

fn main() {
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("shaders");
    println!("cargo:rerun-if-changed=shaders");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    let mut table = String::from("/// Every WGSL file under `shaders/`: (path relative to `shaders/`, source).\npub static SHADER_FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
        let rel = f.to_string_lossy().replace('\\', "/");
        let _ = writeln!(
            table,
            "    ({rel:?}, include_str!({:?})),",
            root.join(f).to_string_lossy()
        );
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("shader_files.rs");
    std::fs::write(out, table).expect("OUT_DIR is writable");
}

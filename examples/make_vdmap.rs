//! Writes a procedural vector-displacement map (see `caustica::io::vdgen`) as a float EXR.
//!
//! Usage: `cargo run --release --example make_vdmap -- <kind> <out.exr> [size]`, where `kind`
//! is `ripples` or `overhang` and `size` (default 64) is the width and height in texels.

use std::path::PathBuf;
use std::process::ExitCode;

use caustica::io::vdgen;

const DEFAULT_SIZE: u32 = 64;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = format!(
        "usage: make_vdmap <kind> <out.exr> [size]\n  kind: {}\n  size: texels per side (default {DEFAULT_SIZE})",
        vdgen::KINDS.join(" | ")
    );
    let (kind, out, size) = match args.as_slice() {
        [kind, out] => (kind, PathBuf::from(out), Ok(DEFAULT_SIZE)),
        [kind, out, size] => (kind, PathBuf::from(out), size.parse::<u32>()),
        _ => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let size = match size {
        Ok(size) if (1..=16384).contains(&size) => size,
        _ => {
            eprintln!("make_vdmap: the size must be a whole number from 1 to 16384\n{usage}");
            return ExitCode::from(2);
        }
    };
    let Some(image) = vdgen::generate(kind, size) else {
        eprintln!("make_vdmap: unknown kind \"{kind}\"\n{usage}");
        return ExitCode::from(2);
    };
    match vdgen::write_vd_image(&out, &image) {
        Ok(()) => {
            let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
            println!("wrote {} ({size}x{size}, {bytes} bytes)", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make_vdmap: {e}");
            ExitCode::FAILURE
        }
    }
}

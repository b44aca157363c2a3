//! Writes the procedural "Party" scene's base meshes and VD map atlas (see
//! `caustica::io::vdgen_party`): six OBJ files and `atlas.exr`.
//!
//! Usage: `cargo run --release --example make_party -- <out_dir>`; the committed files live in
//! `scenes/party/` (`cargo run --release --example make_party -- scenes/party`), which
//! `scenes/party/party.csc` renders.

use std::path::PathBuf;
use std::process::ExitCode;

use caustica::io::vdgen_party;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out] = args.as_slice() else {
        eprintln!("usage: make_party <out_dir>   (the committed files: scenes/party)");
        return ExitCode::from(2);
    };
    let out = PathBuf::from(out);
    let (_, patches) = vdgen_party::party_meshes();
    match vdgen_party::write_party(&out) {
        Ok(paths) => {
            let mut total = 0;
            for path in &paths {
                let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                total += bytes;
                println!("wrote {} ({bytes} bytes)", path.display());
            }
            println!(
                "{patches} VD patches, atlas {0}x{0} texels, {total} bytes in all",
                vdgen_party::ATLAS_SIZE
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make_party: {e}");
            ExitCode::FAILURE
        }
    }
}

//! Writes one RGB layer of a Caustica EXR (the colour, or an AOV such as `photons_caustic`) as a
//! tone-mapped PNG, for looking at debug layers.
//!
//! `cargo run --release --example layer_preview -- in.exr photons_caustic out.png [exposure stops]`

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: layer_preview IN.exr LAYER OUT.png [EXPOSURE_STOPS]");
        std::process::exit(2);
    }
    let exposure: f32 = args.get(3).and_then(|e| e.parse().ok()).unwrap_or(0.0);
    let mut frame = match caustica::io::read_frame(Path::new(&args[0])) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}: {e}", args[0]);
            std::process::exit(1);
        }
    };
    if args[1] != "color" {
        let Some(layer) = frame.aov(&args[1]) else {
            let names: Vec<&str> = frame.aovs.iter().map(|l| l.name.as_str()).collect();
            eprintln!("{}: no layer \"{}\" (it has {names:?})", args[0], args[1]);
            std::process::exit(1);
        };
        let c = layer.channels.len();
        frame.color = (0..layer.pixels.len() / c.max(1))
            .map(|i| {
                glam::Vec3::new(
                    layer.get(i, 0),
                    layer.get(i, 1.min(c - 1)),
                    layer.get(i, 2.min(c - 1)),
                )
            })
            .collect();
    }
    if let Err(e) = caustica::io::write_preview_png(Path::new(&args[2]), &frame, exposure) {
        eprintln!("{}: {e}", args[2]);
        std::process::exit(1);
    }
}

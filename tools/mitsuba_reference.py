#!/usr/bin/env python3
"""Renders a converged reference of a Caustica scene with Mitsuba 3, an independent path tracer.

    cargo run --release --example mitsuba_export -- scenes/cornell_spheres.csc out/ref --spp 1024
    pip install mitsuba
    python3 tools/mitsuba_reference.py out/ref/scene.xml out/ref/reference.exr [--variant scalar_rgb] [--spp N] [--half]

The exporter writes the scene (world-space PLY meshes, materials, lights, camera and the sample
count); this script renders it and writes a linear RGB EXR, which tests/reference.rs and
`caustica compare IMAGE REFERENCE` read. See docs/reference.md for what the two renderers model differently.
"""
import argparse
import time

import mitsuba as mi


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene")
    parser.add_argument("output")
    parser.add_argument("--variant", default="scalar_rgb")
    parser.add_argument("--spp", type=int, default=0, help="override the exported sample count")
    parser.add_argument("--half", action="store_true", help="store half floats (the committed references)")
    args = parser.parse_args()
    mi.set_variant(args.variant)
    scene = mi.load_file(args.scene)
    start = time.time()
    image = mi.render(scene, spp=args.spp) if args.spp > 0 else mi.render(scene)
    bitmap = mi.Bitmap(image)
    if args.half:
        bitmap = bitmap.convert(mi.Bitmap.PixelFormat.RGB, mi.Struct.Type.Float16, False)
    bitmap.write(args.output)
    print(f"{args.output}: Mitsuba {mi.__version__} {args.variant}, {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Exports an OBJ file as binary glTF through Blender, as a user's DCC tool would, with a
perspective camera, so that Caustica's glTF reader is tested on what Blender writes.

    pip install bpy            # Blender as a Python module (bpy 5.0.1 was used)
    python3 tools/blender_gltf.py IN.obj OUT.glb [--camera X Y Z TX TY TZ FOV_DEG]

Blender reads the OBJ with its MTL materials (Principled BSDF: Kd as base colour, Ke as
emission) into its Z-up world and the glTF exporter writes it back +Y up, so the geometry keeps
the OBJ's coordinates. The camera looks from X Y Z at TX TY TZ with the vertical field of view
FOV_DEG (the scenes' `camera { position look_at fov }`).
"""
import argparse
import math

import bpy
from mathutils import Vector


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("obj")
    parser.add_argument("glb")
    parser.add_argument("--camera", type=float, nargs=7)
    args = parser.parse_args()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.obj_import(filepath=args.obj)
    if args.camera:
        x, y, z, tx, ty, tz, fov = args.camera
        # glTF (+Y up) to Blender (+Z up): (x, y, z) → (x, −z, y).
        position = Vector((x, -z, y))
        target = Vector((tx, -tz, ty))
        data = bpy.data.cameras.new("camera")
        data.sensor_fit = "VERTICAL"
        data.angle_y = math.radians(fov)
        camera = bpy.data.objects.new("camera", data)
        bpy.context.scene.collection.objects.link(camera)
        camera.location = position
        camera.rotation_euler = (target - position).to_track_quat("-Z", "Y").to_euler()
    bpy.ops.export_scene.gltf(
        filepath=args.glb, export_format="GLB", export_cameras=True, export_lights=True
    )
    print(f"wrote {args.glb}")


if __name__ == "__main__":
    main()

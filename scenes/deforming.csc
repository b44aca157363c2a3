# A deforming mesh: a ball of 262,144 triangles whose vertices move every frame (its radius
# pulses), beside a box that only turns. With `accel wide gpu_lbvh` the GPU builds the ball's
# middle level again every frame, on the device; the box keeps its tree and only the top level
# is rebuilt. `--stats` shows it: bvh/device_builds, bvh/device_build_ms, device/middle_build_ms.
#   cargo run --release -- render scenes/deforming.csc --frames 1..4 --stats

let t = time
let pulse = 0.5 + 0.08 * sin(2 * pi * t)

camera { position 0 1.3 4  look_at 0 0.5 0  fov 40 }
film   { resolution 640 360 spp 2 max_depth 5 accel wide gpu_lbvh }

material floor  { diffuse 0.7 0.7 0.7 }
material copper { mirror 0.95 0.64 0.54 }
material blue   { diffuse 0.15 0.25 0.7 }

mesh ground { quad size 10 10 }
mesh ball   { sphere radius pulse segments 512 }
mesh block  { box size 0.6 0.6 0.6 }

instance { mesh ground material floor }
instance { mesh ball   material copper translate -0.6 0.6 0 }
instance { mesh block  material blue   rotate 0 (90 * t) 0 translate 0.8 0.3 0.2 }

light point { position 2 3 2 power 150 140 130 }

frames 1..24 fps 24
output { path "out/deforming_####.exr" }

# The original Cornell box as McGuire's OBJ brings it: every face takes its material from
# CornellBox-Original.mtl (red and green walls, white boxes), and the ceiling light is a face
# whose material emits (Ke 17 12 4). The instance names no material, so the file's are used.
#   cargo run --release -- render scenes/cornell_mcguire.csc --preview out/cornell_mcguire.png

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 256 256 spp 4 max_depth 8 }

mesh box { file "meshes/CornellBox-Original.obj" }
instance { mesh box }

photons { global 200000 caustic 0 max_bounces 8 knn 64 }
gather  { seeds 4096 rays 256 }
output  { path "out/cornell_mcguire_####.exr" }

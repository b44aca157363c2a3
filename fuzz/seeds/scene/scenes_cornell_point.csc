# The Cornell box with its two boxes, lit by a point light under the ceiling.
#   cargo run --release -- render scenes/cornell_point.csc --preview out/cornell_point.png

include "cornell_walls.csc"

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 512 512 spp 4 max_depth 8 }

mesh block { box size 1 1 1 }
instance { mesh block material white scale 0.6 0.6 0.6 rotate 0 -17 0 translate 0.35 0.3 0.35 }
instance { mesh block material white scale 0.6 1.2 0.6 rotate 0 17 0 translate -0.35 0.6 -0.3 }

light point { position 0 1.85 0 power 60 55 45 }

photons { global 200000 caustic 100000 max_bounces 6 knn 64 }
gather  { seeds 4096 rays 128 quadtree_levels 7 }
output  { path "out/cornell_point_####.exr" layers albedo normal depth }

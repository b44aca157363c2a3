# The Cornell box of Jensen's photon-mapping book (Fig. 9.10): a mirror sphere and a glass
# sphere under a square area light in the ceiling.
#   cargo run --release -- render scenes/cornell_spheres.csc --preview out/cornell_spheres.png

include "cornell_walls.csc"

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 512 512 spp 4 max_depth 10 }

material chrome { mirror 0.95 }
material glass  { dielectric ior 1.5 }

mesh ball { sphere radius 0.33 segments 96 }
instance { mesh ball material chrome translate -0.42 0.33 -0.35 }
instance { mesh ball material glass  translate 0.42 0.33 0.3 }

# A 0.5 x 0.5 light just below the ceiling, emitting downwards; 16 shadow rays per point.
light quad { center 0 1.98 0 size 0.5 0.5 radiance 15 15 15 samples 16 }

photons { global 400000 caustic 400000 max_bounces 8 knn 64 }
gather  { seeds 8192 rays 256 quadtree_levels 8 }
output  { path "out/cornell_spheres_####.exr" layers albedo normal depth }

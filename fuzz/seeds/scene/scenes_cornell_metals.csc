# The Cornell box with a gold sphere (a conductor: the exact Fresnel reflectance of its complex
# index per channel) and two glass spheres, one with the exact Fresnel equations (the default)
# and one with Schlick's approximation, under a square area light in the ceiling.
#   cargo run --release -- render scenes/cornell_metals.csc --preview out/cornell_metals.png

include "cornell_walls.csc"

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 512 512 spp 4 max_depth 10 }

# Gold's complex index of refraction at about 650, 550 and 450 nm.
material gold          { conductor eta 0.143 0.374 1.442 k 3.983 2.386 1.603 }
material glass         { dielectric ior 1.5 }
material schlick_glass { dielectric ior 1.5 fresnel schlick }

mesh ball { sphere radius 0.28 segments 96 }
instance { mesh ball material gold          translate -0.55 0.28 -0.35 }
instance { mesh ball material glass         translate 0 0.28 0.3 }
instance { mesh ball material schlick_glass translate 0.55 0.28 -0.35 }

light quad { center 0 1.98 0 size 0.5 0.5 radiance 15 15 15 samples 16 }

photons { global 400000 caustic 400000 max_bounces 8 knn 64 }
gather  { seeds 8192 rays 256 quadtree_levels 8 }
output  { path "out/cornell_metals_####.exr" layers albedo normal depth }

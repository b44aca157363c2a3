# Plastics in the Cornell box: a red sphere under a smooth clear coat, a blue box under a rough
# one (roughness 0.3), under a square area light in the ceiling. The
# coats reflect the light and the room (a mirror-like reflection weighted by the coat's Fresnel
# term, or a glossy GGX lobe); the diffuse bases scatter what the coats let in.
#   cargo run --release -- render scenes/plastic.csc --preview out/plastic.png

include "cornell_walls.csc"

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 512 512 spp 16 max_depth 10 }

material red_plastic  { plastic 0.7 0.08 0.06 }
material blue_plastic { plastic 0.1 0.2 0.6 roughness 0.3 }

mesh ball  { sphere radius 0.3 analytic }
mesh block { box size 0.5 0.7 0.5 }
instance { mesh ball  material red_plastic  translate -0.4 0.3 0.25 }
instance { mesh block material blue_plastic rotate 0 -25 0 translate 0.35 0.35 -0.3 }

light quad { center 0 1.98 0 size 0.5 0.5 radiance 15 15 15 samples 4 }

photons { global 400000 caustic 400000 max_bounces 8 knn 64 }
gather  { seeds 8192 rays 256 quadtree_levels 8 }
output  { path "out/plastic_####.exr" layers albedo normal depth }

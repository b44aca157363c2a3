# A lamp behind frosted glass: a point light behind a frosted glass screen (a rough dielectric
# slab, roughness 0.5) in the Cornell box, with a dim area light in the ceiling and a rough
# gold ball in front. The screen glows where the lamp shines through it: its transmission lobe
# takes the lamp's light through shadow rays from its far side (a point light no ray can
# meet), and the ceiling light's both ways, weighed by multiple importance sampling. The light
# the screen spreads onto the floor is a caustic, from the caustic photon map.
#   cargo run --release -- render scenes/frosted.csc --preview out/frosted.png

include "cornell_walls.csc"

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 512 512 spp 16 max_depth 10 }

material frosted { dielectric ior 1.5 roughness 0.5 }
material gold    { conductor metal gold roughness 0.2 }

mesh screen { box size 1.3 1.1 0.06 }
mesh ball   { sphere radius 0.25 analytic }
instance { mesh screen material frosted rotate 0 -12 0 translate 0 0.55 -0.15 }
instance { mesh ball   material gold    translate -0.5 0.25 0.55 }

light point { position 0.1 0.45 -0.6 power 12 11 9 }
light quad  { center 0 1.98 0 size 0.5 0.5 radiance 3 3 3 samples 4 }

photons { global 400000 caustic 400000 max_bounces 8 knn 64 }
gather  { seeds 8192 rays 256 quadtree_levels 8 }
output  { path "out/frosted_####.exr" layers albedo normal depth }

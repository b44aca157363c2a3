# Rough materials in the Cornell box: a rough gold sphere (GGX microfacets, roughness 0.3), a
# frosted glass sphere (roughness 0.2) and a brushed-looking aluminium box (roughness 0.5),
# under a square area light in the ceiling. Their glossy reflections of the light are sampled
# both ways, by shadow rays and by the lobes, and weighed by multiple importance sampling.
#   cargo run --release -- render scenes/rough.csc --preview out/rough.png

include "cornell_walls.csc"

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 512 512 spp 16 max_depth 10 }

material gold      { conductor metal gold roughness 0.3 }
material frosted   { dielectric ior 1.5 roughness 0.2 }
material aluminium { conductor metal aluminium roughness 0.5 }

mesh ball  { sphere radius 0.3 analytic }
mesh block { box size 0.45 0.8 0.45 }
instance { mesh ball  material gold      translate -0.45 0.3 0.2 }
instance { mesh ball  material frosted   translate 0.4 0.3 0.45 }
instance { mesh block material aluminium rotate 0 20 0 translate 0.25 0.4 -0.45 }

light quad { center 0 1.98 0 size 0.5 0.5 radiance 15 15 15 samples 4 }

photons { global 400000 caustic 400000 max_bounces 8 knn 64 }
gather  { seeds 8192 rays 256 quadtree_levels 8 }
output  { path "out/rough_####.exr" layers albedo normal depth }

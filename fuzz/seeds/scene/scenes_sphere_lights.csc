# Glowing analytic spheres as lights in the Cornell box: a small warm bulb under the ceiling
# and a larger cool globe on the floor, with a rough gold sphere and a plastic block. Shadow
# rays aim at each sphere uniformly over the cone of directions it covers (exact in solid
# angle), weighed by multiple importance sampling against the gold's and the plastic coat's
# lobes, and each sphere emits photons from all over its surface.
#   cargo run --release -- render scenes/sphere_lights.csc --preview out/sphere_lights.png

include "cornell_walls.csc"

camera { position 0 1 3.9  look_at 0 1 0  fov 39 }
film   { resolution 512 512 spp 16 max_depth 10 }

material gold  { conductor metal gold roughness 0.3 }
material coat  { plastic 0.15 0.3 0.6 roughness 0.2 }
material warm  { emissive 30 24 16 samples 4 }
material cool  { emissive 2 3 5 samples 4 }

mesh ball  { sphere radius 0.3 analytic }
mesh block { box size 0.45 0.8 0.45 }
mesh bulb  { sphere radius 0.08 analytic }
mesh globe { sphere radius 0.15 analytic }

instance { mesh ball  material gold translate -0.4 0.3 0.1 }
instance { mesh block material coat rotate 0 20 0 translate 0.35 0.4 -0.35 }
instance { mesh bulb  material warm translate 0 1.7 0 }
instance { mesh globe material cool translate 0.45 0.15 0.55 }

photons { global 400000 caustic 400000 max_bounces 8 knn 64 }
gather  { seeds 8192 rays 256 quadtree_levels 8 }
output  { path "out/sphere_lights_####.exr" layers albedo normal depth }

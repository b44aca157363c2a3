# The objects of scenes/environment.csc under its sky map alone (no sun: a path tracer cannot
# find the sun's caustic through the glass ball, so the Mitsuba reference leaves it out), for
# tests/reference.rs. The map is the example's, scenes/maps/sky.exr.

camera { position 0 2.2 5  look_at 0 0.5 0  fov 40 }
film   { resolution 128 128 spp 16 max_depth 8 }

material stone  { diffuse 0.7 0.68 0.62 }
material clay   { diffuse 0.6 0.35 0.25 }
material glass  { dielectric ior 1.5 }
material chrome { conductor eta 3.2 3.1 2.3 k 3.3 3.3 3.1 }

mesh ground { quad size 12 12 }
mesh column { box size 0.3 2 0.3 }
mesh crate  { box size 0.7 0.7 0.7 }
mesh ball   { sphere radius 0.4 analytic }

instance { mesh ground material stone }
instance { mesh column material clay translate -1.2 1 -0.6 }
instance { mesh crate material clay rotate 0 25 0 translate 1.1 0.35 -0.4 }
instance { mesh ball material glass translate 0 0.9 0.6 }
instance { mesh ball material chrome scale 0.6 translate -0.5 0.24 1.3 }

light environment { file "../../../scenes/maps/sky.exr" samples 4 }

photons { global 200000 caustic 200000 max_bounces 6 knn 64 }
gather  { seeds 4096 rays 128 }
output  { path "out/sky_objects_####.exr" }

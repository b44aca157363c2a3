# An afternoon sun (its 0.53° disk gives soft-edged shadows) over a floor with a column, a
# crate and a glass ball, which focuses the sun into a caustic.
#   cargo run --release -- render scenes/sun.csc --preview out/sun.png

camera { position 0 2.2 5  look_at 0 0.5 0  fov 40 }
film   { resolution 480 320 spp 8 max_depth 8 }

material stone { diffuse 0.7 0.68 0.62 }
material clay  { diffuse 0.6 0.35 0.25 }
material glass { dielectric ior 1.5 }

mesh ground { quad size 12 12 }
mesh column { box size 0.3 2 0.3 }
mesh crate  { box size 0.7 0.7 0.7 }
mesh ball   { sphere radius 0.4 segments 64 }

instance { mesh ground material stone }
instance { mesh column material clay translate -1.2 1 -0.6 }
instance { mesh crate material clay rotate 0 25 0 translate 1.1 0.35 -0.4 }
instance { mesh ball material glass translate 0 0.9 0.6 }

# Low in the west: long shadows towards +x, softening away from their casters.
light sun { direction 0.8 -0.55 -0.25 irradiance 3 2.85 2.6 angle 0.53 }

photons { global 200000 caustic 200000 max_bounces 6 knn 64 }
gather  { seeds 4096 rays 128 }
output  { path "out/sun_####.exr" }

# A sky and its sun: the environment map lights the shadows blue and the sun casts them (its
# 0.53° disk gives soft edges). The map is scenes/maps/sky.exr, written by
#   cargo run --release --example make_sky
# and this scene renders with
#   cargo run --release -- render scenes/environment.csc --preview out/environment.png

camera { position 0 2.2 5  look_at 0 0.5 0  fov 40 }
film   { resolution 480 320 spp 8 max_depth 8 }

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

# The map's glow is centred on the sun's direction (make_sky's SUN).
light environment { file "maps/sky.exr" scale 1 samples 4 }
light sun { direction 0.8 -0.55 -0.25 irradiance 3 2.85 2.6 }

photons { global 200000 caustic 200000 max_bounces 6 knn 64 }
gather  { seeds 4096 rays 128 }
output  { path "out/environment_####.exr" }

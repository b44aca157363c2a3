# Dabrovic's Sponza atrium (its OBJ with 20 MTL materials and their JPEG textures, as
# scenes/sponza.csc ships it), lit by an afternoon sun through the open roof and by the sky of
# scenes/environment.csc (whose glow is centred on the same sun): the small photon settings of
# the tests and of earlier timings (docs/performance.md).
#   cargo run --release -- render tests/data/scenes/sponza_sun.csc --preview out/sponza.png

camera { position -10 3.5 -0.6  look_at 5 4.5 0.5  fov 65 }
film   { resolution 640 400 spp 4 max_depth 6 }

mesh sponza { file "../../../scenes/meshes/sponza/sponza.obj.gz" }
instance { mesh sponza }

light sun { direction 0.8 -0.55 -0.25 irradiance 6 5.7 5.2 }
light environment { file "../../../scenes/maps/sky.exr" samples 16 }

photons { global 400000 caustic 0 max_bounces 6 knn 64 }
gather  { seeds 8192 rays 128 }
output  { path "out/sponza_####.exr" }

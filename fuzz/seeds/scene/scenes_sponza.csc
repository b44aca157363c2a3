# Dabrovic's Sponza atrium (its OBJ with 20 MTL materials and their JPEG textures, shipped in
# scenes/meshes/sponza), lit by an afternoon sun through the open roof and by the sky of
# scenes/environment.csc, whose glow is centred on the same sun. The atrium is lit mostly by
# light that has bounced: photons go 16 bounces deep.
#   cargo run --release -- render scenes/sponza.csc --preview out/sponza.png

camera { position -10 3.5 -0.6  look_at 5 4.5 0.5  fov 65 }
film   { resolution 640 400 spp 8 max_depth 6 }

mesh sponza { file "meshes/sponza/sponza.obj.gz" }
instance { mesh sponza }

light sun { direction 0.8 -0.55 -0.25 irradiance 6 5.7 5.2 angle 0.53 }
light environment { file "maps/sky.exr" samples 16 }

photons { global 1000000 caustic 0 max_bounces 16 knn 64 }
gather  { seeds 16384 rays 128 }
output  { path "out/sponza_####.exr" }

# Dabrovic Sponza (66,454 triangles) from ../shared/assets, for the ray benchmarks.
# One grey material for the whole atrium (the OBJ's own materials are not read).

camera { position -12 3 0.5  look_at 5 4 0  fov 60 }
film   { resolution 1920 1080 spp 1 max_depth 4 }

material stone { diffuse 0.6 0.58 0.55 }
mesh atrium { file "../../../shared/assets/scenes/dabrovic_sponza/sponza.obj" }
instance { mesh atrium material stone }

light point       { position 0 12 0 power 3000 2900 2700 }
light directional { direction 0.3 -1 0.2 irradiance 2 }

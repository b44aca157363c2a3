# scenes/sponza.csc as its Mitsuba reference renders it (tests/reference.rs): the vault's MTL
# material (sp_00_svod: Kd under a gloss of Ks 0.85 with Ns 1, which Caustica reads as a plastic
# of roughness 0.97) replaced by a matte one of its Kd, since Mitsuba's roughplastic loses
# most of its light at that roughness (a white furnace returns 0.31 of an albedo 0.9 at
# alpha 0.94, where Caustica's plastic returns 0.88 and a smooth one 0.91: docs/reference.md);
# and the full photon estimate at every gather hit (precomputed_irradiance 0), which is what
# a reference still converges to.

camera { position -10 3.5 -0.6  look_at 5 4.5 0.5  fov 65 }
film   { resolution 128 80 spp 16 max_depth 6 }

mesh sponza { file "../../../scenes/meshes/sponza/sponza.obj.gz" }
material vault { diffuse 0.941176534 0.866666734 0.737254918 }
instance { mesh sponza replace "sp_00_svod" vault }

light sun { direction 0.8 -0.55 -0.25 irradiance 6 5.7 5.2 angle 0.53 }
light environment { file "../../../scenes/maps/sky.exr" samples 16 }

photons { global 1000000 caustic 0 max_bounces 16 knn 64 }
gather  { seeds 16384 rays 128 precomputed_irradiance 0 }
output  { path "out/sponza_reference_####.exr" }

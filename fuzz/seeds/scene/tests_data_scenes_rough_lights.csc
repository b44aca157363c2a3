# Rough gold, frosted glass, rough aluminium and two plastics (a smooth and a rough coat) under
# every light that a glossy lobe's sampled
# rays can meet, so that multiple importance sampling weighs each: a sky map (environment), a
# glowing sphere (an emissive mesh light), a glowing analytic sphere (a sphere light) and a
# quad light, with a sun and a point light that only shadow rays reach. The GPU against the CPU (tests/rough_materials.rs).

camera { position 0 1.6 4.5  look_at 0 0.5 0  fov 45 }
film   { resolution 48 48 spp 4 max_depth 6 }

material stone     { diffuse 0.7 0.68 0.62 }
material gold      { conductor metal gold roughness 0.25 }
material frosted   { dielectric ior 1.5 roughness 0.3 }
material aluminium { conductor metal aluminium roughness 0.6 tint 0.9 0.9 0.9 }
material glow      { emissive 6 5 4 samples 2 }
material bulb      { emissive 3 4 6 samples 2 }
material jade      { plastic 0.2 0.5 0.3 roughness 0.3 }
material lacquer   { plastic 0.6 0.1 0.1 }

mesh ground { quad size 8 8 }
mesh ball   { sphere radius 0.5 analytic }
mesh lamp   { sphere radius 0.2 segments 24 }
mesh bulb   { sphere radius 0.15 analytic }
mesh crate  { box size 0.6 0.6 0.6 }

instance { mesh ground material stone }
instance { mesh ball material gold translate -0.8 0.5 0 }
instance { mesh ball material frosted translate 0.5 0.5 0.6 }
instance { mesh crate material aluminium rotate 0 30 0 translate 1.5 0.3 -0.4 }
instance { mesh lamp material glow translate -0.1 1.3 -0.6 }
instance { mesh bulb material bulb translate 0.9 1.1 0.2 }
instance { mesh crate material jade rotate 0 -20 0 translate -1.6 0.3 -0.6 }
instance { mesh ball material lacquer scale 0.5 translate -0.2 0.25 1.2 }

light environment { file "../../../scenes/maps/sky.exr" samples 2 scale 0.5 }
light quad { center 1.5 2.5 1 size 0.8 0.8 radiance 8 8 8 samples 2 }
light sun { direction 0.8 -0.55 -0.25 irradiance 1 0.95 0.9 }
light point { position -1.5 1.5 1.5 power 20 20 20 }

photons { global 20000 caustic 20000 max_bounces 6 knn 32 }
gather  { seeds 256 rays 32 }
output  { path "out/rough_lights_####.exr" }

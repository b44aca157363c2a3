# A teapot in a stadium (the case two-level grids are built for, paper 001 section 8.2): the
# Stanford bunny (69,451 triangles) from ../shared/assets, small, in the middle of a large and
# sparse room of stands, seen from across the room. For `cargo bench --bench accels`.

camera { position 0 14 -70  look_at 0 1 0  fov 40 }
film   { resolution 1920 1080 spp 1 max_depth 4 }

material plaster { diffuse 0.8 0.78 0.74 }
material stone   { diffuse 0.55 0.55 0.5 }

mesh bunny  { file "../../../shared/assets/meshes/stanford/bunny/bun_zipper.ply" }
mesh field  { quad size 200 140 divisions 20 14 }
mesh stand  { box size 180 4 10 }
mesh wall   { box size 10 4 120 }
instance { mesh bunny material plaster scale 10 translate 0 -0.33 0 }
instance { mesh field material stone }
instance { mesh stand material stone translate 0 2 75 }
instance { mesh stand material stone translate 0 6 85 }
instance { mesh stand material stone translate 0 2 -75 }
instance { mesh wall  material stone translate 95 2 0 }
instance { mesh wall  material stone translate -95 2 0 }
instance { mesh wall  material stone translate 105 6 0 }

light point       { position 20 60 -30 power 90000 88000 85000 }
light directional { direction -0.3 -1 0.2 irradiance 0.5 0.5 0.55 }

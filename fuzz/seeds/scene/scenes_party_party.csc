# "Party": a crowd of 180 blobby figures on a ground grid, 13,104 vector-displaced quad patches
# and no instancing: every patch has its own base quad and its own tile of the map atlas (the
# analogue of the "Party" scene of paper 000, Figure 1.1 and Table 1.1).
#
# The other files in this folder are generated; regenerate them (the test tests/party_scene.rs checks that
# they match the generator) with
#   cargo run --release --example make_party -- scenes/party
# It lives in its own folder with its generated files, not beside the small examples that the GPU
# agreement tests render on lavapipe (a software driver): its 13,104 patches take seconds a frame
# there. Its figures on the lent GPU are in docs/performance.md (`cargo bench --bench vd_party`).
# Render with
#   cargo run --release -- render scenes/party/party.csc --preview out/party.png
#
# ground.obj: 48 x 48 quads of 0.5 units (2,304 patches). crowd_*.obj: 180 figures of
# 60 quads (body and head: cube-spheres with 2 x 2 quads per face; two raised arms: cube-spheres
# with one quad per face), split among five materials (10,800 patches).
# atlas.exr: 1017 x 1017 half-float RGB, tangent space, 127 x 127 tiles of 8 x 8 texel
# intervals sharing their zero border texels. A patch's corner UVs are the texel centres of its
# tile's corners, so the displacement is exactly zero on every patch edge and neighbouring
# patches meet without cracks. Tile i draws one of six kinds from a hash of i; with
# w = 16 s(1-s) t(1-t), d = (s,t) - centre (centre jittered by up to 0.05), r = |d|:
#   bump      D_N = a exp(-r^2 / 2 sigma^2) w                   a in +-[0.15, 0.35]
#   ripple    D_N = a cos(2 pi f r) w,  D_TB = 0.6 a sin(2 pi f r) w d/r
#   spike     h = a max(0, 1 - r/rho)^2 w,  D = (h l, h)        leaning by l, |l| <= 0.6
#   overhang  x = r/rho < 1:  D_TB = rho/2 sin(pi x) sin(2 pi x) d/r,  D_N = h (1 + cos pi x)/2
#   ridges    D_N = a sin(2 pi f (d . e) + phase) w
#   twist     D_TB = 4 a w^2 perp(d),  D_N = 0.3 a w
# in units of a patch with unit edges, rounded to multiples of 1/128 (full formulas and ranges:
# the docs of src/io/vdgen_party.rs). The vdmap scales below are about the patches' edge lengths.

camera { position 0 8 10.5  look_at 0 0 -1.5  fov 50 }
film   { resolution 640 480 spp 4 max_depth 6 }

material floor  { diffuse 0.55 0.52 0.48 }
material red    { diffuse 0.75 0.22 0.16 }
material blue   { diffuse 0.2 0.35 0.75 }
material cream  { diffuse 0.85 0.8 0.66 }
material chrome { mirror 0.9 }
material glass  { dielectric ior 1.5 tint 0.9 0.97 1 }

# One file, loaded once; two scales: ground patches are 0.5 units, body patches about 0.2.
vdmap ground_vd { file "atlas.exr" space tangent scale 0.5 }
vdmap crowd_vd  { file "atlas.exr" space tangent scale 0.2 }

mesh ground       { file "ground.obj"       displacement ground_vd }
mesh crowd_red    { file "crowd_red.obj"    displacement crowd_vd }
mesh crowd_blue   { file "crowd_blue.obj"   displacement crowd_vd }
mesh crowd_cream  { file "crowd_cream.obj"  displacement crowd_vd }
mesh crowd_mirror { file "crowd_mirror.obj" displacement crowd_vd }
mesh crowd_glass  { file "crowd_glass.obj"  displacement crowd_vd }

# Each mesh is placed exactly once.
instance { mesh ground       material floor }
instance { mesh crowd_red    material red }
instance { mesh crowd_blue   material blue }
instance { mesh crowd_cream  material cream }
instance { mesh crowd_mirror material chrome }
instance { mesh crowd_glass  material glass }

# Evening sun and three coloured party lights over the crowd.
light directional { direction 0.5 -1 -0.4 irradiance 1.6 1.5 1.3 }
light point { position -5 4 2 power 500 150 300 }
light point { position 5 4 0 power 150 400 500 }
light point { position 0 5 -5 power 450 400 150 }

output { path "out/party_####.exr" layers albedo normal depth }

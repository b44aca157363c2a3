# The walls of a Cornell box: floor, ceiling and back wall in white, the left wall red and the
# right wall green. The box spans x -1..1, y 0..2, z -1..1 and is open towards +z.
# Included by the Cornell box scenes; it declares the materials white, red and green.

material white { diffuse 0.73 0.73 0.73 }
material red   { diffuse 0.63 0.065 0.05 }
material green { diffuse 0.14 0.45 0.091 }

mesh wall { quad size 2 2 }

instance { mesh wall material white }                                   # floor, facing up
instance { mesh wall material white rotate 180 0 0 translate 0 2 0 }    # ceiling, facing down
instance { mesh wall material white rotate 90 0 0 translate 0 1 -1 }    # back wall, facing +z
instance { mesh wall material red   rotate 0 0 -90 translate -1 1 0 }   # left wall, facing +x
instance { mesh wall material green rotate 0 0 90 translate 1 1 0 }     # right wall, facing -x

# Includes resolve relative to the file that names them.
include "parts/materials.csc"
instance { mesh teapot material red }

include "colors.csc"
material red { diffuse red_albedo }
mesh teapot { file "teapot.obj" }

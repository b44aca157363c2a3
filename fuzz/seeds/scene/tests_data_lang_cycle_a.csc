let a = 1
include "b.csc"

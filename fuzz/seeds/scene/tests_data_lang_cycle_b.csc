let b = 2
include "a.csc"

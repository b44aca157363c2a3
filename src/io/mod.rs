//! Files in and out: meshes (OBJ, PLY), textures, VD maps and EXR frames.

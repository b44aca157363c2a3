//! Acceleration structures: binned-SAH BVH, QBVH collapse, the top level over instances, VD patch bounds.

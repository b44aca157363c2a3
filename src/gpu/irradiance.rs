//! Irradiance interpolation on the GPU: the twin of render::gather::interpolate_irradiance.

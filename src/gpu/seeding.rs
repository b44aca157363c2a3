//! The adaptive seeding of irradiance samples on the GPU (paper 003 listings 6.6-6.11).

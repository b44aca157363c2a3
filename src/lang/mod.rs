//! The scene language: pest grammar to AST, evaluation into the scene IR, and diagnostics.

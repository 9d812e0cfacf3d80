//! Schema patterns from the seed scenarios (S1..S19), built only on `odm`'s public API.
//!
//! The patterns are being built; this crate exists so the workspace has its final shape.

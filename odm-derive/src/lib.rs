//! `#[derive(Document)]`: parse, model, check and expand, one module each (see ARCHITECTURE.md).
//!
//! The derive is being built; this crate exists so the workspace has its final shape.

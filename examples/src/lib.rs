//! Shared helpers for the runnable examples in `examples/examples/`.

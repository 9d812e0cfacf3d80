//! Shared helpers for the end-to-end tests, the crash test and the benchmark binary.

pub mod rng;

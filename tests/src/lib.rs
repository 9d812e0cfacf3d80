//! Shared code for the end-to-end tests, the crash test and the benchmark binary.

pub mod conformance;
pub mod crash;
pub mod load;
pub mod rng;

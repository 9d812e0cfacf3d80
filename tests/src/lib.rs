//! Shared code for the end-to-end tests, the crash test and the benchmark binary. Unpublished:
//! it may depend on every crate of the project, and none depends on it.

pub mod conformance;
pub mod crash;
pub mod crowd;
pub mod load;
pub mod process;
pub mod rng;

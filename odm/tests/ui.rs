//! Compile-time checks: every mistake the derive or the typed API refuses has a case named
//! after it, under `tests/ui/<category>/`, with the expected compiler output beside it. They
//! live in this crate, not the end-to-end one, because trybuild compiles the dependencies of
//! the crate that runs them again, and this crate's are few.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/derive/*.rs");
    cases.compile_fail("tests/ui/typed/*.rs");
    cases.compile_fail("tests/ui/aggregate/*.rs");
}

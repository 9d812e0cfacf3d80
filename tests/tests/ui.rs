//! Compile-time checks: every mistake the derive or the typed API refuses has a case named
//! after it, under `tests/ui/<category>/`, with the expected compiler output beside it.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/derive/*.rs");
    cases.compile_fail("ui/typed/*.rs");
}

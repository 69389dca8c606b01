//! What users see when they misuse `#[derive(ShardedEntity)]`: each error must point at their
//! token and name the fix, so the compiler output itself is snapshotted (`.stderr` files).

#[test]
fn derive_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
    t.pass("tests/compile_pass/*.rs");
}

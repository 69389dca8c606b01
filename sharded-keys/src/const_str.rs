//! Text compared in a `const fn`, where `==` on `&str` is not available: what the schema's
//! compile-time checks and the table's are built on.

/// `a == b` for `&str` in a `const fn`.
#[doc(hidden)]
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

//! DynamoDB's own naming rule, as the derives check it at compile time.

use super::ctxt::Ctxt;

/// A table or index name: DynamoDB takes 3 to 255 letters, digits, `_`, `-` or `.`; `what`
/// names it in the error (`table name`, `index name`).
pub(crate) fn check_name(cx: &Ctxt, name: &str, span: proc_macro2::Span, what: &str) {
    let ok = (3..=255).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !ok {
        cx.error_at(
            span,
            format!(
                "`{name}` is not a valid DynamoDB {what}: use 3 to 255 letters, digits, `_`, `-` \
                 or `.`"
            ),
        );
    }
}

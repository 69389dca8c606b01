//! Values kept with the span of the token they came from (clap_derive's `utils/spanned.rs`),
//! so a check that runs late can still point at what the user wrote.

use proc_macro2::{Span, TokenStream};
use syn::Ident;

/// A value with the span of the token it came from (clap_derive's `Sp<T>`).
#[derive(Clone, Debug)]
pub struct Sp<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Sp<T> {
    pub fn new(value: T, span: Span) -> Self {
        Sp { value, span }
    }
}

/// A name parsed from a string (`"player_id"`, `"r#type"`), at the string's span. (Not
/// `Ident::new(&ident.to_string(), ..)`: that panics on a raw identifier.)
pub(crate) fn at_span(mut ident: Ident, span: Span) -> Ident {
    ident.set_span(span);
    ident
}

/// `tokens` with every span set to `span`. A const-evaluation error is reported at the span
/// of the failing call, which starts at the runtime path's first token: re-spanned, it points
/// at the user's token instead of at `#[derive(ShardedEntity)]`.
pub(crate) fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(&group.stream(), span));
                inner.set_span(span);
                return proc_macro2::TokenTree::Group(inner);
            }
            token.set_span(span);
            token
        })
        .collect()
}

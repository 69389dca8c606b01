//! Model and validation tested directly with `parse_quote!` (as sqlx-macros-core does), so
//! the compiler's logic is checked without trybuild; trybuild covers what users see.

use proc_macro2::TokenStream;
use syn::DeriveInput;

use crate::entity::{parse, validate};
use crate::internals::ctxt::Ctxt;

mod per_key;
mod resolution;
mod validation;

/// The messages the derive reports for `input`, in order.
fn errors(input: DeriveInput) -> Vec<String> {
    let cx = Ctxt::new();
    if let Some(entity) = parse::entity(&cx, &input) {
        validate::entity(&cx, &entity);
    }
    match cx.check() {
        Ok(()) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

/// The generated code for `input`, as text without spaces (so assertions do not depend on
/// how tokens are printed).
fn generated(input: TokenStream) -> String {
    let input: DeriveInput = syn::parse2(input).unwrap();
    crate::entity::derive(&input).to_string().replace(' ', "")
}

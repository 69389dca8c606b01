//! `#[derive(ShardedEntity)]`, a small compiler: `parse` reads the attributes into a `model`,
//! `validate` checks the model and reports every problem under the token that caused it
//! (`names` says how generated names are built from the user's, for both), `resolve` binds
//! every field a key names to the struct's field and settles the counters and maintained
//! fields, and `expand/` generates code from the resolved model alone, one module per thing it
//! generates.

use syn::DeriveInput;

use crate::internals::ctxt::Ctxt;

mod expand;
mod model;
mod names;
mod parse;
mod resolve;
mod validate;

/// The expansion of `#[derive(ShardedEntity)]` on `input`: the generated code, or the errors
/// and the fallback surface.
pub(crate) fn derive(input: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, input);
    if let Some(entity) = &entity {
        validate::entity(&cx, entity);
    }
    match (cx.check(), entity) {
        (Ok(()), Some(entity)) => expand::expand(&resolve::resolve(&entity)),
        (Err(errors), Some(entity)) => {
            expand::fallback(&resolve::resolve(&entity), errors.to_compile_error())
        }
        (Err(errors), None) => errors.to_compile_error(),
        // parse() returns None only after recording an error.
        (Ok(()), None) => proc_macro2::TokenStream::new(),
    }
}

#[cfg(test)]
mod tests;

//! What the functions of one item take and build (`get`, `delete`, `key`, `update` and the
//! counters alike): shared by `repository` and `counters`, which use it and not each other.

use proc_macro2::TokenStream;
use quote::quote;

use super::params::Ctx;
use crate::entity::resolve::{push_new, RPartition};

/// What the functions of one item take and build: the primary key's parameters, the
/// arguments of `Self::pk(..)`, the sort key and the previous partition key.
pub(super) struct ItemArgs {
    /// The physical partition key's fields, then the sort key's, as parameters.
    pub params: Vec<TokenStream>,
    /// The same, as arguments (of `Self::key(..)`).
    pub names: Vec<TokenStream>,
    /// The arguments of `Self::pk(..)`.
    pub pk_args: Vec<TokenStream>,
    /// `Option<String>`: the item's sort key.
    pub sk_expr: TokenStream,
    /// `Option<String>`: the item's partition key under the previous layout.
    pub previous_expr: TokenStream,
}

pub(super) fn item_args(cx: &Ctx, pk: &RPartition) -> ItemArgs {
    let r = cx.r;
    let sk_expr = match &r.sk {
        Some(sk) => {
            let args = cx.names(sk.template.fields());
            quote!(::core::option::Option::Some(Self::sk(#(#args),*)?))
        }
        None => quote!(::core::option::Option::None),
    };
    let mut args = pk.physical_args();
    push_new(&mut args, r.sk.iter().flat_map(|sk| sk.template.fields()));
    let pk_args = cx.names(pk.physical_args());
    let previous_expr = if pk.previous.is_some() {
        quote!(Self::pk_previous(#(#pk_args),*)?)
    } else {
        quote!(::core::option::Option::None)
    };
    ItemArgs {
        names: cx.names(args.iter().copied()),
        params: cx.params(args),
        pk_args,
        sk_expr,
        previous_expr,
    }
}

//! The typed sort-key conditions `<fn_name>_<field>_<op>` (`sk_score_between`, ..), the
//! argument of `Query::sk`.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::params::Ctx;
use crate::entity::names;
use crate::entity::resolve::{KeyField, RSegment, RSort};

/// What the conditions of one sort key share.
struct SortKeyFns<'c, 'a> {
    cx: &'c Ctx<'a>,
    sk: &'c RSort<'a>,
    fn_name: &'c str,
    /// The key's generated `EntityKey` constant.
    key: &'c Ident,
}

/// The typed sort-key conditions `<fn_name>_<field>_<op>`: for each field of the template, the
/// fields before it held equal (parameters, in template order) and a comparison on it. `_lt`
/// on the field that ends the template exists only when no field comes before it: DynamoDB's
/// `BETWEEN` is closed, and that key cannot be excluded below an equal field (see the
/// runtime's `sort_condition` module). A template without fields gets none. A name already
/// in `emitted` is skipped: two fields whose names join alike (`a_`, `a`) were refused, and the
/// fallback must not add a duplicate definition to that error.
pub(super) fn sort_conditions(
    cx: &Ctx,
    sk: &RSort,
    fn_name: &str,
    key: &Ident,
    emitted: &mut HashSet<String>,
) -> TokenStream {
    let fns = SortKeyFns {
        cx,
        sk,
        fn_name,
        key,
    };
    let segments = &sk.template.segments;
    let mut out = TokenStream::new();
    let mut leading: Vec<KeyField> = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let RSegment::Field(field) = segment else {
            continue;
        };
        let ends_template = i + 1 == segments.len();
        out.extend(fns.field_conditions(&leading, *field, ends_template, emitted));
        leading.push(*field);
    }
    out
}

/// One comparison: its name's suffix, what it says, and the names of its bound parameters.
type Op<'n> = (&'static str, String, Vec<&'n Ident>);

impl SortKeyFns<'_, '_> {
    /// The six comparisons on `field`, the `leading` fields held equal.
    fn field_conditions(
        &self,
        leading: &[KeyField],
        field: KeyField,
        ends_template: bool,
        emitted: &mut HashSet<String>,
    ) -> TokenStream {
        let written = field.ident();
        let taken = |name: &str| leading.iter().any(|f| f.ident() == name);
        let (low, high) = if taken("low") || taken("high") {
            (format_ident!("low_"), format_ident!("high_"))
        } else {
            (format_ident!("low"), format_ident!("high"))
        };
        let ops: [Op; 6] = [
            ("eq", format!("`{written} == {written}`"), vec![written]),
            ("lt", format!("`{written} < {written}`"), vec![written]),
            ("le", format!("`{written} <= {written}`"), vec![written]),
            ("gt", format!("`{written} > {written}`"), vec![written]),
            ("ge", format!("`{written} >= {written}`"), vec![written]),
            (
                "between",
                format!("`{low} <= {written} <= {high}` (closed: both bounds included)"),
                vec![&low, &high],
            ),
        ];
        // `<` on the field that ends the template, below an equal field, is not one key
        // condition: its `_le` says so, where a user looking for `_lt` reads.
        let no_lt = ends_template && !leading.is_empty();
        let mut out = TokenStream::new();
        for op in ops {
            if !emitted.insert(names::sort_condition(self.fn_name, written, op.0)) {
                continue;
            }
            if op.0 == "lt" && no_lt {
                out.extend(self.no_strict_upper_bound(leading, written));
            } else {
                out.extend(self.condition(leading, field, op, no_lt));
            }
        }
        out
    }

    /// A stub `_lt` whose bound is never met, so the call reports why (and not rustc's
    /// "similar name" hint, which names `_gt`).
    fn no_strict_upper_bound(&self, leading: &[KeyField], written: &Ident) -> TokenStream {
        let (cx, rt) = (self.cx, self.cx.rt);
        let name = names::ident(
            &names::sort_condition(self.fn_name, written, "lt"),
            written.span(),
        );
        let lead_types = leading.iter().map(|f| cx.param_type(*f));
        quote! {
            #[doc(hidden)]
            pub fn #name<__V>(#(_: #lead_types,)* _: __V) -> #rt::SortKeyCondition
            where
                __V: #rt::NoStrictUpperBound,
            {
                #rt::never()
            }
        }
    }

    /// `<fn_name>_<field>_<op>(leading.., bounds..)`.
    fn condition(&self, leading: &[KeyField], field: KeyField, op: Op, no_lt: bool) -> TokenStream {
        let (cx, rt, fn_name, sk) = (self.cx, self.cx.rt, self.fn_name, self.sk);
        let key = self.key;
        let (op, says, names) = op;
        let written = field.ident();
        let source = sk.template.source();
        let lead_params = cx.params(leading.iter().copied());
        let lead_values = cx.values(leading.iter().copied());
        let held: String = leading
            .iter()
            .map(|f| format!("`{0} == {0}` and ", f.ident()))
            .collect();
        let ty = cx.param_type(field);
        let name = names::ident(&names::sort_condition(fn_name, written, op), written.span());
        let params = names.iter().map(|n| quote!(#n: #ty));
        let parts: Vec<TokenStream> = names
            .iter()
            .map(|n| quote!((&#rt::Probe(&#n)).part()))
            .collect();
        let method = Ident::new(op, Span::call_site());
        let mut doc = format!(
            "Sort-key condition for `Query::sk`: items with {held}{says} \
             ({}, template `{source}`). A value that cannot be encoded fails the query, not this call.",
            sk.attribute
        );
        if op == "le" && no_lt {
            let lt = names::sort_condition(fn_name, written, "lt");
            doc.push_str(&format!(
                "\n\nThere is no `{lt}`: `{written}` ends the template, so the key of \
                 an item with `{written}` equal to the bound is the bound itself, and DynamoDB's \
                 `BETWEEN` (needed below the equal fields) includes it. Use `_le` with the value \
                 before (`n - 1` for an integer), or drop the first item if it is equal."
            ));
        }
        let body = cx.body(quote! {
            #key.#method(#lead_values, #(#parts),*)
        });
        quote! {
            #[doc = #doc]
            pub fn #name(#(#lead_params,)* #(#params),*) -> #rt::SortKeyCondition {
                #body
            }
        }
    }
}

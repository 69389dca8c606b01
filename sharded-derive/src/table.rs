//! `#[derive(ShardedTable)]`: a table declared once, as data every entity of it reads.
//!
//! ```text
//! #[derive(ShardedTable)]
//! #[table(name = "Leaderboards", pk = "PK", sk = "SK", tag = "_type", recognize = "tag_or_key",
//!        move_attribute = "_moved")]
//! #[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
//! struct Leaderboards;
//! ```
//!
//! Parse the attributes into a model, validate it (names a table can hold, a tag only where
//! it is written, no two roles under one name), expand to the `ShardedTable` impl whose
//! `TableSchema` the runtime reads. Entities name the type with `#[sharded(table = ..)]`;
//! what depends on both (a field stored under one of the table's names) is checked in the
//! entity's expansion, at compile time.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Ident, LitStr};

use crate::internals::attr::{accepted_key, crate_path, gsi_number, set_once};
use crate::internals::ctxt::Ctxt;
use crate::internals::dynamodb::check_name;
use crate::internals::suggest::did_you_mean;
use crate::internals::symbol::*;

const DERIVE: &str = "ShardedTable";

/// How the table's items say which entity they are, as declared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recognize {
    Tag,
    TagOrKey,
    Key,
}

/// One `#[gsiN(..)]` of the table.
struct Index {
    number: u8,
    span: Span,
    index: Option<LitStr>,
    pk: Option<LitStr>,
    sk: Option<LitStr>,
}

/// The table as declared.
struct Table<'a> {
    ident: &'a Ident,
    rt: TokenStream,
    name: Option<LitStr>,
    pk: Option<LitStr>,
    sk: Option<LitStr>,
    tag: Option<LitStr>,
    recognize: Option<(Recognize, LitStr)>,
    move_attribute: Option<LitStr>,
    indexes: Vec<Index>,
}

pub fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let table = parse(&cx, input);
    if let Some(table) = &table {
        validate(&cx, table);
    }
    match (cx.check(), table) {
        (Ok(()), Some(table)) => expand(&table),
        (Err(errors), Some(table)) => {
            // The impl still comes, with the defaults where a value was refused: every entity
            // that names the table compiles on to its own errors, not to "not a table".
            let mut out = errors.to_compile_error();
            out.extend(expand(&table));
            out
        }
        (Err(errors), None) => errors.to_compile_error(),
        (Ok(()), None) => TokenStream::new(),
    }
}

fn parse<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Table<'a>> {
    match &input.data {
        Data::Struct(_) => {}
        Data::Enum(data) => {
            cx.error_spanned_by(
                data.enum_token,
                "#[derive(ShardedTable)] declares a table on a unit struct, e.g. \
                 `struct Leaderboards;`: the struct only names the table, its attributes say \
                 what it holds",
            );
            return None;
        }
        Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                "#[derive(ShardedTable)] declares a table on a unit struct, e.g. `struct Leaderboards;`",
            );
            return None;
        }
    }
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "#[derive(ShardedTable)] does not take generics: a table's names are fixed at \
             compile time; declare one struct per table",
        );
        return None;
    }
    let krate = crate_path(cx, &input.attrs, DERIVE);
    let rt = match krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::sharded::__private),
    };
    let mut table = Table {
        ident: &input.ident,
        rt,
        name: None,
        pk: None,
        sk: None,
        tag: None,
        recognize: None,
        move_attribute: None,
        indexes: Vec::new(),
    };
    let mut seen_table = false;
    for attr in &input.attrs {
        let Some(name) = attr.path().get_ident().map(Ident::to_string) else {
            continue;
        };
        if name == TABLE_ATTR {
            if std::mem::replace(&mut seen_table, true) {
                cx.error_spanned_by(
                    attr.path(),
                    "duplicate #[table(...)] attribute: merge them into one",
                );
            }
            table_attribute(cx, attr, &mut table);
        } else if let Some(number) = gsi_number(&name) {
            if table.indexes.iter().any(|i| i.number == number) {
                cx.error_spanned_by(
                    attr.path(),
                    format!("duplicate #[{name}(...)] attribute: merge them into one"),
                );
            } else if let Some(index) = index_attribute(cx, attr, number) {
                table.indexes.push(index);
            }
        }
    }
    table.indexes.sort_by_key(|i| i.number);
    Some(table)
}

fn table_attribute(cx: &Ctxt, attr: &Attribute, table: &mut Table) {
    let result = attr.parse_nested_meta(|meta| {
        let Some(key) = accepted_key(cx, &meta, TABLE_ATTR, TABLE_KEYS)? else {
            return Ok(());
        };
        let value: LitStr = meta.value()?.parse()?;
        let slot = match key {
            TABLE_NAME => &mut table.name,
            PK => &mut table.pk,
            SK => &mut table.sk,
            TAG => &mut table.tag,
            MOVE_ATTRIBUTE => &mut table.move_attribute,
            _ => {
                let recognize = match value.value().as_str() {
                    "tag" => Some(Recognize::Tag),
                    "tag_or_key" => Some(Recognize::TagOrKey),
                    "key" => Some(Recognize::Key),
                    other => {
                        let hint = did_you_mean(other, RECOGNIZE_VALUES.iter().copied())
                            .map(|s| format!("did you mean `{s}`? "))
                            .unwrap_or_default();
                        cx.error_spanned_by(
                            &value,
                            format!(
                                "unknown `recognize = \"{other}\"`: {hint}`tag` (items carry the \
                                 tag; untagged ones are other services' records), `tag_or_key` \
                                 (the tag is written, and an untagged item is the entity's when \
                                 its keys are), or `key` (no tag: the keys alone say)"
                            ),
                        );
                        None
                    }
                };
                if let Some(recognize) = recognize {
                    set_once(
                        cx,
                        &meta,
                        TABLE_ATTR,
                        &mut table.recognize,
                        (recognize, value),
                    );
                }
                return Ok(());
            }
        };
        set_once(cx, &meta, TABLE_ATTR, slot, value);
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
}

fn index_attribute(cx: &Ctxt, attr: &Attribute, number: u8) -> Option<Index> {
    let name = format!("{GSI_PREFIX}{number}");
    let mut index = Index {
        number,
        span: attr.path().span(),
        index: None,
        pk: None,
        sk: None,
    };
    let result = attr.parse_nested_meta(|meta| {
        let Some(key) = accepted_key(cx, &meta, &name, TABLE_GSI_KEYS)? else {
            return Ok(());
        };
        let value: LitStr = meta.value()?.parse()?;
        let slot = match key {
            INDEX => &mut index.index,
            PK => &mut index.pk,
            _ => &mut index.sk,
        };
        set_once(cx, &meta, &name, slot, value);
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    if index.index.is_none() && index.pk.is_none() && index.sk.is_none() {
        cx.error_spanned_by(
            attr.path(),
            format!(
                "#[{name}()] names nothing: give the index's names, e.g. \
                 #[{name}(index = \"GSI{number}\", pk = \"GSI{number}PK\", sk = \"GSI{number}SK\")], \
                 or remove it (an index the table does not name is `{name}` over \
                 `{name}pk`/`{name}sk`)"
            ),
        );
    }
    Some(index)
}

/// An attribute name: DynamoDB takes 1 to 255 bytes of UTF-8.
fn attribute_name(cx: &Ctxt, lit: &LitStr, what: &str) {
    let name = lit.value();
    if name.is_empty() || name.len() > 255 {
        cx.error_spanned_by(
            lit,
            format!("the {what} attribute needs a name of 1 to 255 bytes"),
        );
    }
}

fn validate(cx: &Ctxt, table: &Table) {
    if let Some(name) = &table.name {
        check_name(cx, &name.value(), name.span(), "table name");
    }
    for (lit, what) in [
        (&table.pk, "partition key"),
        (&table.sk, "sort key"),
        (&table.tag, "tag"),
        (&table.move_attribute, "move marker"),
    ] {
        if let Some(lit) = lit {
            attribute_name(cx, lit, what);
        }
    }
    if let (Some(tag), Some((Recognize::Key, recognize))) = (&table.tag, &table.recognize) {
        cx.error_spanned_by(
            tag,
            format!(
                "`tag` names the attribute every item carries its entity's name in, and \
                 `recognize = \"{}\"` says the table has none: remove `tag` (items are recognised \
                 by their keys alone), or write `recognize = \"tag_or_key\"` (the tag is written, \
                 and untagged items are recognised by their keys)",
                recognize.value()
            ),
        );
    }
    // One name, one role: the tag is written beside the keys, so it cannot be one of them.
    let mut names: Vec<(String, String, Span)> = Vec::new();
    let mut claim = |lit: Option<&LitStr>, default: String, role: String, span: Span| {
        let name = lit.map_or(default, LitStr::value);
        let span = lit.map_or(span, LitStr::span);
        if let Some((_, other, _)) = names.iter().find(|(n, _, _)| *n == name) {
            cx.error_at(
                span,
                format!(
                    "`{name}` is already {other}: every attribute `sharded` writes needs a name \
                     of its own"
                ),
            );
        } else {
            names.push((name, role, span));
        }
    };
    let here = table.ident.span();
    claim(
        table.pk.as_ref(),
        "pk".to_owned(),
        "the partition key".to_owned(),
        here,
    );
    claim(
        table.sk.as_ref(),
        "sk".to_owned(),
        "the sort key".to_owned(),
        here,
    );
    if !matches!(table.recognize, Some((Recognize::Key, _))) {
        claim(
            table.tag.as_ref(),
            "_entity".to_owned(),
            "the tag".to_owned(),
            here,
        );
    }
    // Only a declared one: the default's name is the runtime's (`MOVE_ATTRIBUTE`), and no key
    // or tag is named like it by accident.
    if let Some(lit) = &table.move_attribute {
        claim(Some(lit), String::new(), "the move marker".to_owned(), here);
    }
    for index in &table.indexes {
        if let Some(name) = &index.index {
            check_name(cx, &name.value(), name.span(), "index name");
        }
        let n = index.number;
        for (lit, what) in [(&index.pk, "partition key"), (&index.sk, "sort key")] {
            if let Some(lit) = lit {
                attribute_name(cx, lit, &format!("gsi{n} {what}"));
            }
        }
        if let (Some(pk), Some(sk)) = (&index.pk, &index.sk) {
            if pk.value() == sk.value() {
                cx.error_spanned_by(
                    sk,
                    format!(
                        "gsi{n}'s sort key is named like its partition key, `{}`: give it a \
                         name of its own",
                        sk.value()
                    ),
                );
            }
        }
        let _ = index.span;
    }
}

fn expand(table: &Table) -> TokenStream {
    let (rt, ident) = (&table.rt, table.ident);
    let declared_by = ident.to_string();
    let value = |lit: &Option<LitStr>, default: &str| match lit {
        Some(lit) => quote!(#lit),
        None => quote!(#default),
    };
    let pk = value(&table.pk, "pk");
    let sk = value(&table.sk, "sk");
    let tag = match &table.tag {
        Some(lit) => quote!(#lit),
        None => quote!(#rt::ENTITY_ATTRIBUTE),
    };
    let recognition = match table.recognize.as_ref().map(|(r, _)| *r) {
        None | Some(Recognize::Tag) => quote!(#rt::Recognition::tag(#tag)),
        Some(Recognize::TagOrKey) => quote!(#rt::Recognition::tag_or_key(#tag)),
        Some(Recognize::Key) => quote!(#rt::Recognition::Key),
    };
    let name = match &table.name {
        Some(lit) => quote!(.with_table(#lit)),
        None => TokenStream::new(),
    };
    let move_attribute = match &table.move_attribute {
        Some(lit) => quote!(.with_move_attribute(#lit)),
        None => TokenStream::new(),
    };
    let indexes = table.indexes.iter().map(|index| {
        let n = index.number;
        let default = |suffix: &str| format!("gsi{n}{suffix}");
        let index_name = value(&index.index, &default(""));
        let pk = value(&index.pk, &default("pk"));
        let sk = value(&index.sk, &default("sk"));
        quote!(#rt::IndexNames::new(#n, #index_name, #pk, #sk))
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, clippy::all)]
        const _: () = {
            static __INDEXES: &[#rt::IndexNames] = &[#(#indexes),*];
            static __TABLE: #rt::TableSchema = #rt::TableSchema::new(#declared_by, #pk, #sk)
                #name
                #move_attribute
                .with_recognition(#recognition)
                .with_indexes(__INDEXES);

            #[automatically_derived]
            impl #rt::ShardedTable for #ident {
                const SCHEMA: &'static #rt::TableSchema = &__TABLE;
            }
        };
    }
}

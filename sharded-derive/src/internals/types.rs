//! The shapes of field types, as the derive can see them: it reads how a type is spelled, not
//! what it is. Every question about a type (is it an `Option`, an integer, a `DateTime`, how is
//! it passed to a key builder) is answered here, once, the same way: through the invisible
//! group of a `$ty:ty` fragment and through parentheses, by the path's last segment (so
//! `std::string::String` and `::core::primitive::u64` are recognised). A type alias cannot be
//! seen through.

use syn::{GenericArgument, PathArguments, PathSegment, Type};

/// The type inside any invisible groups (a `macro_rules!` `$ty:ty` fragment) and
/// parentheses (`(u8)`).
pub fn ungroup(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

/// The last segment of a type spelled as a path: `String` in `std::string::String`.
pub fn last_segment(ty: &Type) -> Option<&PathSegment> {
    match ungroup(ty) {
        Type::Path(path) => path.path.segments.last(),
        _ => None,
    }
}

/// The primitive integer types, by name.
const INTEGERS: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
];

fn is_integer(name: &str) -> bool {
    INTEGERS.contains(&name)
}

/// The type without an outer `Option`, and whether there was one.
pub fn peel_option(ty: &Type) -> (&Type, bool) {
    let ty = ungroup(ty);
    if let Some(last) = last_segment(ty) {
        if last.ident == "Option" {
            if let PathArguments::AngleBracketed(args) = &last.arguments {
                if let Some(GenericArgument::Type(inner)) = args.args.first() {
                    return (inner, true);
                }
            }
        }
    }
    (ty, false)
}

/// What a field type is, as far as the runtime-maintained fields (`version`, `ttl`, ..) care.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeShape {
    /// A primitive integer: a count, or epoch seconds.
    Integer,
    /// `DateTime<..>`.
    DateTime,
    Other,
}

/// The [`TimeShape`] of `ty` (an `Option` is not looked into: see [`peel_option`]).
pub fn time_shape(ty: &Type) -> TimeShape {
    match last_segment(ty).map(|last| last.ident.to_string()) {
        Some(name) if is_integer(&name) => TimeShape::Integer,
        Some(name) if name == "DateTime" => TimeShape::DateTime,
        _ => TimeShape::Other,
    }
}

/// How a key field is passed to a generated builder.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Param {
    /// `String` fields take `&str`.
    Str,
    /// Small `Copy` scalars are taken by value.
    Copy,
    /// Everything else by reference.
    Ref,
}

/// Classifies a field type by how it is spelled, independently of the spelling's wrapping: a
/// `$ty:ty` fragment of a `macro_rules!` arrives as an invisible group, `(u8)` as parens, and
/// `std::string::String` or `::core::primitive::u64` are recognised by their last segment.
/// A type alias cannot be seen through (a derive sees tokens, not types): it is taken by
/// reference.
pub(crate) fn param_kind(ty: &Type) -> Param {
    let Type::Path(path) = ungroup(ty) else {
        return Param::Ref;
    };
    if path.qself.is_some() {
        return Param::Ref;
    }
    match path.path.segments.last() {
        Some(last) if last.arguments.is_empty() => match last.ident.to_string().as_str() {
            "String" => Param::Str,
            "bool" => Param::Copy,
            name if is_integer(name) => Param::Copy,
            _ => Param::Ref,
        },
        _ => Param::Ref,
    }
}

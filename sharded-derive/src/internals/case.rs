//! serde's `rename_all` rules, as serde_derive's `case.rs` applies them to struct fields: the
//! derive must know the attribute name serde writes, to refuse a field stored under a key
//! attribute's name and to list the attributes a projection may read.

/// A `#[serde(rename_all = "...")]` rule.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    /// The rule serde accepts under this name (`"camelCase"`), if any.
    pub fn from_name(name: &str) -> Option<RenameRule> {
        match name {
            "lowercase" => Some(RenameRule::Lower),
            "UPPERCASE" => Some(RenameRule::Upper),
            "PascalCase" => Some(RenameRule::Pascal),
            "camelCase" => Some(RenameRule::Camel),
            "snake_case" => Some(RenameRule::Snake),
            "SCREAMING_SNAKE_CASE" => Some(RenameRule::ScreamingSnake),
            "kebab-case" => Some(RenameRule::Kebab),
            "SCREAMING-KEBAB-CASE" => Some(RenameRule::ScreamingKebab),
            _ => None,
        }
    }

    /// The rule applied to a field name (which is snake_case in Rust), as `serde_derive`
    /// applies it: ASCII case changes only, and camelCase is PascalCase with its first
    /// character lowered (so `_pk` becomes `pk`).
    pub fn apply_to_field(self, field: &str) -> String {
        match self {
            RenameRule::Lower | RenameRule::Snake => field.to_owned(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
            RenameRule::Pascal => {
                let mut out = String::new();
                let mut upper = true;
                for c in field.chars() {
                    if c == '_' {
                        upper = true;
                    } else if upper {
                        out.push(c.to_ascii_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.apply_to_field(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
        }
    }
}

//! The template language of key templates: `GAME#{game_id}`, literal text and `{field}`s,
//! a field perhaps bucketed by time (`{at:day}`). The model of a template and its parser,
//! which refuses what could not be parsed back.

use syn::{Ident, LitStr};

/// The time-bucket sizes of `{field:granularity}`: the key model's own, so the derive accepts
/// exactly the names the runtime buckets by.
pub use sharded_keys::bucket::Granularity;

use super::ctxt::Ctxt;
use super::spanned::at_span;
use super::suggest::did_you_mean_keyword;

/// `GAME#{game_id}`: literal text and field references.
pub struct Template {
    pub lit: LitStr,
    pub segments: Vec<Segment>,
}

pub enum Segment {
    Literal(String),
    /// A field reference; its span is the template literal's (a string has no sub-spans on
    /// stable Rust).
    Field(Ident),
    /// `{at:day}`: the label of the time bucket holding the field's value. After a refused
    /// granularity, the one it most likely meant (so the fallback keeps the range query).
    Bucket(Ident, Granularity),
}

impl Template {
    /// Every field the template names, bucketed or not, in order.
    pub fn fields(&self) -> impl Iterator<Item = &Ident> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Field(f) | Segment::Bucket(f, _) => Some(f),
            Segment::Literal(_) => None,
        })
    }

    /// The bucketed field (`{at:day}`) and its granularity, if the template has one.
    pub fn bucket(&self) -> Option<(&Ident, Granularity)> {
        self.segments.iter().find_map(|s| match s {
            Segment::Bucket(f, g) => Some((f, *g)),
            _ => None,
        })
    }

    /// The fields whose value is written whole (not bucketed).
    pub fn whole_fields(&self) -> impl Iterator<Item = &Ident> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Field(f) => Some(f),
            _ => None,
        })
    }
}

/// Parses `GAME#{game_id}` into segments, refusing what could not be parsed back.
pub(crate) fn template(cx: &Ctxt, lit: &LitStr) -> Option<Template> {
    let text = lit.value();
    let fail = |message: String| {
        cx.error_spanned_by(lit, message);
        None
    };
    if text.is_empty() {
        return fail("a key template must not be empty: write literal text and `{field}`s, e.g. \"GAME#{game_id}\"".into());
    }
    let mut segments: Vec<Segment> = Vec::new();
    let mut literal = String::new();
    let mut chars = text.char_indices();
    while let Some((_, c)) = chars.next() {
        match c {
            '{' => {
                let mut name = String::new();
                let mut closed = false;
                for (_, c) in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed || name.contains('{') {
                    return fail(format!(
                        "unclosed `{{` in template \"{text}\": write fields as `{{field}}`"
                    ));
                }
                let written = name.trim().to_owned();
                let (name, granularity) = match written.split_once(':') {
                    Some((field, granularity)) => (field.trim(), Some(granularity.trim())),
                    None => (written.as_str(), None),
                };
                if name.is_empty() {
                    return fail(format!(
                        "empty `{{{written}}}` in template \"{text}\": name a field inside the braces{}",
                        if granularity.is_some() { ", e.g. `{at:day}`" } else { "" }
                    ));
                }
                let Ok(ident) = syn::parse_str::<Ident>(name) else {
                    if syn::parse_str::<Ident>(&format!("r#{name}")).is_ok() {
                        return fail(format!(
                            "`{{{name}}}` in template \"{text}\" is a keyword: write the field as \
                             the struct does, `{{r#{name}}}`"
                        ));
                    }
                    return fail(format!(
                        "`{{{name}}}` in template \"{text}\" is not a field name"
                    ));
                };
                if !literal.is_empty() {
                    segments.push(Segment::Literal(std::mem::take(&mut literal)));
                }
                if let Some(Segment::Field(prev) | Segment::Bucket(prev, _)) = segments.last() {
                    return fail(format!(
                        "`{{{prev}}}{{{written}}}` in template \"{text}\": two fields need a `#` between them, or the key cannot be parsed back"
                    ));
                }
                if segments
                    .iter()
                    .any(|s| matches!(s, Segment::Field(f) | Segment::Bucket(f, _) if f == name))
                {
                    return fail(format!(
                        "field `{name}` appears twice in template \"{text}\": use it once"
                    ));
                }
                let ident = at_span(ident, lit.span());
                match granularity {
                    None => segments.push(Segment::Field(ident)),
                    Some(granularity) => {
                        if let Some((earlier, _)) = segments.iter().find_map(|s| match s {
                            Segment::Bucket(f, g) => Some((f, g)),
                            _ => None,
                        }) {
                            return fail(format!(
                                "template \"{text}\" buckets `{earlier}` and `{name}`: a key has one time bucket; \
                                 keep `{{{earlier}:..}}` and write `{{{name}}}` whole (or leave it out of the key)"
                            ));
                        }
                        let granularity = bucket_granularity(cx, lit, &text, name, granularity);
                        segments.push(Segment::Bucket(ident, granularity));
                    }
                }
            }
            '}' => return fail(format!("unmatched `}}` in template \"{text}\"")),
            c => {
                if literal.is_empty() && !c.eq(&'#') {
                    if let Some(Segment::Field(prev) | Segment::Bucket(prev, _)) = segments.last() {
                        return fail(format!(
                            "in template \"{text}\", `{{{prev}}}` must be followed by `#` or end the template: \
                             `#` is the one separator field values can never contain"
                        ));
                    }
                }
                literal.push(c);
            }
        }
    }
    if !literal.is_empty() {
        segments.push(Segment::Literal(literal));
    }
    Some(Template {
        lit: lit.clone(),
        segments,
    })
}

/// The granularity of `{field:granularity}`. An unknown one is reported under the template,
/// with the name it most likely meant, and read as that (or as `day`), so the generated
/// surface keeps its range query and only one error is shown.
fn bucket_granularity(
    cx: &Ctxt,
    lit: &LitStr,
    text: &str,
    field: &str,
    written: &str,
) -> Granularity {
    if let Some(granularity) = Granularity::from_name(written) {
        return granularity;
    }
    let names = Granularity::NAMES;
    if written.is_empty() {
        cx.error_spanned_by(
            lit,
            format!(
                "`{{{field}:}}` in template \"{text}\" names no time bucket: write one of {} \
                 after the `:`, e.g. `{{{field}:day}}`",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        return Granularity::Day;
    }
    let meant = did_you_mean_keyword(&written.to_ascii_lowercase(), names.iter().copied());
    let hint = match meant {
        Some(m) => format!("did you mean `{m}`? "),
        None => String::new(),
    };
    let example = meant.unwrap_or("day");
    cx.error_spanned_by(
        lit,
        format!(
            "unknown time bucket `{written}` in `{{{field}:{written}}}` of template \"{text}\": {hint}\
             a bucket is one of {}, e.g. `{{{field}:{example}}}`",
            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ),
    );
    meant
        .and_then(Granularity::from_name)
        .unwrap_or(Granularity::Day)
}

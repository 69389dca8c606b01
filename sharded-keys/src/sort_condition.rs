//! Typed sort-key conditions: a range over one field of a sort-key template, with equality on
//! the fields before it, turned into one DynamoDB key condition.
//!
//! The derive generates one function per sort key (`Score::sk_sort()`) returning a
//! [`TemplateSort`] typed by the template's fields; its steps (`.eq(100).ge("p5")`) are
//! generic code here, and the last one calls [`sort_key_condition`], so the bound arithmetic
//! is written and tested once and the expansion spells none of it per entity.
//!
//! # Why the bounds are exact
//!
//! A sort key is `P + enc(v) + rest`, where `P` is everything before the ranged field (the
//! literal prefix and the fields held equal), `enc(v)` is the field's [`KeyPart`] encoding
//! (bytes `>= 0x24`, never `#`, order-preserving) and `rest` is empty when the field ends the
//! template or else starts with the separator `#` (0x23, smaller than any encoded byte). With
//! `Q = P + enc(v)`:
//!
//! | field condition | key bound (inclusive) | why |
//! |---|---|---|
//! | `>= v` | `Q` | every key with a smaller value is `< Q`, even a prefix of `v` (`p1` vs `p10`): `#` sorts below every encoded byte |
//! | `> v` | `Q + "#"` when the field ends the template, else `Q + "$"` | the keys of `v` are `Q` itself, or `Q + "#..."`; `$` (0x24) is the next byte after `#` |
//! | `<= v` | `Q` when the field ends the template, else `Q + "$"` | the same keys, from the other side |
//! | `< v` | `Q`, which is never a key when a field follows | keys of smaller values are `< Q` |
//!
//! and the end of the range that the condition leaves open is `P` (inclusive) below, or `P`
//! with its last character replaced by the next one (inclusive: no key of the entity equals it)
//! above. DynamoDB allows one condition on the sort key, so two bounds become `BETWEEN`, which
//! is closed at both ends; a strict `<` on the field that ends the template can therefore only
//! be sent when nothing bounds it from below (no field before it is held equal), and the
//! derive generates `_lt` for that field only then.

use std::marker::PhantomData;

use crate::attribute::{KeyArg, KeyValue};
use crate::encoding::{KeyPart, KeyPartError, PartArg};
use crate::error::KeyError;
use crate::schema::KeyAttributeSchema;
use crate::template::{build_key_prefix, KeyContext, KeyTemplate, Segment};

/// A sort-key condition of a query, applied by DynamoDB in the key condition. Values are
/// physical sort-key strings. Users build one with the typed
/// [`SortKeyCondition`] functions the derive
/// generates; the range query builds its bucket bounds here directly.
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(hidden)]
pub enum SortCondition {
    /// `begins_with(sk, prefix)`
    BeginsWith(String),
    /// `sk BETWEEN low AND high` (both inclusive)
    Between(String, String),
    /// `sk < value`
    Lt(String),
    /// `sk <= value`
    Le(String),
    /// `sk >= value`
    Ge(String),
    /// `sk > value` (a multi-attribute key's range; a string key says `>=` of the next key)
    Gt(String),
    /// `sk = value` (a multi-attribute key's last held attribute)
    Eq(String),
}

impl SortCondition {
    /// The key-condition fragment, with `#sk` and `:sk0`/`:sk1` placeholders.
    pub fn expression(&self) -> &'static str {
        match self {
            SortCondition::BeginsWith(_) => "begins_with(#sk, :sk0)",
            SortCondition::Between(..) => "#sk BETWEEN :sk0 AND :sk1",
            SortCondition::Lt(_) => "#sk < :sk0",
            SortCondition::Le(_) => "#sk <= :sk0",
            SortCondition::Ge(_) => "#sk >= :sk0",
            SortCondition::Gt(_) => "#sk > :sk0",
            SortCondition::Eq(_) => "#sk = :sk0",
        }
    }

    /// The placeholder values, in order.
    pub fn values(&self) -> Vec<&str> {
        match self {
            SortCondition::Between(a, b) => vec![a, b],
            SortCondition::BeginsWith(v)
            | SortCondition::Lt(v)
            | SortCondition::Le(v)
            | SortCondition::Ge(v)
            | SortCondition::Gt(v)
            | SortCondition::Eq(v) => vec![v],
        }
    }
}

/// A typed sort-key condition, built from the generated `sk_sort()` (or `gsiN_sort()`) and
/// given to `Query::sk`.
///
/// A key value that cannot be encoded (an empty string) or bounds given the wrong way round
/// do not fail here: the error is kept and returned by the query that uses the condition, so
/// the call site needs no `?`.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// let c = Score::sk_sort().between(100, 200);
/// assert_eq!(c.expression(), Ok("#sk BETWEEN :sk0 AND :sk1"));
/// assert_eq!(
///     c.values().unwrap(),
///     ["SCORE#00000000000000000100", "SCORE#00000000000000000200$"]
/// );
/// // Every `Score` item, whatever its fields: the template's leading literal.
/// assert_eq!(Score::sk_all().values().unwrap(), ["SCORE#"]);
/// assert!(Score::sk_sort().eq(100).ge("").expression().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a sort-key condition does nothing until it is given to a query with `.sk(..)`"]
pub struct SortKeyCondition {
    attribute: &'static str,
    /// A multi-attribute sort key's leading attributes held equal (none for a string key,
    /// whose condition holds its prefix inside the string).
    equalities: Vec<(&'static str, KeyValue)>,
    condition: Result<SortCondition, KeyError>,
}

impl SortKeyCondition {
    /// The key-condition expression sent to DynamoDB, with `#sk` for the sort-key attribute
    /// and `:sk0`, `:sk1` for the [`values`](Self::values) (`"#sk BETWEEN :sk0 AND :sk1"`),
    /// or why the condition could not be built.
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::ShardedEntity;
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// // `eq` on a field that does not end the template: every key with that prefix.
    /// let c = sharded::query::SortKeyCondition::from(Score::sk_sort().eq(7));
    /// assert_eq!(c.expression(), Ok("begins_with(#sk, :sk0)"));
    /// ```
    pub fn expression(&self) -> Result<&'static str, &KeyError> {
        self.condition.as_ref().map(SortCondition::expression)
    }

    /// The values of the [`expression`](Self::expression)'s placeholders, in order: physical
    /// sort-key strings, or why the condition could not be built.
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::ShardedEntity;
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// let c = sharded::query::SortKeyCondition::from(Score::sk_sort().eq(7));
    /// assert_eq!(c.values().unwrap(), ["SCORE#00000000000000000007#"]);
    /// ```
    pub fn values(&self) -> Result<Vec<&str>, &KeyError> {
        self.condition.as_ref().map(SortCondition::values)
    }

    /// The sort-key attribute the condition is on (`sk`, `gsi1sk`, ...).
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::ShardedEntity;
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// assert_eq!(Score::sk_sort().ge(100).attribute(), "sk");
    /// ```
    pub fn attribute(&self) -> &'static str {
        self.attribute
    }

    /// The attribute, the leading attributes held equal, and the condition on the attribute.
    #[doc(hidden)]
    pub fn into_parts(
        self,
    ) -> (
        &'static str,
        Vec<(&'static str, KeyValue)>,
        Result<SortCondition, KeyError>,
    ) {
        (self.attribute, self.equalities, self.condition)
    }
}

/// The comparison applied to the ranged field.
#[derive(Clone, Copy)]
#[doc(hidden)]
pub enum SortOp<'a> {
    /// `field == v`
    Eq(&'a dyn KeyPart),
    /// `field < v`
    Lt(&'a dyn KeyPart),
    /// `field <= v`
    Le(&'a dyn KeyPart),
    /// `field > v`
    Gt(&'a dyn KeyPart),
    /// `field >= v`
    Ge(&'a dyn KeyPart),
    /// `low <= field <= high`
    Between(&'a dyn KeyPart, &'a dyn KeyPart),
}

/// Builds the key condition for: the first `leading.len()` fields of `template` equal to
/// `leading`, and the next field compared by `op`.
#[doc(hidden)]
pub fn sort_key_condition(
    ctx: KeyContext,
    template: &KeyTemplate,
    leading: &[&dyn KeyPart],
    op: SortOp<'_>,
) -> SortKeyCondition {
    SortKeyCondition {
        attribute: ctx.attribute,
        equalities: Vec::new(),
        condition: build(ctx, template, leading, op),
    }
}

/// Every key of an entity: `begins_with` the leading literal of its sort-key template (what
/// the generated `sk_all()` returns). A template without a leading literal has no such
/// condition (the derive generates none for it).
#[doc(hidden)]
pub fn sort_key_prefix_condition(ctx: KeyContext, template: &KeyTemplate) -> SortKeyCondition {
    let condition = match template.segments.first() {
        Some(Segment::Literal(prefix)) if !prefix.is_empty() => {
            Ok(SortCondition::BeginsWith((*prefix).to_owned()))
        }
        _ => Err(KeyError::Arity {
            entity: ctx.entity,
            attribute: ctx.attribute,
            template: template.source,
        }),
    };
    SortKeyCondition {
        attribute: ctx.attribute,
        equalities: Vec::new(),
        condition,
    }
}

fn build(
    ctx: KeyContext,
    template: &KeyTemplate,
    leading: &[&dyn KeyPart],
    op: SortOp<'_>,
) -> Result<SortCondition, KeyError> {
    let internal = || KeyError::Arity {
        entity: ctx.entity,
        attribute: ctx.attribute,
        template: template.source,
    };
    // The segment of the ranged field.
    let (segment, field) = template
        .segments
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Segment::Field(f) => Some((i, *f)),
            // Buckets belong in partition keys (the derive refuses them in sort keys); no
            // other segment holds a field.
            _ => None,
        })
        .nth(leading.len())
        .ok_or_else(internal)?;
    let ends_template = segment + 1 == template.segments.len();
    let prefix = build_key_prefix(ctx, template, leading, segment)?;
    let at = |value: &dyn KeyPart| -> Result<String, KeyError> {
        let mut values: Vec<&dyn KeyPart> = leading.to_vec();
        values.push(value);
        build_key_prefix(ctx, template, &values, segment + 1)
    };
    // Inclusive bounds of the keys whose field is `v`, seen from above and below.
    let above = |v: &dyn KeyPart| -> Result<String, KeyError> {
        let mut q = at(v)?;
        q.push(if ends_template { '#' } else { '$' });
        Ok(q)
    };
    let up_to = |v: &dyn KeyPart| -> Result<String, KeyError> {
        let mut q = at(v)?;
        if !ends_template {
            q.push('$');
        }
        Ok(q)
    };
    let low_end = (!prefix.is_empty()).then(|| prefix.clone());
    let high_end = successor(&prefix);
    let (low, high) = match op {
        SortOp::Eq(v) => {
            if ends_template {
                let q = at(v)?;
                return Ok(SortCondition::Between(q.clone(), q));
            }
            let mut values: Vec<&dyn KeyPart> = leading.to_vec();
            values.push(v);
            return Ok(SortCondition::BeginsWith(build_key_prefix(
                ctx,
                template,
                &values,
                segment + 2,
            )?));
        }
        SortOp::Ge(v) => (Some(at(v)?), high_end),
        SortOp::Gt(v) => (Some(above(v)?), high_end),
        SortOp::Le(v) => (low_end, Some(up_to(v)?)),
        SortOp::Lt(v) => {
            let q = at(v)?;
            if ends_template {
                // `Q` is the key of an item with this value: only a strict `<` excludes it,
                // and DynamoDB has no strict `BETWEEN`. Sound only when no equal field
                // bounds the range below (the literal prefix is kept by the entity filter).
                if !leading.is_empty() {
                    return Err(internal());
                }
                return Ok(SortCondition::Lt(q));
            }
            (low_end, Some(q))
        }
        SortOp::Between(lo, hi) => {
            let (lo, hi) = (at(lo)?, up_to(hi)?);
            if lo > hi {
                return Err(KeyError::InvertedRange {
                    entity: ctx.entity,
                    attribute: ctx.attribute,
                    field,
                });
            }
            (Some(lo), Some(hi))
        }
    };
    Ok(match (low, high) {
        (Some(lo), Some(hi)) => SortCondition::Between(lo, hi),
        (Some(lo), None) => SortCondition::Ge(lo),
        (None, Some(hi)) => SortCondition::Le(hi),
        (None, None) => unreachable!("a comparison bounds at least one side"),
    })
}

/// The smallest string above every string that starts with `prefix`, which is itself never a
/// key of the entity (it differs from `prefix` in a literal character): `prefix` with its last
/// character replaced by the next one. `None` for an empty prefix or one ending in
/// `char::MAX` (the range is then open above; the entity filter keeps the answer exact).
/// The runtime's whole-key bounds and entity confinement use it too.
#[doc(hidden)]
pub fn successor(prefix: &str) -> Option<String> {
    let mut out = prefix.to_owned();
    let last = out.pop()?;
    let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32)?;
    out.push(next);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    static TWO: KeyTemplate = KeyTemplate::new(
        "SCORE#{score}#{player_id}",
        &[
            Segment::Literal("SCORE#"),
            Segment::Field("score"),
            Segment::Literal("#"),
            Segment::Field("player_id"),
        ],
    );
    static BARE: KeyTemplate = KeyTemplate::new(
        "{name}#{n}",
        &[
            Segment::Field("name"),
            Segment::Literal("#"),
            Segment::Field("n"),
        ],
    );
    const CTX: KeyContext = KeyContext {
        entity: "Score",
        attribute: "sk",
    };

    fn run(template: &KeyTemplate, leading: &[&dyn KeyPart], op: SortOp<'_>) -> SortCondition {
        sort_key_condition(CTX, template, leading, op)
            .condition
            .unwrap()
    }

    const S100: &str = "SCORE#00000000000000000100";
    const S200: &str = "SCORE#00000000000000000200";

    #[test]
    fn first_field_bounds() {
        use SortCondition as C;
        assert_eq!(
            run(&TWO, &[], SortOp::Ge(&100u64)),
            C::Between(S100.into(), "SCORE$".into())
        );
        assert_eq!(
            run(&TWO, &[], SortOp::Gt(&100u64)),
            C::Between(format!("{S100}$"), "SCORE$".into())
        );
        assert_eq!(
            run(&TWO, &[], SortOp::Le(&100u64)),
            C::Between("SCORE#".into(), format!("{S100}$"))
        );
        assert_eq!(
            run(&TWO, &[], SortOp::Lt(&100u64)),
            C::Between("SCORE#".into(), S100.into())
        );
        assert_eq!(
            run(&TWO, &[], SortOp::Eq(&100u64)),
            C::BeginsWith(format!("{S100}#"))
        );
        assert_eq!(
            run(&TWO, &[], SortOp::Between(&100u64, &200u64)),
            C::Between(S100.into(), format!("{S200}$"))
        );
    }

    #[test]
    fn last_field_bounds() {
        use SortCondition as C;
        let p = format!("{S100}#");
        let end = format!("{S100}$");
        assert_eq!(
            run(&TWO, &[&100u64], SortOp::Ge(&"p5")),
            C::Between(format!("{p}p5"), end.clone())
        );
        assert_eq!(
            run(&TWO, &[&100u64], SortOp::Gt(&"p5")),
            C::Between(format!("{p}p5#"), end)
        );
        assert_eq!(
            run(&TWO, &[&100u64], SortOp::Le(&"p5")),
            C::Between(p.clone(), format!("{p}p5"))
        );
        assert_eq!(
            run(&TWO, &[&100u64], SortOp::Eq(&"p5")),
            C::Between(format!("{p}p5"), format!("{p}p5"))
        );
        // A strict `<` on the last field below an equal field is not expressible.
        assert!(sort_key_condition(CTX, &TWO, &[&100u64], SortOp::Lt(&"p5"))
            .condition
            .is_err());
    }

    #[test]
    fn no_literal_prefix_is_open_ended() {
        use SortCondition as C;
        assert_eq!(run(&BARE, &[], SortOp::Ge(&"a")), C::Ge("a".into()));
        assert_eq!(run(&BARE, &[], SortOp::Le(&"a")), C::Le("a$".into()));
        assert_eq!(run(&BARE, &[], SortOp::Lt(&"a")), C::Le("a".into()));
        assert!(sort_key_condition(CTX, &BARE, &[&"a"], SortOp::Lt(&1u8))
            .condition
            .is_err());
    }

    #[test]
    fn errors_are_kept() {
        let empty = sort_key_condition(CTX, &TWO, &[&100u64], SortOp::Ge(&""));
        assert!(matches!(
            empty.condition,
            Err(KeyError::EmptyValue {
                field: "player_id",
                ..
            })
        ));
        let inverted = sort_key_condition(CTX, &TWO, &[], SortOp::Between(&200u64, &100u64));
        assert!(matches!(
            inverted.condition,
            Err(KeyError::InvertedRange { field: "score", .. })
        ));
    }

    #[test]
    fn every_key_of_the_entity_is_its_leading_literal() {
        assert_eq!(
            sort_key_prefix_condition(CTX, &TWO).condition.unwrap(),
            SortCondition::BeginsWith("SCORE#".into())
        );
        assert!(sort_key_prefix_condition(CTX, &BARE).condition.is_err());
    }

    #[test]
    fn successor_of_prefix() {
        assert_eq!(successor("SCORE#").as_deref(), Some("SCORE$"));
        assert_eq!(successor("é").as_deref(), Some("ê"));
        assert_eq!(successor("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(successor(""), None);
    }
}

/// A typed condition on a sort key built from a template (`#[sk(template =
/// "SCORE#{score}#{player_id}")]`), from the generated `sk_sort()` (`gsiN_sort()` for a GSI's):
/// `eq` on the template's fields in order, then at most one range (`lt`, `le`, `gt`, `ge`,
/// `between`) on the next field, which ends the condition and gives the [`SortKeyCondition`].
/// `Rest` lists the fields not yet conditioned as nested pairs (`(u64, (String, ()))`), so each
/// step takes a value of the next field's type only; `H` is [`Held`] once a field is held
/// equal. Give it to `Query::sk`.
///
/// A condition that ends on `eq` reads the items with those fields; with nothing held, every
/// item of the entity (`begins_with` the template's leading literal, as `sk_all()`).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// // 100 <= score <= 200
/// let c = Score::sk_sort().between(100, 200);
/// assert_eq!(c.expression(), Ok("#sk BETWEEN :sk0 AND :sk1"));
/// // score == 100 and player_id >= "p5"
/// let c = Score::sk_sort().eq(100).ge("p5");
/// assert_eq!(c.values().unwrap(), ["SCORE#00000000000000000100#p5", "SCORE#00000000000000000100$"]);
/// ```
///
/// A strict `<` on the field that ends the template, below a field held equal, does not
/// compile: the key of an item equal to the bound is the bound itself, and DynamoDB's
/// `BETWEEN` (needed below the equal fields) includes it. Use `le` with the value before.
///
/// ```compile_fail
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// # #[sk(template = "SCORE#{score}#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// let c = Score::sk_sort().eq(100).lt("p5");
/// ```
#[must_use = "a sort condition does nothing until it is given to a query with `.sk(..)`"]
pub struct TemplateSort<Rest, H = Unheld> {
    ctx: KeyContext,
    template: &'static KeyTemplate,
    held: Vec<Encoded>,
    rest: PhantomData<fn() -> (Rest, H)>,
}

/// The state of a [`TemplateSort`] before any field is held equal.
#[derive(Debug)]
pub enum Unheld {}

/// The state of a [`TemplateSort`] once a field is held equal.
#[derive(Debug)]
pub enum Held {}

/// Where a strict `<` is one key condition: when no field is held equal, or when a field
/// follows the ranged one, or a literal does (`(H, Tail)`: the state and what comes after
/// the ranged field).
#[diagnostic::on_unimplemented(
    message = "a strict `<` on the last field of a sort-key template cannot follow equal fields",
    label = "no `lt` here: use `le` with the value before this one",
    note = "the key of an item whose last field equals the bound is the bound itself, and DynamoDB's `BETWEEN` (needed below the equal fields) includes it"
)]
pub trait StrictUpperBound {}

#[diagnostic::do_not_recommend]
impl<Tail> StrictUpperBound for (Unheld, Tail) {}

#[diagnostic::do_not_recommend]
impl<Next, After> StrictUpperBound for (Held, (Next, After)) {}

#[diagnostic::do_not_recommend]
impl StrictUpperBound for (Held, EndsInLiteral) {}

/// The end of a [`TemplateSort`]'s fields when a literal follows the last one
/// (`"{at}#{seq}#END"`), where `()` ends a template that ends with its last field: a strict
/// `<` on that field is then one key condition even below equal fields.
#[derive(Debug)]
pub enum EndsInLiteral {}

/// A held field's encoding, or why it has none, written again as a key part: the value is
/// borrowed only for the call that holds it, and its error is reported by the query.
struct Encoded(Result<String, KeyPartError>);

impl KeyPart for Encoded {
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
        let encoded = self.0.as_ref().map_err(Clone::clone)?;
        out.push_str(encoded);
        Ok(())
    }
}

impl<Rest> TemplateSort<Rest> {
    /// Nothing held yet on `template`: what the generated `sk_sort()` returns.
    #[doc(hidden)]
    pub const fn new(ctx: KeyContext, template: &'static KeyTemplate) -> Self {
        TemplateSort {
            ctx,
            template,
            held: Vec::new(),
            rest: PhantomData,
        }
    }
}

// The bounds are on each method, not on the impl, as for `AttributeSort`: a call where no
// field is left reports `NextSortAttribute`'s message instead of "method not found".
impl<Rest, H> TemplateSort<Rest, H> {
    /// The next field equals `value`.
    pub fn eq<Head, Tail>(mut self, value: impl PartArg<Head>) -> TemplateSort<Tail, Held>
    where
        Rest: NextSortAttribute<Head = Head, Tail = Tail>,
    {
        let mut encoded = String::new();
        let written = value.part().write_key(&mut encoded);
        self.held.push(Encoded(written.map(|()| encoded)));
        TemplateSort {
            ctx: self.ctx,
            template: self.template,
            held: self.held,
            rest: PhantomData,
        }
    }

    /// The next field is below `value`; ends the condition.
    pub fn lt<Head, Tail>(self, value: impl PartArg<Head>) -> SortKeyCondition
    where
        Rest: NextSortAttribute<Head = Head, Tail = Tail>,
        (H, Tail): StrictUpperBound,
    {
        self.range(SortOp::Lt(value.part()))
    }

    /// The next field is at most `value`; ends the condition.
    pub fn le<Head>(self, value: impl PartArg<Head>) -> SortKeyCondition
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.range(SortOp::Le(value.part()))
    }

    /// The next field is above `value`; ends the condition.
    pub fn gt<Head>(self, value: impl PartArg<Head>) -> SortKeyCondition
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.range(SortOp::Gt(value.part()))
    }

    /// The next field is at least `value`; ends the condition.
    pub fn ge<Head>(self, value: impl PartArg<Head>) -> SortKeyCondition
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.range(SortOp::Ge(value.part()))
    }

    /// The next field is in `low..=high` (both included); ends the condition.
    pub fn between<Head>(
        self,
        low: impl PartArg<Head>,
        high: impl PartArg<Head>,
    ) -> SortKeyCondition
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.range(SortOp::Between(low.part(), high.part()))
    }

    fn range(self, op: SortOp<'_>) -> SortKeyCondition {
        let leading: Vec<&dyn KeyPart> = self.held.iter().map(|e| e as &dyn KeyPart).collect();
        sort_key_condition(self.ctx, self.template, &leading, op)
    }
}

/// The end of a [`TemplateSort`] whose every field is held: `()`, or [`EndsInLiteral`]. Such a
/// condition spells one whole sort key, which a query's `after`, `before`, `from` and `to`
/// take as a bound.
#[diagnostic::on_unimplemented(
    message = "a whole-key bound needs every field of the sort key, and fields of types `{Self}` are not held yet",
    label = "not a whole sort key",
    note = "hold every field of the template with `eq`, in order (`Score::sk_sort().eq(100).eq(\"p1\")`), \
            or give an item (`&score`); a range on one field is `.sk(Score::sk_sort().gt(100))`"
)]
pub trait WholeKeyEnd {}

#[diagnostic::do_not_recommend]
impl WholeKeyEnd for () {}

#[diagnostic::do_not_recommend]
impl WholeKeyEnd for EndsInLiteral {}

impl<Rest: WholeKeyEnd> TemplateSort<Rest, Held> {
    /// The sort-key attribute and the whole key the held fields spell (the template's trailing
    /// literal included), or why a field could not be encoded.
    #[doc(hidden)]
    pub fn into_whole_key(self) -> (&'static str, Result<String, KeyError>) {
        let values: Vec<&dyn KeyPart> = self.held.iter().map(|e| e as &dyn KeyPart).collect();
        let key = build_key_prefix(
            self.ctx,
            self.template,
            &values,
            self.template.segments.len(),
        );
        (self.ctx.attribute, key)
    }
}

impl<Rest, H> From<TemplateSort<Rest, H>> for SortKeyCondition {
    /// The condition the held fields say: the last one's equality, the others before it; with
    /// none, every key of the entity.
    fn from(mut sort: TemplateSort<Rest, H>) -> SortKeyCondition {
        match sort.held.pop() {
            None => sort_key_prefix_condition(sort.ctx, sort.template),
            Some(last) => sort.range(SortOp::Eq(&last)),
        }
    }
}

/// A sort condition on a multi-attribute sort key (`#[gsiN(sk = [score, player_id])]`), built
/// from the generated `gsiN_sort()`: `eq` on the leading attributes, in order, then at most
/// one range (`lt`, `le`, `gt`, `ge`, `between`, `begins_with`) on the next, as DynamoDB
/// accepts. `Rest` lists the attributes not yet conditioned as nested pairs (`(u64,
/// (String, ()))`); a range ends the condition (`Rest` becomes [`RangeSet`]), so a second
/// range, or an `eq` after one, does not compile. Give it to
/// `Query::sk`.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "PLAYER#{player_id}")]
/// #[sk(template = "GAME#{game_id}")]
/// #[gsi1(pk = [game_id], sk = [score, player_id], shard = 4)]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// // score == 100 and player_id > "p5"
/// let c = Score::gsi1_sort().eq(100).gt("p5");
/// let c: sharded::query::SortKeyCondition = c.into();
/// assert_eq!(c.expression(), Ok("#sk > :sk0"));
/// assert_eq!(c.values().unwrap(), ["p5"]);
/// ```
///
/// ```compile_fail
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "PLAYER#{player_id}")]
/// # #[sk(template = "GAME#{game_id}")]
/// # #[gsi1(pk = [game_id], sk = [score, player_id], shard = 4)]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// // A range on `score` ends the condition: DynamoDB refuses one on `player_id` after it.
/// let c = Score::gsi1_sort().gt(100).eq("p5");
/// ```
#[must_use = "a sort condition does nothing until it is given to a query with `.sk(..)`"]
pub struct AttributeSort<Rest> {
    attributes: &'static [KeyAttributeSchema],
    equalities: Vec<(&'static str, KeyValue)>,
    range: Option<SortCondition>,
    rest: PhantomData<fn() -> Rest>,
}

/// The state of an [`AttributeSort`] after a range: no attribute can follow.
#[derive(Debug)]
pub enum RangeSet {}

/// The sort attributes an [`AttributeSort`] can still condition: `(Head, Tail)`, the next
/// attribute's type and the ones after it.
#[diagnostic::on_unimplemented(
    message = "no sort attribute is left to condition after `{Self}`",
    label = "the condition already ends here",
    note = "a range (`lt`, `le`, `gt`, `ge`, `between`, `begins_with`) ends a multi-attribute \
            sort condition, and each attribute takes one condition: put every `eq` first, in \
            the order of `sk = [..]`, then at most one range, on the next attribute"
)]
pub trait NextSortAttribute {
    /// The next attribute's field type.
    type Head;
    /// The attributes after it.
    type Tail;
}

impl<H, T> NextSortAttribute for (H, T) {
    type Head = H;
    type Tail = T;
}

/// A sort attribute `begins_with` applies to: a string.
#[diagnostic::on_unimplemented(
    message = "`begins_with` applies to a string sort attribute, not to `{Self}`",
    label = "not a string attribute",
    note = "DynamoDB's `begins_with` compares text: use `between` or `ge`/`lt` for a number"
)]
pub trait StringSortAttribute {}

impl StringSortAttribute for String {}

impl<Rest> AttributeSort<Rest> {
    /// The condition on `attributes` with nothing held yet: what the generated `gsiN_sort()`
    /// returns.
    #[doc(hidden)]
    pub fn new(attributes: &'static [KeyAttributeSchema]) -> Self {
        AttributeSort {
            attributes,
            equalities: Vec::new(),
            range: None,
            rest: PhantomData,
        }
    }

    fn with<Next>(
        mut self,
        equal: Option<KeyValue>,
        range: Option<SortCondition>,
    ) -> AttributeSort<Next> {
        if let Some(value) = equal {
            let name = self.attributes[self.equalities.len()].name;
            self.equalities.push((name, value));
        }
        AttributeSort {
            attributes: self.attributes,
            equalities: self.equalities,
            range: range.or(self.range),
            rest: PhantomData,
        }
    }
}

// The bound is on each method, not on the impl: a method called where no attribute is left
// (after a range, or past the last) then exists, and the call reports `NextSortAttribute`'s
// message instead of "method not found".
impl<Rest> AttributeSort<Rest> {
    /// The next sort attribute equals `value`.
    pub fn eq<Head, Tail>(self, value: impl KeyArg<Head>) -> AttributeSort<Tail>
    where
        Rest: NextSortAttribute<Head = Head, Tail = Tail>,
    {
        self.with(Some(value.key_value()), None)
    }

    /// The next sort attribute is below `value`; ends the condition.
    pub fn lt<Head>(self, value: impl KeyArg<Head>) -> AttributeSort<RangeSet>
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.with(None, Some(SortCondition::Lt(text(value))))
    }

    /// The next sort attribute is at most `value`; ends the condition.
    pub fn le<Head>(self, value: impl KeyArg<Head>) -> AttributeSort<RangeSet>
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.with(None, Some(SortCondition::Le(text(value))))
    }

    /// The next sort attribute is above `value`; ends the condition.
    pub fn gt<Head>(self, value: impl KeyArg<Head>) -> AttributeSort<RangeSet>
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.with(None, Some(SortCondition::Gt(text(value))))
    }

    /// The next sort attribute is at least `value`; ends the condition.
    pub fn ge<Head>(self, value: impl KeyArg<Head>) -> AttributeSort<RangeSet>
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.with(None, Some(SortCondition::Ge(text(value))))
    }

    /// The next sort attribute is in `low..=high`; ends the condition.
    pub fn between<Head>(
        self,
        low: impl KeyArg<Head>,
        high: impl KeyArg<Head>,
    ) -> AttributeSort<RangeSet>
    where
        Rest: NextSortAttribute<Head = Head>,
    {
        self.with(None, Some(SortCondition::Between(text(low), text(high))))
    }

    /// The next sort attribute, a string, starts with `prefix`; ends the condition.
    pub fn begins_with<Head>(self, prefix: impl KeyArg<Head>) -> AttributeSort<RangeSet>
    where
        Rest: NextSortAttribute<Head = Head>,
        Head: StringSortAttribute,
    {
        self.with(None, Some(SortCondition::BeginsWith(text(prefix))))
    }
}

fn text<T>(value: impl KeyArg<T>) -> String {
    value.key_value().text().to_owned()
}

impl<Rest> From<AttributeSort<Rest>> for SortKeyCondition {
    /// The key condition: the held attributes as equalities, and the range on the next one
    /// (or, when the condition ends on an `eq`, that last attribute's equality).
    fn from(sort: AttributeSort<Rest>) -> SortKeyCondition {
        let mut equalities = sort.equalities;
        let (attribute, condition) = match sort.range {
            Some(range) => (sort.attributes.get(equalities.len()), Ok(range)),
            None => match equalities.pop() {
                Some((_, last)) => (
                    sort.attributes.get(equalities.len()),
                    Ok(SortCondition::Eq(last.text().to_owned())),
                ),
                // No condition at all: every item of the partition, in sort order.
                None => {
                    let first = sort.attributes.first();
                    let attribute = first.map_or("", |a| a.name);
                    (first, Err(KeyError::EmptySortCondition { attribute }))
                }
            },
        };
        SortKeyCondition {
            attribute: attribute.map_or("", |a| a.name),
            equalities,
            condition,
        }
    }
}

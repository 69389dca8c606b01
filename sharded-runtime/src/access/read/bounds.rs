//! Whole-key bounds of a query: `after`, `before`, `from` and `to` an item or a whole sort-key
//! value, in the sort key's own order.
//!
//! A typed sort-key condition (`sk_sort()`) holds leading fields equal and ranges the next, so
//! "every score after (100, p1000)" is not one: it is `sk > SCORE#100#p1000`, a bound on the
//! whole key. DynamoDB's key condition has one comparison per sort key and `BETWEEN` is closed
//! at both ends, so a strict bound cannot always be sent as such. The rule here, the one every
//! query with bounds goes through: the request carries the closest inclusive key condition
//! (the intersection of the bounds with the query's own condition, which confines it to the
//! entity), and the items a strict end admits on the server are left out where every page
//! comes in, by comparing each item's sort key with the range, as DynamoDB orders keys. At
//! most the items whose key equals a strict end are read in vain: one per shard on the base
//! table, the items sharing that index key on a GSI.

use crate::access::engine::merge::SortValue;
use crate::access::entity::ShardedEntity;
use crate::access::sort_condition::{
    successor, AttributeSort, Held, SortCondition, SortKeyCondition, TemplateSort, WholeKeyEnd,
};
use crate::error::{Error, KeyError, QueryRefusal};
use crate::item::Item;
use crate::keys::attribute::KeyValue;
use crate::keys::schema::{KeyAttributeSchema, ScalarType};

/// One end of a whole-key range, for [`Query::after`](crate::Query::after),
/// [`before`](crate::Query::before), [`from`](crate::Query::from) and
/// [`to`](crate::Query::to): an item (its sort key on the queried index), or a whole sort-key
/// value (every field of the template held with `eq`). Built by [`WholeSortKey`].
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::query::WholeSortKey;
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// let by_fields = Score::sk_sort().eq(100).eq("p1000").into_bound();
/// let mine = Score { game_id: "g1".into(), player_id: "p1000".into(), score: 100 };
/// let by_item = (&mine).into_bound();
/// # let _ = (by_fields, by_item);
/// ```
#[derive(Debug, Clone)]
pub struct SortBound(BoundValue);

#[derive(Debug, Clone)]
enum BoundValue {
    /// An item, whose sort key is read off its attributes once the queried index is known.
    Item {
        entity: &'static str,
        item: Result<Item, String>,
    },
    /// A whole string sort key.
    Text {
        attribute: &'static str,
        key: Result<String, KeyError>,
    },
    /// A multi-attribute sort key's values, in the key's order.
    Attributes(Result<Vec<(&'static str, KeyValue)>, KeyError>),
}

/// What a whole-key bound is made of: an item of the queried entity (or of a collection's
/// member), or a sort key with every field held (`Score::sk_sort().eq(100).eq("p1")`, or
/// `gsi1_sort()` with every attribute held for a multi-attribute key).
///
/// ```compile_fail
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Query, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// # #[sk(template = "SCORE#{score}#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// # fn demo(q: Query<Score>) {
/// // Only `score` is held: not a whole key (use `sk(Score::sk_sort().gt(100))` for a field range).
/// let q = q.after(Score::sk_sort().eq(100));
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a whole sort key",
    label = "a bound takes an item, or every field of the sort key",
    note = "give an item (`&score`), or hold every field of the template with `eq` \
            (`Score::sk_sort().eq(100).eq(\"p1\")`); a range on one field is `.sk(Score::sk_sort().gt(100))`"
)]
pub trait WholeSortKey {
    /// The bound this value makes.
    fn into_bound(self) -> SortBound;
}

impl WholeSortKey for SortBound {
    fn into_bound(self) -> SortBound {
        self
    }
}

impl<E: ShardedEntity> WholeSortKey for &E {
    fn into_bound(self) -> SortBound {
        SortBound(BoundValue::Item {
            entity: E::SCHEMA.entity,
            item: self.to_item().map_err(|e| e.to_string()),
        })
    }
}

impl<Rest: WholeKeyEnd> WholeSortKey for TemplateSort<Rest, Held> {
    fn into_bound(self) -> SortBound {
        let (attribute, key) = self.into_whole_key();
        SortBound(BoundValue::Text { attribute, key })
    }
}

impl WholeSortKey for AttributeSort<()> {
    fn into_bound(self) -> SortBound {
        let (attribute, mut values, last) = SortKeyCondition::from(self).into_parts();
        let values = match last {
            Ok(SortCondition::Eq(text)) => {
                // The last attribute's type is not in the condition: the query knows it, and
                // retypes every value by its attribute's type when it resolves the bound.
                values.push((attribute, KeyValue::S(text)));
                Ok(values)
            }
            Ok(_) => Err(KeyError::EmptySortCondition { attribute }),
            Err(error) => Err(error),
        };
        SortBound(BoundValue::Attributes(values))
    }
}

/// A range of sort keys, each end a value and whether it is included, as DynamoDB orders keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct KeyRange {
    pub low: Option<(SortValue, bool)>,
    pub high: Option<(SortValue, bool)>,
}

impl KeyRange {
    /// Whether a sort key lies in the range; an item without one does not.
    pub fn admits(&self, key: Option<&SortValue>) -> bool {
        let Some(key) = key else {
            return self.low.is_none() && self.high.is_none();
        };
        let above = self
            .low
            .as_ref()
            .is_none_or(|(low, inclusive)| key > low || (*inclusive && key == low));
        let below = self
            .high
            .as_ref()
            .is_none_or(|(high, inclusive)| key < high || (*inclusive && key == high));
        above && below
    }

    /// The range within both: the greater low end and the smaller high end, an end shared by
    /// both included only when both include it.
    fn intersect(self, other: KeyRange) -> KeyRange {
        fn pick(
            a: Option<(SortValue, bool)>,
            b: Option<(SortValue, bool)>,
            keep_a: impl Fn(&SortValue, &SortValue) -> bool,
        ) -> Option<(SortValue, bool)> {
            match (a, b) {
                (Some((a, ai)), Some((b, bi))) if a == b => Some((a, ai && bi)),
                (Some(a), Some(b)) => Some(if keep_a(&a.0, &b.0) { a } else { b }),
                (a, b) => a.or(b),
            }
        }
        KeyRange {
            low: pick(self.low, other.low, |a, b| a > b),
            high: pick(self.high, other.high, |a, b| a < b),
        }
    }

    /// The range as cursors are bound to it: `[low,high)` with `*` for an open end.
    pub fn render(&self) -> String {
        let end = |end: &Option<(SortValue, bool)>| match end {
            Some((value, _)) => format!("{value:?}"),
            None => "*".to_owned(),
        };
        format!(
            "{}{},{}{}",
            if matches!(self.low, Some((_, false))) {
                '('
            } else {
                '['
            },
            end(&self.low),
            end(&self.high),
            if matches!(self.high, Some((_, false))) {
                ')'
            } else {
                ']'
            },
        )
    }
}

/// The bounds a query was given, each an end and whether it is included, resolved when the
/// query runs (an item's key depends on the queried index). Several on one side all apply:
/// the tightest wins.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bounds {
    pub low: Vec<(SortBound, bool)>,
    pub high: Vec<(SortBound, bool)>,
}

/// What a query with bounds sends and checks: the key condition (and, for a multi-attribute
/// key, the attributes it holds equal), and the range every item read must lie in.
pub(crate) struct Bounded {
    pub condition: Option<SortCondition>,
    pub equalities: Vec<(&'static str, KeyValue)>,
    pub range: KeyRange,
}

impl Bounds {
    pub fn is_empty(&self) -> bool {
        self.low.is_empty() && self.high.is_empty()
    }

    /// The bounds on a query of `entities` keyed by `sort` (one string attribute, or a
    /// multi-attribute key's), combined with its own condition `condition` (which holds
    /// `equalities`): the key condition to send and the range to check.
    pub fn resolve(
        &self,
        entities: &[&'static str],
        sort: &[KeyAttributeSchema],
        condition: Option<SortCondition>,
        equalities: Vec<(&'static str, KeyValue)>,
    ) -> Result<Bounded, Error> {
        let mut range = KeyRange::default();
        for (bound, inclusive) in &self.low {
            let low = Some((value_of(bound, entities, sort)?, *inclusive));
            range = range.intersect(KeyRange { low, high: None });
        }
        for (bound, inclusive) in &self.high {
            let high = Some((value_of(bound, entities, sort)?, *inclusive));
            range = range.intersect(KeyRange { low: None, high });
        }
        if let [one] = sort {
            if one.kind == ScalarType::S {
                // A string key: the query's own condition is a range of strings too, so the
                // two meet in one key condition.
                let range = match &condition {
                    Some(own) => range.intersect(string_range(own)),
                    None => range,
                };
                return Ok(Bounded {
                    condition: string_condition(&range),
                    equalities,
                    range,
                });
            }
        }
        // A multi-attribute (or number) key: the query's own condition, if it has one, is
        // sent as it is and the bounds are checked on the items; otherwise the bounds' common
        // leading values are held equal and the next attribute ranged.
        if condition.is_some() {
            return Ok(Bounded {
                condition,
                equalities,
                range,
            });
        }
        let (condition, equalities) = attribute_condition(&range, sort);
        Ok(Bounded {
            condition,
            equalities,
            range,
        })
    }
}

/// The sort value a bound stands for on a query keyed by `sort`.
fn value_of(
    bound: &SortBound,
    entities: &[&'static str],
    sort: &[KeyAttributeSchema],
) -> Result<SortValue, Error> {
    // A whole key of another sort key (another index's, another attribute's).
    let wrong_sort_key = |given: &'static str| -> Error {
        KeyError::WrongSortKey {
            entity: entities.first().copied().unwrap_or(""),
            expected: sort.first().map_or("", |a| a.name),
            given,
        }
        .into()
    };
    let value = |kind: ScalarType, text: String| match kind {
        ScalarType::N => SortValue::N(text),
        _ => SortValue::S(text),
    };
    match &bound.0 {
        BoundValue::Item { entity, item } => {
            if !entities.contains(entity) {
                let (entity, entities) = (*entity, entities.to_vec());
                return Err(QueryRefusal::BoundOfOtherEntity { entity, entities }.into());
            }
            let item = item
                .as_ref()
                .map_err(|reason| QueryRefusal::BoundUnwritable {
                    entity,
                    reason: reason.clone(),
                })?;
            let read = |attribute: &KeyAttributeSchema| {
                item.get(attribute.name)
                    .and_then(SortValue::from_attribute)
                    .ok_or_else(|| {
                        let attribute = attribute.name;
                        QueryRefusal::BoundNotInIndex { entity, attribute }.into()
                    })
            };
            match sort {
                [] => Err(no_sort_key(entities)),
                [one] => read(one),
                many => Ok(SortValue::Composite(
                    many.iter().map(read).collect::<Result<_, _>>()?,
                )),
            }
        }
        BoundValue::Text { attribute, key } => {
            let key = key.clone()?;
            match sort {
                [one] if one.name == *attribute => Ok(value(one.kind, key)),
                _ => Err(wrong_sort_key(attribute)),
            }
        }
        BoundValue::Attributes(values) => {
            let values = values.clone()?;
            let names = values.iter().map(|(name, _)| *name);
            if !names.eq(sort.iter().map(|a| a.name)) {
                return Err(wrong_sort_key(values.first().map_or("", |(name, _)| name)));
            }
            let mut values: Vec<SortValue> = values
                .into_iter()
                .zip(sort)
                .map(|((_, v), a)| value(a.kind, v.text().to_owned()))
                .collect();
            // One sort attribute is compared as itself, as the merge orders it.
            Ok(match (values.pop(), values.is_empty()) {
                (Some(one), true) => one,
                (Some(last), false) => {
                    values.push(last);
                    SortValue::Composite(values)
                }
                (None, _) => return Err(no_sort_key(entities)),
            })
        }
    }
}

fn no_sort_key(entities: &[&'static str]) -> Error {
    let entities = entities.to_vec();
    QueryRefusal::NoSortKey { entities }.into()
}

/// The strings a string key's condition admits, as a range.
fn string_range(condition: &SortCondition) -> KeyRange {
    let at = |s: &String, inclusive: bool| Some((SortValue::S(s.clone()), inclusive));
    match condition {
        SortCondition::BeginsWith(prefix) => KeyRange {
            low: at(prefix, true),
            high: successor(prefix).map(|next| (SortValue::S(next), false)),
        },
        SortCondition::Between(low, high) => KeyRange {
            low: at(low, true),
            high: at(high, true),
        },
        SortCondition::Eq(key) => KeyRange {
            low: at(key, true),
            high: at(key, true),
        },
        SortCondition::Ge(low) => KeyRange {
            low: at(low, true),
            high: None,
        },
        SortCondition::Gt(low) => KeyRange {
            low: at(low, false),
            high: None,
        },
        SortCondition::Le(high) => KeyRange {
            low: None,
            high: at(high, true),
        },
        SortCondition::Lt(high) => KeyRange {
            low: None,
            high: at(high, false),
        },
    }
}

/// The closest key condition on a string key for `range`: one-sided ends as DynamoDB says them
/// (`>`, `<` included), two ends as `BETWEEN` (closed: a strict end is then checked on the
/// items). An empty range reads at most the one key `low` (every item of it left out), since
/// DynamoDB refuses a `BETWEEN` whose ends are the wrong way round.
fn string_condition(range: &KeyRange) -> Option<SortCondition> {
    let text = |end: &Option<(SortValue, bool)>| match end {
        Some((SortValue::S(s), inclusive)) => Some((s.clone(), *inclusive)),
        _ => None,
    };
    Some(match (text(&range.low), text(&range.high)) {
        (Some((low, _)), Some((high, _))) if low > high => SortCondition::Between(low.clone(), low),
        (Some((low, _)), Some((high, _))) => SortCondition::Between(low, high),
        (Some((low, true)), None) => SortCondition::Ge(low),
        (Some((low, false)), None) => SortCondition::Gt(low),
        (None, Some((high, true))) => SortCondition::Le(high),
        (None, Some((high, false))) => SortCondition::Lt(high),
        (None, None) => return None,
    })
}

/// The closest key condition on a multi-attribute key for `range`: the leading values both
/// ends share held equal, the next attribute ranged between the ends' values (inclusive).
fn attribute_condition(
    range: &KeyRange,
    sort: &[KeyAttributeSchema],
) -> (Option<SortCondition>, Vec<(&'static str, KeyValue)>) {
    let parts = |end: &Option<(SortValue, bool)>| -> Vec<SortValue> {
        match end {
            Some((SortValue::Composite(values), _)) => values.clone(),
            Some((value, _)) => vec![value.clone()],
            None => Vec::new(),
        }
    };
    let (low, high) = (parts(&range.low), parts(&range.high));
    let held = low.iter().zip(&high).take_while(|(a, b)| a == b).count();
    // Every attribute held: one key, its last attribute's equality.
    let held = held.min(sort.len().saturating_sub(1));
    let text = |value: &SortValue| match value {
        SortValue::S(s) | SortValue::N(s) => s.clone(),
        other => format!("{other:?}"),
    };
    let equalities = sort
        .iter()
        .zip(&low)
        .take(held)
        .map(|(a, v)| (a.name, KeyValue::of_type(a.kind, text(v))))
        .collect();
    let condition = match (low.get(held), high.get(held)) {
        (Some(a), Some(b)) if a > b => Some(SortCondition::Between(text(a), text(a))),
        (Some(a), Some(b)) => Some(SortCondition::Between(text(a), text(b))),
        (Some(a), None) => Some(SortCondition::Ge(text(a))),
        (None, Some(b)) => Some(SortCondition::Le(text(b))),
        (None, None) => None,
    };
    (condition, equalities)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> SortValue {
        SortValue::S(text.to_owned())
    }

    #[test]
    fn strict_and_inclusive_ends() {
        let range = KeyRange {
            low: Some((s("b"), false)),
            high: Some((s("d"), true)),
        };
        assert!(!range.admits(Some(&s("b"))));
        assert!(range.admits(Some(&s("b0"))));
        assert!(range.admits(Some(&s("d"))));
        assert!(!range.admits(Some(&s("d0"))));
        assert!(!range.admits(None));
    }

    #[test]
    fn the_own_condition_confines_the_bounds() {
        let bounds = KeyRange {
            low: Some((s("A#1"), false)),
            high: None,
        };
        let own = string_range(&SortCondition::BeginsWith("A#".into()));
        let range = bounds.intersect(own);
        assert_eq!(
            string_condition(&range),
            Some(SortCondition::Between("A#1".into(), "A$".into()))
        );
        assert!(!range.admits(Some(&s("A#1"))));
        assert!(!range.admits(Some(&s("A$"))));
    }

    #[test]
    fn an_empty_range_is_still_a_valid_condition() {
        let range = KeyRange {
            low: Some((s("z"), true)),
            high: Some((s("a"), true)),
        };
        assert_eq!(
            string_condition(&range),
            Some(SortCondition::Between("z".into(), "z".into()))
        );
        assert!(!range.admits(Some(&s("z"))));
    }

    #[test]
    fn one_sided_ends_keep_their_strictness() {
        let after = KeyRange {
            low: Some((s("k"), false)),
            high: None,
        };
        assert_eq!(
            string_condition(&after),
            Some(SortCondition::Gt("k".into()))
        );
        let upto = KeyRange {
            low: None,
            high: Some((s("k"), true)),
        };
        assert_eq!(string_condition(&upto), Some(SortCondition::Le("k".into())));
    }

    #[test]
    fn attribute_bounds_hold_their_shared_values() {
        let sort = [
            KeyAttributeSchema::new("score", ScalarType::N),
            KeyAttributeSchema::new("player", ScalarType::S),
        ];
        let range = KeyRange {
            low: Some((
                SortValue::Composite(vec![SortValue::N("10".into()), s("p1")]),
                false,
            )),
            high: Some((
                SortValue::Composite(vec![SortValue::N("10".into()), s("p9")]),
                true,
            )),
        };
        let (condition, equalities) = attribute_condition(&range, &sort);
        assert_eq!(equalities, [("score", KeyValue::N("10".into()))]);
        assert_eq!(
            condition,
            Some(SortCondition::Between("p1".into(), "p9".into()))
        );
        let wide = KeyRange {
            low: Some((
                SortValue::Composite(vec![SortValue::N("9".into()), s("p1")]),
                true,
            )),
            high: Some((
                SortValue::Composite(vec![SortValue::N("20".into()), s("p0")]),
                false,
            )),
        };
        let (condition, equalities) = attribute_condition(&wide, &sort);
        assert!(equalities.is_empty());
        assert_eq!(
            condition,
            Some(SortCondition::Between("9".into(), "20".into()))
        );
        // Numbers compare by value, not text: 9 < 20 although "9" > "20".
        assert!(wide.admits(Some(&SortValue::Composite(vec![
            SortValue::N("10".into()),
            s("a")
        ]))));
    }
}

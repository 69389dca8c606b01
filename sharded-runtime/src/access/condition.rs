//! Typed conditions over an entity's fields: condition expressions for writes and filter
//! expressions for queries, built from the fields `#[derive(ShardedEntity)]` lists
//! (`Score::fields()`), rendered with placeholders only.
//!
//! Names always go through `ExpressionAttributeNames` and values through serde_dynamo into
//! `ExpressionAttributeValues`: nothing a caller passes is ever spliced into the expression
//! text, so no value can change what the expression means.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;

use crate::error::{Error, QueryRefusal};

/// A stored field of entity `E` whose Rust type is `T`: the operand of typed conditions.
///
/// Generated per field by `#[derive(ShardedEntity)]`, reached through `Entity::fields()`:
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64, tags: Vec<String> }
///
/// let f = Score::fields();
/// let c = f.score.ge(100).and(f.player_id.begins_with("p")).and(f.tags.size().lt(5));
/// assert_eq!(
///     c.to_string(),
///     "((score >= 100) AND (begins_with(player_id, \"p\"))) AND (size(tags) < 5)"
/// );
/// ```
///
/// `R` is the field's role: [`Data`], or [`PrimaryKey`] for a field the primary key is built
/// from (conditions take both; updates only [`Data`]).
pub struct Field<E, T, R = Data> {
    attribute: &'static str,
    _types: PhantomData<Types<E, T, R>>,
}

/// The types a [`Field`] stands for, without owning any (`fn() -> ..` keeps `Field` `Send`,
/// `Sync` and `Copy` whatever they are).
type Types<E, T, R> = fn() -> (E, T, R);

/// The role of a field outside the primary key: it can be updated.
#[derive(Debug, Clone, Copy)]
pub enum Data {}

/// The role of a field the primary key (partition or sort key) is built from: it decides
/// which item, on which shard, this is, so it cannot be updated, only compared.
#[derive(Debug, Clone, Copy)]
pub enum PrimaryKey {}

impl<E, T, R> Clone for Field<E, T, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, T, R> Copy for Field<E, T, R> {}

impl<E, T, R> fmt::Debug for Field<E, T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Field({})", self.attribute)
    }
}

/// A value a condition compares a `Field<E, T>` with: a `T`, or a `&str` for a `String`
/// field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a value of the field's type `{T}`",
    label = "expected a `{T}`",
    note = "conditions and updates take a value of the field's own Rust type (and `&str` for a `String` field)"
)]
pub trait Operand<T> {
    /// The value as DynamoDB stores a `T`.
    fn to_attribute(&self) -> Result<AttributeValue, String>;
}

impl<T: Serialize> Operand<T> for T {
    fn to_attribute(&self) -> Result<AttributeValue, String> {
        serde_dynamo::to_attribute_value(self).map_err(|e| e.to_string())
    }
}

impl Operand<String> for &str {
    fn to_attribute(&self) -> Result<AttributeValue, String> {
        Ok(AttributeValue::S((*self).to_owned()))
    }
}

impl<E, T, R> Field<E, T, R> {
    /// The field stored as `attribute` (its serde name). Called by generated code.
    #[doc(hidden)]
    pub const fn new(attribute: &'static str) -> Self {
        Field {
            attribute,
            _types: PhantomData,
        }
    }

    /// The attribute the field is stored as.
    pub fn attribute(&self) -> &'static str {
        self.attribute
    }

    fn compare(self, op: Comparison, value: &impl Operand<T>) -> Condition<E> {
        Condition::node(Node::Compare(
            Operand_::Path(self.attribute),
            op,
            value.to_attribute(),
        ))
    }

    /// `field = value`
    pub fn eq(self, value: impl Operand<T>) -> Condition<E> {
        self.compare(Comparison::Eq, &value)
    }

    /// `field <> value` (true also when the attribute is absent)
    pub fn ne(self, value: impl Operand<T>) -> Condition<E> {
        self.compare(Comparison::Ne, &value)
    }

    /// `field < value`
    pub fn lt(self, value: impl Operand<T>) -> Condition<E> {
        self.compare(Comparison::Lt, &value)
    }

    /// `field <= value`
    pub fn le(self, value: impl Operand<T>) -> Condition<E> {
        self.compare(Comparison::Le, &value)
    }

    /// `field > value`
    pub fn gt(self, value: impl Operand<T>) -> Condition<E> {
        self.compare(Comparison::Gt, &value)
    }

    /// `field >= value`
    pub fn ge(self, value: impl Operand<T>) -> Condition<E> {
        self.compare(Comparison::Ge, &value)
    }

    /// `field BETWEEN low AND high`: both bounds included.
    pub fn between(self, low: impl Operand<T>, high: impl Operand<T>) -> Condition<E> {
        Condition::node(Node::Between(
            self.attribute,
            low.to_attribute(),
            high.to_attribute(),
        ))
    }

    /// `attribute_exists(field)`
    pub fn exists(self) -> Condition<E> {
        Condition::node(Node::Exists(self.attribute, true))
    }

    /// `attribute_not_exists(field)`
    pub fn not_exists(self) -> Condition<E> {
        Condition::node(Node::Exists(self.attribute, false))
    }

    /// `size(field)`, compared with a number: the length of a string, binary, list, map or set.
    pub fn size(self) -> Size<E> {
        Size {
            attribute: self.attribute,
            _entity: PhantomData,
        }
    }
}

impl<E, R> Field<E, String, R> {
    /// `begins_with(field, prefix)`
    pub fn begins_with(self, prefix: &str) -> Condition<E> {
        Condition::node(Node::BeginsWith(
            self.attribute,
            AttributeValue::S(prefix.to_owned()),
        ))
    }

    /// `contains(field, text)`: the string holds `text`.
    pub fn contains(self, text: &str) -> Condition<E> {
        Condition::node(Node::Contains(
            self.attribute,
            Ok(AttributeValue::S(text.to_owned())),
        ))
    }
}

/// Collections whose elements `contains` can look for: lists and sets.
pub trait Elements {
    /// The element type.
    type Element: Serialize;
}

impl<T: Serialize> Elements for Vec<T> {
    type Element = T;
}

impl<T: Serialize> Elements for std::collections::HashSet<T> {
    type Element = T;
}

impl<T: Serialize> Elements for std::collections::BTreeSet<T> {
    type Element = T;
}

impl<E, T: Elements, R> Field<E, T, R> {
    /// `contains(field, element)`: the list or set holds `element`.
    pub fn contains_element(self, element: impl Operand<T::Element>) -> Condition<E> {
        Condition::node(Node::Contains(self.attribute, element.to_attribute()))
    }
}

/// `size(field)`, to compare with a number (see [`Field::size`]).
pub struct Size<E> {
    attribute: &'static str,
    _entity: PhantomData<fn() -> E>,
}

impl<E> Size<E> {
    fn compare(self, op: Comparison, n: u64) -> Condition<E> {
        Condition::node(Node::Compare(
            Operand_::Size(self.attribute),
            op,
            Ok(AttributeValue::N(n.to_string())),
        ))
    }

    /// `size(field) = n`
    pub fn eq(self, n: u64) -> Condition<E> {
        self.compare(Comparison::Eq, n)
    }

    /// `size(field) < n`
    pub fn lt(self, n: u64) -> Condition<E> {
        self.compare(Comparison::Lt, n)
    }

    /// `size(field) <= n`
    pub fn le(self, n: u64) -> Condition<E> {
        self.compare(Comparison::Le, n)
    }

    /// `size(field) > n`
    pub fn gt(self, n: u64) -> Condition<E> {
        self.compare(Comparison::Gt, n)
    }

    /// `size(field) >= n`
    pub fn ge(self, n: u64) -> Condition<E> {
        self.compare(Comparison::Ge, n)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Comparison {
    fn symbol(self) -> &'static str {
        match self {
            Comparison::Eq => "=",
            Comparison::Ne => "<>",
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
#[allow(non_camel_case_types)]
enum Operand_ {
    Path(&'static str),
    Size(&'static str),
}

/// A value that could not be serialised is kept as its error, reported when the condition is
/// used: building a condition never fails at the call site.
type Value = Result<AttributeValue, String>;

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Compare(Operand_, Comparison, Value),
    Between(&'static str, Value, Value),
    BeginsWith(&'static str, AttributeValue),
    Contains(&'static str, Value),
    Exists(&'static str, bool),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
}

/// A typed condition on the items of entity `E`: a write's `ConditionExpression` or a query's
/// `FilterExpression`. Built from [`Field`]s and combined with [`and`](Condition::and),
/// [`or`](Condition::or) and [`not`](Condition::not); a condition of another entity does not
/// type-check.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// # #[sk(template = "SCORE#{score}#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64, cheated: Option<bool> }
/// let f = Score::fields();
/// let honest_high = f.score.between(900, 1000).and(f.cheated.not_exists().or(f.cheated.eq(Some(false))));
/// assert_eq!(
///     honest_high.to_string(),
///     "(score BETWEEN 900 AND 1000) AND ((attribute_not_exists(cheated)) OR (cheated = false))"
/// );
/// ```
#[derive(Clone, PartialEq)]
#[must_use = "a condition does nothing until it is given to a query's filter or a write"]
pub struct Condition<E> {
    node: Node,
    _entity: PhantomData<fn() -> E>,
}

impl<E> fmt::Debug for Condition<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Condition({self})")
    }
}

impl<E> Condition<E> {
    fn node(node: Node) -> Self {
        Condition {
            node,
            _entity: PhantomData,
        }
    }

    /// Both conditions hold.
    pub fn and(self, other: Condition<E>) -> Condition<E> {
        Condition::node(Node::And(Box::new(self.node), Box::new(other.node)))
    }

    /// At least one of the conditions holds.
    pub fn or(self, other: Condition<E>) -> Condition<E> {
        Condition::node(Node::Or(Box::new(self.node), Box::new(other.node)))
    }

    /// The condition does not hold.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Condition<E> {
        Condition::node(Node::Not(Box::new(self.node)))
    }

    /// The same condition with the entity forgotten, for the engine, which serves entities and
    /// collections alike.
    pub(crate) fn erase(self) -> Condition<()> {
        Condition::node(self.node)
    }

    /// The expression with its placeholders registered in `names` and `values` (prefixed
    /// `#c`/`:c` and numbered after what they already hold, so it can join other
    /// expressions of the same request).
    pub(crate) fn render(&self, names: &mut Names, values: &mut Values) -> Result<String, Error> {
        render(&self.node, names, values)
    }
}

/// `ExpressionAttributeNames` of one request.
pub(crate) type Names = HashMap<String, String>;
/// `ExpressionAttributeValues` of one request.
pub(crate) type Values = HashMap<String, AttributeValue>;

/// Expression values as a request takes them: none rather than an empty map, which DynamoDB
/// refuses ("ExpressionAttributeValues must not be empty"). A condition on the keys alone has
/// none: `attribute_exists(#pk)`, the entity guard of a table without a tag.
pub(crate) fn values_of(values: Values) -> Option<Values> {
    (!values.is_empty()).then_some(values)
}

fn name(names: &mut Names, attribute: &str) -> String {
    // The same attribute reuses its placeholder.
    if let Some((placeholder, _)) = names
        .iter()
        .find(|(p, a)| p.starts_with("#c") && a.as_str() == attribute)
    {
        return placeholder.clone();
    }
    let placeholder = format!("#c{}", names.len());
    names.insert(placeholder.clone(), attribute.to_owned());
    placeholder
}

fn value(values: &mut Values, value: &Value) -> Result<String, Error> {
    let value = value
        .clone()
        .map_err(|reason| QueryRefusal::ConditionValue { reason })?;
    let placeholder = format!(":c{}", values.len());
    values.insert(placeholder.clone(), value);
    Ok(placeholder)
}

fn render(node: &Node, names: &mut Names, values: &mut Values) -> Result<String, Error> {
    Ok(match node {
        Node::Compare(operand, op, v) => {
            let left = match operand {
                Operand_::Path(a) => name(names, a),
                Operand_::Size(a) => format!("size({})", name(names, a)),
            };
            format!("{left} {} {}", op.symbol(), value(values, v)?)
        }
        Node::Between(a, low, high) => {
            let n = name(names, a);
            let low = value(values, low)?;
            let high = value(values, high)?;
            format!("{n} BETWEEN {low} AND {high}")
        }
        Node::BeginsWith(a, prefix) => {
            let n = name(names, a);
            format!("begins_with({n}, {})", value(values, &Ok(prefix.clone()))?)
        }
        Node::Contains(a, v) => {
            let n = name(names, a);
            format!("contains({n}, {})", value(values, v)?)
        }
        Node::Exists(a, true) => format!("attribute_exists({})", name(names, a)),
        Node::Exists(a, false) => format!("attribute_not_exists({})", name(names, a)),
        Node::And(l, r) => format!(
            "({}) AND ({})",
            render(l, names, values)?,
            render(r, names, values)?
        ),
        Node::Or(l, r) => format!(
            "({}) OR ({})",
            render(l, names, values)?,
            render(r, names, values)?
        ),
        Node::Not(c) => format!("NOT ({})", render(c, names, values)?),
    })
}

/// A readable form with the values inline, for messages and docs (never sent: requests use
/// placeholders).
impl<E> fmt::Display for Condition<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display(&self.node, f)
    }
}

fn show_value(v: &Value, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match v {
        Ok(AttributeValue::S(s)) => write!(f, "{s:?}"),
        Ok(AttributeValue::N(n)) => write!(f, "{n}"),
        Ok(AttributeValue::Bool(b)) => write!(f, "{b}"),
        Ok(AttributeValue::Null(_)) => write!(f, "null"),
        Ok(other) => write!(f, "{other:?}"),
        Err(e) => write!(f, "<unstorable: {e}>"),
    }
}

fn display(node: &Node, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match node {
        Node::Compare(operand, op, v) => {
            match operand {
                Operand_::Path(a) => write!(f, "{a}")?,
                Operand_::Size(a) => write!(f, "size({a})")?,
            }
            write!(f, " {} ", op.symbol())?;
            show_value(v, f)
        }
        Node::Between(a, low, high) => {
            write!(f, "{a} BETWEEN ")?;
            show_value(low, f)?;
            write!(f, " AND ")?;
            show_value(high, f)
        }
        Node::BeginsWith(a, p) => {
            write!(f, "begins_with({a}, ")?;
            show_value(&Ok(p.clone()), f)?;
            write!(f, ")")
        }
        Node::Contains(a, v) => {
            write!(f, "contains({a}, ")?;
            show_value(v, f)?;
            write!(f, ")")
        }
        Node::Exists(a, true) => write!(f, "attribute_exists({a})"),
        Node::Exists(a, false) => write!(f, "attribute_not_exists({a})"),
        Node::And(l, r) => {
            write!(f, "(")?;
            display(l, f)?;
            write!(f, ") AND (")?;
            display(r, f)?;
            write!(f, ")")
        }
        Node::Or(l, r) => {
            write!(f, "(")?;
            display(l, f)?;
            write!(f, ") OR (")?;
            display(r, f)?;
            write!(f, ")")
        }
        Node::Not(c) => {
            write!(f, "NOT (")?;
            display(c, f)?;
            write!(f, ")")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Score;

    const SCORE: Field<Score, u64> = Field::new("score");
    const PLAYER: Field<Score, String> = Field::new("player_id");
    const TAGS: Field<Score, Vec<String>> = Field::new("tags");

    fn rendered(c: &Condition<Score>) -> (String, Names, Values) {
        let (mut names, mut values) = (Names::new(), Values::new());
        let expression = c.render(&mut names, &mut values).unwrap();
        (expression, names, values)
    }

    #[test]
    fn values_and_names_only_ever_go_through_placeholders() {
        let evil = "x) OR (attribute_exists(pk)";
        let c = PLAYER.eq(evil).or(PLAYER.begins_with(evil));
        let (expression, names, values) = rendered(&c);
        assert_eq!(expression, "(#c0 = :c0) OR (begins_with(#c0, :c1))");
        assert_eq!(names["#c0"], "player_id");
        assert_eq!(values[":c0"], AttributeValue::S(evil.into()));
        assert_eq!(values[":c1"], AttributeValue::S(evil.into()));
    }

    #[test]
    fn every_operator_renders_as_dynamodb_spells_it() {
        let c = SCORE
            .between(1, 2)
            .and(SCORE.ne(3).not())
            .and(TAGS.size().ge(2))
            .and(TAGS.contains_element("vip"))
            .and(PLAYER.contains("x"))
            .and(SCORE.exists().or(SCORE.not_exists()));
        let (expression, _, values) = rendered(&c);
        assert_eq!(
            expression,
            "(((((#c0 BETWEEN :c0 AND :c1) AND (NOT (#c0 <> :c2))) AND (size(#c1) >= :c3)) AND \
             (contains(#c1, :c4))) AND (contains(#c2, :c5))) AND ((attribute_exists(#c0)) OR \
             (attribute_not_exists(#c0)))"
        );
        assert_eq!(values[":c3"], AttributeValue::N("2".into()));
        assert_eq!(values[":c0"], AttributeValue::N("1".into()));
    }

    #[test]
    fn placeholders_continue_after_those_already_in_the_request() {
        let mut names = Names::from([("#pk".to_owned(), "pk".to_owned())]);
        let mut values = Values::from([(":pk".to_owned(), AttributeValue::S("p".into()))]);
        let expression = SCORE.gt(5).render(&mut names, &mut values).unwrap();
        assert_eq!(expression, "#c1 > :c1");
        assert_eq!(names.len(), 2);
        assert_eq!(values.len(), 2);
    }
}

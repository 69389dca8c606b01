//! What DynamoDB does that a backend does not: each difference named once, with what DynamoDB
//! does and which backends lack it, so a test that needs it can say so when it skips.

use std::fmt;

use super::select::BackendKind;

/// A behaviour of DynamoDB that some backend lacks.
///
/// Each variant is a fact found by running the same test on both backends; the test that
/// needs it calls [`Backend::skip_if_lacking`](super::Backend::skip_if_lacking), which skips
/// (saying why, and counting the skip) on a backend that lacks it. When a backend learns the
/// behaviour, `tests/dynamodb/backends.rs` fails and names the variant to retire.
///
/// ```
/// use sharded_testkit::backend::{BackendKind, Behaviour};
///
/// let between = Behaviour::BetweenBoundsCheckedInFilters;
/// assert!(between.lacked_by(BackendKind::Embedded));
/// assert!(!between.lacked_by(BackendKind::DynamoDbLocal));
/// println!("{between}"); // what DynamoDB does
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Behaviour {
    /// DynamoDB refuses a filter `a BETWEEN x AND y` whose lower bound is greater than its
    /// upper bound with a `ValidationException`, as it does for key and write conditions.
    /// dynoxide 3.2 checks the bounds only in single writes' conditions: its Query and Scan
    /// treat the inverted filter as matching nothing and succeed.
    BetweenBoundsCheckedInFilters,
    /// DynamoDB refuses a `TransactWriteItems` whose condition (a `ConditionCheck`, or a put's,
    /// update's or delete's condition) is `a BETWEEN x AND y` with x > y, with a
    /// `ValidationException`, as it does for a single write's condition. dynoxide 3.2 checks
    /// only the expression's syntax there and evaluates the condition as false: the
    /// transaction is cancelled (`TransactionCanceledException`, `ConditionalCheckFailed`).
    /// `sharded`'s typed conditions refuse inverted bounds before sending, so no test of the
    /// suite needs it today.
    BetweenBoundsCheckedInTransactions,
}

impl Behaviour {
    /// Every known difference, for listings and for the test that checks each still holds.
    ///
    /// ```
    /// use sharded_testkit::backend::Behaviour;
    ///
    /// assert!(Behaviour::ALL.contains(&Behaviour::BetweenBoundsCheckedInFilters));
    /// ```
    pub const ALL: &'static [Behaviour] = &[
        Self::BetweenBoundsCheckedInFilters,
        Self::BetweenBoundsCheckedInTransactions,
    ];

    /// What DynamoDB (and DynamoDB Local) does, in one sentence.
    ///
    /// ```
    /// use sharded_testkit::backend::Behaviour;
    ///
    /// let does = Behaviour::BetweenBoundsCheckedInFilters.what_dynamodb_does();
    /// assert!(does.contains("ValidationException"));
    /// ```
    #[must_use]
    pub fn what_dynamodb_does(self) -> &'static str {
        match self {
            Self::BetweenBoundsCheckedInFilters => {
                "DynamoDB refuses a filter `BETWEEN x AND y` with x > y (ValidationException)"
            }
            Self::BetweenBoundsCheckedInTransactions => {
                "DynamoDB refuses a transaction whose condition is `BETWEEN x AND y` with x > y \
                 (ValidationException)"
            }
        }
    }

    /// What the backends lacking it do instead, in one sentence.
    ///
    /// ```
    /// use sharded_testkit::backend::Behaviour;
    ///
    /// println!("{}", Behaviour::BetweenBoundsCheckedInFilters.what_lacking_backends_do());
    /// ```
    #[must_use]
    pub fn what_lacking_backends_do(self) -> &'static str {
        match self {
            Self::BetweenBoundsCheckedInFilters => {
                "dynoxide 3.2 checks BETWEEN bounds only in single writes' conditions; the Query \
                 or Scan succeeds and the filter matches nothing"
            }
            Self::BetweenBoundsCheckedInTransactions => {
                "dynoxide 3.2 checks BETWEEN bounds only in single writes' conditions; the \
                 transaction is cancelled with ConditionalCheckFailed"
            }
        }
    }

    /// Whether backends of `kind` lack this behaviour. An endpoint named by
    /// `DYNAMODB_ENDPOINT` is taken for the reference and lacks nothing.
    ///
    /// ```
    /// use sharded_testkit::backend::{BackendKind, Behaviour};
    ///
    /// assert!(!Behaviour::BetweenBoundsCheckedInFilters.lacked_by(BackendKind::Endpoint));
    /// ```
    #[must_use]
    pub fn lacked_by(self, kind: BackendKind) -> bool {
        match self {
            Self::BetweenBoundsCheckedInFilters | Self::BetweenBoundsCheckedInTransactions => {
                kind == BackendKind::Embedded
            }
        }
    }
}

impl fmt::Display for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what_dynamodb_does())
    }
}

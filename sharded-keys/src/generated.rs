//! What the code `#[derive(ShardedEntity)]` generates calls that is key arithmetic: one key
//! template's builders and parsers ([`EntityKey`]), the autoref-specialisation probes that
//! turn a field's value into a key part, a time or a range bound (and fall back silently
//! where a compile-time check already reported the type), and the bodies shared by every
//! entity. No AWS type: the runtime's `__private` re-exports these beside the parts that need
//! one. Not a public API: no stability promise.

use crate::bucket::{BucketError, BucketTime};
use crate::encoding::{KeyPart, KeyPartError};
use crate::error::KeyError;
use crate::sort_condition::{sort_key_prefix_condition, SortKeyCondition, TemplateSort};
use crate::template::{build_key, build_key_prefix, parse_key, KeyContext, KeyTemplate, ParsedKey};

/// The autoref-specialisation traits of [`Probe`] and the range bounds, in scope anonymously
/// (the runtime's `probes` adds its decoding probe's).
pub mod probes {
    pub use super::{
        FallbackProbe as _, KeyPartProbe as _, NotATime as _, RangeBoundFallback as _,
        RangeBoundProbe as _, RangeBoundWhole as _, TimeProbe as _,
    };
}

/// The body of a generated function that cannot run: every function of the fallback emitted
/// beside a derive error (the crate does not compile). One call instead of an `unreachable!()` expanded in every such body.
#[cold]
pub fn never() -> ! {
    unreachable!("a function generated only to carry a signature ran")
}

/// `Debug` of a generated `{Entity}Fields`: the struct's name and each field, as
/// `#[derive(Debug)]` writes them, without expanding a derive per entity.
pub fn debug_fields(
    f: &mut core::fmt::Formatter<'_>,
    name: &str,
    fields: &[(&str, &dyn core::fmt::Debug)],
) -> core::fmt::Result {
    let mut out = f.debug_struct(name);
    for (field, value) in fields {
        out.field(field, value);
    }
    out.finish()
}

/// One key template of one entity with the context its errors name: what the generated
/// builders, parsers, prefixes and typed conditions of an unsharded key (a sort key, or a
/// partition key's logical form) call, so each of them is one line.
#[derive(Clone, Copy)]
pub struct EntityKey {
    ctx: KeyContext,
    template: &'static KeyTemplate,
}

impl EntityKey {
    /// The key `attribute` of `entity`, built from `template`.
    pub const fn new(
        entity: &'static str,
        attribute: &'static str,
        template: &'static KeyTemplate,
    ) -> Self {
        EntityKey {
            ctx: KeyContext { entity, attribute },
            template,
        }
    }

    /// The whole key from its fields' values.
    pub fn build(&self, values: &[&dyn KeyPart]) -> Result<String, KeyError> {
        build_key(self.ctx, self.template, values)
    }

    /// The key's first `segments` segments (a `sk_prefix_<field>`).
    pub fn prefix(&self, values: &[&dyn KeyPart], segments: usize) -> Result<String, KeyError> {
        build_key_prefix(self.ctx, self.template, values, segments)
    }

    /// A key back into its encoded fields (a `parse_sk`).
    pub fn parse<'k>(&self, key: &'k str) -> Result<ParsedKey<'k>, KeyError> {
        parse_key(self.ctx, self.template, key, None)
    }

    /// Every key of the entity: `begins_with` the template's leading literal (a `sk_all`).
    pub fn all(&self) -> SortKeyCondition {
        sort_key_prefix_condition(self.ctx, self.template)
    }

    /// The typed conditions on this sort key, nothing held yet (a `sk_sort()`).
    pub const fn sort<Rest>(&self) -> TemplateSort<Rest> {
        TemplateSort::new(self.ctx, self.template)
    }
}

/// Autoref specialisation: `(&Probe(&v)).part()` is `&v as &dyn KeyPart` when the value's
/// type has a `KeyPart`, and otherwise resolves to [`FallbackProbe`], so a key field type
/// without an encoding is reported once, by [`assert_key_field`](crate::checks::assert_key_field) at the user's type, and
/// not again at every generated builder.
pub struct Probe<'a, T: ?Sized>(pub &'a T);

/// The `KeyPart` path of [`Probe`].
pub trait KeyPartProbe {
    /// The value as a key part.
    fn part(&self) -> &dyn KeyPart;
}

impl<T: KeyPart + ?Sized> KeyPartProbe for Probe<'_, T> {
    fn part(&self) -> &dyn KeyPart {
        // `&&T` coerces because `&T: KeyPart` for every `T: KeyPart + ?Sized`.
        &self.0
    }
}

/// The fallback of [`Probe`], reached only when compilation already failed.
pub trait FallbackProbe {
    /// A key part that refuses to encode.
    fn part(&self) -> &dyn KeyPart;
}

impl<T: ?Sized> FallbackProbe for &Probe<'_, T> {
    fn part(&self) -> &dyn KeyPart {
        &crate::encoding::Unencodable
    }
}

/// The time of a bucketed field: `(&Probe(v)).time()` is `v as &dyn BucketTime` when the
/// value's type is a time, and otherwise resolves to [`NotATime`], so a bucketed field that is
/// not a time is reported once, by [`assert_bucket_time`](crate::checks::assert_bucket_time) at the user's type.
pub trait TimeProbe {
    /// The value as a time.
    fn time(&self) -> &dyn BucketTime;
}

impl<T: BucketTime> TimeProbe for Probe<'_, T> {
    fn time(&self) -> &dyn BucketTime {
        self.0
    }
}

/// The fallback of [`TimeProbe`], reached only when compilation already failed.
pub trait NotATime {
    /// A time that has no bucket.
    fn time(&self) -> &dyn BucketTime;
}

impl<T: ?Sized> NotATime for &Probe<'_, T> {
    fn time(&self) -> &dyn BucketTime {
        &NoTime
    }
}

struct NoTime;

impl BucketTime for NoTime {
    fn epoch_seconds(&self) -> Result<i64, crate::bucket::BucketError> {
        Err(crate::bucket::BucketError::TimeOutOfRange {
            epoch_seconds: u64::MAX,
        })
    }
}

/// A bound of a range query, exact to the nanosecond: `(&&Probe(v)).range_bound()` resolves,
/// in this order, to [`RangeBoundProbe`] for a `chrono::DateTime<Utc>` (which has sub-second
/// parts), [`RangeBoundWhole`] for any other time with a key encoding (whole seconds), and
/// [`RangeBoundFallback`] (reached only when compilation already failed).
pub trait RangeBoundProbe {
    /// The bound.
    fn range_bound(&self) -> RangeBound;
}

#[cfg(feature = "chrono")]
impl RangeBoundProbe for &Probe<'_, chrono::DateTime<chrono::Utc>> {
    fn range_bound(&self) -> RangeBound {
        use chrono::Timelike;
        let time = self.0;
        RangeBound::new(time, time.nanosecond() % 1_000_000_000, time)
    }
}

/// The whole-second path of [`RangeBoundProbe`].
pub trait RangeBoundWhole {
    /// The bound.
    fn range_bound(&self) -> RangeBound;
}

impl<T: BucketTime + KeyPart> RangeBoundWhole for &&Probe<'_, T> {
    fn range_bound(&self) -> RangeBound {
        RangeBound::new(self.0, 0, self.0)
    }
}

/// The fallback of [`RangeBoundProbe`], reached only when compilation already failed.
pub trait RangeBoundFallback {
    /// A bound that cannot be used.
    fn range_bound(&self) -> RangeBound;
}

impl<T: ?Sized> RangeBoundFallback for Probe<'_, T> {
    fn range_bound(&self) -> RangeBound {
        RangeBound::invalid("this type is not a time with a key encoding")
    }
}

/// One bound of a range query: the instant, as epoch seconds and nanoseconds, and the bound's
/// encoding as a sort-key value. Built by generated code; no stability promise.
#[doc(hidden)]
pub struct RangeBound {
    seconds: Result<(i64, u32), BucketError>,
    key: Result<String, KeyPartError>,
}

impl RangeBound {
    /// The bound `time` (whose sub-second part is `subsec_nanos`), written as a key by `part`.
    pub fn new(time: &dyn BucketTime, subsec_nanos: u32, part: &dyn KeyPart) -> RangeBound {
        let mut key = String::new();
        RangeBound {
            seconds: time.epoch_seconds().map(|s| (s, subsec_nanos)),
            key: part.write_key(&mut key).map(|()| key),
        }
    }

    /// The instant (epoch seconds and nanoseconds) and the bound's encoding as a sort-key value.
    #[allow(clippy::type_complexity)]
    pub fn into_parts(
        self,
    ) -> (
        Result<(i64, u32), BucketError>,
        Result<String, KeyPartError>,
    ) {
        (self.seconds, self.key)
    }

    /// A bound that cannot be used, with the reason (only after compilation already failed).
    pub fn invalid(reason: &'static str) -> RangeBound {
        RangeBound {
            seconds: Ok((0, 0)),
            key: Err(KeyPartError::invalid(reason)),
        }
    }
}

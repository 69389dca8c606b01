//! Time buckets for partition keys: the hour, day, ISO week or month an instant falls in, the
//! bucket's fixed-width label, and the buckets a time range touches.
//!
//! A daily ops log keyed by day writes each day into its own partition; a metrics table keyed
//! by hour, each hour. This module is their arithmetic, and nothing else: no key templates, no
//! queries, no clock.
//!
//! # Labels
//!
//! | granularity | label | form | bytes |
//! |---|---|---|---|
//! | [`Granularity::Hour`] | `2026-11-22T13` | `YYYY-MM-DDTHH` | 13 |
//! | [`Granularity::Day`] | `2026-11-22` | `YYYY-MM-DD` | 10 |
//! | [`Granularity::Week`] | `2026-W47` | `YYYY-Www` (ISO 8601 week-year and week) | 8 |
//! | [`Granularity::Month`] | `2026-11` | `YYYY-MM` | 7 |
//!
//! Every label is UTC, zero-padded and fixed width, so comparing two labels of one granularity
//! as strings (byte by byte) orders them as their buckets are ordered in time. Years are
//! `0000..=9999` ([`MIN_YEAR`], [`MAX_YEAR`]); an instant whose bucket would have another year
//! has no bucket. For weeks the year is the ISO week-year, which differs from the calendar year
//! for up to three days around 1 January: 2024-12-30 is in `2025-W01`, 2021-01-03 in
//! `2020-W53`. A label is canonical: [`Bucket::parse`] accepts exactly what [`Bucket::label`]
//! writes, so one bucket is one partition key.
//!
//! # Arithmetic
//!
//! Instants are `i64` seconds since 1970-01-01T00:00:00Z, leap seconds not counted (Unix
//! time), on the proleptic Gregorian calendar. Dates are converted with Howard Hinnant's
//! `days_from_civil` and `civil_from_days`
//! (<https://howardhinnant.github.io/date_algorithms.html>), so the core needs no date crate;
//! chrono's `DateTime<Utc>` and `NaiveDate` enter through [`BucketTime`] with the feature
//! `chrono`.
//!

use std::fmt;
use std::iter::FusedIterator;

/// The first year a bucket label can hold: `0000`.
pub const MIN_YEAR: i64 = 0;

/// The last year a bucket label can hold: `9999`. Four digits keep labels fixed width, so
/// they sort like time.
pub const MAX_YEAR: i64 = 9999;

const SECONDS_PER_HOUR: i64 = 3_600;
const SECONDS_PER_DAY: i64 = 86_400;
const DAYS_PER_WEEK: i64 = 7;

// ---------------------------------------------------------------------------------------------
// Granularity

/// The length of a time bucket: an hour, a day, an ISO 8601 week (Monday to Sunday) or a
/// calendar month, all in UTC.
///
/// ```
/// # #[allow(unused_imports)]
/// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
/// let g = Granularity::from_name("day").unwrap();
/// assert_eq!(g, Granularity::Day);
/// assert_eq!(g.name(), "day");
/// assert_eq!(Granularity::from_name("fortnight"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Granularity {
    /// One hour, labelled `2026-11-22T13`.
    Hour,
    /// One day, labelled `2026-11-22`.
    Day,
    /// One ISO 8601 week, Monday 00:00 to the next Monday, labelled `2026-W47` with the ISO
    /// week-year.
    Week,
    /// One calendar month, labelled `2026-11`.
    Month,
}

impl Granularity {
    const ALL: [Granularity; 4] = [
        Granularity::Hour,
        Granularity::Day,
        Granularity::Week,
        Granularity::Month,
    ];

    /// The names of all granularities, as [`Granularity::name`] writes them: `hour`, `day`,
    /// `week`, `month`. For "expected one of ..." messages.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// let hint = format!("expected one of {}", Granularity::NAMES.join(", "));
    /// assert_eq!(hint, "expected one of hour, day, week, month");
    /// ```
    pub const NAMES: &'static [&'static str] = &[
        Granularity::Hour.name(),
        Granularity::Day.name(),
        Granularity::Week.name(),
        Granularity::Month.name(),
    ];

    /// The granularity's name: `"hour"`, `"day"`, `"week"` or `"month"`.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// let g = Granularity::from_name("day").unwrap();
    /// assert_eq!(g, Granularity::Day);
    /// assert_eq!(g.name(), "day");
    /// assert_eq!(Granularity::from_name("fortnight"), None);
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Granularity::Hour => "hour",
            Granularity::Day => "day",
            Granularity::Week => "week",
            Granularity::Month => "month",
        }
    }

    /// The granularity named `name` (exactly as [`Granularity::name`] writes it, lower case),
    /// or `None`.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// let g = Granularity::from_name("day").unwrap();
    /// assert_eq!(g, Granularity::Day);
    /// assert_eq!(g.name(), "day");
    /// assert_eq!(Granularity::from_name("fortnight"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Granularity> {
        Granularity::ALL.into_iter().find(|g| g.name() == name)
    }

    /// The length in bytes of every label of this granularity: 13, 10, 8 or 7.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// assert_eq!(Granularity::Hour.label_len(), "2026-11-22T13".len());
    /// ```
    pub const fn label_len(self) -> usize {
        self.form().len()
    }

    /// The label's form: letters in `YMDHw` stand for digits, everything else for itself.
    const fn form(self) -> &'static str {
        match self {
            Granularity::Hour => "YYYY-MM-DDTHH",
            Granularity::Day => "YYYY-MM-DD",
            Granularity::Week => "YYYY-Www",
            Granularity::Month => "YYYY-MM",
        }
    }

    const fn example(self) -> &'static str {
        match self {
            Granularity::Hour => "2026-11-22T13",
            Granularity::Day => "2026-11-22",
            Granularity::Week => "2026-W47",
            Granularity::Month => "2026-11",
        }
    }

    /// The instants that have a bucket of this granularity: `[lo, hi)` epoch seconds, from the
    /// first bucket of year 0000 to the end of the last bucket of year 9999.
    const fn span(self) -> (i64, i64) {
        let (first_day, end_day) = match self {
            Granularity::Week => (week1_monday(MIN_YEAR), week1_monday(MAX_YEAR + 1)),
            Granularity::Hour | Granularity::Day | Granularity::Month => (
                days_from_civil(MIN_YEAR, 1, 1),
                days_from_civil(MAX_YEAR + 1, 1, 1),
            ),
        };
        (first_day * SECONDS_PER_DAY, end_day * SECONDS_PER_DAY)
    }

    /// The number of buckets from 1970 to the bucket starting at the boundary `t` (negative
    /// before), for counting the buckets between two boundaries.
    const fn index_of_boundary(self, t: i64) -> i64 {
        let days = t.div_euclid(SECONDS_PER_DAY);
        match self {
            Granularity::Hour => t.div_euclid(SECONDS_PER_HOUR),
            Granularity::Day => days,
            // Day -3, 1969-12-29, is a Monday.
            Granularity::Week => (days + 3).div_euclid(DAYS_PER_WEEK),
            Granularity::Month => {
                let (year, month, _) = civil_from_days(days);
                year * 12 + month as i64 - 1
            }
        }
    }
}

impl fmt::Display for Granularity {
    /// Writes [`Granularity::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------------------------
// Bucket

/// One time bucket: its granularity and the epoch second of its first instant.
///
/// Only [`Bucket::containing`], [`Bucket::parse`], the neighbours and [`buckets_in_range`]
/// make one, so `start` is always a bucket boundary and the label's year is in
/// `0000..=9999`.
///
/// ```
/// # #[allow(unused_imports)]
/// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
/// // 2026-11-22T13:45:00Z
/// let b = Bucket::containing(Granularity::Day, 1_795_355_100).unwrap();
/// assert_eq!(b.granularity(), Granularity::Day);
/// assert_eq!(b.label(), "2026-11-22");
/// assert_eq!(b.start(), 1_795_305_600); // 2026-11-22T00:00:00Z
/// assert_eq!(b.end(), 1_795_392_000); // 2026-11-23T00:00:00Z
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bucket {
    granularity: Granularity,
    start: i64,
}

impl Bucket {
    /// The bucket of `granularity` that holds the instant `epoch_seconds`; an error when the
    /// bucket's year (the ISO week-year for weeks) is outside `0000..=9999`.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// // 2026-11-22T13:45:00Z
    /// let b = Bucket::containing(Granularity::Day, 1_795_355_100).unwrap();
    /// assert_eq!(b.granularity(), Granularity::Day);
    /// assert_eq!(b.label(), "2026-11-22");
    /// assert_eq!(b.start(), 1_795_305_600); // 2026-11-22T00:00:00Z
    /// assert_eq!(b.end(), 1_795_392_000); // 2026-11-23T00:00:00Z
    /// let b = Bucket::containing(Granularity::Hour, -1).unwrap();
    /// assert_eq!(b.label(), "1969-12-31T23");
    /// ```
    pub fn containing(granularity: Granularity, epoch_seconds: i64) -> Result<Bucket, BucketError> {
        let day = epoch_seconds.div_euclid(SECONDS_PER_DAY);
        let (year, month, _) = civil_from_days(day);
        let (label_year, first_day) = match granularity {
            Granularity::Hour | Granularity::Day => (year, day),
            Granularity::Week => {
                let monday = day - weekday(day);
                // The ISO week-year is the calendar year of the week's Thursday.
                (civil_from_days(monday + 3).0, monday)
            }
            Granularity::Month => (year, days_from_civil(year, month, 1)),
        };
        if !(MIN_YEAR..=MAX_YEAR).contains(&label_year) {
            return Err(BucketError::YearOutOfRange {
                granularity,
                epoch_seconds,
                year: label_year,
            });
        }
        // In range, so none of these overflow.
        let start = match granularity {
            Granularity::Hour => epoch_seconds.div_euclid(SECONDS_PER_HOUR) * SECONDS_PER_HOUR,
            Granularity::Day | Granularity::Week | Granularity::Month => {
                first_day * SECONDS_PER_DAY
            }
        };
        Ok(Bucket { granularity, start })
    }

    /// The bucket's granularity.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// // 2026-11-22T13:45:00Z
    /// let b = Bucket::containing(Granularity::Day, 1_795_355_100).unwrap();
    /// assert_eq!(b.granularity(), Granularity::Day);
    /// assert_eq!(b.label(), "2026-11-22");
    /// assert_eq!(b.start(), 1_795_305_600); // 2026-11-22T00:00:00Z
    /// assert_eq!(b.end(), 1_795_392_000); // 2026-11-23T00:00:00Z
    /// ```
    pub const fn granularity(&self) -> Granularity {
        self.granularity
    }

    /// The epoch second of the bucket's first instant (inclusive).
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// // 2026-11-22T13:45:00Z
    /// let b = Bucket::containing(Granularity::Day, 1_795_355_100).unwrap();
    /// assert_eq!(b.granularity(), Granularity::Day);
    /// assert_eq!(b.label(), "2026-11-22");
    /// assert_eq!(b.start(), 1_795_305_600); // 2026-11-22T00:00:00Z
    /// assert_eq!(b.end(), 1_795_392_000); // 2026-11-23T00:00:00Z
    /// ```
    pub const fn start(&self) -> i64 {
        self.start
    }

    /// The epoch second just after the bucket (exclusive): the start of the next bucket, even
    /// after the last bucket of year 9999, which has no next.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// // 2026-11-22T13:45:00Z
    /// let b = Bucket::containing(Granularity::Day, 1_795_355_100).unwrap();
    /// assert_eq!(b.granularity(), Granularity::Day);
    /// assert_eq!(b.label(), "2026-11-22");
    /// assert_eq!(b.start(), 1_795_305_600); // 2026-11-22T00:00:00Z
    /// assert_eq!(b.end(), 1_795_392_000); // 2026-11-23T00:00:00Z
    /// ```
    pub const fn end(&self) -> i64 {
        match self.granularity {
            Granularity::Hour => self.start + SECONDS_PER_HOUR,
            Granularity::Day => self.start + SECONDS_PER_DAY,
            Granularity::Week => self.start + DAYS_PER_WEEK * SECONDS_PER_DAY,
            Granularity::Month => {
                let (year, month, _) = civil_from_days(self.start.div_euclid(SECONDS_PER_DAY));
                let (year, month) = if month == 12 {
                    (year + 1, 1)
                } else {
                    (year, month + 1)
                };
                days_from_civil(year, month, 1) * SECONDS_PER_DAY
            }
        }
    }

    /// The bucket right after this one, or `None` after the last bucket of year 9999.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// let b = Bucket::parse(Granularity::Week, "2026-W53").unwrap();
    /// assert_eq!(b.next().unwrap().label(), "2027-W01");
    /// assert_eq!(b.prev().unwrap().label(), "2026-W52");
    /// let last = Bucket::parse(Granularity::Month, "9999-12").unwrap();
    /// assert_eq!(last.next(), None);
    /// ```
    pub fn next(&self) -> Option<Bucket> {
        Bucket::containing(self.granularity, self.end()).ok()
    }

    /// The bucket right before this one, or `None` before the first bucket of year 0000.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// let b = Bucket::parse(Granularity::Week, "2026-W53").unwrap();
    /// assert_eq!(b.next().unwrap().label(), "2027-W01");
    /// assert_eq!(b.prev().unwrap().label(), "2026-W52");
    /// let last = Bucket::parse(Granularity::Month, "9999-12").unwrap();
    /// assert_eq!(last.next(), None);
    /// ```
    pub fn prev(&self) -> Option<Bucket> {
        Bucket::containing(self.granularity, self.start - 1).ok()
    }

    /// The bucket's label, such as `2026-11-22` (see the module documentation for each form).
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// // 2026-11-22T13:45:00Z
    /// let b = Bucket::containing(Granularity::Day, 1_795_355_100).unwrap();
    /// assert_eq!(b.granularity(), Granularity::Day);
    /// assert_eq!(b.label(), "2026-11-22");
    /// assert_eq!(b.start(), 1_795_305_600); // 2026-11-22T00:00:00Z
    /// assert_eq!(b.end(), 1_795_392_000); // 2026-11-23T00:00:00Z
    /// ```
    pub fn label(&self) -> String {
        let mut out = String::with_capacity(self.granularity.label_len());
        self.write_label(&mut out);
        out
    }

    /// Appends the bucket's label to `out`, for building a key in one buffer.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// let b = Bucket::parse(Granularity::Month, "2026-11").unwrap();
    /// let mut key = String::from("METRICS#");
    /// b.write_label(&mut key);
    /// assert_eq!(key, "METRICS#2026-11");
    /// assert_eq!(b.to_string(), "2026-11");
    /// ```
    pub fn write_label(&self, out: &mut String) {
        let day = self.start.div_euclid(SECONDS_PER_DAY);
        match self.granularity {
            Granularity::Week => {
                let (week_year, week) = iso_week_of_monday(day);
                push_digits(out, week_year, 4);
                out.push_str("-W");
                push_digits(out, week, 2);
            }
            Granularity::Hour | Granularity::Day | Granularity::Month => {
                let (year, month, day_of_month) = civil_from_days(day);
                push_digits(out, year, 4);
                out.push('-');
                push_digits(out, i64::from(month), 2);
                if self.granularity == Granularity::Month {
                    return;
                }
                out.push('-');
                push_digits(out, i64::from(day_of_month), 2);
                if self.granularity == Granularity::Hour {
                    out.push('T');
                    push_digits(
                        out,
                        self.start.rem_euclid(SECONDS_PER_DAY) / SECONDS_PER_HOUR,
                        2,
                    );
                }
            }
        }
    }

    /// The bucket a label names. Canonical only: accepts exactly the strings
    /// [`Bucket::label`] writes, so `2026-1-2`, `2026-11-22T1`, `2026-W7`, `2026-w07`,
    /// `2025-W53` (2025 has 52 ISO weeks) and trailing text are refused, with a message naming
    /// the expected form.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// let b = Bucket::parse(Granularity::Hour, "2026-11-22T13").unwrap();
    /// assert_eq!(b.start(), 1_795_352_400);
    /// assert!(Bucket::parse(Granularity::Hour, "2026-11-22T1").is_err());
    /// ```
    pub fn parse(granularity: Granularity, label: &str) -> Result<Bucket, BucketError> {
        let malformed = |reason: String| BucketError::Malformed {
            granularity,
            label: label.to_owned(),
            reason,
        };
        let form = granularity.form().as_bytes();
        let bytes = label.as_bytes();
        if bytes.len() != form.len() {
            let trailing = label
                .get(..form.len())
                .filter(|prefix| Bucket::parse(granularity, prefix).is_ok());
            return Err(malformed(match trailing {
                Some(prefix) => {
                    format!("trailing text `{}` after `{prefix}`", &label[form.len()..])
                }
                None => format!(
                    "it is {} bytes long, but {granularity} labels have exactly {}",
                    bytes.len(),
                    form.len()
                ),
            }));
        }
        for (position, (&expected, &found)) in form.iter().zip(bytes).enumerate() {
            let is_digit_slot = matches!(expected, b'Y' | b'M' | b'D' | b'H' | b'w');
            if is_digit_slot && !found.is_ascii_digit() {
                return Err(malformed(format!(
                    "character {} is {}, where a digit belongs",
                    position + 1,
                    describe_byte(found)
                )));
            }
            if !is_digit_slot && found != expected {
                return Err(malformed(format!(
                    "character {} is {}, where `{}` belongs",
                    position + 1,
                    describe_byte(found),
                    char::from(expected)
                )));
            }
        }
        // Every digit slot holds a digit, so the fields are plain decimal numbers.
        let number = |from: usize, to: usize| {
            bytes[from..to]
                .iter()
                .fold(0_i64, |n, &b| n * 10 + i64::from(b - b'0'))
        };
        let year = number(0, 4);
        let first_day = match granularity {
            Granularity::Week => {
                let week = number(6, 8);
                let weeks = weeks_in_year(year);
                if !(1..=weeks).contains(&week) {
                    return Err(malformed(format!(
                        "week {week:02} does not exist: ISO week-year {year:04} has weeks 01 to {weeks}"
                    )));
                }
                week1_monday(year) + (week - 1) * DAYS_PER_WEEK
            }
            Granularity::Hour | Granularity::Day | Granularity::Month => {
                let month = number(5, 7);
                if !(1..=12).contains(&month) {
                    return Err(malformed(format!(
                        "month {month:02} does not exist: months are 01 to 12"
                    )));
                }
                // 1..=12, so the cast is exact.
                let month = month as u32;
                let day = if granularity == Granularity::Month {
                    1
                } else {
                    let day = number(8, 10);
                    let days = days_in_month(year, month);
                    if !(1..=i64::from(days)).contains(&day) {
                        return Err(malformed(format!(
                            "day {day:02} does not exist: {year:04}-{month:02} has days 01 to {days}"
                        )));
                    }
                    day as u32
                };
                days_from_civil(year, month, day)
            }
        };
        let mut start = first_day * SECONDS_PER_DAY;
        if granularity == Granularity::Hour {
            let hour = number(11, 13);
            if hour > 23 {
                return Err(malformed(format!(
                    "hour {hour:02} does not exist: hours are 00 to 23"
                )));
            }
            start += hour * SECONDS_PER_HOUR;
        }
        let bucket = Bucket { granularity, start };
        debug_assert_eq!(bucket.label(), label, "a parsed label is canonical");
        Ok(bucket)
    }
}

impl fmt::Display for Bucket {
    /// Writes [`Bucket::label`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut label = String::with_capacity(self.granularity.label_len());
        self.write_label(&mut label);
        f.write_str(&label)
    }
}

/// Appends `value` (`0..10^width`) as `width` decimal digits, zero-padded.
fn push_digits(out: &mut String, value: i64, width: u32) {
    debug_assert!((0..10_i64.pow(width)).contains(&value));
    let mut divisor = 10_i64.pow(width - 1);
    while divisor > 0 {
        let digit = (value / divisor) % 10;
        out.push(char::from(b"0123456789"[digit as usize]));
        divisor /= 10;
    }
}

fn describe_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("`{}`", char::from(byte))
    } else if byte.is_ascii() {
        format!("{:?}", char::from(byte))
    } else {
        "a non-ASCII character".to_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Calendar arithmetic

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's `days_from_civil`).
/// `month` is 1..=12, `day` 1..=31.
const fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400; // [0, 399]
    let month = month as i64;
    let shifted_month = if month > 2 { month - 3 } else { month + 9 }; // March is 0
    let day_of_year = (153 * shifted_month + 2) / 5 + day as i64 - 1; // [0, 365]
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian date `(year, month, day)` of a day counted from 1970-01-01
/// (Hinnant's `civil_from_days`).
const fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468; // from 0000-03-01
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097; // [0, 146096]
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153; // March is 0
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400;
    (if month <= 2 { year + 1 } else { year }, month, day)
}

/// The weekday of a day counted from 1970-01-01: Monday 0 to Sunday 6 (1970-01-01 was a
/// Thursday).
const fn weekday(days: i64) -> i64 {
    (days + 3).rem_euclid(DAYS_PER_WEEK)
}

const fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

const fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The Monday (days from 1970-01-01) of week 1 of an ISO week-year: the week holding 4 January.
const fn week1_monday(week_year: i64) -> i64 {
    let january_4 = days_from_civil(week_year, 1, 4);
    january_4 - weekday(january_4)
}

/// The number of ISO weeks of a week-year: 52 or 53.
const fn weeks_in_year(week_year: i64) -> i64 {
    (week1_monday(week_year + 1) - week1_monday(week_year)) / DAYS_PER_WEEK
}

/// The ISO week-year and week of the week starting on `monday` (days from 1970-01-01).
const fn iso_week_of_monday(monday: i64) -> (i64, i64) {
    let week_year = civil_from_days(monday + 3).0;
    (
        week_year,
        (monday - week1_monday(week_year)) / DAYS_PER_WEEK + 1,
    )
}

// ---------------------------------------------------------------------------------------------
// Errors

/// An instant has no bucket, or a string is not a bucket label.
///
/// ```
/// # #[allow(unused_imports)]
/// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
/// let err = Bucket::parse(Granularity::Day, "2026-1-2").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "`2026-1-2` is not a day bucket label: it is 8 bytes long, but day labels have exactly 10; \
///      expected `YYYY-MM-DD`, e.g. `2026-11-22`"
/// );
/// let err = Bucket::containing(Granularity::Day, i64::MAX).unwrap_err();
/// assert!(matches!(err, BucketError::YearOutOfRange { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BucketError {
    /// The bucket of the instant would have a year outside `0000..=9999`.
    #[error(
        "epoch second {epoch_seconds} falls in {} {year}, outside 0000..=9999: {granularity} \
         bucket labels have four-digit years so that they sort like time; expected an instant \
         whose {granularity} bucket is labelled from `{}` to `{}`",
        year_kind(*.granularity),
        first_label(*.granularity),
        last_label(*.granularity)
    )]
    YearOutOfRange {
        /// The granularity asked for.
        granularity: Granularity,
        /// The instant.
        epoch_seconds: i64,
        /// The year its bucket would have: the calendar year, or the ISO week-year for weeks.
        year: i64,
    },
    /// A string is not the canonical label of a bucket.
    #[error(
        "`{label}` is not a {granularity} bucket label: {reason}; expected `{}`, e.g. `{}`",
        .granularity.form(),
        .granularity.example()
    )]
    Malformed {
        /// The granularity asked for.
        granularity: Granularity,
        /// The string as given.
        label: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An unsigned count of epoch seconds does not fit in an `i64`.
    #[error(
        "{epoch_seconds} epoch seconds do not fit in an i64: expected at most {} seconds after \
         1970-01-01T00:00:00Z (and bucket labels end with the year 9999)",
        i64::MAX
    )]
    TimeOutOfRange {
        /// The value as given.
        epoch_seconds: u64,
    },
}

fn year_kind(granularity: Granularity) -> &'static str {
    match granularity {
        Granularity::Week => "ISO week-year",
        Granularity::Hour | Granularity::Day | Granularity::Month => "year",
    }
}

fn first_label(granularity: Granularity) -> String {
    Bucket {
        granularity,
        start: granularity.span().0,
    }
    .label()
}

fn last_label(granularity: Granularity) -> String {
    let end = granularity.span().1;
    Bucket::containing(granularity, end - 1).map_or_else(|_| String::new(), |b| b.label())
}

// ---------------------------------------------------------------------------------------------
// Times that can be bucketed

/// A field type whose values can be put in a time bucket: an instant, as epoch seconds.
///
/// Implemented for `i64`, `i32`, `u64` and `u32` (seconds since 1970-01-01T00:00:00Z; a `u64`
/// above `i64::MAX` is an error) and, with the feature `chrono`, for `chrono::DateTime<Utc>`
/// (floored to its second: a sub-second instant belongs to the bucket of its second) and
/// `chrono::NaiveDate` (midnight UTC).
///
/// ```
/// # #[allow(unused_imports)]
/// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
/// fn day_of(t: impl BucketTime) -> Result<String, BucketError> {
///     Ok(Bucket::containing(Granularity::Day, t.epoch_seconds()?)?.label())
/// }
/// assert_eq!(day_of(0_u32).unwrap(), "1970-01-01");
/// assert!(day_of(u64::MAX).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be put in a time bucket",
    label = "not a time",
    note = "a `{{field:day}}` (or `:hour`, `:week`, `:month`) template segment needs a time field: \
            chrono `DateTime<Utc>` or `NaiveDate` (feature `chrono`), or integer epoch seconds \
            (`i64`, `i32`, `u64`, `u32`)"
)]
pub trait BucketTime {
    /// The instant as seconds since 1970-01-01T00:00:00Z, floored to the second.
    fn epoch_seconds(&self) -> Result<i64, BucketError>;
}

impl<T: BucketTime + ?Sized> BucketTime for &T {
    fn epoch_seconds(&self) -> Result<i64, BucketError> {
        (**self).epoch_seconds()
    }
}

impl BucketTime for i64 {
    fn epoch_seconds(&self) -> Result<i64, BucketError> {
        Ok(*self)
    }
}

impl BucketTime for i32 {
    fn epoch_seconds(&self) -> Result<i64, BucketError> {
        Ok(i64::from(*self))
    }
}

impl BucketTime for u32 {
    fn epoch_seconds(&self) -> Result<i64, BucketError> {
        Ok(i64::from(*self))
    }
}

impl BucketTime for u64 {
    fn epoch_seconds(&self) -> Result<i64, BucketError> {
        i64::try_from(*self).map_err(|_| BucketError::TimeOutOfRange {
            epoch_seconds: *self,
        })
    }
}

#[cfg(feature = "chrono")]
mod chrono_impls {
    use super::{days_from_civil, BucketError, BucketTime, SECONDS_PER_DAY};
    use chrono::{DateTime, Datelike, NaiveDate, Utc};

    impl BucketTime for DateTime<Utc> {
        /// chrono keeps the sub-second part non-negative, so this is the floor, before 1970
        /// too.
        fn epoch_seconds(&self) -> Result<i64, BucketError> {
            Ok(self.timestamp())
        }
    }

    impl BucketTime for NaiveDate {
        fn epoch_seconds(&self) -> Result<i64, BucketError> {
            let days = days_from_civil(i64::from(self.year()), self.month(), self.day());
            Ok(days * SECONDS_PER_DAY)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ranges

/// Every bucket of `granularity` that intersects the half-open range `[from, to)` of epoch
/// seconds, oldest first or, with `descending`, newest first; empty when `from >= to`.
///
/// Lazy: the buckets are computed one by one, so ten years of hours allocate nothing. Buckets
/// whose year is outside `0000..=9999` cannot exist, so the range is clipped to the years that
/// have labels (a query from `i64::MIN` starts at year 0000).
///
/// ```
/// # #[allow(unused_imports)]
/// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
/// // The day buckets of 2026-11-22T13:00Z to 2026-11-25T00:00Z, newest first.
/// let range = buckets_in_range(Granularity::Day, 1_795_352_400, 1_795_564_800, true);
/// assert_eq!(range.len_hint(), 3);
/// let labels: Vec<String> = range.map(|b| b.label()).collect();
/// assert_eq!(labels, ["2026-11-24", "2026-11-23", "2026-11-22"]);
/// ```
pub fn buckets_in_range(
    granularity: Granularity,
    from: i64,
    to: i64,
    descending: bool,
) -> BucketRange {
    let (lo, hi) = granularity.span();
    let (from, to) = (from.max(lo), to.min(hi));
    let (front, back) = if from < to {
        // Both instants are in the span, so both buckets exist.
        (
            Bucket::containing(granularity, from).map_or(lo, |b| b.start),
            Bucket::containing(granularity, to - 1).map_or(hi, |b| b.end()),
        )
    } else {
        (lo, lo)
    };
    BucketRange {
        granularity,
        front,
        back,
        descending,
    }
}

/// The buckets of a time range, made by [`buckets_in_range`]: an iterator, double-ended
/// (`next_back` walks from the other end), with an exact [`BucketRange::len_hint`].
///
/// ```
/// # #[allow(unused_imports)]
/// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
/// // The day buckets of 2026-11-22T13:00Z to 2026-11-25T00:00Z, newest first.
/// let range = buckets_in_range(Granularity::Day, 1_795_352_400, 1_795_564_800, true);
/// assert_eq!(range.len_hint(), 3);
/// let labels: Vec<String> = range.map(|b| b.label()).collect();
/// assert_eq!(labels, ["2026-11-24", "2026-11-23", "2026-11-22"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "iterators are lazy and do nothing unless consumed"]
pub struct BucketRange {
    granularity: Granularity,
    /// Start of the oldest bucket not yet yielded.
    front: i64,
    /// End of the newest bucket not yet yielded; `front == back` when done.
    back: i64,
    descending: bool,
}

impl BucketRange {
    /// The number of buckets left.
    ///
    /// ```
    /// # #[allow(unused_imports)]
    /// # use sharded::{bucket::buckets_in_range, bucket::Bucket, bucket::BucketError, bucket::BucketRange, bucket::BucketTime, bucket::Granularity};
    /// // The day buckets of 2026-11-22T13:00Z to 2026-11-25T00:00Z, newest first.
    /// let range = buckets_in_range(Granularity::Day, 1_795_352_400, 1_795_564_800, true);
    /// assert_eq!(range.len_hint(), 3);
    /// let labels: Vec<String> = range.map(|b| b.label()).collect();
    /// assert_eq!(labels, ["2026-11-24", "2026-11-23", "2026-11-22"]);
    /// ```
    pub fn len_hint(&self) -> u64 {
        let n = self.granularity.index_of_boundary(self.back)
            - self.granularity.index_of_boundary(self.front);
        n.max(0).unsigned_abs()
    }

    fn pop_oldest(&mut self) -> Option<Bucket> {
        if self.front >= self.back {
            return None;
        }
        let bucket = Bucket {
            granularity: self.granularity,
            start: self.front,
        };
        self.front = bucket.end();
        Some(bucket)
    }

    fn pop_newest(&mut self) -> Option<Bucket> {
        if self.front >= self.back {
            return None;
        }
        let bucket = Bucket::containing(self.granularity, self.back - 1).ok()?;
        self.back = bucket.start;
        Some(bucket)
    }
}

impl Iterator for BucketRange {
    type Item = Bucket;

    fn next(&mut self) -> Option<Bucket> {
        if self.descending {
            self.pop_newest()
        } else {
            self.pop_oldest()
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match usize::try_from(self.len_hint()) {
            Ok(n) => (n, Some(n)),
            Err(_) => (usize::MAX, None),
        }
    }

    /// Counts without walking.
    fn count(self) -> usize {
        usize::try_from(self.len_hint()).unwrap_or(usize::MAX)
    }

    /// The other end, without walking.
    fn last(mut self) -> Option<Bucket> {
        self.next_back()
    }
}

impl DoubleEndedIterator for BucketRange {
    fn next_back(&mut self) -> Option<Bucket> {
        if self.descending {
            self.pop_oldest()
        } else {
            self.pop_newest()
        }
    }
}

impl FusedIterator for BucketRange {}

// ---------------------------------------------------------------------------------------------
// Tests

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const G: [Granularity; 4] = Granularity::ALL;

    /// Epoch seconds of a UTC date and time.
    fn at(year: i64, month: u32, day: u32, hour: i64) -> i64 {
        days_from_civil(year, month, day) * SECONDS_PER_DAY + hour * SECONDS_PER_HOUR
    }

    fn label(g: Granularity, t: i64) -> String {
        Bucket::containing(g, t).unwrap().label()
    }

    /// Instants in the years 1..=9999, where every granularity has a bucket.
    fn instant() -> impl Strategy<Value = i64> {
        at(1, 1, 1, 0)..at(10_000, 1, 1, 0)
    }

    fn granularity() -> impl Strategy<Value = Granularity> {
        prop::sample::select(G.to_vec())
    }

    #[test]
    fn civil_conversion_matches_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(0, 1, 1), -719_528);
        assert_eq!(at(2026, 11, 22, 13), 1_795_352_400);
        for days in (-800_000..3_000_000).step_by(997).chain(-1_000..1_000) {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=days_in_month(y, m)).contains(&d), "{days}");
            assert_eq!(days_from_civil(y, m, d), days);
        }
        // Consecutive days are consecutive dates.
        for days in -100_000..100_000 {
            let (y, m, d) = civil_from_days(days);
            let next = civil_from_days(days + 1);
            let expected = if d < days_in_month(y, m) {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            assert_eq!(next, expected);
        }
        assert_eq!(weekday(0), 3, "1970-01-01 was a Thursday");
        assert_eq!(weekday(days_from_civil(2026, 1, 1)), 3, "so was 2026-01-01");
    }

    #[test]
    fn labels_have_the_documented_forms() {
        let t = at(2026, 11, 22, 13) + 59 * 60 + 59;
        assert_eq!(label(Granularity::Hour, t), "2026-11-22T13");
        assert_eq!(label(Granularity::Day, t), "2026-11-22");
        assert_eq!(label(Granularity::Week, t), "2026-W47");
        assert_eq!(label(Granularity::Month, t), "2026-11");
        assert_eq!(label(Granularity::Day, at(5, 3, 4, 0)), "0005-03-04");
        assert_eq!(label(Granularity::Hour, at(999, 1, 2, 3)), "0999-01-02T03");
        for g in G {
            assert_eq!(g.example().len(), g.label_len());
            assert_eq!(Bucket::parse(g, g.example()).unwrap().label(), g.example());
        }
    }

    #[test]
    fn iso_week_edges() {
        let week = |y, m, d| label(Granularity::Week, at(y, m, d, 12));
        assert_eq!(week(2024, 12, 30), "2025-W01");
        assert_eq!(week(2024, 12, 29), "2024-W52");
        assert_eq!(week(2021, 1, 3), "2020-W53");
        assert_eq!(week(2021, 1, 4), "2021-W01");
        assert_eq!(week(2026, 1, 1), "2026-W01");
        assert_eq!(week(2025, 12, 29), "2026-W01");
        assert_eq!(week(2026, 12, 31), "2026-W53");
        assert_eq!(week(2027, 1, 3), "2026-W53");
        assert_eq!(week(2027, 1, 4), "2027-W01");
        assert_eq!(week(2015, 12, 31), "2015-W53");
        assert_eq!(week(2016, 1, 3), "2015-W53");
        assert_eq!(week(2020, 12, 31), "2020-W53");
        // 1970-01-01 was a Thursday: its week, 1970-W01, began on 1969-12-29.
        assert_eq!(week(1970, 1, 1), "1970-W01");
        assert_eq!(week(1969, 12, 29), "1970-W01");
        assert_eq!(week(1969, 12, 28), "1969-W52");
        let w = Bucket::parse(Granularity::Week, "1970-W01").unwrap();
        assert_eq!(w.start(), -3 * SECONDS_PER_DAY);
        assert_eq!(w.end(), 4 * SECONDS_PER_DAY);

        for year in [2004, 2009, 2015, 2020, 2026, 2032] {
            assert_eq!(weeks_in_year(year), 53, "{year}");
            let w53 = Bucket::parse(Granularity::Week, &format!("{year}-W53")).unwrap();
            assert_eq!(w53.next().unwrap().label(), format!("{}-W01", year + 1));
        }
        for year in [2021, 2022, 2023, 2024, 2025, 2027, 1900, 2000] {
            assert_eq!(weeks_in_year(year), 52, "{year}");
            let err = Bucket::parse(Granularity::Week, &format!("{year}-W53")).unwrap_err();
            assert!(err.to_string().contains("has weeks 01 to 52"), "{err}");
        }
        // Week 1 always holds 4 January; weeks start on Mondays.
        for year in 0..=9999 {
            let w1 = Bucket::parse(Granularity::Week, &format!("{year:04}-W01")).unwrap();
            let day = w1.start() / SECONDS_PER_DAY;
            assert_eq!(weekday(day), 0);
            assert!((day..day + 7).contains(&days_from_civil(year, 1, 4)));
        }
    }

    #[test]
    fn month_lengths_and_leap_years() {
        let days = |label: &str| {
            let b = Bucket::parse(Granularity::Month, label).unwrap();
            (b.end() - b.start()) / SECONDS_PER_DAY
        };
        assert_eq!(days("2024-02"), 29);
        assert_eq!(days("2000-02"), 29);
        assert_eq!(days("1900-02"), 28);
        assert_eq!(days("2026-02"), 28);
        assert_eq!(days("2100-02"), 28);
        assert_eq!(days("0000-02"), 29);
        let lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        for (month, expected) in (1..=12).zip(lengths) {
            assert_eq!(days(&format!("2026-{month:02}")), expected, "month {month}");
        }
        assert!(Bucket::parse(Granularity::Day, "2024-02-29").is_ok());
        assert!(Bucket::parse(Granularity::Day, "2000-02-29").is_ok());
        let err = Bucket::parse(Granularity::Day, "1900-02-29").unwrap_err();
        assert!(
            err.to_string().contains("1900-02 has days 01 to 28"),
            "{err}"
        );
        assert!(Bucket::parse(Granularity::Day, "2026-04-31").is_err());
        assert_eq!(
            Bucket::parse(Granularity::Month, "2026-12")
                .unwrap()
                .next()
                .unwrap()
                .label(),
            "2027-01"
        );
    }

    #[test]
    fn instants_before_1970() {
        assert_eq!(label(Granularity::Hour, -1), "1969-12-31T23");
        assert_eq!(label(Granularity::Day, -1), "1969-12-31");
        assert_eq!(label(Granularity::Day, -SECONDS_PER_DAY), "1969-12-31");
        assert_eq!(label(Granularity::Day, -SECONDS_PER_DAY - 1), "1969-12-30");
        assert_eq!(label(Granularity::Month, -1), "1969-12");
        assert_eq!(
            Bucket::containing(Granularity::Month, -1).unwrap().start(),
            -31 * SECONDS_PER_DAY
        );
        assert_eq!(
            Bucket::containing(Granularity::Hour, -1).unwrap().start(),
            -SECONDS_PER_HOUR
        );
        assert_eq!(label(Granularity::Day, at(1, 1, 1, 0)), "0001-01-01");
        assert_eq!(label(Granularity::Day, at(1900, 3, 1, 0) - 1), "1900-02-28");
    }

    #[test]
    fn the_year_range_ends_at_0000_and_9999() {
        let first = at(0, 1, 1, 0);
        let after = at(10_000, 1, 1, 0);
        for g in [Granularity::Hour, Granularity::Day, Granularity::Month] {
            let b = Bucket::containing(g, first).unwrap();
            assert_eq!(b.start(), first);
            assert_eq!(b.prev(), None);
            let last = Bucket::containing(g, after - 1).unwrap();
            assert_eq!(last.end(), after);
            assert_eq!(last.next(), None);
            let err = Bucket::containing(g, after).unwrap_err();
            assert!(matches!(
                err,
                BucketError::YearOutOfRange { year: 10_000, .. }
            ));
            assert!(Bucket::containing(g, first - 1).is_err());
            assert!(Bucket::containing(g, i64::MIN).is_err());
            assert!(Bucket::containing(g, i64::MAX).is_err());
            assert_eq!(g.span(), (first, after));
        }
        assert_eq!(label(Granularity::Hour, after - 1), "9999-12-31T23");
        // 0000-01-01 is a Saturday of ISO week-year -1; week 0000-W01 starts on 0000-01-03.
        let week = Granularity::Week;
        let err = Bucket::containing(week, first).unwrap_err();
        assert!(matches!(err, BucketError::YearOutOfRange { year: -1, .. }));
        assert!(err.to_string().contains("ISO week-year -1"), "{err}");
        assert!(
            err.to_string().contains("`0000-W01` to `9999-W52`"),
            "{err}"
        );
        let w1 = Bucket::containing(week, at(0, 1, 3, 0)).unwrap();
        assert_eq!((w1.label(), w1.prev()), ("0000-W01".to_owned(), None));
        // 9999-12-31 is a Friday of 9999-W52, which ends on 10000-01-03.
        let last = Bucket::containing(week, after).unwrap();
        assert_eq!(last.label(), "9999-W52");
        assert_eq!(last.end(), at(10_000, 1, 3, 0));
        assert_eq!(last.next(), None);
        assert!(Bucket::containing(week, last.end()).is_err());
        assert_eq!(week.span(), (at(0, 1, 3, 0), at(10_000, 1, 3, 0)));
        for t in [i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1] {
            assert!(Bucket::containing(week, t).is_err());
        }
    }

    #[test]
    fn parse_refuses_non_canonical_labels() {
        let refused = [
            (Granularity::Day, "2026-1-2"),
            (Granularity::Day, "2026-01-02 "),
            (Granularity::Day, "2026-01-02x"),
            (Granularity::Day, "2026/01/02"),
            (Granularity::Day, "+026-01-02"),
            (Granularity::Day, "2026-00-10"),
            (Granularity::Day, "2026-01-00"),
            (Granularity::Day, ""),
            (Granularity::Day, "2026-01-0é"),
            (Granularity::Hour, "2026-11-22T1"),
            (Granularity::Hour, "2026-11-22T24"),
            (Granularity::Hour, "2026-11-22t13"),
            (Granularity::Hour, "2026-11-22 13"),
            (Granularity::Hour, "2026-11-22T13:00"),
            (Granularity::Week, "2026-W7"),
            (Granularity::Week, "2026-W00"),
            (Granularity::Week, "2026-W54"),
            (Granularity::Week, "2025-W53"),
            (Granularity::Week, "2026-w07"),
            (Granularity::Week, "2026W07"),
            (Granularity::Month, "2026-13"),
            (Granularity::Month, "2026-1"),
            (Granularity::Month, "2026-11-22"),
        ];
        for (g, s) in refused {
            let err = Bucket::parse(g, s).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(&format!("expected `{}`, e.g. `{}`", g.form(), g.example())),
                "{message}"
            );
            assert!(matches!(err, BucketError::Malformed { granularity, .. } if granularity == g));
        }
        let err = Bucket::parse(Granularity::Week, "2026-w07").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`2026-w07` is not a week bucket label: character 6 is `w`, where `W` belongs; \
             expected `YYYY-Www`, e.g. `2026-W47`"
        );
        let err = Bucket::parse(Granularity::Day, "2026-01-02x").unwrap_err();
        assert!(
            err.to_string()
                .contains("trailing text `x` after `2026-01-02`"),
            "{err}"
        );
        let err = Bucket::parse(Granularity::Hour, "2026-11-22T1").unwrap_err();
        assert!(
            err.to_string()
                .contains("it is 12 bytes long, but hour labels have exactly 13"),
            "{err}"
        );
    }

    #[test]
    fn granularity_names() {
        for g in G {
            assert_eq!(Granularity::from_name(g.name()), Some(g));
            assert_eq!(g.to_string(), g.name());
        }
        assert_eq!(Granularity::NAMES, ["hour", "day", "week", "month"]);
        assert_eq!(Granularity::from_name("Day"), None);
        assert_eq!(Granularity::from_name("days"), None);
        assert_eq!(
            G.map(Granularity::label_len),
            [13, 10, 8, 7],
            "documented widths"
        );
    }

    #[test]
    fn integer_times() {
        assert_eq!(42_i64.epoch_seconds(), Ok(42));
        assert_eq!((-42_i32).epoch_seconds(), Ok(-42));
        assert_eq!(u32::MAX.epoch_seconds(), Ok(i64::from(u32::MAX)));
        assert_eq!((i64::MAX as u64).epoch_seconds(), Ok(i64::MAX));
        let err = (i64::MAX as u64 + 1).epoch_seconds().unwrap_err();
        assert_eq!(
            err,
            BucketError::TimeOutOfRange {
                epoch_seconds: 1 << 63
            }
        );
        assert!(err.to_string().contains("do not fit in an i64"), "{err}");
        assert_eq!((&&7_u64).epoch_seconds(), Ok(7));
    }

    #[test]
    fn ten_years_of_hours_are_lazy() {
        let range = buckets_in_range(
            Granularity::Hour,
            at(2016, 1, 1, 0),
            at(2026, 1, 1, 0),
            true,
        );
        // 3,653 days (2016, 2020 and 2024 are leap years).
        assert_eq!(range.len_hint(), 3_653 * 24);
        assert_eq!(range.size_hint(), (3_653 * 24, Some(3_653 * 24)));
        // Two cursors, no buffer.
        assert!(std::mem::size_of::<BucketRange>() <= 32);
        let mut range = range;
        assert_eq!(range.next().unwrap().label(), "2025-12-31T23");
        assert_eq!(range.nth(3_653 * 24 - 2).unwrap().label(), "2016-01-01T00");
        assert_eq!(range.next(), None);
        assert_eq!(range.len_hint(), 0);
        // All buckets there are: the range is clipped to the years 0000..=9999.
        let mut all = buckets_in_range(Granularity::Month, i64::MIN, i64::MAX, false);
        assert_eq!(all.clone().count(), 120_000);
        assert_eq!(all.next().unwrap().label(), "0000-01");
        assert_eq!(all.next_back().unwrap().label(), "9999-12");
        let mut weeks = buckets_in_range(Granularity::Week, i64::MIN, i64::MAX, true);
        assert_eq!(weeks.next().unwrap().label(), "9999-W52");
        assert_eq!(weeks.next_back().unwrap().label(), "0000-W01");
        assert_eq!(
            buckets_in_range(Granularity::Day, i64::MAX - 5, i64::MAX, false).len_hint(),
            0
        );
    }

    #[test]
    fn empty_ranges() {
        for g in G {
            for descending in [false, true] {
                let t = at(2026, 11, 22, 13);
                assert_eq!(buckets_in_range(g, t, t, descending).count(), 0);
                assert_eq!(buckets_in_range(g, t, t - 1, descending).count(), 0);
                assert_eq!(buckets_in_range(g, t, t, descending).len_hint(), 0);
                assert_eq!(
                    buckets_in_range(g, i64::MAX, i64::MIN, descending).len_hint(),
                    0
                );
                assert_eq!(buckets_in_range(g, t, t + 1, descending).count(), 1);
            }
        }
    }

    /// One random change to a string: a character replaced, removed or inserted, or text
    /// appended.
    fn mutate(label: &str, op: u8, at: prop::sample::Index, c: char) -> String {
        let mut chars: Vec<char> = label.chars().collect();
        match op % 4 {
            0 => {
                let i = at.index(chars.len());
                chars[i] = c;
            }
            1 => {
                chars.remove(at.index(chars.len()));
            }
            2 => chars.insert(at.index(chars.len() + 1), c),
            _ => chars.push(c),
        }
        chars.into_iter().collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn labels_sort_like_times(g in granularity(), a in instant(), b in instant()) {
            let (a, b) = (Bucket::containing(g, a).unwrap(), Bucket::containing(g, b).unwrap());
            prop_assert_eq!(a.label().cmp(&b.label()), a.start().cmp(&b.start()));
            prop_assert_eq!(a.label().len(), g.label_len());
        }

        #[test]
        fn buckets_hold_their_instants(g in granularity(), t in instant()) {
            let b = Bucket::containing(g, t).unwrap();
            prop_assert!(b.start() <= t && t < b.end());
            prop_assert_eq!(Bucket::containing(g, b.start()).unwrap(), b);
            prop_assert_eq!(Bucket::containing(g, b.end() - 1).unwrap(), b);
            if let Some(next) = b.next() {
                prop_assert_eq!(next.start(), b.end());
                prop_assert_eq!(next.prev(), Some(b));
            }
            if let Some(prev) = b.prev() {
                prop_assert_eq!(prev.end(), b.start());
                prop_assert_eq!(prev.next(), Some(b));
            }
            let hours = (b.end() - b.start()) / SECONDS_PER_HOUR;
            let expected = match g {
                Granularity::Hour => 1..=1,
                Granularity::Day => 24..=24,
                Granularity::Week => 168..=168,
                Granularity::Month => 28 * 24..=31 * 24,
            };
            prop_assert!(expected.contains(&hours));
        }

        #[test]
        fn labels_parse_back(g in granularity(), t in instant()) {
            let b = Bucket::containing(g, t).unwrap();
            let mut out = String::from("LOG#");
            b.write_label(&mut out);
            prop_assert_eq!(&out[4..], b.label());
            prop_assert_eq!(b.to_string(), b.label());
            prop_assert_eq!(Bucket::parse(g, &b.label()), Ok(b));
        }

        #[test]
        fn parse_is_canonical_only(
            g in granularity(),
            t in instant(),
            ops in prop::collection::vec(
                (any::<u8>(), any::<prop::sample::Index>(), prop::sample::select(
                    "0123456789-TWw x:é".chars().collect::<Vec<_>>(),
                )),
                1..3,
            ),
        ) {
            let mut s = Bucket::containing(g, t).unwrap().label();
            for (op, at, c) in ops {
                s = mutate(&s, op, at, c);
            }
            match Bucket::parse(g, &s) {
                Ok(b) => prop_assert_eq!(b.label(), s),
                Err(e) => {
                    let is_malformed = matches!(e, BucketError::Malformed { .. });
                    prop_assert!(is_malformed);
                }
            }
        }

        #[test]
        fn ranges_match_a_walk(
            g in granularity(),
            from in at(1, 1, 1, 0)..at(9_990, 1, 1, 0),
            len_hours in -100_i64..2_000,
            pattern in prop::collection::vec(any::<bool>(), 0..80),
        ) {
            let unit = match g {
                Granularity::Hour => 1,
                Granularity::Day => 6,
                Granularity::Week => 24,
                Granularity::Month => 100,
            };
            let to = from + len_hours * unit * SECONDS_PER_HOUR / 10;
            let mut walk = Vec::new();
            if from < to {
                let mut b = Bucket::containing(g, from).unwrap();
                while b.start() < to {
                    walk.push(b);
                    b = b.next().unwrap();
                }
            }
            let ascending: Vec<Bucket> = buckets_in_range(g, from, to, false).collect();
            prop_assert_eq!(&ascending, &walk);
            prop_assert_eq!(buckets_in_range(g, from, to, false).len_hint(), walk.len() as u64);
            prop_assert_eq!(buckets_in_range(g, from, to, true).count(), walk.len());
            #[allow(clippy::double_ended_iterator_last)] // `last` is overridden: this tests it
            let last = buckets_in_range(g, from, to, true).last();
            prop_assert_eq!(last.as_ref(), walk.first());
            let mut descending: Vec<Bucket> = buckets_in_range(g, from, to, true).collect();
            descending.reverse();
            prop_assert_eq!(&descending, &walk);
            let mut backwards: Vec<Bucket> = buckets_in_range(g, from, to, false).rev().collect();
            backwards.reverse();
            prop_assert_eq!(&backwards, &walk);

            // Taking from both ends yields every bucket once, and the count stays exact.
            let mut range = buckets_in_range(g, from, to, false);
            let (mut head, mut tail) = (Vec::new(), Vec::new());
            for front in pattern {
                prop_assert_eq!(range.len_hint() as usize, walk.len() - head.len() - tail.len());
                let next = if front { range.next() } else { range.next_back() };
                match next {
                    Some(b) if front => head.push(b),
                    Some(b) => tail.push(b),
                    None => break,
                }
            }
            head.extend(range);
            head.extend(tail.into_iter().rev());
            prop_assert_eq!(head, walk);
        }
    }

    #[cfg(feature = "chrono")]
    mod chrono_checks {
        use super::*;
        use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Timelike, Utc};

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2_000))]

            /// The hand-written calendar agrees with chrono's.
            #[test]
            fn labels_agree_with_chrono(t in instant(), nanos in 0_u32..1_000_000_000) {
                let time = DateTime::from_timestamp(t, nanos).unwrap();
                prop_assert_eq!(time.epoch_seconds(), Ok(t));
                prop_assert_eq!(
                    label(Granularity::Hour, t),
                    format!("{:04}-{:02}-{:02}T{:02}", time.year(), time.month(), time.day(), time.hour())
                );
                let date = time.date_naive();
                prop_assert_eq!(label(Granularity::Day, t), format!("{:04}-{:02}-{:02}", date.year(), date.month(), date.day()));
                let week = date.iso_week();
                prop_assert_eq!(label(Granularity::Week, t), format!("{:04}-W{:02}", week.year(), week.week()));
                prop_assert_eq!(label(Granularity::Month, t), format!("{:04}-{:02}", date.year(), date.month()));
                let midnight = date.epoch_seconds().unwrap();
                prop_assert_eq!(Bucket::containing(Granularity::Day, t).unwrap().start(), midnight);
            }
        }

        #[test]
        fn sub_second_instants_belong_to_their_second() {
            let before_1970 = DateTime::from_timestamp(-1, 500_000_000).unwrap();
            assert_eq!(before_1970.epoch_seconds(), Ok(-1));
            let bucket =
                Bucket::containing(Granularity::Hour, before_1970.epoch_seconds().unwrap());
            assert_eq!(bucket.unwrap().label(), "1969-12-31T23");
            let t = Utc.with_ymd_and_hms(2026, 11, 22, 23, 59, 59).unwrap()
                + chrono::Duration::nanoseconds(999_999_999);
            assert_eq!(
                label(Granularity::Day, t.epoch_seconds().unwrap()),
                "2026-11-22"
            );
            let date = NaiveDate::from_ymd_opt(1969, 12, 31).unwrap();
            assert_eq!(date.epoch_seconds(), Ok(-SECONDS_PER_DAY));
            let far = NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap();
            assert!(Bucket::containing(Granularity::Day, far.epoch_seconds().unwrap()).is_err());
        }
    }
}

#[cfg(test)]
mod doc_examples {
    //! Examples of the module's public items, kept as tests until the module is re-exported.
    use super::*;

    #[test]
    fn example_year_range() {
        assert_eq!((MIN_YEAR, MAX_YEAR), (0, 9999));
    }

    #[test]
    fn example_granularity() {
        let g = Granularity::from_name("day").unwrap();
        assert_eq!(g, Granularity::Day);
        assert_eq!(g.name(), "day");
        assert_eq!(Granularity::from_name("fortnight"), None);
    }

    #[test]
    fn example_granularity_names() {
        let hint = format!("expected one of {}", Granularity::NAMES.join(", "));
        assert_eq!(hint, "expected one of hour, day, week, month");
    }

    #[test]
    fn example_granularity_label_len() {
        assert_eq!(Granularity::Hour.label_len(), "2026-11-22T13".len());
    }

    #[test]
    fn example_bucket() {
        // 2026-11-22T13:45:00Z
        let b = Bucket::containing(Granularity::Day, 1_795_355_100).unwrap();
        assert_eq!(b.granularity(), Granularity::Day);
        assert_eq!(b.label(), "2026-11-22");
        assert_eq!(b.start(), 1_795_305_600); // 2026-11-22T00:00:00Z
        assert_eq!(b.end(), 1_795_392_000); // 2026-11-23T00:00:00Z
    }

    #[test]
    fn example_bucket_negative() {
        let b = Bucket::containing(Granularity::Hour, -1).unwrap();
        assert_eq!(b.label(), "1969-12-31T23");
    }

    #[test]
    fn example_bucket_neighbours() {
        let b = Bucket::parse(Granularity::Week, "2026-W53").unwrap();
        assert_eq!(b.next().unwrap().label(), "2027-W01");
        assert_eq!(b.prev().unwrap().label(), "2026-W52");
        let last = Bucket::parse(Granularity::Month, "9999-12").unwrap();
        assert_eq!(last.next(), None);
    }

    #[test]
    fn example_bucket_write_label() {
        let b = Bucket::parse(Granularity::Month, "2026-11").unwrap();
        let mut key = String::from("METRICS#");
        b.write_label(&mut key);
        assert_eq!(key, "METRICS#2026-11");
        assert_eq!(b.to_string(), "2026-11");
    }

    #[test]
    fn example_bucket_parse() {
        let b = Bucket::parse(Granularity::Hour, "2026-11-22T13").unwrap();
        assert_eq!(b.start(), 1_795_352_400);
        assert!(Bucket::parse(Granularity::Hour, "2026-11-22T1").is_err());
    }

    #[test]
    fn example_bucket_error() {
        let err = Bucket::parse(Granularity::Day, "2026-1-2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`2026-1-2` is not a day bucket label: it is 8 bytes long, but day labels have exactly 10; \
             expected `YYYY-MM-DD`, e.g. `2026-11-22`"
        );
        let err = Bucket::containing(Granularity::Day, i64::MAX).unwrap_err();
        assert!(matches!(err, BucketError::YearOutOfRange { .. }));
    }

    #[test]
    fn example_bucket_time() {
        fn day_of(t: impl BucketTime) -> Result<String, BucketError> {
            Ok(Bucket::containing(Granularity::Day, t.epoch_seconds()?)?.label())
        }
        assert_eq!(day_of(0_u32).unwrap(), "1970-01-01");
        assert!(day_of(u64::MAX).is_err());
    }

    #[test]
    fn example_buckets_in_range() {
        // The day buckets of 2026-11-22T13:00Z to 2026-11-25T00:00Z, newest first.
        let range = buckets_in_range(Granularity::Day, 1_795_352_400, 1_795_564_800, true);
        assert_eq!(range.len_hint(), 3);
        let labels: Vec<String> = range.map(|b| b.label()).collect();
        assert_eq!(labels, ["2026-11-24", "2026-11-23", "2026-11-22"]);
    }
}

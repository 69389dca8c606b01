//! The values the runtime writes into `created_at` / `updated_at` attributes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::keys::schema::TimeFormat;

/// The current time as the attribute stores it.
pub(crate) fn now_value(format: TimeFormat) -> AttributeValue {
    time_value(SystemTime::now(), format)
}

/// `at` as the attribute stores it: epoch seconds, or RFC 3339 UTC text with milliseconds
/// (what `chrono::DateTime<Utc>` deserialises).
pub(crate) fn time_value(at: SystemTime, format: TimeFormat) -> AttributeValue {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    // The enum is the key model's (another crate, `#[non_exhaustive]`): a text format added
    // there is written as RFC 3339 text until it has its own arm here.
    match format {
        TimeFormat::EpochSeconds => AttributeValue::N(since.as_secs().to_string()),
        _ => AttributeValue::S(rfc3339(since)),
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a time after the epoch (Howard Hinnant's civil-from-days).
fn rfc3339(since: Duration) -> String {
    let secs = since.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_instants() {
        let at = |s: u64, ms: u32| rfc3339(Duration::new(s, ms * 1_000_000));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_795_000_000, 999), "2026-11-18T11:06:40.999Z");
        assert_eq!(at(4_102_444_799, 0), "2099-12-31T23:59:59.000Z");
    }
}

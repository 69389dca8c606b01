//! Numbers for people: the formatting the plan and the hot-key report share, so both print
//! `21,000 WCU/s` and `70%` the same way.

/// `count` and its noun: `1 unit`, `2 units`, `0.5 units`.
pub(crate) fn count_of(count: f64, what: &str) -> String {
    if count == 1.0 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", fmt_num(count))
    }
}

/// A fraction with two decimals (`1.00`, `0.50`), or all it needs when that would hide it
/// (`0.001`).
pub(crate) fn fmt_fraction(x: f64) -> String {
    let two = format!("{x:.2}");
    if two.parse::<f64>() == Ok(x) {
        two
    } else {
        x.to_string()
    }
}

/// A fraction as a whole percentage: `0.7` -> `70%`.
pub(crate) fn percent(fraction: f64) -> String {
    format!("{}%", fmt_num((fraction * 100.0).round()))
}

/// A number with thousands separators and at most two decimals, trailing zeros dropped:
/// `21000.0` -> `21,000`, `666.666` -> `666.67`, `12.5` -> `12.5`.
pub(crate) fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let text = format!("{:.2}", x.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut out = String::with_capacity(text.len() + text.len() / 3 + 1);
    if x < 0.0 && text.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    let frac = frac.trim_end_matches('0');
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_formatted_for_people() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(999.0), "999");
        assert_eq!(fmt_num(1_000.0), "1,000");
        assert_eq!(fmt_num(21_000.0), "21,000");
        assert_eq!(fmt_num(1_234_567.891), "1,234,567.89");
        assert_eq!(fmt_num(666.666_666), "666.67");
        assert_eq!(fmt_num(12.5), "12.5");
        assert_eq!(fmt_num(-1_500.0), "-1,500");
        assert_eq!(fmt_num(-0.001), "0");
        assert_eq!(percent(0.7), "70%");
        assert_eq!(fmt_fraction(1.0), "1.00");
        assert_eq!(fmt_fraction(0.5), "0.50");
        assert_eq!(fmt_fraction(0.001), "0.001");
    }
}

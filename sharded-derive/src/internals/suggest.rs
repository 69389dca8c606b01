//! "did you mean `player_id`?" hints for misspelled names (as darling does).

/// The candidate closest to `name`, if it is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// [`did_you_mean`] for short keywords (`day`, `week`), where one transposed or missing
/// letter already makes the similarity too low (`dya`, `dy`): failing that, the candidate at
/// the smallest edit distance (letters inserted, removed, changed or swapped), if it is at
/// most 2 (`daily` -> `day`, `weekly` -> `week`).
pub fn did_you_mean_keyword<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<&'a str> {
    did_you_mean(name, candidates.clone()).or_else(|| {
        candidates
            .into_iter()
            .map(|c| (strsim::damerau_levenshtein(name, c), c))
            .filter(|(distance, _)| *distance <= 2)
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, c)| c)
    })
}

#[cfg(test)]
mod tests {
    use super::{did_you_mean, did_you_mean_keyword};

    #[test]
    fn suggests_short_keywords_by_edit_distance() {
        let names = ["hour", "day", "week", "month"];
        assert_eq!(did_you_mean_keyword("dya", names), Some("day"));
        assert_eq!(did_you_mean_keyword("dy", names), Some("day"));
        assert_eq!(did_you_mean_keyword("daily", names), Some("day"));
        assert_eq!(did_you_mean_keyword("weekly", names), Some("week"));
        assert_eq!(did_you_mean_keyword("hours", names), Some("hour"));
        assert_eq!(did_you_mean_keyword("minute", names), None);
    }

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            did_you_mean("player", ["player_id", "game_id"]),
            Some("player_id")
        );
        assert_eq!(did_you_mean("hsh", ["hash", "random"]), Some("hash"));
        assert_eq!(
            did_you_mean("templte", ["template", "shard", "n"]),
            Some("template")
        );
        assert_eq!(did_you_mean("zzz", ["player_id", "game_id"]), None);
    }
}

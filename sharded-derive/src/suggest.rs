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

#[cfg(test)]
mod tests {
    use super::did_you_mean;

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

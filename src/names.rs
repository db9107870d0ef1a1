//! The names the service accepts: pool names, round ids and player ids. The engine accepts
//! any non-empty string; the service bounds ids and refuses NUL, which Postgres cannot store
//! in text. Other control characters are accepted: real scoreboards carry tabs and mojibake
//! in team names (the ctftime set has both), and refusing them would lose results. Logs print
//! ids escaped (`?id`), so no id can forge a log line.

/// Longest round or player id, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// Longest pool name, in characters.
pub const MAX_POOL_NAME: usize = 64;

/// What [`is_pool_name`] accepts, as a regular expression for documents.
pub const POOL_NAME_PATTERN: &str = r"^[a-z0-9_-]{1,64}$";

/// [`POOL_NAME_PATTERN`] in words, for the error refusing another name.
pub const POOL_NAME_RULE: &str = "pool names are 1 to 64 characters of a-z, 0-9, `_` and `-`";

/// Whether `name` is a pool name: [`POOL_NAME_PATTERN`].
#[must_use]
pub fn is_pool_name(name: &str) -> bool {
    (1..=MAX_POOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Why `id` is not an acceptable round, player or team id, if it is not: ids are 1 to 256
/// bytes of UTF-8 without NUL.
#[must_use]
pub fn id_problem(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        Some("must not be empty")
    } else if id.len() > MAX_ID_BYTES {
        Some("must be at most 256 bytes")
    } else if id.contains('\0') {
        Some("must not contain the NUL character")
    } else {
        None
    }
}

/// Why `id`, a player or team id that a round or a rename writes, is refused, if it is: beyond
/// [`id_problem`], it must be in Unicode normalization form C (NFC), so that ids shown alike
/// (`é` as one code point, or as `e` and a combining accent) are one id. Ids stored before are
/// read as they are; a rename to their NFC form makes them writable again.
#[must_use]
pub fn written_id_problem(id: &str) -> Option<&'static str> {
    id_problem(id).or_else(|| {
        (!unicode_normalization::is_nfc(id)).then_some(
            "must be in Unicode normalization form C (NFC): ids shown alike must be one id",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_names_are_short_lowercase_words() {
        for good in ["a", "ranked-1v1", "season_3", &"x".repeat(64)] {
            assert!(is_pool_name(good), "{good}");
        }
        for bad in ["", "Ranked", "a b", "a/b", "é", "..", &"x".repeat(65)] {
            assert!(!is_pool_name(bad), "{bad}");
        }
    }

    #[test]
    fn written_ids_are_in_nfc() {
        assert_eq!(written_id_problem("Ünïcödé 名前"), None);
        assert_eq!(written_id_problem("\u{e9}"), None);
        assert!(written_id_problem("e\u{301}").is_some());
        assert_eq!(id_problem("e\u{301}"), None, "read as it is");
        assert!(written_id_problem("").is_some());
    }

    #[test]
    fn ids_are_bounded_and_free_of_nul() {
        assert_eq!(id_problem("tourist"), None);
        assert_eq!(id_problem("Ünïcödé 名前"), None);
        assert_eq!(id_problem("'; DROP TABLE players; --"), None);
        assert_eq!(id_problem(""), Some("must not be empty"));
        assert_eq!(
            id_problem("Team\u{7f}Meow\t"),
            None,
            "real team names carry these"
        );
        assert_eq!(
            id_problem("a\0b"),
            Some("must not contain the NUL character")
        );
        assert_eq!(
            id_problem(&"x".repeat(257)),
            Some("must be at most 256 bytes")
        );
    }
}

//! Text from outside (a page, a receiver's answer, an error a remote server caused) made safe
//! to store on both backends, and counts said in words (`1 line`, `2 lines`).

use std::borrow::Cow;

/// The hash a snapshot is compared by: SHA-256 of its text, and of its stored values when the
/// watch reads some (so a value that moves in the structured data alone is a change). Checks
/// and imported histories hash alike, so an imported state is recognised when it comes back.
pub fn content_hash(text: &str, values: Option<&str>) -> String {
    use sha2::{Digest, Sha256};
    match values {
        Some(values) => crate::hex(
            &Sha256::new()
                .chain_update(text.as_bytes())
                .chain_update(b"\0values\0")
                .chain_update(values.as_bytes())
                .finalize(),
        ),
        None => crate::hex(&Sha256::digest(text.as_bytes())),
    }
}

/// What stands in for a NUL character in stored text: the Unicode replacement character.
pub const NUL_REPLACEMENT: char = '\u{FFFD}';

/// `text` as both databases store it: PostgreSQL `TEXT` cannot hold a NUL character (the write
/// fails) and SQLite's C strings end at one, so each NUL becomes [`NUL_REPLACEMENT`], as invalid
/// UTF-8 already did when the bytes were decoded. Borrows when there is nothing to replace.
pub fn storable(text: &str) -> Cow<'_, str> {
    if text.contains('\0') { Cow::Owned(text.replace('\0', "\u{FFFD}")) } else { Cow::Borrowed(text) }
}

/// Whether any of `texts` holds a NUL (so [`storable`] would change it).
pub fn any_nul<'a>(texts: impl IntoIterator<Item = &'a Option<String>>) -> bool {
    texts.into_iter().any(|t| t.as_deref().is_some_and(|t| t.contains('\0')))
}

/// [`storable`] for an optional owned string, without copying when nothing is replaced.
pub fn storable_opt(text: Option<String>) -> Option<String> {
    text.map(|t| match storable(&t) {
        Cow::Borrowed(_) => t,
        Cow::Owned(replaced) => replaced,
    })
}

/// `n` and `noun`, plural unless `n` is one: `count(1, "line")` is `1 line`, `count(2, "watch")`
/// is `2 watches`. Every count people read goes through it, so none says "1 lines".
pub fn count<N: Copy + std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    format!("{n} {}", noun_for(n, noun))
}

/// `noun` as it reads after `n`: as given for one, else its English plural (`-es` after
/// s, x, ch and sh; `-ies` for a consonant and `y`; `-s` otherwise), for the words these
/// messages count.
pub fn noun_for<N: PartialEq + From<u8>>(n: N, noun: &str) -> String {
    if n == N::from(1) {
        noun.to_owned()
    } else if let Some(stem) = noun.strip_suffix('y')
        && stem.chars().last().is_some_and(|c| c.is_ascii_alphabetic() && !"aeiou".contains(c))
    {
        format!("{stem}ies")
    } else if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_number() {
        assert_eq!(count(1usize, "line"), "1 line");
        assert_eq!(count(2usize, "line"), "2 lines");
        assert_eq!(count(0i64, "line"), "0 lines");
        assert_eq!(count(2i64, "delivery"), "2 deliveries");
        assert_eq!(count(2i64, "day"), "2 days");
        assert_eq!(count(1i32, "watch"), "1 watch");
        assert_eq!(count(3u64, "watch"), "3 watches");
        assert_eq!(noun_for(1usize, "change"), "change");
    }

    #[test]
    fn nul_becomes_the_replacement_character_and_nothing_else_changes() {
        assert!(matches!(storable("plain <b>text</b> é"), Cow::Borrowed("plain <b>text</b> é")));
        assert_eq!(storable("a\0b\0"), "a\u{FFFD}b\u{FFFD}");
        assert_eq!(storable_opt(Some("x\0".into())).as_deref(), Some("x\u{FFFD}"));
        assert_eq!(storable_opt(None), None);
    }
}

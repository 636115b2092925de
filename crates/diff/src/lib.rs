//! Line diffs between two versions of a page's extracted text.
//!
//! Pure: no IO, no clock. [`diff_texts`] returns the stats, a unified diff and structured hunks;
//! callers decide what a change means.

use serde::{Deserialize, Serialize};
use similar::{ChangeTag, TextDiff};

/// Lines of context around each hunk in the unified output.
const CONTEXT_LINES: usize = 3;

/// The difference between two texts, line by line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TextChange {
    /// Lines present only in the new text.
    pub added: usize,
    /// Lines present only in the old text.
    pub removed: usize,
    /// A unified diff (`---`/`+++` headers, `@@` hunks) of old against new.
    pub unified: String,
    /// The same hunks as data.
    pub hunks: Vec<Hunk>,
}

impl TextChange {
    /// Whether anything differs.
    pub fn is_change(&self) -> bool {
        self.added > 0 || self.removed > 0
    }
}

/// One group of nearby changed lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Hunk {
    /// First line of the hunk in the old text (1-based).
    pub old_start: usize,
    /// Lines of the old text the hunk covers.
    pub old_lines: usize,
    /// First line of the hunk in the new text (1-based).
    pub new_start: usize,
    /// Lines of the new text the hunk covers.
    pub new_lines: usize,
    /// The lines, in order, each tagged.
    pub lines: Vec<HunkLine>,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HunkLine {
    /// `context`, `added` or `removed`.
    pub op: LineOp,
    /// The line without its trailing newline.
    pub text: String,
    /// For a line changed in place (removed and added in one replacement): the line in pieces,
    /// each marked `changed` when it differs from the other version. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<WordSegment>,
}

/// A piece of a changed line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WordSegment {
    /// Whether this piece differs from the other version of the line.
    pub changed: bool,
    /// The text of the piece.
    pub text: String,
}

/// What happened to a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LineOp {
    /// Unchanged, shown for context.
    Context,
    /// Only in the new text.
    Added,
    /// Only in the old text.
    Removed,
}

/// Diffs `old` against `new` line by line.
///
/// `old_label` and `new_label` name the two sides in the unified headers (snapshot ids, say).
pub fn diff_texts(old: &str, new: &str, old_label: &str, new_label: &str) -> TextChange {
    // A missing final newline is not a change of the last line.
    let (old, new) = (with_final_newline(old), with_final_newline(new));
    let diff = TextDiff::from_lines(old.as_ref(), new.as_ref());
    let mut added = 0;
    let mut removed = 0;
    let mut hunks = Vec::new();
    for group in diff.grouped_ops(CONTEXT_LINES) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let mut lines = Vec::new();
        for op in &group {
            let replace = matches!(op.tag(), similar::DiffTag::Replace);
            for change in diff.iter_inline_changes(op) {
                let op = match change.tag() {
                    ChangeTag::Equal => LineOp::Context,
                    ChangeTag::Insert => {
                        added += 1;
                        LineOp::Added
                    }
                    ChangeTag::Delete => {
                        removed += 1;
                        LineOp::Removed
                    }
                };
                let pieces: Vec<(bool, String)> =
                    change.iter_strings_lossy().map(|(changed, piece)| (changed, piece.into_owned())).collect();
                let whole: String = pieces.iter().map(|(_, piece)| piece.as_str()).collect();
                let text = whole.trim_end_matches(['\n', '\r']).to_owned();
                let words = if replace {
                    pieces
                        .into_iter()
                        .map(|(changed, piece)| WordSegment {
                            changed,
                            text: piece.trim_end_matches(['\n', '\r']).to_owned(),
                        })
                        .filter(|w| !w.text.is_empty())
                        .collect()
                } else {
                    Vec::new()
                };
                lines.push(HunkLine { op, text, words });
            }
        }
        hunks.push(Hunk {
            old_start: old_range.start + 1,
            old_lines: old_range.len(),
            new_start: new_range.start + 1,
            new_lines: new_range.len(),
            lines,
        });
    }
    let unified = if hunks.is_empty() {
        String::new()
    } else {
        diff.unified_diff()
            .context_radius(CONTEXT_LINES)
            .missing_newline_hint(false)
            .header(old_label, new_label)
            .to_string()
    };
    TextChange { added, removed, unified, hunks }
}

fn with_final_newline(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_empty() || text.ends_with('\n') { text.into() } else { format!("{text}\n").into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(old: &str, new: &str, added: usize, removed: usize, unified_contains: &[&str]) {
        let change = diff_texts(old, new, "a", "b");
        assert_eq!((change.added, change.removed), (added, removed), "stats for {old:?} -> {new:?}");
        for needle in unified_contains {
            assert!(change.unified.contains(needle), "unified diff lacks {needle:?}:\n{}", change.unified);
        }
        assert_eq!(change.is_change(), added + removed > 0);
    }

    #[test]
    fn line_diffs() {
        check("a\nb\n", "a\nb\n", 0, 0, &[]);
        check("price: 10\n", "price: 12\n", 1, 1, &["-price: 10", "+price: 12", "--- a", "+++ b"]);
        check("one\n", "one\ntwo\n", 1, 0, &["+two"]);
        check("one\ntwo", "one", 0, 1, &["-two"]);
        check("", "first\n", 1, 0, &["+first"]);
    }

    #[test]
    fn changed_lines_carry_word_level_changes() {
        let change = diff_texts("Price: 10 EUR\nstock: yes\n", "Price: 12 EUR\nstock: yes\n", "a", "b");
        let lines = &change.hunks[0].lines;
        let marked =
            |i: usize| -> Vec<(bool, &str)> { lines[i].words.iter().map(|w| (w.changed, w.text.as_str())).collect() };
        assert_eq!(lines[0].op, LineOp::Removed);
        assert_eq!(marked(0), vec![(false, "Price: "), (true, "10"), (false, " EUR")]);
        assert_eq!(marked(1), vec![(false, "Price: "), (true, "12"), (false, " EUR")]);
        assert!(lines[2].words.is_empty(), "context lines carry no word changes");
        let added_only = diff_texts("a\n", "a\nb\n", "a", "b");
        assert!(added_only.hunks[0].lines.iter().all(|l| l.words.is_empty()), "pure insertions carry none");
    }

    #[test]
    fn hunks_locate_the_change() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 10\n", "line ten\n");
        let change = diff_texts(&old, &new, "a", "b");
        assert_eq!(change.hunks.len(), 1);
        let hunk = &change.hunks[0];
        assert_eq!((hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines), (7, 7, 7, 7));
        let changed: Vec<_> =
            hunk.lines.iter().filter(|l| l.op != LineOp::Context).map(|l| (l.op, l.text.as_str())).collect();
        assert_eq!(changed, vec![(LineOp::Removed, "line 10"), (LineOp::Added, "line ten")]);
    }
}

/// The share of words that changed between two texts, in percent: words inserted or deleted
/// over all words of both texts (0 when equal, 100 when nothing is shared).
pub fn word_change_percent(old: &str, new: &str) -> f64 {
    if old == new {
        return 0.0;
    }
    let diff = TextDiff::configure().algorithm(similar::Algorithm::Patience).diff_unicode_words(old, new);
    let (mut total, mut changed) = (0usize, 0usize);
    for change in diff.iter_all_changes() {
        if change.value().trim().is_empty() {
            continue;
        }
        match change.tag() {
            ChangeTag::Equal => total += 2,
            _ => {
                total += 1;
                changed += 1;
            }
        }
    }
    if total == 0 { 0.0 } else { 100.0 * changed as f64 / total as f64 }
}

#[cfg(test)]
mod word_tests {
    use super::word_change_percent;

    #[test]
    fn word_change_share() {
        assert_eq!(word_change_percent("a b c d", "a b c d"), 0.0);
        assert_eq!(word_change_percent("a b", "c d"), 100.0);
        let p = word_change_percent("one two three four five", "one two three four six");
        assert!((p - 20.0).abs() < 0.01, "{p}");
    }
}

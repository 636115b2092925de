//! Line diffs between two versions of a page's extracted text.
//!
//! Pure: no IO, no clock. [`diff_texts`] returns the stats, a unified diff and structured hunks;
//! callers decide what a change means.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

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
    /// Whether `unified` or `hunks` were cut at the [`DiffLimits`] (the counts never are); a
    /// cut `unified` ends with a line saying so.
    #[serde(default)]
    pub truncated: bool,
}

impl TextChange {
    /// Whether anything differs.
    pub fn is_change(&self) -> bool {
        self.added > 0 || self.removed > 0
    }
}

/// Bounds on one diff's work and size, whatever the texts are.
///
/// Past `time` the line diff approximates (a changed region may come out larger than it is,
/// still correct) and changed lines lose their word-level detail. The output keeps at most
/// `max_bytes` of unified text and `max_bytes` of hunk text; lines longer than
/// `max_line_chars` are shown cut, without word-level detail. The counts are always exact for
/// the diff computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffLimits {
    /// Time for the whole diff.
    pub time: Duration,
    /// Bytes of unified text, and separately of hunks (their text and the JSON around each
    /// line, as serialised), kept.
    pub max_bytes: usize,
    /// Characters of one line kept.
    pub max_line_chars: usize,
}

impl DiffLimits {
    /// For a change event's payload, sent to every endpoint: 64 KiB of each, 500 characters a
    /// line, one second.
    pub const PAYLOAD: DiffLimits =
        DiffLimits { time: Duration::from_secs(1), max_bytes: 64 * 1024, max_line_chars: 500 };

    /// For a diff asked for on a page or through the API: 1 MiB of each, 2,000 characters a
    /// line, two seconds.
    pub const VIEW: DiffLimits =
        DiffLimits { time: Duration::from_secs(2), max_bytes: 1024 * 1024, max_line_chars: 2_000 };
}

impl Default for DiffLimits {
    fn default() -> Self {
        DiffLimits::VIEW
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

/// Diffs `old` against `new` line by line, within [`DiffLimits::VIEW`].
///
/// `old_label` and `new_label` name the two sides in the unified headers (snapshot ids, say).
pub fn diff_texts(old: &str, new: &str, old_label: &str, new_label: &str) -> TextChange {
    diff_texts_within(old, new, old_label, new_label, DiffLimits::VIEW)
}

/// [`diff_texts`] within `limits`.
pub fn diff_texts_within(old: &str, new: &str, old_label: &str, new_label: &str, limits: DiffLimits) -> TextChange {
    let deadline = Instant::now() + limits.time;
    // A missing final newline is not a change of the last line.
    let (old, new) = (with_final_newline(old), with_final_newline(new));
    let diff = TextDiff::configure().deadline(deadline).diff_lines(old.as_ref(), new.as_ref());
    let mut change = TextChange { added: 0, removed: 0, unified: String::new(), hunks: Vec::new(), truncated: false };
    for op in diff.ops() {
        change.added += op.new_range().len() * usize::from(op.tag() != similar::DiffTag::Equal);
        change.removed += op.old_range().len() * usize::from(op.tag() != similar::DiffTag::Equal);
    }
    if !change.is_change() {
        return change;
    }
    let mut budget = limits.max_bytes;
    'groups: for group in diff.grouped_ops(CONTEXT_LINES) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let mut lines = Vec::new();
        for op in &group {
            for line in hunk_lines(&diff, op, deadline, limits.max_line_chars) {
                let size = line_size(&line);
                if size > budget {
                    change.truncated = true;
                    if !lines.is_empty() {
                        change.hunks.push(hunk(&old_range, &new_range, lines));
                    }
                    break 'groups;
                }
                budget -= size;
                lines.push(line);
            }
        }
        change.hunks.push(hunk(&old_range, &new_range, lines));
    }
    change.unified = unified(&diff, old_label, new_label, limits, &mut change.truncated);
    change
}

/// What a hunk line weighs in a serialised diff: its text, its word pieces, and the JSON
/// around each (so a budget of one-character lines still bounds the body).
fn line_size(line: &HunkLine) -> usize {
    32 + line.text.len() + line.words.iter().map(|w| 24 + w.text.len()).sum::<usize>()
}

fn hunk(old_range: &std::ops::Range<usize>, new_range: &std::ops::Range<usize>, lines: Vec<HunkLine>) -> Hunk {
    Hunk {
        old_start: old_range.start + 1,
        old_lines: old_range.len(),
        new_start: new_range.start + 1,
        new_lines: new_range.len(),
        lines,
    }
}

/// The lines `op` covers, each cut at `max_chars`; changed lines of a replacement carry their
/// changed words while time is left and both versions are short enough to compare.
fn hunk_lines<'a>(
    diff: &'a TextDiff<'a, 'a, str>,
    op: &similar::DiffOp,
    deadline: Instant,
    max_chars: usize,
) -> Vec<HunkLine> {
    let op_of = |tag: ChangeTag| match tag {
        ChangeTag::Equal => LineOp::Context,
        ChangeTag::Insert => LineOp::Added,
        ChangeTag::Delete => LineOp::Removed,
    };
    let short = |range: std::ops::Range<usize>, line: &dyn Fn(usize) -> Option<&'a str>| {
        range.into_iter().all(|i| line(i).is_none_or(|l| l.len() <= max_chars))
    };
    let replace = matches!(op.tag(), similar::DiffTag::Replace)
        && Instant::now() < deadline
        && short(op.old_range(), &|i| diff.old_slice(i))
        && short(op.new_range(), &|i| diff.new_slice(i));
    if !replace {
        return diff
            .iter_changes(op)
            .map(|c| HunkLine { op: op_of(c.tag()), text: cut(c.value(), max_chars), words: Vec::new() })
            .collect();
    }
    diff.iter_inline_changes_deadline(op, Some(deadline))
        .map(|change| {
            let pieces: Vec<(bool, String)> =
                change.iter_strings_lossy().map(|(changed, piece)| (changed, piece.into_owned())).collect();
            let whole: String = pieces.iter().map(|(_, piece)| piece.as_str()).collect();
            let words = pieces
                .into_iter()
                .map(|(changed, piece)| WordSegment { changed, text: piece.trim_end_matches(['\n', '\r']).to_owned() })
                .filter(|w| !w.text.is_empty())
                .collect();
            HunkLine { op: op_of(change.tag()), text: cut(&whole, max_chars), words }
        })
        .collect()
}

/// `line` without its line ending, cut to `max_chars` characters (an ellipsis says so).
fn cut(line: &str, max_chars: usize) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// The unified diff, hunk by hunk, until `limits.max_bytes`; a cut diff ends with a line
/// saying so, and sets `truncated`.
fn unified(
    diff: &TextDiff<'_, '_, str>,
    old_label: &str,
    new_label: &str,
    limits: DiffLimits,
    truncated: &mut bool,
) -> String {
    use std::fmt::Write as _;
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    for hunk in diff.unified_diff().context_radius(CONTEXT_LINES).missing_newline_hint(false).iter_hunks() {
        let mut text = hunk.to_string();
        if out.len() + text.len() > limits.max_bytes {
            *truncated = true;
            // What fits of this hunk, at a line boundary, with long lines cut.
            let room = limits.max_bytes.saturating_sub(out.len());
            text = text
                .lines()
                .map(|l| cut(l, limits.max_line_chars) + "\n")
                .scan(0usize, |used, l| {
                    *used += l.len();
                    (*used <= room).then_some(l)
                })
                .collect();
            out.push_str(&text);
            let _ = writeln!(
                out,
                "[driftwatch: the diff was cut at {} bytes; the counts above the cut are exact]",
                limits.max_bytes
            );
            return out;
        }
        out.push_str(&text);
    }
    out
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

    /// The bytes of hunk text a change holds (line text and word pieces).
    fn hunk_bytes(change: &TextChange) -> usize {
        change
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .map(|l| l.text.len() + l.words.iter().map(|w| w.text.len()).sum::<usize>())
            .sum()
    }

    #[test]
    fn many_changed_lines_are_cut_and_say_so() {
        // 100,000 one-digit lines, pseudo-random on each side: the costliest input for a line
        // diff (every line has many equal partners) and a diff as long as the text.
        let digits = |seed: u64| -> String {
            let mut x = seed;
            (0..100_000)
                .map(|_| {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    format!("{}\n", (x >> 60) % 10)
                })
                .collect()
        };
        let (old, new) = (digits(1), digits(2));
        let limits = DiffLimits::PAYLOAD;
        let change = diff_texts_within(&old, &new, "a", "b", limits);
        assert!(change.is_change() && change.truncated);
        assert!(change.added > 0 && change.removed > 0);
        assert!(hunk_bytes(&change) <= limits.max_bytes, "{}", hunk_bytes(&change));
        let marker = change.unified.lines().last().expect("a last line");
        assert!(marker.starts_with("[driftwatch: the diff was cut at 65536 bytes"), "{marker}");
        assert!(change.unified.len() <= limits.max_bytes + marker.len() + 1, "{}", change.unified.len());
        assert!(change.unified.starts_with("--- a\n+++ b\n@@ "));
    }

    #[test]
    fn a_huge_changed_line_is_shown_cut_without_word_detail() {
        let old = "x".repeat(4_000_000);
        let new = format!("{}y", "x".repeat(3_999_999));
        let change = diff_texts_within(&old, &new, "a", "b", DiffLimits::PAYLOAD);
        assert_eq!((change.added, change.removed), (1, 1));
        let lines = &change.hunks[0].lines;
        assert_eq!(lines.len(), 2);
        for line in lines {
            assert!(line.words.is_empty(), "no word-level diff of a 4 MB line");
            assert_eq!(line.text.chars().count(), 501, "500 characters and an ellipsis");
            assert!(line.text.ends_with('…'));
        }
        assert!(change.unified.len() < 2_000, "{}", change.unified.len());
        assert!(change.truncated);
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
    // Bounded like every diff: past a second the word diff approximates.
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Patience)
        .timeout(Duration::from_secs(1))
        .diff_unicode_words(old, new);
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

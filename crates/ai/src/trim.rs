//! The diff as the model sees it: unified lines without headers, moved lines left out, and,
//! past a budget, the changed lines most relevant to the intent (BM25) with some context.

use std::collections::HashMap;

/// The most characters of one line shown; longer ones are cut with an ellipsis.
pub const MAX_LINE_CHARS: usize = 500;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How far from a kept changed line context lines are added, when there is room.
const CONTEXT_RADIUS: usize = 2;

/// The diff, trimmed for the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The lines kept, in their original order, each `+text`, `-text` or ` text`, joined by
    /// newlines (no trailing newline).
    pub lines: String,
    /// Lines that were both removed and added with the same text (pairs), left out.
    pub moved: usize,
    /// Changed lines left out for the budget.
    pub hidden: usize,
    /// Notes the diff carried (a `[driftwatch: …]` line saying it was cut), word for word.
    pub notes: Vec<String>,
}

/// What one line of the diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Added,
    Removed,
    Context,
}

#[derive(Debug, Clone)]
struct Line {
    kind: Kind,
    text: String,
}

impl Line {
    fn rendered(&self) -> String {
        let sign = match self.kind {
            Kind::Added => '+',
            Kind::Removed => '-',
            Kind::Context => ' ',
        };
        format!("{sign}{}", self.text)
    }

    /// Characters it takes, newline included.
    fn cost(&self) -> usize {
        self.text.chars().count() + 2
    }
}

/// Trims `unified` to `budget` characters of lines, keeping what is most relevant to `intent`.
///
/// `---`/`+++` headers before the first `@@`, `@@` lines, `\ No newline` hints and blank lines
/// are dropped;
/// a removed and an added line with the same text (trimmed) are a move and both left out.
/// Within the budget every other line is kept. Past it, changed lines are kept by BM25 score
/// against the intent's words (ties, and no intent, in their original order) while they fit,
/// then context lines next to kept ones while they fit; the kept lines stay in order.
pub fn shown(unified: &str, intent: Option<&str>, budget: usize) -> Shown {
    let (lines, notes) = parse(unified);
    let (lines, moved) = without_moves(lines);
    let total: usize = lines.iter().map(Line::cost).sum();
    let keep: Vec<bool> = if total <= budget { vec![true; lines.len()] } else { select(&lines, intent, budget) };
    let changed = |l: &Line| l.kind != Kind::Context;
    let hidden = lines.iter().zip(&keep).filter(|(l, k)| changed(l) && !**k).count();
    let text: Vec<String> = lines.iter().zip(&keep).filter(|(_, k)| **k).map(|(l, _)| l.rendered()).collect();
    Shown { lines: text.join("\n"), moved, hidden, notes }
}

/// The diff's lines, and its notes.
fn parse(unified: &str) -> (Vec<Line>, Vec<String>) {
    let has_hunks = unified.lines().any(|l| l.starts_with("@@"));
    let mut in_header = has_hunks;
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    for raw in unified.lines() {
        let raw = raw.trim_end_matches('\r');
        if raw.starts_with("@@") {
            in_header = false;
            continue;
        }
        if in_header || raw.starts_with("\\ ") {
            continue;
        }
        if raw.starts_with("[driftwatch:") {
            notes.push(crate::answer::cut(raw, MAX_LINE_CHARS));
            continue;
        }
        let (kind, text) = match raw.as_bytes().first() {
            Some(b'+') => (Kind::Added, &raw[1..]),
            Some(b'-') => (Kind::Removed, &raw[1..]),
            Some(b' ') => (Kind::Context, &raw[1..]),
            _ => (Kind::Context, raw),
        };
        if text.trim().is_empty() {
            // A blank line, added, removed or kept, tells the model nothing.
            continue;
        }
        lines.push(Line { kind, text: crate::answer::cut(text, MAX_LINE_CHARS) });
    }
    (lines, notes)
}

/// The lines without moves, and how many moves there were.
fn without_moves(lines: Vec<Line>) -> (Vec<Line>, usize) {
    let mut added: HashMap<&str, usize> = HashMap::new();
    let mut removed: HashMap<&str, usize> = HashMap::new();
    for line in &lines {
        match line.kind {
            Kind::Added => *added.entry(line.text.trim()).or_default() += 1,
            Kind::Removed => *removed.entry(line.text.trim()).or_default() += 1,
            Kind::Context => {}
        }
    }
    // How many of each text still to drop, on each side.
    let mut pairs: HashMap<String, (usize, usize)> = HashMap::new();
    let mut moved = 0;
    for (text, a) in &added {
        let n = (*a).min(removed.get(text).copied().unwrap_or(0));
        if n > 0 && !text.is_empty() {
            pairs.insert((*text).to_owned(), (n, n));
            moved += n;
        }
    }
    let kept = lines
        .into_iter()
        .filter(|line| {
            let Some((a, r)) = pairs.get_mut(line.text.trim()) else { return true };
            let left = match line.kind {
                Kind::Added => a,
                Kind::Removed => r,
                Kind::Context => return true,
            };
            if *left == 0 {
                return true;
            }
            *left -= 1;
            false
        })
        .collect();
    (kept, moved)
}

/// Which lines to keep within `budget`.
fn select(lines: &[Line], intent: Option<&str>, budget: usize) -> Vec<bool> {
    let changed: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].kind != Kind::Context).collect();
    let docs: Vec<Vec<String>> = changed.iter().map(|&i| tokens(&lines[i].text)).collect();
    let query: Vec<String> = intent.map(tokens).unwrap_or_default();
    let scores = bm25(&query, &docs);
    let mut ranked: Vec<usize> = (0..changed.len()).collect();
    // Stable: equal scores keep their original order.
    ranked.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    let mut keep = vec![false; lines.len()];
    let mut used = 0;
    let mut kept_changed = Vec::new();
    for r in ranked {
        let i = changed[r];
        if used + lines[i].cost() <= budget {
            used += lines[i].cost();
            keep[i] = true;
            kept_changed.push(i);
        }
    }
    for radius in 1..=CONTEXT_RADIUS {
        for &i in &kept_changed {
            for j in [i.checked_sub(radius), i.checked_add(radius)].into_iter().flatten() {
                let Some(line) = lines.get(j) else { continue };
                if line.kind == Kind::Context && !keep[j] && used + line.cost() <= budget {
                    used += line.cost();
                    keep[j] = true;
                }
            }
        }
    }
    keep
}

/// Lowercase words: runs of letters and digits.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The BM25 score of each document for the query (its distinct words).
pub(crate) fn bm25(query: &[String], docs: &[Vec<String>]) -> Vec<f64> {
    let n = docs.len() as f64;
    let avg = (docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0)).max(1.0);
    let mut terms: Vec<&String> = query.iter().collect();
    terms.sort();
    terms.dedup();
    let idf: Vec<f64> = terms
        .iter()
        .map(|t| {
            let df = docs.iter().filter(|d| d.contains(*t)).count() as f64;
            ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
        })
        .collect();
    docs.iter()
        .map(|doc| {
            let len = doc.len() as f64;
            terms
                .iter()
                .zip(&idf)
                .map(|(t, idf)| {
                    let tf = doc.iter().filter(|w| w == t).count() as f64;
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg))
                })
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_headers_and_hunk_lines_and_keeps_the_rest_in_order() {
        let unified = "--- a\n+++ b\n@@ -1,3 +1,3 @@\n Title\n-Price: 67 EUR\n+Price: 45 EUR\n--- not a header\n\\ No newline at end of file\n";
        let shown = shown(unified, Some("price drops"), 10_000);
        assert_eq!(shown.lines, " Title\n-Price: 67 EUR\n+Price: 45 EUR\n--- not a header");
        assert_eq!((shown.moved, shown.hidden), (0, 0));
        let plain = shown_plain("+only added\n-only removed");
        assert_eq!(plain.lines, "+only added\n-only removed");
    }

    fn shown_plain(unified: &str) -> Shown {
        shown(unified, None, 10_000)
    }

    #[test]
    fn moved_lines_are_left_out_and_counted() {
        let unified = "-Item A\n Header\n+\n- \n+Item A\n+Item A\n-Price: 3\n+  Price: 3  \n+Item B";
        let shown = shown_plain(unified);
        assert_eq!(shown.moved, 2);
        assert_eq!(shown.lines, " Header\n+Item A\n+Item B");
    }

    #[test]
    fn past_the_budget_the_lines_relevant_to_the_intent_are_kept() {
        let mut unified = String::new();
        for i in 0..40 {
            unified.push_str(&format!(" context {i}\n+Newsletter item number {i}\n"));
        }
        unified.push_str(" Shipping\n-Price: 67 EUR\n+Price: 45 EUR\n Footer\n");
        let shown = shown(&unified, Some("Tell me when the PRICE drops below 50"), 80);
        let lines: Vec<&str> = shown.lines.lines().collect();
        // The price lines rank first; the first newsletter line fits the room left, the
        // context next to kept lines fills what remains.
        assert_eq!(
            lines,
            ["+Newsletter item number 0", " Shipping", "-Price: 67 EUR", "+Price: 45 EUR", " Footer"],
            "{lines:?}"
        );
        assert!(shown.lines.chars().count() <= 80);
        assert_eq!(shown.hidden, 39);
    }

    #[test]
    fn without_an_intent_the_first_changed_lines_are_kept_then_context() {
        let unified = " a\n+one\n b\n+two\n c\n+three";
        let shown = shown(unified, None, 14);
        assert_eq!(shown.lines, " a\n+one\n+two", "changed lines first, then context while it fits");
        assert_eq!(shown.hidden, 1);
    }

    #[test]
    fn long_lines_are_cut_and_notes_kept() {
        let long = "x".repeat(MAX_LINE_CHARS + 50);
        let shown = shown_plain(&format!("+{long}\n[driftwatch: the diff was cut at 10 bytes]"));
        assert_eq!(shown.lines.chars().count(), 1 + MAX_LINE_CHARS + 1);
        assert!(shown.lines.ends_with('…'));
        assert_eq!(shown.notes, ["[driftwatch: the diff was cut at 10 bytes]"]);
    }

    #[test]
    fn bm25_prefers_rare_matching_words_in_short_lines() {
        let docs: Vec<Vec<String>> = ["price 45 eur", "the price of shipping is unchanged today", "stock low"]
            .iter()
            .map(|d| tokens(d))
            .collect();
        let scores = bm25(&tokens("Price drops"), &docs);
        assert!(scores[0] > scores[1] && scores[1] > scores[2], "{scores:?}");
        assert_eq!(scores[2], 0.0);
        assert_eq!(bm25(&[], &docs), vec![0.0; 3]);
        assert_eq!(tokens("Größe: 45,90 €!"), ["größe", "45", "90"]);
    }
}

//! A diff laid out for pages: inline (one column, +/- lines) and side by side (old | new),
//! with the changed words of a line marked.

use driftwatch_diff::{LineOp, TextChange};

/// A piece of a line; `changed` pieces are highlighted.
#[derive(Debug, Clone)]
pub struct Piece {
    /// Highlight it.
    pub changed: bool,
    /// The text.
    pub text: String,
}

/// One line of either layout.
#[derive(Debug, Clone)]
pub struct Line {
    /// `context`, `added` or `removed` (the CSS class).
    pub op: &'static str,
    /// `+`, `-` or a space.
    pub sign: &'static str,
    /// Line number in its version (old for removed, new otherwise).
    pub number: usize,
    /// The line, in pieces.
    pub pieces: Vec<Piece>,
}

/// A row of the side-by-side layout; a side is `None` where that version has no line.
#[derive(Debug, Clone)]
pub struct Row {
    /// The old version's line.
    pub left: Option<Line>,
    /// The new version's line.
    pub right: Option<Line>,
}

/// One hunk in both layouts.
#[derive(Debug, Clone)]
pub struct Block {
    /// `@@ -3,4 +3,5 @@`.
    pub header: String,
    /// Inline lines.
    pub lines: Vec<Line>,
    /// Side-by-side rows.
    pub rows: Vec<Row>,
}

/// Lays out `change` for a page.
pub fn blocks(change: &TextChange) -> Vec<Block> {
    change
        .hunks
        .iter()
        .map(|hunk| {
            let (mut old, mut new) = (hunk.old_start, hunk.new_start);
            let mut lines = Vec::with_capacity(hunk.lines.len());
            for line in &hunk.lines {
                let pieces = if line.words.is_empty() {
                    vec![Piece { changed: false, text: line.text.clone() }]
                } else {
                    line.words.iter().map(|w| Piece { changed: w.changed, text: w.text.clone() }).collect()
                };
                let (op, sign, number) = match line.op {
                    LineOp::Context => {
                        old += 1;
                        new += 1;
                        ("context", " ", new - 1)
                    }
                    LineOp::Removed => {
                        old += 1;
                        ("removed", "-", old - 1)
                    }
                    LineOp::Added => {
                        new += 1;
                        ("added", "+", new - 1)
                    }
                };
                lines.push(Line { op, sign, number, pieces });
            }
            let rows = side_by_side(&lines);
            Block {
                header: format!("@@ -{},{} +{},{} @@", hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines),
                lines,
                rows,
            }
        })
        .collect()
}

/// Pairs each run of removed lines with the added lines that follow it.
fn side_by_side(lines: &[Line]) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].op == "context" {
            rows.push(Row { left: Some(lines[i].clone()), right: Some(lines[i].clone()) });
            i += 1;
            continue;
        }
        let removed: Vec<&Line> = lines[i..].iter().take_while(|l| l.op == "removed").collect();
        i += removed.len();
        let added: Vec<&Line> = lines[i..].iter().take_while(|l| l.op == "added").collect();
        i += added.len();
        for k in 0..removed.len().max(added.len()) {
            rows.push(Row { left: removed.get(k).map(|l| (*l).clone()), right: added.get(k).map(|l| (*l).clone()) });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_line_pairs_up_with_its_changed_word_marked() {
        let change = driftwatch_diff::diff_texts("Title\nPro: $10\nEnd\n", "Title\nPro: $12\nEnd\n", "a", "b");
        let blocks = blocks(&change);
        assert_eq!(blocks.len(), 1);
        let rows = &blocks[0].rows;
        let changed = rows.iter().find(|r| r.left.as_ref().is_some_and(|l| l.op == "removed")).expect("a pair");
        let right = changed.right.as_ref().expect("the new line beside it");
        assert_eq!(right.op, "added");
        let marked: Vec<&str> = right.pieces.iter().filter(|p| p.changed).map(|p| p.text.as_str()).collect();
        assert!(marked.concat().contains("12"), "{marked:?}");
        assert!(!marked.concat().contains("Pro"), "{marked:?}");
        assert_eq!(right.number, 2);
        assert_eq!(blocks[0].lines.iter().filter(|l| l.op != "context").count(), 2);
    }
}

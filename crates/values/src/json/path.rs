//! JSONPath (RFC 9535) through `serde_json_path`, with the few shapes refused whose cost grows
//! faster than the page.
//!
//! A query costs about one pass over the nodes it visits, except where a filter (`?...`) runs a
//! query of its own for each candidate node: a relative descendant query (`@..x`) there costs the
//! candidate's subtree (at most the page times its depth), but an absolute one (`$..x`) costs the
//! whole page per candidate, and descendant queries in nested filters multiply again. Those are
//! refused, as are very long or deeply nested queries (the parser recurses).

use serde_json_path::JsonPath;

use super::{QueryError, column_of};

/// Longest JSONPath query, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// Deepest nesting of brackets and parentheses in a JSONPath query.
pub const MAX_NESTING: usize = 32;

pub(super) fn compile(q: &str) -> Result<JsonPath, QueryError> {
    if q.len() > MAX_QUERY_BYTES {
        return Err(QueryError::new(format!("a JSONPath query is at most {MAX_QUERY_BYTES} bytes"), None));
    }
    check_cost(q)?;
    JsonPath::parse(q).map_err(|e| {
        let message = format!("not a JSONPath query (RFC 9535): {}", e.message());
        QueryError::new(message, Some(column_of(q, e.position())))
    })
}

#[derive(Clone, Copy)]
struct Open {
    /// `[` (else `(`).
    bracket: bool,
    /// A filter selector started in this bracket.
    filter: bool,
    /// The root of the query this bracket is part of, restored when it closes.
    root: Option<char>,
}

/// Refuses the shapes described in the module docs, by a scan that skips string literals. It
/// errs on the side of refusing: a refused query can be written another way.
fn check_cost(q: &str) -> Result<(), QueryError> {
    let mut stack: Vec<Open> = Vec::new();
    // `$` or `@`: the root of the query being read.
    let mut root: Option<char> = None;
    let mut chars = q.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let filters = stack.iter().filter(|o| o.bracket && o.filter).count();
        match c {
            '\'' | '"' => {
                // A string literal: skip to its closing quote.
                while let Some((_, d)) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == c {
                        break;
                    }
                }
            }
            '$' | '@' => root = Some(c),
            '[' | '(' => {
                if stack.len() >= MAX_NESTING {
                    return Err(QueryError::at(
                        format!("a JSONPath query nests brackets at most {MAX_NESTING} deep"),
                        q,
                        i,
                    ));
                }
                stack.push(Open { bracket: c == '[', filter: false, root });
                if c == '(' {
                    root = None;
                }
            }
            ']' | ')' => {
                if let Some(open) = stack.pop() {
                    root = open.root;
                }
            }
            '?' => {
                if let Some(top) = stack.last_mut().filter(|o| o.bracket) {
                    top.filter = true;
                }
                root = None;
            }
            '.' if chars.peek().is_some_and(|(_, d)| *d == '.') => {
                chars.next();
                if filters >= 1 && root == Some('$') {
                    return Err(QueryError::at(
                        "a filter may not search the whole document (\"$..\"): it would run once per candidate node",
                        q,
                        i,
                    ));
                }
                if filters >= 2 {
                    return Err(QueryError::at(
                        "a descendant search (\"..\") inside a nested filter is too costly",
                        q,
                        i,
                    ));
                }
            }
            ',' | '=' | '!' | '<' | '>' | '&' | '|' if filters >= 1 => root = None,
            _ => {}
        }
    }
    Ok(())
}

//! JSON Pointer (RFC 6901), JSONPath (RFC 9535) and jq over a JSON page, bounded.
//!
//! A [`JsonQuery`] is compiled once (when a watch is saved, and once per check) and read with
//! [`JsonQuery::first`]. Pointers and JSONPath cost at most a few passes over the page. jq is a
//! language that can loop and build values, so a jq program runs under [`JqLimits`] on a thread
//! of its own: see [`jq`] for what is bounded and how.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

pub mod jq;
mod path;

#[cfg(test)]
mod tests;

pub use jq::JqProgram;

/// A compiled query over a JSON page. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub enum JsonQuery {
    /// A JSON Pointer (RFC 6901), checked: `""` or `/`-separated tokens with `~0`/`~1` escapes.
    Pointer(String),
    /// A JSONPath query (RFC 9535), compiled.
    Path(serde_json_path::JsonPath),
    /// A jq program, compiled with jaq's standard library.
    Jq(JqProgram),
}

impl fmt::Debug for JsonQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonQuery::Pointer(p) => f.debug_tuple("Pointer").field(p).finish(),
            JsonQuery::Path(p) => f.debug_tuple("Path").field(&p.to_string()).finish(),
            JsonQuery::Jq(p) => f.debug_tuple("Jq").field(&p.source()).finish(),
        }
    }
}

/// Why a query does not compile: a sentence for a user; `column` (1-based, in the query) when
/// the parser says where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct QueryError {
    /// What is wrong, as a sentence (without the column).
    pub message: String,
    /// Where, in characters from 1, when known.
    pub column: Option<usize>,
}

impl QueryError {
    pub(crate) fn new(message: impl Into<String>, column: Option<usize>) -> QueryError {
        QueryError { message: message.into(), column }
    }

    /// An error at byte offset `at` of `query`.
    pub(crate) fn at(message: impl Into<String>, query: &str, at: usize) -> QueryError {
        QueryError::new(message, Some(column_of(query, at)))
    }
}

/// The 1-based character column of byte offset `at` in `text` (clamped to the end).
pub(crate) fn column_of(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    text.char_indices().take_while(|(i, _)| *i < at).count() + 1
}

/// Bounds of one jq run. `max_steps` is the bound a program meets: it counts the same on any
/// machine, however loaded. `time` is only the safety net behind it, for steps that cost more
/// than they should; nothing should rely on which program it stops.
#[derive(Debug, Clone, Copy)]
pub struct JqLimits {
    /// Steps of one run (default [`JqLimits::STEPS`]): each call of a definition, element of a
    /// loop, `reduce` or `foreach` iteration, binding and `range` output is one.
    pub max_steps: u64,
    /// Wall time of one run (default 1 s), from when the page has been converted to jaq's
    /// values (which is linear in its size): the safety net behind `max_steps`.
    pub time: Duration,
    /// Most outputs a run may yield to a caller that reads them all (default 10 000);
    /// [`JsonQuery::first`] reads one.
    pub max_outputs: usize,
    /// Largest output, as compact JSON text (default 1 MiB).
    pub max_output_bytes: usize,
}

impl JqLimits {
    /// Steps a run may take by default: a few tens of milliseconds of an idle core.
    pub const STEPS: u64 = 1_000_000;
}

impl Default for JqLimits {
    fn default() -> JqLimits {
        JqLimits {
            max_steps: JqLimits::STEPS,
            time: Duration::from_secs(1),
            max_outputs: 10_000,
            max_output_bytes: 1 << 20,
        }
    }
}

impl JsonQuery {
    /// A JSON Pointer: `""` (the whole document) or tokens each after a `/`, where `~` only
    /// escapes (`~0` is `~`, `~1` is `/`).
    pub fn pointer(p: &str) -> Result<JsonQuery, QueryError> {
        if !p.is_empty() && !p.starts_with('/') {
            return Err(QueryError::new("a JSON Pointer is empty or starts with \"/\"", Some(1)));
        }
        let mut chars = p.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '~' && !matches!(chars.peek(), Some((_, '0' | '1'))) {
                return Err(QueryError::at(
                    "\"~\" in a JSON Pointer must be followed by 0 (for \"~\") or 1 (for \"/\")",
                    p,
                    i,
                ));
            }
        }
        Ok(JsonQuery::Pointer(p.to_owned()))
    }

    /// A JSONPath query (RFC 9535), such as `$.items[?@.sku=='A1'].price`.
    pub fn jsonpath(q: &str) -> Result<JsonQuery, QueryError> {
        path::compile(q).map(JsonQuery::Path)
    }

    /// A jq program, compiled with jaq's standard library, less whatever reads outside the
    /// value it is given (`input`, `inputs`, `$ENV`, `env`, modules) or acts on the process
    /// (`halt` fails; `debug` and `stderr` pass their input through and print nothing).
    pub fn jq(program: &str) -> Result<JsonQuery, QueryError> {
        JqProgram::compile(program).map(JsonQuery::Jq)
    }

    /// The first result on `value` (the first node for JSONPath, the first output for jq), or
    /// None when there is none. A jq program that fails, or runs past `limits`, is an `Err`
    /// with a sentence.
    pub fn first(&self, value: &Value, limits: &JqLimits) -> Result<Option<Value>, String> {
        match self {
            JsonQuery::Pointer(p) => Ok(value.pointer(p).cloned()),
            JsonQuery::Path(q) => Ok(q.query(value).first().cloned()),
            JsonQuery::Jq(program) => program.first(value, limits),
        }
    }
}

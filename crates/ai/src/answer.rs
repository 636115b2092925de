//! Reading a model's answer.

use serde_json::{Map, Value};

/// A model's verdict on one change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    /// Whether the change matters for the intent (meaningless without one).
    pub important: bool,
    /// Why, in a sentence or two.
    pub reason: String,
    /// What changed, in a sentence or two.
    pub summary: String,
}

/// Why an answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// Nothing (or only a `<think>` block) was answered.
    #[error("the model answered nothing")]
    Empty,
    /// No JSON object with the three fields was found.
    #[error("the model's answer is not the JSON asked for: {0}")]
    Garbage(String),
}

/// The most characters kept of `reason` and of `summary` (an ellipsis marks a cut).
pub const MAX_FIELD_CHARS: usize = 2_000;

/// How many `{` a search for an object in prose tries before giving up (bounds the work on
/// large answers: each try scans at most the rest of the text once).
const MAX_OBJECT_TRIES: usize = 8;

/// Reads the message content of a chat completion: JSON, JSON in a ```json fence, or either
/// after a `<think>...</think>` block.
///
/// Also: one JSON object with prose before or after it; a `</think>` without its opening tag
/// (some servers strip it); `important` as a boolean or as `"true"`/`"false"`/`"yes"`/`"no"`.
/// A missing `reason` or `summary` reads as empty; a missing `important` is
/// [`AnswerError::Garbage`]. An unclosed `<think>` is [`AnswerError::Empty`]. `reason` and
/// `summary` are trimmed and cut at [`MAX_FIELD_CHARS`].
pub fn parse_content(content: &str) -> Result<Answer, AnswerError> {
    let text = after_think(content.trim())?.trim();
    if text.is_empty() {
        return Err(AnswerError::Empty);
    }
    let object = find_object(text).ok_or_else(|| AnswerError::Garbage(describe("no JSON object", text)))?;
    from_object(&object)
}

/// What follows the reasoning block, if any.
fn after_think(text: &str) -> Result<&str, AnswerError> {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    if let Some(rest) = text.strip_prefix(OPEN) {
        return match rest.find(CLOSE) {
            Some(at) => Ok(&rest[at + CLOSE.len()..]),
            None => Err(AnswerError::Empty),
        };
    }
    Ok(text.rfind(CLOSE).map_or(text, |at| &text[at + CLOSE.len()..]))
}

/// The first JSON object found: the whole text, a fenced block's, or a balanced `{…}` in prose.
fn find_object(text: &str) -> Option<Map<String, Value>> {
    if let Some(object) = as_object(text) {
        return Some(object);
    }
    if let Some(object) = fenced(text).and_then(as_object) {
        return Some(object);
    }
    let mut from = 0;
    for _ in 0..MAX_OBJECT_TRIES {
        let start = from + text[from..].find('{')?;
        if let Some(end) = balanced_end(&text[start..])
            && let Some(object) = as_object(&text[start..start + end])
        {
            return Some(object);
        }
        from = start + 1;
    }
    None
}

fn as_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

/// The inside of the first ``` fence (its info string, `json` say, left out); an unclosed
/// fence runs to the end.
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")? + 3;
    let rest = &text[start..];
    let body = rest.find('\n').map_or("", |nl| &rest[nl + 1..]);
    Some(body.find("```").map_or(body, |end| &body[..end]))
}

/// The length of the balanced `{…}` `text` starts with, strings and escapes respected.
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (at, byte) in text.bytes().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The answer an object holds.
fn from_object(object: &Map<String, Value>) -> Result<Answer, AnswerError> {
    let important = match object.get("important") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => true,
            "false" | "no" => false,
            _ => return Err(AnswerError::Garbage(describe("`important` is neither true nor false", s))),
        },
        Some(other) => {
            return Err(AnswerError::Garbage(format!("`important` is {}, not a boolean", kind(other))));
        }
        None => return Err(AnswerError::Garbage("the object has no `important`".to_owned())),
    };
    Ok(Answer { important, reason: field(object, "reason"), summary: field(object, "summary") })
}

/// A text field, trimmed and bounded; empty when missing or not text.
fn field(object: &Map<String, Value>, name: &str) -> String {
    match object.get(name) {
        Some(Value::String(s)) => cut(s.trim(), MAX_FIELD_CHARS),
        _ => String::new(),
    }
}

/// At most `max` characters of `text`, an ellipsis marking a cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `what`, and how the text starts (its first 60 characters).
fn describe(what: &str, text: &str) -> String {
    let start = cut(&text.replace(['\n', '\r'], " "), 60);
    format!("{what} in {} characters starting “{start}”", text.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(important: bool, reason: &str, summary: &str) -> Result<Answer, AnswerError> {
        Ok(Answer { important, reason: reason.to_owned(), summary: summary.to_owned() })
    }

    #[test]
    fn reads_plain_fenced_and_thought_json() {
        let plain = r#"{"important": true, "reason": "It dropped to 45.", "summary": "67 → 45 EUR."}"#;
        let expected = answer(true, "It dropped to 45.", "67 → 45 EUR.");
        assert_eq!(parse_content(plain), expected);
        assert_eq!(parse_content(&format!("```json\n{plain}\n```")), expected);
        assert_eq!(parse_content(&format!("```\n{plain}\n```")), expected);
        assert_eq!(parse_content(&format!("<think>\nhmm {{ not json }}\n</think>\n\n{plain}")), expected);
        assert_eq!(parse_content(&format!("<think>a</think>```json\n{plain}\n```")), expected);
        assert_eq!(parse_content(&format!("okay</think>{plain}")), expected, "a stripped opening tag");
        assert_eq!(parse_content(&format!("Here is my verdict:\n{plain}\nHope this helps {{:")), expected);
        assert_eq!(parse_content(&format!("{{not this}} but {plain}")), expected);
    }

    #[test]
    fn reads_loose_fields() {
        assert_eq!(parse_content(r#"{"important": "Yes", "reason": "  r  "}"#), answer(true, "r", ""));
        assert_eq!(parse_content(r#"{"important": "false", "summary": 3}"#), answer(false, "", ""));
        assert_eq!(
            parse_content(r#"{"important": "no", "reason": "a } in \"quotes\" {"}"#),
            answer(false, "a } in \"quotes\" {", "")
        );
        let long = "x".repeat(MAX_FIELD_CHARS + 10);
        let parsed = parse_content(&format!(r#"{{"important": false, "reason": "{long}"}}"#)).expect("parsed");
        assert_eq!(parsed.reason.chars().count(), MAX_FIELD_CHARS + 1);
        assert!(parsed.reason.ends_with('…'));
    }

    #[test]
    fn refuses_what_is_not_a_verdict() {
        assert_eq!(parse_content(""), Err(AnswerError::Empty));
        assert_eq!(parse_content("  \n "), Err(AnswerError::Empty));
        assert_eq!(parse_content("<think>\nstill thinking about {\"important\": true}"), Err(AnswerError::Empty));
        assert_eq!(parse_content("<think>done</think>\n\n"), Err(AnswerError::Empty));
        for garbage in [
            "The price dropped.",
            r#"{"reason": "no verdict"}"#,
            r#"{"important": "maybe"}"#,
            r#"{"important": 1}"#,
            r#"{"important": true, "reason": "cut sho"#,
        ] {
            assert!(matches!(parse_content(garbage), Err(AnswerError::Garbage(_))), "{garbage}");
        }
    }

    #[test]
    fn large_answers_are_read_in_bounded_work() {
        let braces = "{".repeat(200_000);
        assert!(matches!(parse_content(&braces), Err(AnswerError::Garbage(_))));
        let prose = format!("{}{}", "word ".repeat(200_000), r#"{"important": true}"#);
        assert_eq!(parse_content(&prose), answer(true, "", ""));
    }
}

//! Endpoint templates: MiniJinja with no loader (no file or network access), strict about
//! undefined names, bounded in work (fuel) and in output.
//!
//! A template is checked when it is saved ([`check`]): its syntax, every variable it reads
//! against the documented ones, and a trial render against a sample event; each refusal
//! carries a line and column. At enqueue it is rendered ([`render`]); a failure then is an
//! error string the outbox dead-letters the delivery with.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use minijinja::{Environment, UndefinedBehavior};

use crate::context::Context;

/// Most bytes a template's source may have.
pub const MAX_SOURCE: usize = 16 * 1024;
/// Most bytes a render may produce.
pub const MAX_OUTPUT: usize = 64 * 1024;
/// Instructions a render may run before it is stopped (a loop over a big diff takes a few
/// thousand; this stops a runaway one in a few milliseconds).
const FUEL: u64 = 200_000;

/// The variables a template may read (dotted paths; `diff.lines` items are `op`, `text`,
/// `words`; `digest.items` items are `id`, `type`, `time`, `watch`, `link`, `summary`, `added`,
/// `removed`, `added_lines`, `removed_lines`; `digest.watches` items are `id`, `name`, `url`,
/// `link`, `count`, `items`).
pub const VARIABLES: &[&str] = &[
    "event",
    "event.id",
    "event.type",
    "event.time",
    "watch",
    "watch.id",
    "watch.name",
    "watch.url",
    "watch.tags",
    "diff",
    "diff.added",
    "diff.removed",
    "diff.unified",
    "diff.lines",
    "diff.added_lines",
    "diff.removed_lines",
    "check",
    "check.error",
    "check.http_status",
    "check.consecutive_failures",
    "expectation",
    "expectation.kind",
    "expectation.rule",
    "expectation.holds",
    "expectation.deadline",
    "expectation.last_change",
    "expectation.reasons",
    "expectation.snapshot",
    "digest",
    "digest.count",
    "digest.omitted",
    "digest.period_start",
    "digest.period_end",
    "digest.summary",
    "digest.items",
    "digest.watches",
    "endpoint",
    "endpoint.id",
    "endpoint.url",
    "endpoint.reason",
    "link",
    "summary",
    "payload",
];

/// Why a template was refused, with where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct TemplateError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

static ENV: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(64);
    env
});

/// Checks a template for saving: it parses, reads only documented variables (or its own
/// loop and `set` names), and renders against `sample` within the limits.
pub fn check(source: &str, sample: &Context) -> Result<(), TemplateError> {
    if source.len() > MAX_SOURCE {
        return Err(TemplateError { line: 1, column: 1, message: format!("longer than {MAX_SOURCE} bytes") });
    }
    let template = ENV.template_from_str(source).map_err(|e| located(source, &e))?;
    let known: BTreeSet<&str> = VARIABLES.iter().copied().collect();
    let unknown = template
        .undeclared_variables(true)
        .into_iter()
        .filter(|name| !known.contains(name.as_str()) && !name.starts_with("payload."))
        .min();
    if let Some(name) = unknown {
        let (line, column) = find(source, &name);
        let hint = match closest(&name) {
            Some(near) => format!("did you mean `{near}`?"),
            None => "see the list of variables".to_owned(),
        };
        return Err(TemplateError { line, column, message: format!("unknown variable `{name}`: {hint}") });
    }
    render_with(source, sample).map(|_| ()).map_err(|e| e.located)
}

/// The documented variable nearest `name` (at most two edits away).
fn closest(name: &str) -> Option<&'static str> {
    VARIABLES.iter().map(|v| (edits(name, v), *v)).filter(|(d, _)| *d <= 2).min().map(|(_, v)| v)
}

/// Levenshtein distance.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb { previous } else { 1 + previous.min(row[j]).min(current) };
            previous = current;
        }
    }
    row[b.len()]
}

/// Renders `source` for one event: the output, or why not (for the delivery's dead letter).
pub fn render(source: &str, context: &Context) -> Result<String, String> {
    render_with(source, context).map_err(|e| e.located.to_string())
}

struct RenderError {
    located: TemplateError,
}

fn render_with(source: &str, context: &Context) -> Result<String, RenderError> {
    let wrap = |e: minijinja::Error| RenderError { located: located(source, &e) };
    let template = ENV.template_from_str(source).map_err(wrap)?;
    let out = template.render(minijinja::value::Serde(context)).map_err(wrap)?;
    if out.len() > MAX_OUTPUT {
        return Err(RenderError {
            located: TemplateError {
                line: 1,
                column: 1,
                message: format!("renders {} bytes, more than {MAX_OUTPUT}", out.len()),
            },
        });
    }
    Ok(out)
}

/// The error's line and column in `source`, and its message without MiniJinja's own
/// "(in <string>:N)" suffix.
fn located(source: &str, e: &minijinja::Error) -> TemplateError {
    let message = match e.detail() {
        Some(detail) => format!("{}: {detail}", kind_words(e.kind())),
        None => kind_words(e.kind()).to_owned(),
    };
    if let Some(range) = e.range() {
        let (line, column) = line_column(source, range.start);
        return TemplateError { line, column, message };
    }
    let line = e.line().unwrap_or(1);
    TemplateError { line, column: 1, message }
}

fn kind_words(kind: minijinja::ErrorKind) -> &'static str {
    use minijinja::ErrorKind as K;
    match kind {
        K::SyntaxError => "syntax error",
        K::UndefinedError => "undefined value",
        K::InvalidOperation => "invalid operation",
        K::UnknownFilter => "unknown filter",
        K::UnknownTest => "unknown test",
        K::UnknownFunction => "unknown function",
        K::UnknownMethod => "unknown method",
        K::TooManyArguments | K::MissingArgument => "wrong arguments",
        K::OutOfFuel => "the template did too much work",
        K::BadEscape => "bad escape",
        _ => "template error",
    }
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..crate::context::char_floor(source, offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Where a dotted variable first appears (its first segment, for names split by spaces).
fn find(source: &str, name: &str) -> (usize, usize) {
    let at = source.find(name).or_else(|| name.split('.').next().and_then(|head| source.find(head)));
    at.map_or((1, 1), |offset| line_column(source, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Context {
        Context::sample(None)
    }

    #[test]
    fn renders_the_documented_variables() {
        let out = render(
            "{{ watch.name }} [{{ watch.tags|join(',') }}] +{{ diff.added }}\n{% for l in diff.lines %}{% if l.op != 'context' %}{{ l.op }}:{{ l.text }}\n{% endif %}{% endfor %}",
            &sample(),
        )
        .expect("renders");
        assert!(out.starts_with("Coffee shop [shop] +2\n"), "{out}");
        assert!(out.contains("removed:Price: 129.00 EUR"), "{out}");
        assert!(out.contains("added:Free delivery"), "{out}");
        let json = render("{{ payload|tojson }}", &sample()).expect("json");
        assert!(json.contains("\"change.detected\""), "{json}");
    }

    #[test]
    fn refuses_syntax_errors_with_line_and_column() {
        let e = check("Hello\n{{ watch.name }\n", &sample()).expect_err("syntax");
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.starts_with("syntax error"), "{e}");
        let e = check("{% for x in diff.lines %}", &sample()).expect_err("unclosed");
        assert!(e.message.contains("syntax error"), "{e}");
    }

    #[test]
    fn refuses_unknown_variables_where_they_are() {
        let e = check("ok\n  {{ watch.nmae }}", &sample()).expect_err("typo");
        assert_eq!((e.line, e.column), (2, 6), "{e}");
        assert!(e.message.contains("`watch.nmae`: did you mean `watch.name`?"), "{e}");
        let e = check("{{ wacth }}", &sample()).expect_err("unknown top level");
        assert!(e.message.contains("`wacth`"), "{e}");
        check("{% for l in diff.lines %}{{ l.text }}{% endfor %}{% set n = 1 %}{{ n }}", &sample())
            .expect("loop and set names are the template's own");
        check("{{ payload.data.watch.id }}", &sample()).expect("payload paths are free");
    }

    #[test]
    fn runaway_templates_are_stopped() {
        let e = check("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", &sample())
            .expect_err("fuel");
        assert!(e.message.contains("too much work") || e.message.contains("range"), "{e}");
        let e = render("{{ 'x' * 100000 }}", &sample()).expect_err("output cap");
        assert!(e.contains("more than"), "{e}");
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        let e = render("{{ payload.nope.deeper }}", &sample()).expect_err("undefined");
        assert!(e.starts_with("line 1, column 11: undefined value"), "{e}");
        let e = render("{{ diff.added // 0 }}", &sample()).expect_err("division");
        assert!(e.contains("invalid operation"), "{e}");
    }
}

//! Line rules over extracted text, applied in the order documented on [`TextRules`].

use driftwatch_core::TextRules;
use regex::Regex;

/// A rule that does not compile; `field` names it (`rules.ignore_lines[1]`, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct RuleError {
    /// The rule at fault.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// The built-in masks for volatile tokens, and what replaces them.
const PRESETS: &[(&str, &str, &str)] = &[
    (
        "dates",
        r"(?i)\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{4}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+\d{4}\b",
        "<date>",
    ),
    ("times", r"(?i)\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?\b", "<time>"),
    ("uuids", r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>"),
    ("hex_ids", r"(?i)\b[0-9a-f]{16,}\b", "<id>"),
    ("numbers", r"\b\d+(?:[.,]\d+)*\b", "<n>"),
];

/// Compiled line rules.
#[derive(Debug, Clone)]
pub struct Rules {
    ignore: Vec<Regex>,
    extract: Option<Regex>,
    keep: Vec<String>,
    masks: Vec<(Regex, &'static str)>,
    sort: bool,
    unique: bool,
}

fn compile(field: String, pattern: &str) -> Result<Regex, RuleError> {
    driftwatch_core::compiled_regex(pattern).map_err(|e| RuleError { field, message: format!("invalid regex: {e}") })
}

impl Rules {
    /// Compiles the rules; an invalid regex or unknown preset names its field.
    pub fn new(spec: &TextRules) -> Result<Rules, RuleError> {
        let ignore = spec
            .ignore_lines
            .iter()
            .enumerate()
            .map(|(i, p)| compile(format!("rules.ignore_lines[{i}]"), p))
            .collect::<Result<_, _>>()?;
        let extract = spec.extract_regex.as_deref().map(|p| compile("rules.extract_regex".into(), p)).transpose()?;
        let keep = spec.keep_lines_containing.iter().map(|k| k.to_lowercase()).collect();
        let masks = spec
            .masks
            .iter()
            .enumerate()
            .map(|(i, mask)| match PRESETS.iter().find(|(name, _, _)| name == mask) {
                Some((_, pattern, placeholder)) => {
                    compile(format!("rules.masks[{i}]"), pattern).map(|r| (r, *placeholder))
                }
                None => compile(format!("rules.masks[{i}]"), mask).map(|r| (r, "<masked>")),
            })
            .collect::<Result<_, _>>()?;
        Ok(Rules { ignore, extract, keep, masks, sort: spec.sort_lines, unique: spec.unique_lines })
    }

    /// Applies the rules to normalised text (one item per line, ending with a newline).
    pub fn apply(&self, text: &str) -> String {
        let mut lines: Vec<String> =
            text.lines().filter(|line| !self.ignore.iter().any(|r| r.is_match(line))).map(str::to_owned).collect();
        if let Some(extract) = &self.extract {
            lines = lines
                .iter()
                .flat_map(|line| {
                    extract
                        .captures_iter(line)
                        .filter_map(|c| c.get(1).or_else(|| c.get(0)).map(|m| m.as_str().trim().to_owned()))
                        .collect::<Vec<_>>()
                })
                .filter(|m| !m.is_empty())
                .collect();
        }
        if !self.keep.is_empty() {
            lines.retain(|line| {
                let lower = line.to_lowercase();
                self.keep.iter().any(|k| lower.contains(k))
            });
        }
        for (mask, placeholder) in &self.masks {
            for line in &mut lines {
                if mask.is_match(line) {
                    *line = mask.replace_all(line, *placeholder).into_owned();
                }
            }
        }
        if self.sort {
            lines.sort();
        }
        if self.unique {
            let mut seen = std::collections::HashSet::new();
            lines.retain(|line| seen.insert(line.clone()));
        }
        lines.into_iter().fold(String::new(), |mut out, line| {
            out.push_str(&line);
            out.push('\n');
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &str, rules: TextRules, expected: &str) {
        let compiled = Rules::new(&rules).expect("rules compile");
        assert_eq!(compiled.apply(input), expected, "rules {rules:?}");
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_rule() {
        let text = "Price: 10 EUR\nVisitors: 1234\nUpdated 2026-12-02 14:05\nPrice: 12 EUR\n";
        check(text, TextRules::default(), text);
        check(
            text,
            TextRules { ignore_lines: strings(&["^Visitors", "(?i)updated"]), ..Default::default() },
            "Price: 10 EUR\nPrice: 12 EUR\n",
        );
        check(text, TextRules { extract_regex: Some(r"Price: (\d+)".into()), ..Default::default() }, "10\n12\n");
        check(
            text,
            TextRules { keep_lines_containing: strings(&["PRICE"]), ..Default::default() },
            "Price: 10 EUR\nPrice: 12 EUR\n",
        );
        check(
            text,
            TextRules { masks: strings(&["dates", "times"]), ..Default::default() },
            "Price: 10 EUR\nVisitors: 1234\nUpdated <date> <time>\nPrice: 12 EUR\n",
        );
        check(
            text,
            TextRules { masks: strings(&["numbers"]), ..Default::default() },
            "Price: <n> EUR\nVisitors: <n>\nUpdated <n>-<n>-<n> <n>:<n>\nPrice: <n> EUR\n",
        );
        check("b\na\nb\n", TextRules { sort_lines: true, ..Default::default() }, "a\nb\nb\n");
        check("b\na\nb\n", TextRules { unique_lines: true, ..Default::default() }, "b\na\n");
        check(
            "session 5f1e2d3c4b5a69788796a5b4 ok\n",
            TextRules { masks: strings(&["hex_ids", r"ok$"]), ..Default::default() },
            "session <id> <masked>\n",
        );
        check(
            "id 123e4567-e89b-12d3-a456-426614174000\n",
            TextRules { masks: strings(&["uuids"]), ..Default::default() },
            "id <uuid>\n",
        );
        check(
            "On Dec 2, 2026 at 3:04 pm\n",
            TextRules { masks: strings(&["dates", "times"]), ..Default::default() },
            "On <date> at <time>\n",
        );
    }

    #[test]
    fn rules_apply_in_the_documented_order() {
        // ignore -> extract -> keep -> masks -> sort -> unique
        let rules = TextRules {
            ignore_lines: strings(&["draft"]),
            extract_regex: Some(r"item: (.+)".into()),
            keep_lines_containing: strings(&["apple", "pear"]),
            masks: strings(&["numbers"]),
            sort_lines: true,
            unique_lines: true,
        };
        check(
            "item: pear 2\nitem: apple 1 draft\nitem: apple 3\nitem: plum 1\nitem: pear 5\n",
            rules,
            "apple <n>\npear <n>\n",
        );
    }

    #[test]
    fn bad_rules_name_their_field() {
        let err = Rules::new(&TextRules { ignore_lines: strings(&["ok", "(unclosed"]), ..Default::default() })
            .expect_err("bad");
        assert_eq!(err.field, "rules.ignore_lines[1]");
        let err = Rules::new(&TextRules { masks: strings(&["[z-a]"]), ..Default::default() }).expect_err("bad");
        assert_eq!(err.field, "rules.masks[0]");
    }
}

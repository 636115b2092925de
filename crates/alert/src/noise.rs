//! Noise control: whether a change is worth an alert, by the watch's [`NoiseRules`].

use driftwatch_core::NoiseRules;
use driftwatch_diff::TextChange;
use regex::Regex;

/// A noise rule that does not compile; `field` names it (`noise.trigger_text[0]`, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct NoiseError {
    /// The rule at fault.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// A text to look for: `/regex/` or plain text (case-insensitive).
#[derive(Debug, Clone)]
enum Needle {
    Text(String),
    Pattern(Regex),
}

impl Needle {
    fn parse(field: String, spec: &str) -> Result<Needle, NoiseError> {
        match spec.strip_prefix('/').and_then(|s| s.strip_suffix('/')) {
            Some(pattern) if !pattern.is_empty() => driftwatch_core::compiled_regex(pattern)
                .map(Needle::Pattern)
                .map_err(|e| NoiseError { field, message: format!("invalid regex: {e}") }),
            _ if spec.trim().is_empty() => Err(NoiseError { field, message: "must not be empty".into() }),
            _ => Ok(Needle::Text(spec.to_lowercase())),
        }
    }

    fn found_in(&self, text: &str, lower: &str) -> bool {
        match self {
            Needle::Text(t) => lower.contains(t.as_str()),
            Needle::Pattern(r) => r.is_match(text),
        }
    }
}

/// Compiled noise rules.
#[derive(Debug, Clone)]
pub struct Noise {
    trigger: Vec<Needle>,
    block: Vec<Needle>,
    only_added: bool,
    only_removed: bool,
    min_lines: Option<u32>,
    min_percent: Option<f64>,
}

/// Why a change raised no alert.
#[derive(Debug, Clone, PartialEq)]
pub enum Quiet {
    /// None of the trigger texts is in the new text.
    NoTrigger,
    /// A block text is in the new text.
    Blocked,
    /// Only removals, and only additions alert.
    NotAdded,
    /// Only additions, and only removals alert.
    NotRemoved,
    /// Fewer changed lines than the minimum.
    TooFewLines(usize),
    /// A smaller share of words changed than the minimum.
    TooSmall(f64),
    /// The page went back to one of its recent states.
    KnownState,
}

impl std::fmt::Display for Quiet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Quiet::NoTrigger => f.write_str("no trigger text present"),
            Quiet::Blocked => f.write_str("a block text is present"),
            Quiet::NotAdded => f.write_str("nothing was added"),
            Quiet::NotRemoved => f.write_str("nothing was removed"),
            Quiet::TooFewLines(n) => write!(f, "only {n} changed {}", driftwatch_core::text::noun_for(*n, "line")),
            Quiet::TooSmall(p) => write!(f, "only {p:.1}% of words changed"),
            Quiet::KnownState => f.write_str("back to a recent state"),
        }
    }
}

impl Noise {
    /// Compiles the rules; an invalid regex or value names its field.
    pub fn new(spec: &NoiseRules) -> Result<Noise, NoiseError> {
        let needles = |name: &str, specs: &[String]| -> Result<Vec<Needle>, NoiseError> {
            specs.iter().enumerate().map(|(i, s)| Needle::parse(format!("noise.{name}[{i}]"), s)).collect()
        };
        if let Some(p) = spec.min_change_percent
            && !(0.0..=100.0).contains(&p)
        {
            return Err(NoiseError {
                field: "noise.min_change_percent".into(),
                message: "must be between 0 and 100".into(),
            });
        }
        if spec.only_added && spec.only_removed {
            return Err(NoiseError {
                field: "noise.only_removed".into(),
                message: "only_added and only_removed exclude each other".into(),
            });
        }
        Ok(Noise {
            trigger: needles("trigger_text", &spec.trigger_text)?,
            block: needles("block_text", &spec.block_text)?,
            only_added: spec.only_added,
            only_removed: spec.only_removed,
            min_lines: spec.min_changed_lines,
            min_percent: spec.min_change_percent,
        })
    }

    /// Whether a real change (`change.is_change()`) from `old` to `new` should alert.
    /// `known_state` says the new text equals one of the watch's recent states.
    pub fn decide(&self, change: &TextChange, old: &str, new: &str, known_state: bool) -> Result<(), Quiet> {
        let lower = new.to_lowercase();
        if !self.trigger.is_empty() && !self.trigger.iter().any(|n| n.found_in(new, &lower)) {
            return Err(Quiet::NoTrigger);
        }
        if self.block.iter().any(|n| n.found_in(new, &lower)) {
            return Err(Quiet::Blocked);
        }
        if self.only_added && change.added == 0 {
            return Err(Quiet::NotAdded);
        }
        if self.only_removed && change.removed == 0 {
            return Err(Quiet::NotRemoved);
        }
        let lines = change.added + change.removed;
        if self.min_lines.is_some_and(|min| lines < min as usize) {
            return Err(Quiet::TooFewLines(lines));
        }
        if let Some(min) = self.min_percent {
            let percent = driftwatch_diff::word_change_percent(old, new);
            if percent < min {
                return Err(Quiet::TooSmall(percent));
            }
        }
        if known_state {
            return Err(Quiet::KnownState);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(old: &str, new: &str, rules: NoiseRules, known: bool, expected: Result<(), Quiet>) {
        let change = driftwatch_diff::diff_texts(old, new, "a", "b");
        let noise = Noise::new(&rules).expect("rules compile");
        let got = noise.decide(&change, old, new, known);
        match (&got, &expected) {
            (Err(Quiet::TooSmall(_)), Err(Quiet::TooSmall(_))) => {}
            _ => assert_eq!(got, expected, "{old:?} -> {new:?} with {rules:?}"),
        }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_rule() {
        let (old, new) = ("status: sold out\n", "status: in stock\n");
        check(old, new, NoiseRules::default(), false, Ok(()));
        check(old, new, NoiseRules { trigger_text: strings(&["IN STOCK"]), ..Default::default() }, false, Ok(()));
        check(
            new,
            old,
            NoiseRules { trigger_text: strings(&["in stock"]), ..Default::default() },
            false,
            Err(Quiet::NoTrigger),
        );
        check(old, new, NoiseRules { trigger_text: strings(&[r"/in\s+stock/"]), ..Default::default() }, false, Ok(()));
        check(
            old,
            new,
            NoiseRules { block_text: strings(&["maintenance", "stock"]), ..Default::default() },
            false,
            Err(Quiet::Blocked),
        );
        check("a\n", "a\nb\n", NoiseRules { only_added: true, ..Default::default() }, false, Ok(()));
        check("a\nb\n", "a\n", NoiseRules { only_added: true, ..Default::default() }, false, Err(Quiet::NotAdded));
        check("a\n", "a\nb\n", NoiseRules { only_removed: true, ..Default::default() }, false, Err(Quiet::NotRemoved));
        check(
            "a\n",
            "b\n",
            NoiseRules { min_changed_lines: Some(3), ..Default::default() },
            false,
            Err(Quiet::TooFewLines(2)),
        );
        assert_eq!(
            [Quiet::TooFewLines(1).to_string(), Quiet::TooFewLines(2).to_string()],
            ["only 1 changed line", "only 2 changed lines"]
        );
        let long = "the quick brown fox jumps over the lazy dog again and again\n";
        let tweak = "the quick brown fox jumps over the lazy cat again and again\n";
        check(
            long,
            tweak,
            NoiseRules { min_change_percent: Some(50.0), ..Default::default() },
            false,
            Err(Quiet::TooSmall(0.0)),
        );
        check(
            long,
            "completely different words here\n",
            NoiseRules { min_change_percent: Some(50.0), ..Default::default() },
            false,
            Ok(()),
        );
        check(old, new, NoiseRules::default(), true, Err(Quiet::KnownState));
    }

    #[test]
    fn bad_rules_name_their_field() {
        let err =
            Noise::new(&NoiseRules { block_text: strings(&["ok", "/(/"]), ..Default::default() }).expect_err("bad");
        assert_eq!(err.field, "noise.block_text[1]");
        let err = Noise::new(&NoiseRules { min_change_percent: Some(120.0), ..Default::default() }).expect_err("bad");
        assert_eq!(err.field, "noise.min_change_percent");
        let err =
            Noise::new(&NoiseRules { only_added: true, only_removed: true, ..Default::default() }).expect_err("bad");
        assert_eq!(err.field, "noise.only_removed");
    }
}

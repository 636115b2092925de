//! Conditions over a check's values and text: whether they hold, and why, in words a user
//! reads on the timeline ("price 49.90 EUR is not below 45").

use driftwatch_core::values::{Conditions, Match, Op, Rule, ValueKind, ValueSpec};
use serde_json::Value;

use crate::FieldError;
use crate::parse::Availability;
use crate::typed::{Typed, Values, percent};

/// Subjects every watch has, beside its values.
pub const BUILT_IN_SUBJECTS: [&str; 4] = ["text", "added", "removed", "change_size"];

/// Most rules in one watch's conditions.
pub const MAX_RULES: usize = 20;

/// What a rule is about, for the checks at save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubjectKind {
    Number,
    Text,
    Availability,
    Boolean,
}

/// What the conditions are judged on.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The values of this check.
    pub values: &'a Values,
    /// The values of the check before, for `changed_by_percent`.
    pub previous: Option<&'a Values>,
    /// The extracted text.
    pub text: &'a str,
    /// The added lines' text (empty without a change).
    pub added: &'a str,
    /// The removed lines' text.
    pub removed: &'a str,
    /// Added plus removed lines.
    pub change_size: usize,
}

/// Whether conditions hold, and the sentences that say why.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// They hold.
    pub holds: bool,
    /// One sentence per rule that decided it: those that held when the conditions hold,
    /// those that did not otherwise.
    pub reasons: Vec<String>,
}

impl Verdict {
    /// The reasons joined for a note: `price 49.90 EUR is not below 45; stock is in_stock`.
    pub fn reason(&self) -> String {
        self.reasons.join("; ")
    }
}

/// Judges `conditions` on `facts`.
pub fn evaluate(conditions: &Conditions, facts: &Facts<'_>) -> Verdict {
    let judged: Vec<(bool, String)> = conditions.rules.iter().map(|rule| judge(rule, facts)).collect();
    let holds = match conditions.match_ {
        Match::All => judged.iter().all(|(held, _)| *held),
        Match::Any => judged.iter().any(|(held, _)| *held),
    };
    let reasons = judged.into_iter().filter(|(held, _)| *held == holds).map(|(_, why)| why).collect();
    Verdict { holds, reasons }
}

/// One rule: whether it holds and the sentence saying so.
fn judge(rule: &Rule, facts: &Facts<'_>) -> (bool, String) {
    let subject = rule.subject.as_str();
    let typed = match subject {
        "text" => Some(Typed::Text { value: facts.text.to_owned() }),
        "added" => Some(Typed::Text { value: facts.added.to_owned() }),
        "removed" => Some(Typed::Text { value: facts.removed.to_owned() }),
        "change_size" => Some(Typed::Number { value: facts.change_size as f64 }),
        name => facts.values.get(name).cloned(),
    };
    let Some(typed) = typed else {
        return (false, format!("{subject} could not be read"));
    };
    let shown = match subject {
        "text" => "the text".to_owned(),
        "added" | "removed" => format!("the {subject} text"),
        _ => format!("{subject} {}", typed.display()),
    };
    let operand = show_operand(&rule.operand);
    let (held, is, is_not) = match rule.op {
        Op::Lt => (compare(&typed, &rule.operand, |a, b| a < b), "is below", "is not below"),
        Op::Le => (compare(&typed, &rule.operand, |a, b| a <= b), "is at most", "is above"),
        Op::Gt => (compare(&typed, &rule.operand, |a, b| a > b), "is above", "is not above"),
        Op::Ge => (compare(&typed, &rule.operand, |a, b| a >= b), "is at least", "is below"),
        Op::Eq => (equals(&typed, &rule.operand), "is", "is not"),
        Op::Ne => (!equals(&typed, &rule.operand), "is not", "is"),
        Op::Contains => (contains(&typed, &rule.operand), "contains", "does not contain"),
        Op::Matches => (matches(&typed, &rule.operand), "matches", "does not match"),
        Op::ChangedByPercent => return changed_by(subject, &typed, &rule.operand, facts),
    };
    (held, format!("{shown} {} {operand}", if held { is } else { is_not }))
}

fn show_operand(operand: &Value) -> String {
    match operand {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

fn compare(typed: &Typed, operand: &Value, op: impl Fn(f64, f64) -> bool) -> bool {
    match (typed.number(), operand.as_f64()) {
        (Some(a), Some(b)) => op(a, b),
        _ => false,
    }
}

fn equals(typed: &Typed, operand: &Value) -> bool {
    match (typed, operand) {
        (Typed::Text { value }, Value::String(s)) => value.trim() == s.trim(),
        (Typed::Availability { value }, Value::String(s)) => value.as_str() == s,
        (Typed::Boolean { value }, Value::Bool(b)) => value == b,
        (_, Value::Number(n)) => {
            typed.number().zip(n.as_f64()).is_some_and(|(a, b)| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0))
        }
        _ => false,
    }
}

fn contains(typed: &Typed, operand: &Value) -> bool {
    match (typed, operand) {
        (Typed::Text { value }, Value::String(s)) => value.to_lowercase().contains(&s.to_lowercase()),
        _ => false,
    }
}

fn matches(typed: &Typed, operand: &Value) -> bool {
    match (typed, operand) {
        (Typed::Text { value }, Value::String(pattern)) => {
            driftwatch_core::compiled_regex(pattern).is_ok_and(|re| re.is_match(value))
        }
        _ => false,
    }
}

/// `changed_by_percent N`: a negative N holds when the value dropped by at least |N| %, a
/// positive one when it rose by at least N %, zero on any move.
fn changed_by(subject: &str, typed: &Typed, operand: &Value, facts: &Facts<'_>) -> (bool, String) {
    let Some(threshold) = operand.as_f64() else { return (false, format!("{subject}: the threshold is not a number")) };
    let before = facts.previous.and_then(|p| p.get(subject)).and_then(Typed::number);
    let (Some(before), Some(now)) = (before, typed.number()) else {
        return (false, format!("{subject} has no earlier reading to compare with"));
    };
    let Some(moved) = percent(before, now) else {
        return (false, format!("{subject} was 0 before, so it has no percentage change"));
    };
    let held = if threshold < 0.0 {
        moved <= threshold
    } else if threshold > 0.0 {
        moved >= threshold
    } else {
        moved != 0.0
    };
    let direction = if threshold < 0.0 { "dropped" } else { "rose" };
    let by = threshold.abs();
    let said = if threshold == 0.0 {
        format!("{subject} moved by {moved}%")
    } else if held {
        format!("{subject} {direction} by {}% (at least {by}%)", moved.abs())
    } else {
        format!("{subject} moved by {moved}%, not {direction} by {by}%")
    };
    (held, said)
}

/// Checks conditions at save against the watch's values: every subject known, every operator
/// fit for its subject's type, every operand of the right type, every regex compiling. Fields
/// are named from the conditions: `rules[2].operand`.
pub fn check(conditions: &Conditions, specs: &[ValueSpec]) -> Result<(), FieldError> {
    if conditions.rules.is_empty() {
        return Err(FieldError::new("rules", "at least one rule (or leave the conditions out)"));
    }
    if conditions.rules.len() > MAX_RULES {
        return Err(FieldError::new("rules", format!("at most {MAX_RULES} rules")));
    }
    for (i, rule) in conditions.rules.iter().enumerate() {
        check_rule(rule, specs).map_err(|e| e.within(&format!("rules[{i}]")))?;
    }
    Ok(())
}

fn check_rule(rule: &Rule, specs: &[ValueSpec]) -> Result<(), FieldError> {
    let kind = subject_kind(&rule.subject, specs)?;
    let op = rule.op.as_str();
    let wrong_op = |what: &str| FieldError::new("op", format!("`{op}` does not apply to {} ({what})", rule.subject));
    let number = || {
        rule.operand.as_f64().map(|_| ()).ok_or_else(|| FieldError::new("operand", format!("`{op}` needs a number")))
    };
    match rule.op {
        Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::ChangedByPercent => match kind {
            SubjectKind::Number => number(),
            SubjectKind::Text => Err(wrong_op("text: use contains, matches, == or !=")),
            SubjectKind::Availability => Err(wrong_op("an availability: use == or !=")),
            SubjectKind::Boolean => Err(wrong_op("a boolean: use == or !=")),
        },
        Op::Contains | Op::Matches if kind != SubjectKind::Text => Err(wrong_op("not text: use <, >, == or !=")),
        Op::Contains => match &rule.operand {
            Value::String(s) if !s.is_empty() => Ok(()),
            _ => Err(FieldError::new("operand", "`contains` needs some text")),
        },
        Op::Matches => match &rule.operand {
            Value::String(pattern) => driftwatch_core::compiled_regex(pattern)
                .map(|_| ())
                .map_err(|e| FieldError::new("operand", format!("not a regex: {e}"))),
            _ => Err(FieldError::new("operand", "`matches` needs a regex")),
        },
        Op::Eq | Op::Ne => match (kind, &rule.operand) {
            (SubjectKind::Number, Value::Number(_))
            | (SubjectKind::Text, Value::String(_))
            | (SubjectKind::Boolean, Value::Bool(_)) => Ok(()),
            (SubjectKind::Availability, Value::String(s)) if Availability::from_name(s).is_some() => Ok(()),
            (SubjectKind::Availability, _) => Err(FieldError::new(
                "operand",
                "one of in_stock, limited, pre_order, back_order, out_of_stock, discontinued",
            )),
            (SubjectKind::Number, _) => Err(FieldError::new("operand", format!("{} is a number", rule.subject))),
            (SubjectKind::Text, _) => Err(FieldError::new("operand", format!("{} is text", rule.subject))),
            (SubjectKind::Boolean, _) => Err(FieldError::new("operand", "true or false")),
        },
    }
}

fn subject_kind(subject: &str, specs: &[ValueSpec]) -> Result<SubjectKind, FieldError> {
    match subject {
        "text" | "added" | "removed" => return Ok(SubjectKind::Text),
        "change_size" => return Ok(SubjectKind::Number),
        _ => {}
    }
    let Some(spec) = specs.iter().find(|s| s.name == subject) else {
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).chain(BUILT_IN_SUBJECTS).collect();
        return Err(FieldError::new(
            "subject",
            format!("no value named `{subject}` (this watch has: {})", names.join(", ")),
        ));
    };
    Ok(match spec.kind {
        ValueKind::Number | ValueKind::Money => SubjectKind::Number,
        ValueKind::Availability => SubjectKind::Availability,
        ValueKind::Boolean => SubjectKind::Boolean,
        ValueKind::Text => SubjectKind::Text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, kind: ValueKind) -> ValueSpec {
        ValueSpec { name: name.into(), kind, selector: Some("#x".into()), ..ValueSpec::default() }
    }

    fn rule(subject: &str, op: Op, operand: Value) -> Rule {
        Rule { subject: subject.into(), op, operand }
    }

    fn facts<'a>(values: &'a Values, previous: Option<&'a Values>) -> Facts<'a> {
        Facts { values, previous, text: "Espresso machine. In stock", added: "", removed: "", change_size: 0 }
    }

    fn price(amount: f64) -> Values {
        Values::from([("price".into(), Typed::Money { amount, currency: Some("EUR".into()) })])
    }

    #[test]
    fn price_below_holds_and_says_why() {
        let conditions = Conditions::of(Match::All, vec![rule("price", Op::Lt, 45.into())]);
        let cheap = price(44.0);
        let verdict = evaluate(&conditions, &facts(&cheap, None));
        assert!(verdict.holds);
        assert_eq!(verdict.reason(), "price 44.00 EUR is below 45");
        let dear = price(49.9);
        let verdict = evaluate(&conditions, &facts(&dear, None));
        assert!(!verdict.holds);
        assert_eq!(verdict.reason(), "price 49.90 EUR is not below 45");
        let unread = Values::new();
        assert_eq!(evaluate(&conditions, &facts(&unread, None)).reason(), "price could not be read");
    }

    #[test]
    fn dropped_by_percent_needs_an_earlier_reading() {
        let conditions = Conditions::of(Match::All, vec![rule("price", Op::ChangedByPercent, (-20).into())]);
        let (before, after) = (price(89.99), price(67.0));
        let verdict = evaluate(&conditions, &facts(&after, Some(&before)));
        assert!(verdict.holds, "{verdict:?}");
        assert_eq!(verdict.reason(), "price dropped by 25.55% (at least 20%)");
        let small = price(85.0);
        assert!(!evaluate(&conditions, &facts(&small, Some(&before))).holds);
        assert!(!evaluate(&conditions, &facts(&after, None)).holds);
        let rose = Conditions::of(Match::All, vec![rule("price", Op::ChangedByPercent, 10.into())]);
        assert!(!evaluate(&rose, &facts(&after, Some(&before))).holds);
        assert!(evaluate(&rose, &facts(&before, Some(&after))).holds);
    }

    #[test]
    fn any_and_all_and_text_rules() {
        let values = Values::from([("stock".into(), Typed::Availability { value: Availability::InStock })]);
        let rules = vec![rule("stock", Op::Eq, "in_stock".into()), rule("text", Op::Contains, "SOLD OUT".into())];
        let all = Conditions::of(Match::All, rules.clone());
        let any = Conditions::of(Match::Any, rules);
        let verdict = evaluate(&all, &facts(&values, None));
        assert!(!verdict.holds);
        assert_eq!(verdict.reason(), "the text does not contain \"SOLD OUT\"");
        let verdict = evaluate(&any, &facts(&values, None));
        assert!(verdict.holds);
        assert_eq!(verdict.reason(), "stock in_stock is \"in_stock\"");
        let regex = Conditions::of(Match::All, vec![rule("text", Op::Matches, "(?i)in\\s+stock".into())]);
        assert!(evaluate(&regex, &facts(&values, None)).holds);
    }

    #[test]
    fn checks_at_save_name_the_field() {
        let specs = [spec("price", ValueKind::Money), spec("stock", ValueKind::Availability)];
        let bad = |rule: Rule| check(&Conditions::of(Match::All, vec![rule]), &specs).expect_err("refused");
        let e = bad(rule("prise", Op::Lt, 5.into()));
        assert_eq!(e.field, "rules[0].subject");
        assert!(e.message.contains("no value named `prise`") && e.message.contains("price"), "{e}");
        let e = bad(rule("price", Op::Contains, "5".into()));
        assert_eq!((e.field.as_str(), e.message.contains("does not apply")), ("rules[0].op", true), "{e}");
        assert_eq!(bad(rule("price", Op::Lt, "cheap".into())).field, "rules[0].operand");
        assert_eq!(bad(rule("stock", Op::Eq, "available-ish".into())).field, "rules[0].operand");
        assert_eq!(bad(rule("stock", Op::Gt, 1.into())).field, "rules[0].op");
        assert_eq!(bad(rule("text", Op::Matches, "(".into())).field, "rules[0].operand");
        let empty = check(&Conditions::default(), &specs).expect_err("no rules");
        assert_eq!(empty.field, "rules");
        let fine = Conditions::of(
            Match::Any,
            vec![
                rule("price", Op::Le, 45.5.into()),
                rule("stock", Op::Ne, "out_of_stock".into()),
                rule("change_size", Op::Gt, 3.into()),
                rule("added", Op::Matches, "\\d+".into()),
            ],
        );
        check(&fine, &specs).expect("valid");
    }
}

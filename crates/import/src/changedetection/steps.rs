//! cd's browser steps (`{"operation", "selector", "optional_value"}`) as driftwatch's steps,
//! where one does the same; the rest is said, by position and operation.

use driftwatch_core::{MAX_STEPS, Step, StepText};
use serde_json::Value;

/// The steps that map, in order; `note` hears of each that does not.
pub(crate) fn map(steps: &[Value], note: &mut impl FnMut(String)) -> Vec<Step> {
    let mut mapped = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        let text = |key: &str| step.get(key).and_then(Value::as_str).map(str::trim).unwrap_or("");
        let (operation, selector, value) = (text("operation"), text("selector"), text("optional_value"));
        let selector = || match super::filters::include(selector) {
            super::filters::Include::Css(css) if !css.is_empty() => Some(css),
            _ => None,
        };
        let step = match operation {
            "" | "Choose one" => continue,
            // cd's first step loads the page, which every render does.
            "Goto site" => continue,
            "Click element" | "Check checkbox" | "Uncheck checkbox" => {
                selector().map(|selector| Step::Click { selector })
            }
            "Enter text in field" if !value.contains("{%") && !value.contains("{{") => {
                selector().map(|selector| Step::Type { selector, text: StepText::Text(value.to_owned()) })
            }
            "Press Enter" => Some(Step::Press { key: "Enter".into() }),
            "<select> by option text" | "Select by label" => {
                selector().map(|selector| Step::Select { selector, value: value.to_owned() })
            }
            "Scroll down" => Some(Step::Scroll { selector: None }),
            "Wait for seconds" => value
                .parse::<f64>()
                .ok()
                .filter(|s| *s >= 0.0)
                .map(|s| Step::WaitFor { selector: None, ms: Some((s * 1000.0).min(60_000.0) as u32) }),
            "Wait for text in element" => {
                selector().map(|selector| Step::WaitFor { selector: Some(selector), ms: None })
            }
            _ => None,
        };
        match step {
            Some(_) if mapped.len() == MAX_STEPS => {
                note(format!("browser step {}: more than {MAX_STEPS} steps; left out", n + 1));
            }
            Some(step) => {
                if operation == "<select> by option text" || operation == "Select by label" {
                    note(format!("browser step {} ({operation}): chooses the option whose value is `{value}`", n + 1));
                }
                mapped.push(step);
            }
            None => note(format!("browser step {} ({operation}) has no driftwatch equivalent; left out", n + 1)),
        }
    }
    mapped
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn steps_that_do_the_same_map_and_the_rest_are_said() {
        let steps = json!([
            {"operation": "Goto site", "selector": "", "optional_value": ""},
            {"operation": "Click element", "selector": "#accept", "optional_value": ""},
            {"operation": "Enter text in field", "selector": "input[name=q]", "optional_value": "lamp"},
            {"operation": "Press Enter", "selector": "", "optional_value": ""},
            {"operation": "Wait for seconds", "selector": "", "optional_value": "2.5"},
            {"operation": "Execute JS", "selector": "", "optional_value": "alert(1)"},
            {"operation": "Choose one", "selector": "", "optional_value": ""}
        ]);
        let mut notes = Vec::new();
        let mapped = map(steps.as_array().expect("array"), &mut |n| notes.push(n));
        assert_eq!(
            mapped,
            vec![
                Step::Click { selector: "#accept".into() },
                Step::Type { selector: "input[name=q]".into(), text: StepText::Text("lamp".into()) },
                Step::Press { key: "Enter".into() },
                Step::WaitFor { selector: None, ms: Some(2500) },
            ]
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("step 6") && notes[0].contains("Execute JS"), "{notes:?}");
    }
}

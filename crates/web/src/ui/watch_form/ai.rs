//! The form's "Let a model decide" section: an intent in plain words, a summary with each
//! alert, and what happens when the model does not answer in time, read to and from
//! `options.ai`; and which model would decide, so the form can say when none would.

use driftwatch_core::{AiOnError, AiOptions};
use driftwatch_validate::FieldError;

use super::fields::WatchForm;
use crate::AppState;
use crate::ui::account_model::ModelInUse;
use crate::ui::error::UiError;
use crate::ui::form::checked;
use crate::ui::session::Viewer;

/// What to do without a verdict: value, label and what it does.
pub(super) const ON_ERROR: [(&str, &str, &str); 2] = [
    ("open", "Send the change without a verdict", "nothing is lost; the alert says why it has no verdict."),
    ("hold", "Hold it until I send it", "it waits on the watch's page, with a Send now button."),
];

/// Intents that work well: one thing that matters, said the way you would say it to a person.
pub(super) const EXAMPLE_INTENTS: [&str; 4] = [
    "Alert me when the price drops below 50 EUR",
    "Only when a new job in Berlin is posted",
    "When the status page reports an outage, not when it is resolved",
    "Tell me if the return policy changes",
];

/// The form's fields of `ai`: intent, summary checkbox and `on_error`.
pub(super) fn fields_of(ai: Option<&AiOptions>) -> (String, Option<String>, String) {
    match ai {
        Some(ai) => (ai.intent.clone().unwrap_or_default(), checked(ai.summary), ai.on_error.as_str().to_owned()),
        None => (String::new(), None, AiOnError::default().as_str().to_owned()),
    }
}

impl WatchForm {
    /// `options.ai` as the form sets it: `None` without an intent or a summary (whatever the
    /// select says, as there is nothing for a model to do). Line breaks are read as one
    /// character each, as the textarea's `maxlength` counts them.
    pub(super) fn ai_options(&self, errors: &mut Vec<FieldError>) -> Option<AiOptions> {
        let intent = self.ai_intent.replace("\r\n", "\n");
        let intent = Some(intent.trim().to_owned()).filter(|i| !i.is_empty());
        let summary = self.ai_summary.is_some();
        let on_error = match self.ai_on_error.trim() {
            "" | "open" => AiOnError::Open,
            "hold" => AiOnError::Hold,
            _ => {
                errors.push(FieldError::new("options.ai.on_error", "choose one of the options"));
                AiOnError::Open
            }
        };
        (intent.is_some() || summary).then_some(AiOptions { intent, summary, on_error })
    }

    /// Whether the section has anything set.
    pub(super) fn ai_set(&self) -> bool {
        !self.ai_intent.trim().is_empty() || self.ai_summary.is_some()
    }
}

/// Which model would decide for the viewer's account.
pub(super) async fn model_in_use(state: &AppState, viewer: &Viewer) -> Result<ModelInUse, UiError> {
    let account = viewer.account_id().to_owned();
    let own = state.store.read(move |c| driftwatch_store::verdicts::account_model(c, &account)).await?;
    Ok(ModelInUse::of(state, &own))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_reads_to_and_from_options_ai() {
        let form = |intent: &str, summary: bool, on_error: &str| WatchForm {
            ai_intent: intent.into(),
            ai_summary: checked(summary),
            ai_on_error: on_error.into(),
            ..WatchForm::blank()
        };
        let mut errors = Vec::new();
        assert_eq!(form("", false, "hold").ai_options(&mut errors), None, "nothing to do is no ai at all");
        assert_eq!(form("  \r\n ", false, "open").ai_options(&mut errors), None);
        let ai = form(" Only when a job\r\nin Berlin is posted ", true, "hold").ai_options(&mut errors);
        let expected = AiOptions {
            intent: Some("Only when a job\nin Berlin is posted".into()),
            summary: true,
            on_error: AiOnError::Hold,
        };
        assert_eq!(ai.as_ref(), Some(&expected));
        assert_eq!(
            fields_of(ai.as_ref()),
            ("Only when a job\nin Berlin is posted".into(), checked(true), "hold".into())
        );
        let summary_only = form("", true, "").ai_options(&mut errors);
        assert_eq!(summary_only, Some(AiOptions { intent: None, summary: true, on_error: AiOnError::Open }));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(form("x", false, "later").ai_options(&mut errors).map(|a| a.on_error), Some(AiOnError::Open));
        assert_eq!(errors.first().map(|e| e.field.as_str()), Some("options.ai.on_error"));
        assert_eq!(fields_of(None), (String::new(), None, "open".into()));
    }

    #[test]
    fn a_stored_intent_reads_back_unchanged_through_the_form() {
        let options = driftwatch_core::WatchOptions {
            ai: Some(AiOptions {
                intent: Some("When the status page reports an outage,\nnot when it is resolved".into()),
                summary: false,
                on_error: AiOnError::Hold,
            }),
            ..Default::default()
        };
        let mut watch = driftwatch_store::Watch::new("acc_1", "https://example.com/", chrono::NaiveDateTime::default());
        watch.options = serde_json::to_string(&options).expect("json");
        let mut errors = Vec::new();
        assert_eq!(WatchForm::of(&watch).options(&mut errors), options);
        assert!(errors.is_empty(), "{errors:?}");
    }
}

//! The one shape of "this field is wrong": every rule in every crate reports it, and the API
//! answers it as is inside its problem+json.

use serde::Serialize;

/// A field at fault and why, named as the API names it (`url`, `settings.chat_id`,
/// `options.conditions.rules[1].operand`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error, utoipa::ToSchema)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field's name (`url`, `selector`, `options.fetch.timeout_seconds`, ...).
    pub field: String,
    /// What is wrong with it, for people.
    pub message: String,
}

impl FieldError {
    /// `field` is wrong: `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError { field: field.into(), message: message.into() }
    }

    /// The same error with the field inside `prefix` (`values[0]` + `regex`).
    pub fn within(mut self, prefix: &str) -> FieldError {
        self.field = if self.field.is_empty() { prefix.to_owned() } else { format!("{prefix}.{}", self.field) };
        self
    }
}

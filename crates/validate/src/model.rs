//! An account's own language model: where it is, which model, its key and its daily budget.

use driftwatch_net::TargetPolicy;

use crate::{Errors, FieldError, Invalid};

/// The most characters of a model's name.
const MAX_MODEL: usize = 200;

/// The most characters of an API key.
const MAX_KEY: usize = 4096;

/// What a request (the API's `PUT /account/model`, the account page's form) asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelInput {
    /// `http(s)://host[:port]/v1`.
    pub base_url: String,
    /// The model's name on that server.
    pub model: String,
    /// A new key (`Some("")` or `None` keeps the stored one; removing it is the caller's).
    pub api_key: Option<String>,
    /// Tokens a UTC day (`None` or 0: no limit of the account's own).
    pub daily_tokens: Option<i64>,
}

/// The settings as stored, the key still plaintext (the caller seals it): the base URL
/// normalised and checked against the address guard like any URL an account names (an
/// account's model is not the operator's: a private address needs
/// `DRIFTWATCH_ALLOW_PRIVATE_TARGETS`), a model named, a key without line breaks, a budget
/// not below zero.
pub fn account_model(input: &ModelInput, policy: TargetPolicy) -> Result<ValidModel, Invalid> {
    let mut errors = Errors::default();
    let base_url = errors.take(crate::valid_target("base_url", &input.base_url, policy));
    let model = input.model.trim();
    if model.is_empty() || model.chars().count() > MAX_MODEL || model.chars().any(char::is_control) {
        errors.take::<()>(Err(FieldError::new(
            "model",
            format!("must be the model's name as the server knows it, 1 to {MAX_MODEL} characters"),
        )));
    }
    let api_key = input.api_key.as_deref().map(str::trim).filter(|k| !k.is_empty());
    if let Some(key) = api_key
        && (key.chars().count() > MAX_KEY || key.chars().any(char::is_control))
    {
        errors.take::<()>(Err(FieldError::new(
            "api_key",
            format!("must be at most {MAX_KEY} characters, without line breaks"),
        )));
    }
    if input.daily_tokens.is_some_and(|t| t < 0) {
        errors.take::<()>(Err(FieldError::new("daily_tokens", "must be 0 (no limit) or more")));
    }
    errors.finish()?;
    Ok(ValidModel {
        base_url: base_url.unwrap_or_default(),
        model: model.to_owned(),
        api_key: api_key.map(str::to_owned),
        daily_tokens: input.daily_tokens.filter(|t| *t > 0),
    })
}

/// An account's model settings that passed [`account_model`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidModel {
    /// The base URL, normalised.
    pub base_url: String,
    /// The model's name, trimmed.
    pub model: String,
    /// A new key, plaintext (`None`: keep the stored one).
    pub api_key: Option<String>,
    /// The daily budget (`None`: no limit of its own).
    pub daily_tokens: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_needs_an_http_url_and_a_name() {
        let open = TargetPolicy { allow_private: true };
        let ok = account_model(
            &ModelInput {
                base_url: "http://127.0.0.1:11434/v1".into(),
                model: " qwen2.5:3b ".into(),
                api_key: Some(" sk-1 ".into()),
                daily_tokens: Some(0),
            },
            open,
        )
        .expect("valid");
        assert_eq!((ok.model.as_str(), ok.api_key.as_deref(), ok.daily_tokens), ("qwen2.5:3b", Some("sk-1"), None));
        let Invalid(errors) = account_model(
            &ModelInput { base_url: "ftp://x/v1".into(), model: "".into(), api_key: None, daily_tokens: Some(-1) },
            open,
        )
        .expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["base_url", "model", "daily_tokens"]);
    }

    #[test]
    fn a_private_model_url_needs_the_operators_leave() {
        let input =
            ModelInput { base_url: "http://127.0.0.1:11434/v1".into(), model: "m".into(), ..Default::default() };
        let Invalid(errors) = account_model(&input, TargetPolicy::default()).expect_err("guarded");
        assert_eq!(errors[0].field, "base_url");
    }
}

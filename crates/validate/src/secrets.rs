//! An account's named secrets (what login steps type), and a watch's steps that name them.

use crate::{FieldError, Invalid, SECRET_NAME_RULE, secret_name_ok};

/// The largest secret value, in bytes.
pub const MAX_SECRET_BYTES: usize = 4096;

/// A secret to set: its name (trimmed) and value, or every field at fault (`name`, `value`).
pub fn secret(name: &str, value: &str) -> Result<(String, String), Invalid> {
    let name = name.trim();
    let mut errors = Vec::new();
    if !secret_name_ok(name) {
        errors.push(FieldError::new("name", SECRET_NAME_RULE));
    }
    if value.is_empty() {
        errors.push(FieldError::new("value", "must not be empty"));
    } else if value.len() > MAX_SECRET_BYTES {
        errors.push(FieldError::new("value", format!("must be at most {MAX_SECRET_BYTES} bytes")));
    } else if value.contains('\0') {
        errors.push(FieldError::new("value", "must not contain NUL characters"));
    }
    if errors.is_empty() { Ok((name.to_owned(), value.to_owned())) } else { Err(Invalid(errors)) }
}

/// The steps of `fetch` that name a secret the account does not keep (`kept`: the names it
/// keeps), each as an error on `options.fetch.steps[i]`; nothing is saved when there is one.
pub fn steps_name_kept_secrets(fetch: &driftwatch_core::FetchSpec, kept: &[String]) -> Result<(), Invalid> {
    let errors: Vec<FieldError> = driftwatch_core::session::secret_names(fetch)
        .into_iter()
        .filter(|(_, name)| !kept.contains(name))
        .map(|(i, name)| {
            FieldError::new(
                format!("options.fetch.steps[{i}]"),
                format!("the account has no secret named {name:?}: add it under Secrets first"),
            )
        })
        .collect();
    if errors.is_empty() { Ok(()) } else { Err(Invalid(errors)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_has_a_plain_name_and_a_bounded_value() {
        assert_eq!(secret(" shop-password ", "hunter2"), Ok(("shop-password".into(), "hunter2".into())));
        let err = secret("bad name", &"x".repeat(MAX_SECRET_BYTES + 1)).expect_err("both bad");
        assert_eq!(err.0.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(), ["name", "value"]);
    }
}

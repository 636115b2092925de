//! API tokens: a name and scopes.

use crate::{Errors, FieldError, Invalid};

/// A token's name and its scopes as stored (`read` or `read write`: writing includes reading);
/// no scopes given means both.
pub fn token(name: &str, scopes: Option<Vec<String>>) -> Result<(String, String), Invalid> {
    let mut errors = Errors::default();
    let trimmed = name.trim().to_owned();
    if trimmed.is_empty() || name.chars().count() > 100 {
        errors.take::<()>(Err(FieldError::new("name", "must be 1 to 100 characters")));
    }
    let mut scopes = scopes.unwrap_or_else(|| vec!["read".into(), "write".into()]);
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() || scopes.iter().any(|s| s != "read" && s != "write") {
        errors.take::<()>(Err(FieldError::new("scopes", "give `read`, `write` or both")));
    }
    errors.finish()?;
    if !scopes.iter().any(|s| s == "read") {
        scopes.insert(0, "read".into());
    }
    Ok((trimmed, scopes.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_need_a_name_and_known_scopes() {
        assert_eq!(token(" ci ", None), Ok(("ci".into(), "read write".into())));
        assert_eq!(token("ci", Some(vec!["write".into()])), Ok(("ci".into(), "read write".into())));
        assert_eq!(token("ci", Some(vec!["read".into()])), Ok(("ci".into(), "read".into())));
        let Invalid(errors) = token("", Some(vec!["admin".into()])).expect_err("invalid");
        assert_eq!(errors.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(), ["name", "scopes"]);
    }
}

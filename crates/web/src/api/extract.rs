//! Extractors whose rejections are our problem documents, not axum's plain text.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::api::error::ApiError;

/// A JSON body. Unreadable bodies answer problems: 415 without a JSON content type, 400 for
/// malformed JSON, 413 when too large, 422 naming the field for a missing, unknown or mistyped
/// field.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|m| {
                let m = m.trim().to_ascii_lowercase();
                m == "application/json" || m.ends_with("+json")
            });
        if !is_json {
            return Err(ApiError::with_status(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send the body as JSON with `Content-Type: application/json`",
            ));
        }
        let bytes =
            Bytes::from_request(req, state).await.map_err(|e| ApiError::with_status(e.status(), e.body_text()))?;
        // Syntax first (400), then NUL characters (which PostgreSQL cannot store), then the
        // shape (422 naming the field).
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))?;
        if let Some(path) = nul_at(&value, String::new()) {
            return Err(ApiError::invalid(
                if path.is_empty() { "body" } else { &path },
                "must not contain NUL characters",
            ));
        }
        let value = serde_path_to_error::deserialize::<_, T>(value).map_err(|err| {
            let path = err.path().to_string();
            let message = strip_position(&err.into_inner().to_string());
            let field = if path == "." { backticked(&message).unwrap_or("body").to_owned() } else { path };
            ApiError::invalid(&field, message)
        })?;
        Ok(Json(value))
    }
}

/// Where in `value` a string (or key) holds a NUL character, as a field path.
fn nul_at(value: &serde_json::Value, path: String) -> Option<String> {
    let join = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    match value {
        serde_json::Value::String(s) if s.contains('\0') => Some(path),
        serde_json::Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, item)| nul_at(item, format!("{path}[{i}]")))
        }
        serde_json::Value::Object(map) => map.iter().find_map(|(key, item)| {
            if key.contains('\0') { Some(join(&key.replace('\0', "\\0"))) } else { nul_at(item, join(key)) }
        }),
        _ => None,
    }
}

/// serde_json's messages end with " at line L column C"; the field name says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// The first `quoted` name in a serde message ("missing field `url`").
fn backticked(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(&message[start..start + len])
}

/// A path parameter; one that cannot be read (not UTF-8, say) answers a 400 problem.
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(e) => Err(ApiError::bad_request(e.body_text())),
        }
    }
}

/// A query string. A value of the wrong type, an unknown parameter or an unknown choice answers
/// a 422 problem naming the parameter.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize::<_, T>(de).map(Query).map_err(|err| {
            let path = err.path().to_string();
            let message = err.into_inner().to_string();
            let field = if path == "." { backticked(&message).unwrap_or("query").to_owned() } else { path };
            ApiError::invalid(&field, message)
        })
    }
}

/// For `PATCH` bodies: tells a field given as `null` (`Some(None)`) from one left out (`None`);
/// use with `#[serde(default, deserialize_with = "present")]`.
pub fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

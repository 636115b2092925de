//! API errors as RFC 9457 problem documents.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// One invalid field of a request.
pub use driftwatch_core::FieldError;

/// An error answered as `application/problem+json` (RFC 9457).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Problem)]
pub struct ApiError {
    /// What kind of problem: `about:blank#not-found`, `about:blank#validation`, ...
    #[serde(rename = "type")]
    kind: &'static str,
    /// A short summary of the kind.
    title: &'static str,
    /// The HTTP status.
    status: u16,
    /// What went wrong with this request.
    detail: String,
    /// For validation problems: each field at fault.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<FieldError>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, title: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError { kind, title, status: status.as_u16(), detail: detail.into(), errors: Vec::new() }
    }

    /// Any 4xx status with its standard reason as the title.
    pub fn with_status(status: StatusCode, detail: impl Into<String>) -> ApiError {
        ApiError::new(status, "about:blank", status.canonical_reason().unwrap_or("Error"), detail)
    }

    /// 404: no such resource (also for other accounts' ids).
    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "about:blank#not-found", "Not Found", detail)
    }

    /// 401: no valid token.
    pub fn unauthorized(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "about:blank#unauthorized", "Unauthorized", detail)
    }

    /// 403: the token lacks the scope.
    pub fn forbidden(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "about:blank#forbidden", "Forbidden", detail)
    }

    /// 400: the request cannot be read (malformed JSON, bad query string).
    pub fn bad_request(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "about:blank#bad-request", "Bad Request", detail)
    }

    /// 409: the resource is busy or in a conflicting state.
    pub fn conflict(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "about:blank#conflict", "Conflict", detail)
    }

    /// 422: a field is invalid.
    pub fn invalid(field: &str, message: impl Into<String>) -> ApiError {
        let message = message.into();
        let mut error = ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "about:blank#validation",
            "Validation Failed",
            format!("{field}: {message}"),
        );
        error.errors.push(FieldError { field: field.to_owned(), message });
        error
    }

    /// 502: a server this one asked on the caller's behalf (a model's) failed; `detail` says
    /// what it said.
    pub fn bad_gateway(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_GATEWAY, "about:blank#bad-gateway", "Bad Gateway", detail)
    }

    /// 500: logged here, once; the caller sees no internals.
    pub fn internal(error: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(error = %error, "request failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "about:blank#internal",
            "Internal Server Error",
            "the server failed; the error was logged",
        )
    }

    /// 503: the database is unreachable.
    pub fn unavailable(error: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(error = %error, "database unavailable");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "about:blank#unavailable",
            "Service Unavailable",
            "the database is unavailable",
        )
    }
}

impl From<driftwatch_store::StoreError> for ApiError {
    fn from(e: driftwatch_store::StoreError) -> ApiError {
        use driftwatch_store::StoreError;
        match e {
            StoreError::Pool(_) => ApiError::unavailable(&e),
            StoreError::Conflict(what) => ApiError::conflict(what),
            other => ApiError::internal(&other),
        }
    }
}

impl From<driftwatch_validate::Invalid> for ApiError {
    fn from(invalid: driftwatch_validate::Invalid) -> ApiError {
        let Some(first) = invalid.first() else { return ApiError::bad_request("the request is invalid") };
        let mut error = ApiError::invalid(&first.field, first.message.clone());
        error.errors = invalid.0;
        error
    }
}

impl From<driftwatch_validate::FieldError> for ApiError {
    fn from(e: driftwatch_validate::FieldError) -> ApiError {
        ApiError::invalid(&e.field, e.message)
    }
}

impl From<driftwatch_delivery::RequestError> for ApiError {
    fn from(e: driftwatch_delivery::RequestError) -> ApiError {
        use driftwatch_delivery::RequestError;
        match e {
            RequestError::Disabled => ApiError::conflict(e.to_string()),
            RequestError::Store(e) => e.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(self)).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        response
    }
}

//! Extractors whose rejections are our problem documents, not axum's plain text.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body; unreadable bodies answer 400 or 422 problems naming what is wrong.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Json(value)),
            Err(JsonRejection::JsonDataError(e)) => {
                // serde names the path of the field at fault: "name: invalid type ..."
                let detail = e.body_text();
                let field = detail
                    .split_once(": ")
                    .map(|(_, rest)| rest)
                    .and_then(|rest| rest.split_once(':').map(|(path, _)| path.trim().to_owned()))
                    .filter(|p| !p.is_empty() && !p.contains(' '))
                    .unwrap_or_else(|| "body".to_owned());
                Err(ApiError::invalid(&field, detail))
            }
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::bad_request(
                "send the body as JSON with `Content-Type: application/json`",
            )),
            Err(e) => Err(ApiError::bad_request(e.body_text())),
        }
    }
}

/// A query string; unreadable ones answer a 400 problem.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Query(value)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => {
                Err(ApiError::bad_request(e.body_text()))
            }
            Err(e) => Err(ApiError::bad_request(e.body_text())),
        }
    }
}

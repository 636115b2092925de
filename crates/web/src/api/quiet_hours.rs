//! `/account/quiet_hours`: the hours in which the account's deliveries wait, for every
//! endpoint that sets none of its own.

use axum::extract::State;
use driftwatch_core::QuietHours;
use driftwatch_store::accounts;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::Json;

/// The account's quiet hours.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountQuietHours {
    /// The hours (`null`: none). A delivery due in them waits until they end; an endpoint's
    /// own quiet hours replace these.
    quiet_hours: Option<QuietHours>,
}

/// The account's quiet hours.
#[utoipa::path(
    get,
    path = "/account/quiet_hours",
    operation_id = "get_quiet_hours",
    tag = "account",
    responses((status = 200, description = "The account's quiet hours.", body = AccountQuietHours))
)]
pub async fn get(State(state): State<AppState>, caller: Caller) -> Result<axum::Json<AccountQuietHours>, ApiError> {
    let stored = state.store.read(move |c| accounts::quiet_hours(c, &caller.account_id)).await?;
    Ok(axum::Json(AccountQuietHours { quiet_hours: stored.as_deref().and_then(|q| QuietHours::parse(q).ok()) }))
}

/// Set the account's quiet hours (`null` removes them). Deliveries already held keep their
/// release time.
#[utoipa::path(
    put,
    path = "/account/quiet_hours",
    operation_id = "set_quiet_hours",
    tag = "account",
    request_body = AccountQuietHours,
    responses((status = 200, description = "The account's quiet hours.", body = AccountQuietHours))
)]
pub async fn set(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<AccountQuietHours>,
) -> Result<axum::Json<AccountQuietHours>, ApiError> {
    let stored = driftwatch_validate::valid_quiet_hours(body.quiet_hours.clone())
        .map_err(|e| driftwatch_validate::Invalid(vec![e]))?;
    state.store.write(move |c| accounts::set_quiet_hours(c, &caller.account_id, stored.as_deref())).await?;
    Ok(axum::Json(body))
}

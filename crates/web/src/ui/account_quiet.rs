//! The account page's quiet hours: the hours in which deliveries wait, for every endpoint that
//! sets none of its own. Checked by the same rules as the API's `/account/quiet_hours`.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::account::AccountPage;
use super::endpoint_timing::{self, TimingForm};
use super::error::UiError;
use super::flash;
use super::form::Field;
use super::layout::render;
use super::session::Post;
use crate::AppState;

/// The section as shown: the hours as stored or as typed, and errors beside their fields.
#[derive(Debug, Clone, Default)]
pub struct QuietSection {
    /// The fields (only the quiet-hours ones are used).
    pub form: TimingForm,
    /// Errors by form field.
    pub errors: HashMap<String, String>,
}

impl QuietSection {
    /// The account's stored hours (JSON), shown in `zone` when it has none.
    pub fn of(stored: Option<&str>, zone: &str) -> QuietSection {
        let mut form = TimingForm::new_in(zone);
        form.with_quiet(stored);
        QuietSection { form, errors: HashMap::new() }
    }

    /// A field with its error.
    pub fn f(&self, field: &str, value: &str) -> Field {
        Field { value: value.to_owned(), error: self.errors.get(field).cloned() }
    }
}

/// `POST /account/quiet-hours`.
pub async fn save(State(state): State<AppState>, post: Post<Vec<(String, String)>>) -> Result<Response, UiError> {
    let form = TimingForm::from_pairs(&post.form);
    match driftwatch_validate::valid_quiet_hours(form.quiet_hours()) {
        Ok(stored) => {
            let on = stored.is_some();
            let account = post.viewer.account_id().to_owned();
            state
                .store
                .write(move |c| driftwatch_store::accounts::set_quiet_hours(c, &account, stored.as_deref()))
                .await?;
            let said = if on { "Quiet hours saved." } else { "Quiet hours removed." };
            flash::set(&state, &post.viewer, said).await?;
            Ok(Redirect::to("/account#quiet").into_response())
        }
        Err(e) => {
            let mut page = AccountPage::load(&state, &post.viewer).await?;
            let field = endpoint_timing::form_field(&e.field).unwrap_or("quiet_from");
            page.quiet = QuietSection { form, errors: HashMap::from([(field.to_owned(), e.message)]) };
            Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page))
        }
    }
}

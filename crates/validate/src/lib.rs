//! What a valid watch, endpoint, token and recovery is, and the changes that follow from a request: one
//! place, knowing neither axum nor askama, that the API handlers, the browser forms and
//! `driftwatch import` all call, so they accept and refuse exactly the same input with the same
//! words.
//!
//! Every rule reports a [`FieldError`] naming the field at fault (`url`,
//! `options.rules.masks[0]`, ...); a create or update reports every invalid field at once in
//! [`Invalid`], in the order of the fields.

mod delivery_time;
mod endpoint;
mod expect;
mod model;
mod names;
mod portable;
mod recovery;
mod secrets;
mod token;
mod watch;

pub use delivery_time::{Delivery, valid_delivery, valid_quiet_hours};
pub use endpoint::{
    Channel, ChannelInput, Current, EndpointInput, EndpointPatch, RouteInput, endpoint_changes, from_apprise,
    may_rotate_secret, new_endpoint, valid_channel, valid_route,
};
pub use model::{ModelInput, ValidModel, account_model};
pub use names::{SECRET_NAME_RULE, named_proxies, secret_name_ok, valid_proxy_value};
pub use portable::{PortableWatch, from_watch};
pub use recovery::{RecoveryInput, RecoveryRequest, recovery};
pub use secrets::{MAX_SECRET_BYTES, secret, steps_name_kept_secrets};
pub use token::token;
pub use watch::{
    URL_PATTERN, WatchInput, WatchPatch, new_watch, next_runs, options_as_saved, state_change, valid_options,
    valid_tags, valid_target, watch_changes,
};

/// One invalid field: the workspace's one shape of it.
pub use driftwatch_core::FieldError;

/// One or more invalid fields of a request, in the order of the fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "))]
pub struct Invalid(pub Vec<FieldError>);

impl Invalid {
    /// The first invalid field.
    pub fn first(&self) -> Option<&FieldError> {
        self.0.first()
    }

    /// The message about `field` (or a field inside it, `options.…`), if it is at fault.
    pub fn message_for(&self, field: &str) -> Option<String> {
        self.0
            .iter()
            .find(|e| {
                e.field == field
                    || e.field.starts_with(&format!("{field}."))
                    || e.field.starts_with(&format!("{field}["))
            })
            .map(|e| e.message.clone())
    }
}

impl From<FieldError> for Invalid {
    fn from(e: FieldError) -> Invalid {
        Invalid(vec![e])
    }
}

/// Collects the errors of several checks.
#[derive(Debug, Default)]
pub(crate) struct Errors(Vec<FieldError>);

impl Errors {
    /// The value, or `None` with the error kept.
    pub(crate) fn take<T>(&mut self, result: Result<T, FieldError>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(e) => {
                self.0.push(e);
                None
            }
        }
    }

    /// `Err` with every error, if any.
    pub(crate) fn finish(self) -> Result<(), Invalid> {
        if self.0.is_empty() { Ok(()) } else { Err(Invalid(self.0)) }
    }
}

/// The server's limits on what it accepts.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Shortest allowed check interval.
    pub min_interval_seconds: i64,
    /// Interval of a watch created without a schedule.
    pub default_interval_seconds: i64,
    /// Whether the server has a browser for watches whose engine is `browser`.
    pub browser_available: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { min_interval_seconds: 30, default_interval_seconds: 3600, browser_available: false }
    }
}

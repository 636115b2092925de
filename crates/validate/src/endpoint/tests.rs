//! What a valid endpoint and a change to one are.

use super::*;

#[test]
fn endpoints_report_every_field_at_fault() {
    let policy = TargetPolicy { allow_private: false };
    let now = Utc::now();
    let ok = new_endpoint(
        EndpointInput { url: "https://hooks.example.com/x".into(), ..EndpointInput::default() },
        policy,
        "acc_1",
        now,
    )
    .expect("valid");
    assert!(ok.secret.starts_with("whsec_"));
    let bad = EndpointInput {
        url: "https://hooks.example.com/x".into(),
        retry_schedule: Some("soon".into()),
        max_attempts: Some(0),
        event_types: Some(vec![]),
        ..EndpointInput::default()
    };
    let Invalid(errors) = new_endpoint(bad, policy, "acc_1", now).expect_err("invalid");
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["retry_schedule", "max_attempts", "event_types"]);
    let patch = EndpointPatch { max_in_flight: Some(Some(5000)), ..EndpointPatch::default() };
    let current = Current { endpoint: &ok, secrets: None, url: None };
    let Invalid(errors) = endpoint_changes(patch, current, policy, now).expect_err("invalid");
    assert_eq!(errors[0].message, "must be between 1 and 1000");
}

#[test]
fn a_null_secret_is_removed_and_the_others_kept() {
    let stored = serde_json::json!({"password": "hunter2", "username": "me"});
    let merged = merged_secrets(Some(stored.clone()), Some(serde_json::json!({"password": null})));
    assert_eq!(merged, Some(serde_json::json!({"username": "me"})));
    let replaced = merged_secrets(Some(stored.clone()), Some(serde_json::json!({"username": "you"})));
    assert_eq!(replaced, Some(serde_json::json!({"password": "hunter2", "username": "you"})));
    assert_eq!(merged_secrets(Some(stored.clone()), None), Some(stored));
}

#[test]
fn only_signing_kinds_get_a_secret_and_credential_urls_are_masked() {
    let policy = TargetPolicy { allow_private: false };
    let input = |kind, url: &str| EndpointInput { url: url.into(), kind: Some(kind), ..EndpointInput::default() };
    let made = |kind, url| new_endpoint(input(kind, url), policy, "acc_1", Utc::now()).expect("valid");
    assert!(made(EndpointKind::Webhook, "https://hooks.example.com/x").secret.starts_with("whsec_"));
    assert_eq!(made(EndpointKind::Http, "https://hooks.example.com/x").secret, "");
    let discord = made(EndpointKind::Discord, "https://discord.com/api/webhooks/1234/key-abc");
    assert_eq!(discord.secret, "");
    assert_eq!(discord.url, "https://discord.com/api/webhooks/1234/••••");
    assert_eq!(discord.url_secret.as_deref(), Some("https://discord.com/api/webhooks/1234/key-abc"));
    assert!(may_rotate_secret("discord").is_err() && may_rotate_secret("webhook").is_ok());
    // The masked URL sent back keeps the stored one; a new URL is masked and sealed anew.
    let current = Current { endpoint: &discord, secrets: None, url: discord.url_secret.as_deref() };
    let same = EndpointPatch { url: Some(discord.url.clone()), ..EndpointPatch::default() };
    let changes = endpoint_changes(same, current, policy, Utc::now()).expect("valid");
    assert_eq!((changes.url, changes.url_secret), (None, None));
    let new =
        EndpointPatch { url: Some("https://discord.com/api/webhooks/9/other".into()), ..EndpointPatch::default() };
    let changes = endpoint_changes(new, current, policy, Utc::now()).expect("valid");
    assert_eq!(changes.url.as_deref(), Some("https://discord.com/api/webhooks/9/••••"));
    assert_eq!(changes.url_secret, Some(Some("https://discord.com/api/webhooks/9/other".into())));
    let typed_mask = EndpointPatch {
        url: Some("https://discord.com/api/webhooks/9/••••".into()),
        ..EndpointPatch::default()
    };
    let Invalid(errors) = endpoint_changes(typed_mask, current, policy, Utc::now()).expect_err("masked");
    assert_eq!(errors[0].field, "url");
}

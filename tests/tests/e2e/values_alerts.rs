//! Values and alerts as a receiver sees them: one alert for one price drop, presets tried on
//! the past as a save would keep them, currencies that exist, one shape of `data.values`.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver};
use serde_json::{Value, json};

use crate::support::TestApp;

/// A shop page whose price is in its JSON-LD (what the presets read) and in its text.
fn shop(price: &str) -> String {
    format!(
        r#"<html><head><script type="application/ld+json">
        {{"@context": "https://schema.org", "@type": "Product", "name": "Espresso machine",
          "offers": {{"@type": "Offer", "price": "{price}", "priceCurrency": "EUR",
                      "availability": "https://schema.org/InStock"}}}}
        </script></head><body><h1>Espresso machine</h1><p id=price>{price} €</p></body></html>"#
    )
}

/// The account's deliveries about `watch_id`, oldest first, by event type.
async fn delivered_types(app: &TestApp, token: &str, watch_id: &str) -> Vec<String> {
    let list = app.ok(&format!("/deliveries?watch_id={watch_id}"), token).await;
    let mut types: Vec<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|d| d["event_type"].as_str().map(str::to_owned))
        .collect();
    types.reverse();
    types
}

/// The price drops from 67 to 45 under a `price_below 50` watch: by default the one endpoint
/// gets one message, `condition.met`, carrying the change (diff and moved values in the one
/// list shape `change.detected` uses); the change stays in the history. Asked for both, a
/// watch gets both. A change that meets no condition alerts nobody.
pub async fn one_price_drop_is_one_alert(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let once = PageServer::start(&shop("67.00")).await;
    let both = PageServer::start(&shop("67.00")).await;
    let preset = json!({"preset": "price_below", "amount": 50});
    let watch = app.watch_with_baseline(&token, json!({"url": once.url, "options": {"conditions": preset}})).await;
    let id = watch["id"].as_str().expect("id");
    assert!(watch["options"]["conditions"].get("alert_on").is_none(), "the default is left out: {watch}");
    let mut asked = preset.clone();
    asked["alert_on"] = json!("conditions_and_changes");
    let watch_both = app.watch_with_baseline(&token, json!({"url": both.url, "options": {"conditions": asked}})).await;
    let id_both = watch_both["id"].as_str().expect("id");
    assert_eq!(watch_both["options"]["conditions"]["alert_on"], "conditions_and_changes", "{watch_both}");

    // 67 to 60: a change that meets no condition alerts nobody, as before.
    once.set(&shop("60.00"));
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    assert!(run["event_id"].is_null(), "{run}");
    assert!(delivered_types(&app, &token, id).await.is_empty());

    // 60 to 45: one message.
    once.set(&shop("45.00"));
    let run = app.check(&token, id).await;
    assert_eq!(delivered_types(&app, &token, id).await, ["condition.met"]);
    let got = receiver.wait_for(1).await;
    let body = got[0].json();
    assert_eq!(body["type"], "condition.met", "{body}");
    let data = &body["data"];
    assert_eq!(
        data["values"],
        json!([{"name": "price", "from": 60.0, "to": 45.0, "currency": "EUR", "change_percent": -25.0}])
    );
    assert_eq!(data["readings"]["price"], 45.0, "{data}");
    assert!(data["diff"]["unified"].as_str().is_some_and(|u| u.contains("+45.00 €")), "{data}");
    assert_eq!(data["snapshots"]["current"], data["snapshot"], "{data}");
    // The change itself is kept in the history, the run names it, nobody was sent it.
    let change = app.ok(&format!("/events/{}", run["event_id"].as_str().expect("the change")), &token).await;
    assert_eq!(change["type"], "change.detected", "{change}");
    assert_eq!(change["payload"]["data"]["values"], data["values"], "one shape of `values`");

    // Asked for both: both.
    both.set(&shop("45.00"));
    app.check(&token, id_both).await;
    let mut types = delivered_types(&app, &token, id_both).await;
    types.sort();
    assert_eq!(types, ["change.detected", "condition.met"]);
    receiver.wait_for(3).await;

    // What `alert_on` may be is checked, naming the field.
    let mut wrong = preset;
    wrong["alert_on"] = json!("always");
    let (status, problem) =
        app.post("/watches", &token, json!({"url": once.url, "options": {"conditions": wrong}})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    let field = problem["errors"][0]["field"].as_str().unwrap_or_default();
    assert!(field.ends_with("conditions.alert_on"), "{problem}");
}

/// A backtest of a preset judges the rules a save would keep: the same answer as the rules
/// written out, with reasons.
pub async fn a_backtest_expands_presets_as_a_save_does(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("67.00")).await;
    let price = json!([{"name": "price", "type": "money", "structured": "price"}]);
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "options": {"values": price}})).await;
    let id = watch["id"].as_str().expect("id");
    for price in ["45.00", "44.00"] {
        site.set(&shop(price));
        app.check(&token, id).await;
    }
    let backtest = |options: Value| {
        let (app, token) = (&app, &token);
        async move {
            let (status, found) =
                app.post(&format!("/watches/{id}/backtest"), token, json!({"options": options})).await;
            assert_eq!(status, StatusCode::OK, "{found}");
            found
        }
    };
    let preset = backtest(json!({"values": price, "conditions": {"preset": "price_below", "amount": 10}})).await;
    let written = backtest(json!({
        "values": price,
        "conditions": {"rules": [{"subject": "price", "op": "<", "operand": 10}]}
    }))
    .await;
    assert_eq!(preset["would_alert"], 0, "nothing was below 10: {preset}");
    assert_eq!(preset, written);
    let below_50 = backtest(json!({"values": price, "conditions": {"preset": "price_below", "amount": 50}})).await;
    assert_eq!(below_50["would_alert"], 2, "{below_50}");
    assert_eq!(below_50["alerts"][0]["reasons"][0], "price 44.00 EUR is below 50", "{below_50}");
    let (status, problem) = app
        .post(
            &format!("/watches/{id}/backtest"),
            &token,
            json!({"options": {"values": price, "conditions": {"preset": "price_below"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "options.conditions.amount", "{problem}");
}

/// `ZZZ` is three capitals but no currency: refused, naming the field; a real code is kept.
pub async fn a_currency_that_does_not_exist_is_refused(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let value = |currency: &str| json!({"name": "price", "type": "money", "selector": "#price", "currency": currency});
    let (status, problem) = app
        .post("/watches", &token, json!({"url": "https://shop.example/", "options": {"values": [value("ZZZ")]}}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "options.values[0].currency", "{problem}");
    assert!(problem["errors"][0]["message"].as_str().is_some_and(|m| m.contains("ISO 4217")), "{problem}");
    let (status, watch) = app
        .post("/watches", &token, json!({"url": "https://shop.example/", "options": {"values": [value("CHF")]}}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
}

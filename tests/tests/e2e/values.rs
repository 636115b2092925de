//! Typed values and conditions: prices read from a shop page's structured data, stored with
//! each snapshot, and conditions deciding which changes alert.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer};
use serde_json::{Value, json};

use crate::support::TestApp;

/// A shop page whose price is only in its JSON-LD and a `content` attribute, never in the
/// watched text.
fn shop(price: &str, availability: &str) -> String {
    format!(
        r#"<html><head><script type="application/ld+json">
        {{"@context": "https://schema.org", "@type": "Product", "name": "Espresso machine",
          "offers": {{"@type": "Offer", "price": "{price}", "priceCurrency": "EUR",
                      "availability": "https://schema.org/{availability}"}}}}
        </script></head><body><h1 id=name>Espresso machine</h1>
        <span id=price content="{price}">{price} €</span></body></html>"#
    )
}

async fn events(app: &TestApp, token: &str, watch_id: &str, event_type: &str) -> Vec<Value> {
    let list = app.ok(&format!("/events?watch_id={watch_id}&type={event_type}"), token).await;
    list["items"].as_array().cloned().unwrap_or_default()
}

pub async fn a_price_condition_alerts_once_when_it_crosses(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("89.99", "InStock")).await;
    let watch = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "name": "Espresso", "selector": "#name", "options": {
                "values": [
                    {"name": "price", "type": "money", "structured": "price"},
                    {"name": "stock", "type": "availability", "structured": "availability"},
                    {"name": "shown", "type": "money", "selector": "#price", "attribute": "content", "currency": "EUR"}
                ],
                "conditions": {"match": "all", "rules": [
                    {"subject": "price", "op": "<", "operand": 50},
                    {"subject": "stock", "op": "==", "operand": "in_stock"}
                ]}
            }}),
        )
        .await;
    let id = watch["id"].as_str().expect("id");
    let snapshots = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    assert_eq!(
        snapshots["items"][0]["values"],
        json!({"price": {"type": "money", "amount": 89.99, "currency": "EUR"},
               "stock": {"type": "availability", "value": "in_stock"},
               "shown": {"type": "money", "amount": 89.99, "currency": "EUR"}}),
        "{snapshots}"
    );
    assert!(events(&app, &token, id, "condition.met").await.is_empty(), "89.99 is not below 50");

    // A drop that does not cross the line: the snapshot is kept, the alert is not.
    site.set(&shop("67.00", "InStock"));
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "changed", "the price is part of what the page says: {run}");
    assert!(run["event_id"].is_null(), "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("price 67.00 EUR is not below 50")), "{run}");
    // And the timeline says so on the snapshot (the watch page's History shows it too).
    let snapshots = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    assert_eq!(snapshots["items"][0]["kept_quiet"], "price 67.00 EUR is not below 50", "{snapshots}");
    assert!(snapshots["items"][1]["kept_quiet"].is_null(), "the baseline: {snapshots}");

    // Below 50: the change alerts with its typed value changes, and condition.met fires once.
    site.set(&shop("45.00", "InStock"));
    let run = app.check(&token, id).await;
    let change = app.ok(&format!("/events/{}", run["event_id"].as_str().expect("a change event")), &token).await;
    let price = change["payload"]["data"]["values"]
        .as_array()
        .and_then(|v| v.iter().find(|c| c["name"] == "price"))
        .cloned()
        .expect("the price change in the payload");
    assert_eq!(price, json!({"name": "price", "from": 67.0, "to": 45.0, "currency": "EUR", "change_percent": -32.84}));
    let met = events(&app, &token, id, "condition.met").await;
    assert_eq!(met.len(), 1, "{met:?}");
    let met = app.ok(&format!("/events/{}", met[0]["id"].as_str().expect("id")), &token).await;
    assert_eq!(met["payload"]["data"]["holds"], true);
    assert_eq!(met["payload"]["data"]["readings"]["price"], 45.0);

    // Still below: a change, but no second condition.met.
    site.set(&shop("44.00", "InStock"));
    let run = app.check(&token, id).await;
    assert!(run["event_id"].is_string(), "{run}");
    assert_eq!(events(&app, &token, id, "condition.met").await.len(), 1);

    // Sold out: the conditions stop holding, once.
    site.set(&shop("44.00", "OutOfStock"));
    let run = app.check(&token, id).await;
    assert!(run["event_id"].is_null(), "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.starts_with("conditions cleared: ")), "{run}");
    let cleared = events(&app, &token, id, "condition.cleared").await;
    assert_eq!(cleared.len(), 1, "{cleared:?}");
    let snapshots = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    assert!(snapshots["items"][0]["kept_quiet"].is_null(), "condition.cleared was told: {snapshots}");
    app.check(&token, id).await;
    assert_eq!(events(&app, &token, id, "condition.cleared").await.len(), 1, "an unchanged page crosses nothing");

    // The series, as JSON and as CSV, holds the same prices, oldest first.
    let series = app.ok(&format!("/watches/{id}/values?name=price"), &token).await;
    let amounts: Vec<f64> = series["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter_map(|p| p["values"]["price"]["amount"].as_f64())
        .collect();
    assert_eq!(amounts, [89.99, 67.0, 45.0, 44.0, 44.0], "{series}");
    let csv = app
        .http
        .get(format!("{}/watches/{id}/values?name=price&format=csv", app.base))
        .bearer_auth(&token)
        .send()
        .await
        .expect("csv");
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    let csv = csv.text().await.expect("body");
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0], ["at", "snapshot_id", "name", "value", "currency"]);
    let from_csv: Vec<f64> = rows[1..].iter().map(|r| r[3].parse().expect("a number")).collect();
    assert_eq!(from_csv, amounts);
    assert!(rows[1..].iter().all(|r| r[2] == "price" && r[4] == "EUR"), "{csv}");
    let (status, problem) = app.get(&format!("/watches/{id}/values?name=prize"), &token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{problem}");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("no value `prize`")), "{problem}");

    // Tried on the past: "price below 46" alone would have alerted on 45, 44 and the sold-out
    // 44, where the watch's own conditions alerted twice.
    let options = json!({
        "values": watch["options"]["values"],
        "conditions": {"rules": [{"subject": "price", "op": "<", "operand": 46}]}
    });
    let (status, found) = app.post(&format!("/watches/{id}/backtest"), &token, json!({"options": options})).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(
        (&found["snapshots"], &found["changes"], &found["would_alert"], &found["alerted"]),
        (&json!(5), &json!(4), &json!(3), &json!(2)),
        "{found}"
    );
    assert_eq!(found["quiet"][0]["reason"], "price 67.00 EUR is not below 46", "{found}");
    assert_eq!(found["alerts"][0]["reasons"][0], "price 44.00 EUR is below 46", "{found}");
    let bad = json!({"values": watch["options"]["values"], "conditions": {"rules": [{"subject": "cost", "op": "<", "operand": 1}]}});
    let (status, problem) = app.post(&format!("/watches/{id}/backtest"), &token, json!({"options": bad})).await;
    assert_eq!(
        (status, problem["errors"][0]["field"].as_str().or(problem["field"].as_str())),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("options.conditions.rules[0].subject")),
        "{problem}"
    );

    // Another account sees no such watch.
    let other = app.account("globex").await;
    let (status, _) = app.get(&format!("/watches/{id}/values"), &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.post(&format!("/watches/{id}/backtest"), &other, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

pub async fn conditions_that_already_hold_alert_on_the_first_check(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("39.90", "InStock")).await;
    let watch = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "options": {
                "values": [{"name": "price", "type": "money", "selector": "#price"}],
                "conditions": {"rules": [{"subject": "price", "op": "<=", "operand": 40}]}
            }}),
        )
        .await;
    let id = watch["id"].as_str().expect("id");
    let met = events(&app, &token, id, "condition.met").await;
    assert_eq!(met.len(), 1, "already below 40 on the first check: {met:?}");
}

pub async fn bad_values_and_conditions_are_refused_naming_the_field(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let refused = |options: Value| {
        let (app, token) = (&app, &token);
        async move {
            let (status, problem) =
                app.post("/watches", token, json!({"url": "https://shop.example/", "options": options})).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
            problem
        }
    };
    let field = |problem: &Value| {
        problem["errors"][0]["field"].as_str().or(problem["field"].as_str()).unwrap_or_default().to_owned()
    };
    let price = json!({"name": "price", "type": "money", "selector": "#price"});
    let cases = [
        (json!({"values": [{"name": "price", "jsonpath": "$.items[?"}]}), "options.values[0].jsonpath"),
        (json!({"values": [{"name": "price", "selector": "#p", "regex": "("}]}), "options.values[0].regex"),
        (json!({"values": [{"name": "price", "selector": "#p["}]}), "options.values[0].selector"),
        (
            json!({"values": [price], "conditions": {"rules": [{"subject": "prise", "op": "<", "operand": 5}]}}),
            "options.conditions.rules[0].subject",
        ),
        (
            json!({"values": [price], "conditions": {"rules": [{"subject": "price", "op": "contains", "operand": "5"}]}}),
            "options.conditions.rules[0].op",
        ),
        (json!({"values": [price, price]}), "options.values[1].name"),
        (json!({"conditions": {"preset": "price_dropped_by", "percent": 150}}), "options.conditions.percent"),
        (json!({"conditions": {"preset": "price_below"}}), "options.conditions.amount"),
        (json!({"conditions": {"amount": 5}}), "options.conditions.amount"),
        (
            json!({"conditions": {"preset": "back_in_stock", "rules": [{"subject": "text", "op": "contains", "operand": "x"}]}}),
            "options.conditions.rules",
        ),
        (
            json!({"values": [price], "conditions": {"preset": "back_in_stock", "value": "price"}}),
            "options.conditions.value",
        ),
    ];
    for (options, expected) in cases {
        let problem = refused(options.clone()).await;
        assert_eq!(field(&problem), expected, "{options} -> {problem}");
    }
}

pub async fn a_value_that_moved_is_in_the_alert_without_conditions(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("89.99", "InStock")).await;
    let watch = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "#name",
                   "options": {"values": [{"name": "price", "type": "money", "structured": "price"}]}}),
        )
        .await;
    let id = watch["id"].as_str().expect("id");
    // The watched text stays "Espresso machine"; only the structured price moves.
    site.set(&shop("79.99", "InStock"));
    let run = app.check(&token, id).await;
    let event = app.ok(&format!("/events/{}", run["event_id"].as_str().expect("a change event")), &token).await;
    assert_eq!(
        (&event["payload"]["data"]["diff"]["added"], &event["payload"]["data"]["diff"]["removed"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(
        event["payload"]["data"]["values"],
        json!([{"name": "price", "from": 89.99, "to": 79.99, "currency": "EUR", "change_percent": -11.11}])
    );
}

pub async fn presets_are_saved_as_the_rules_they_stand_for(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("39.90", "InStock")).await;
    // No values given: the preset reads the price from the page's structured data.
    let watch = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "#name", "options": {"conditions": {"preset": "price_below", "amount": 40}}}),
        )
        .await;
    let id = watch["id"].as_str().expect("id");
    assert_eq!(watch["options"]["values"], json!([{"name": "price", "type": "money", "structured": "price"}]));
    assert_eq!(
        watch["options"]["conditions"],
        json!({"match": "all", "rules": [{"subject": "price", "op": "<", "operand": 40}]}),
        "stored and shown as rules"
    );
    assert_eq!(events(&app, &token, id, "condition.met").await.len(), 1, "39.90 is below 40 on the first check");

    // Back in stock, on a watch that reads its own price: the stock value is added beside it.
    let (status, watch) = app
        .post(
            "/watches",
            &token,
            json!({"url": site.url, "options": {
                "values": [{"name": "price", "type": "money", "selector": "#price"}],
                "conditions": {"preset": "back_in_stock"}
            }}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let names: Vec<&str> =
        watch["options"]["values"].as_array().expect("values").iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(names, ["price", "stock"]);
    assert_eq!(
        watch["options"]["conditions"]["rules"][0],
        json!({"subject": "stock", "op": "==", "operand": "in_stock"})
    );
}

pub async fn a_value_that_keeps_failing_turns_the_watch_value_missing(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.failure_threshold = 2).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("39.90", "InStock")).await;
    let watch = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "h1", "options": {
                "values": [{"name": "shown", "type": "money", "selector": "#price"}]
            }}),
        )
        .await;
    let id = watch["id"].as_str().expect("id");
    // The price element goes; the page still reads, so each check succeeds with a note.
    site.set(&shop("39.90", "InStock").replace("<span id=price", "<span id=cost"));
    let run = app.check(&token, id).await;
    assert!(run["error"].is_null(), "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("shown: the selector matched nothing")), "{run}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "ok", "once is not yet a health");
    app.check(&token, id).await;
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "value_missing");
    let missing = events(&app, &token, id, "check.value_missing").await;
    assert_eq!(missing.len(), 1, "{missing:?}");
    let missing = app.ok(&format!("/events/{}", missing[0]["id"].as_str().expect("id")), &token).await;
    assert_eq!(missing["payload"]["data"]["check"]["consecutive_failures"], 2, "{missing}");
    assert_eq!(missing["payload"]["data"]["check"]["error"], "shown: the selector matched nothing", "{missing}");
    app.check(&token, id).await;
    assert_eq!(events(&app, &token, id, "check.value_missing").await.len(), 1, "told once");

    // Back: the watch recovers, and says so once.
    site.set(&shop("39.90", "InStock"));
    app.check(&token, id).await;
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "ok");
    assert_eq!(events(&app, &token, id, "check.recovered").await.len(), 1);
}

/// Every kind of source on local pages: microdata only, the price only in the text, and a JSON
/// API through a pointer, JSONPath and jq; the readings are stored with the snapshot.
pub async fn each_source_reads_a_local_page(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let microdata = PageServer::start(
        r#"<div itemscope itemtype="https://schema.org/Product"><h1 itemprop="name">Kettle</h1>
        <div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
        <span itemprop="price" content="1299.00">1.299,00 €</span><meta itemprop="priceCurrency" content="EUR">
        <link itemprop="availability" href="https://schema.org/OutOfStock">Sold out</div></div>"#,
    )
    .await;
    let text = PageServer::start(r#"<p class="price">Now only CHF 1'299.– incl. VAT</p>"#).await;
    let api = PageServer::start(
        r#"{"items": [{"sku": "A1", "price": 19.5, "stock": 0}, {"sku": "B2", "price": "12,50 €", "stock": 4}]}"#,
    )
    .await;
    api.set_content_type("application/json");
    let cases = [
        (
            &microdata,
            json!([{"name": "price", "type": "money", "structured": "price"},
                   {"name": "stock", "type": "availability", "structured": "availability"}]),
            json!({"price": {"type": "money", "amount": 1299.0, "currency": "EUR"},
                   "stock": {"type": "availability", "value": "out_of_stock"}}),
        ),
        (
            &text,
            json!([{"name": "price", "type": "money", "selector": ".price"}]),
            json!({"price": {"type": "money", "amount": 1299.0, "currency": "CHF"}}),
        ),
        (
            &api,
            json!([{"name": "first", "type": "money", "json_pointer": "/items/0/price", "currency": "EUR"},
                   {"name": "mug", "type": "money", "jsonpath": "$.items[?@.sku=='B2'].price"},
                   {"name": "stock", "type": "number", "jq": ".items | map(.stock) | add"}]),
            json!({"first": {"type": "money", "amount": 19.5, "currency": "EUR"},
                   "mug": {"type": "money", "amount": 12.5, "currency": "EUR"},
                   "stock": {"type": "number", "value": 4.0}}),
        ),
    ];
    for (page, values, expected) in cases {
        let watch = app.watch_with_baseline(&token, json!({"url": page.url, "options": {"values": values}})).await;
        let id = watch["id"].as_str().expect("id");
        let snapshots = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
        assert_eq!(snapshots["items"][0]["values"], expected, "{}: {snapshots}", page.url);
    }
}

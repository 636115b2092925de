//! A language model's part in the browser UI, in a real headless Chromium against the real
//! server: the watch form's "Let a model decide" (saved as `options.ai`, shown back on edit,
//! an intent too long refused beside its field with the text kept, a watch without it saved
//! without `ai`), the watch page's verdict of each kind with "Send now" for a held change
//! (which the receiver then gets; other accounts get the 404 page), the same badges on
//! Changes, and the account's own model (errors beside the fields, the key sealed and never
//! shown, removed, given back for the server's). axe-core on each page; screenshots at 1280
//! and 390 px, light and dark, under `target/screenshots/`.

use chrono::{NaiveDateTime, TimeDelta, Utc};
use diesel::prelude::*;
use driftwatch_store::schema::verdicts::dsl as v;
use driftwatch_store::{Store, Verdict};
use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::browser::Browser;
use crate::polish::sideways_at_phone_width;
use crate::support::TestApp;
use crate::ui::{EMAIL, look, set_up};

/// The intent the form is filled with.
const INTENT: &str = "Alert me when the price drops below 50 EUR";

/// A shop page showing `price`.
fn shop(price: &str) -> String {
    format!("<html><body><h1>Espresso machine</h1><p id='price'>{price}</p></body></html>")
}

/// Checks the page at 390 px (no sideways scrolling), then axe and the screenshots.
async fn look_everywhere(browser: &Browser, name: &str) {
    if let Some(wide) = sideways_at_phone_width(browser).await {
        panic!("{name} scrolls sideways at 390 px: {wide}");
    }
    look(browser, name).await;
}

/// The app's store, for what the UI reads but no request makes (verdicts of each kind).
fn store(app: &TestApp) -> Store {
    app.app.as_ref().expect("running").store.clone()
}

/// The verdicts on `watch_id`'s changes, oldest first.
async fn verdicts_of(store: &Store, watch_id: &str) -> Vec<Verdict> {
    let watch_id = watch_id.to_owned();
    store
        .read(move |c| {
            Ok(v::verdicts
                .filter(v::watch_id.eq(&watch_id))
                .order((v::created_at.asc(), v::event_id.asc()))
                .select(Verdict::as_select())
                .load(c)?)
        })
        .await
        .expect("verdicts")
}

/// Rewrites a verdict as the verdict loop would have left it.
async fn set_verdict(store: &Store, verdict: Verdict) {
    store
        .write(move |c| {
            diesel::update(v::verdicts.filter(v::event_id.eq(&verdict.event_id)))
                .set((
                    v::state.eq(&verdict.state),
                    v::attempts.eq(verdict.attempts),
                    v::next_attempt_at.eq(verdict.next_attempt_at),
                    v::deadline_at.eq(verdict.deadline_at),
                    v::important.eq(verdict.important),
                    v::reason.eq(&verdict.reason),
                    v::summary_text.eq(&verdict.summary_text),
                    v::model.eq(&verdict.model),
                    v::tokens.eq(verdict.tokens),
                    v::cached.eq(verdict.cached),
                    v::error.eq(&verdict.error),
                ))
                .execute(c)?;
            Ok(())
        })
        .await
        .expect("a verdict written");
}

fn now() -> NaiveDateTime {
    Utc::now().naive_utc()
}

/// The five changes' verdicts, oldest first: important, not important, sent without one,
/// waiting after two failed tries, and (left as the loop decided it) held.
fn each_kind(found: &[Verdict]) -> Vec<Verdict> {
    let judged = |v: &Verdict, important: bool, reason: &str, summary: &str, cached: bool| Verdict {
        state: "judged".into(),
        important: Some(important),
        reason: Some(reason.into()),
        summary_text: Some(summary.into()),
        model: Some("qwen2.5:3b".into()),
        tokens: if cached { 0 } else { 812 },
        cached,
        error: None,
        ..v.clone()
    };
    vec![
        judged(&found[0], true, "The price fell below 50 EUR, to 49 EUR.", "Price: 52 EUR → 49 EUR.", false),
        judged(&found[1], false, "The price rose to 51 EUR, above the 50 EUR asked for.", "Price: 49 → 51 EUR.", true),
        Verdict {
            state: "unjudged".into(),
            error: Some("the account's daily budget of 1000 tokens is spent (1200 used today, UTC)".into()),
            ..found[2].clone()
        },
        Verdict {
            state: "pending".into(),
            attempts: 2,
            error: Some("the model answered 503 Service Unavailable".into()),
            next_attempt_at: now() + TimeDelta::minutes(10),
            deadline_at: now() + TimeDelta::minutes(20),
            ..found[3].clone()
        },
        found[4].clone(),
    ]
}

/// The texts of the watch page's verdicts, newest first.
async fn verdict_texts(browser: &Browser) -> Vec<String> {
    let texts =
        browser.execute("return [...document.querySelectorAll('.timeline .verdict')].map(v => v.innerText)").await;
    texts.as_array().map(|a| a.iter().map(|t| t.as_str().unwrap_or_default().to_owned()).collect()).unwrap_or_default()
}

/// The value of the form field matching `css`.
async fn value(browser: &Browser, css: &str) -> Value {
    browser.execute(&format!("return document.querySelector({css:?}).value")).await
}

pub async fn a_model_decides_from_the_form_to_the_watch_page(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let page = PageServer::start(&shop("52 EUR")).await;

    // The form: the section is closed on a new watch and says no model would decide.
    browser.goto(&format!("{root}/watches/new")).await;
    assert_eq!(browser.execute("return document.querySelector('details#ai').open").await, false);
    browser.click("details#ai summary").await;
    let note = browser.text("#ai-model").await;
    assert!(note.contains("No model is configured") && note.contains("without a verdict"), "{note}");
    browser.fill("#f-url", &page.url).await;
    browser.fill("#f-name", "Espresso machine").await;
    browser.fill("#f-ai_intent", INTENT).await;
    browser.click("#f-ai_summary").await;
    browser.wait_for("#f-ai_on_error").await.select_by_value("hold").await.expect("on_error");
    look_everywhere(&browser, "ai-form").await;
    browser.click("button[value='save']").await;
    let said = browser.wait_for_text("#ai-intent", "price drops").await;
    assert_eq!(said, format!("A model decides what matters: “{INTENT}”"));
    let id = browser.current_url().await.path().trim_start_matches("/watches/").to_owned();
    let saved = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(saved["options"]["ai"], json!({"intent": INTENT, "summary": true, "on_error": "hold"}));

    // Edit shows it back, open; an intent of 4,001 characters is refused beside the field,
    // kept as typed (set by script: the textarea's maxlength stops typing at 4,000).
    browser.goto(&format!("{root}/watches/{id}/edit")).await;
    assert_eq!(browser.execute("return document.querySelector('details#ai').open").await, true);
    assert_eq!(value(&browser, "#f-ai_intent").await, INTENT);
    assert_eq!(browser.execute("return document.querySelector('#f-ai_summary').checked").await, true);
    assert_eq!(value(&browser, "#f-ai_on_error").await, "hold");
    browser.execute("document.querySelector('#f-ai_intent').value = 'a'.repeat(4001);").await;
    browser.click("button[value='save']").await;
    let error = browser.wait_for_text("#e-ai_intent", "4001").await;
    assert!(error.contains("at most 4000"), "{error}");
    assert_eq!(browser.execute("return document.querySelector('#f-ai_intent').value.length").await, 4001);
    assert_eq!(browser.execute("return document.querySelector('details#ai').open").await, true);
    assert_eq!(
        browser.execute("return document.querySelector('#f-ai_intent').getAttribute('aria-invalid')").await,
        "true"
    );
    look_everywhere(&browser, "ai-form-error").await;
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["options"]["ai"]["intent"], INTENT, "nothing saved");

    // Five changes; with no model, the verdict loop holds each (the watch says hold), and
    // nothing is delivered.
    let store = store(&app);
    eventually("the baseline check", || async {
        (app.ok(&format!("/watches/{id}/runs"), &token).await["items"].as_array().map_or(0, Vec::len) == 1)
            .then_some(())
    })
    .await;
    for price in ["49 EUR", "51 EUR", "60 EUR", "45 EUR", "44 EUR"] {
        page.set(&shop(price));
        assert_eq!(app.check(&token, &id).await["outcome"], "changed");
    }
    let held = eventually("five held changes", || async {
        let found = verdicts_of(&store, &id).await;
        (found.len() == 5 && found.iter().all(|v| v.state == "held")).then_some(found)
    })
    .await;
    assert!(held[4].error.as_deref().is_some_and(|e| e.contains("no model is configured")), "{:?}", held[4]);
    assert!(receiver.received().is_empty(), "a held change is not delivered");
    for verdict in each_kind(&held) {
        set_verdict(&store, verdict).await;
    }

    // The watch page says each, newest first.
    browser.goto(&format!("{root}/watches/{id}")).await;
    let texts = verdict_texts(&browser).await;
    assert_eq!(texts.len(), 5, "{texts:?}");
    assert!(texts[0].starts_with("Held, not sent") && texts[0].contains("no model is configured"), "{}", texts[0]);
    assert!(texts[1].starts_with("Waiting for the model"), "{}", texts[1]);
    assert!(texts[1].contains("Tried 2 times") && texts[1].contains("503 Service Unavailable"), "{}", texts[1]);
    assert!(texts[2].starts_with("Sent without a verdict") && texts[2].contains("budget"), "{}", texts[2]);
    assert!(texts[3].starts_with("Not important, not sent") && texts[3].contains("from the cache"), "{}", texts[3]);
    assert!(texts[3].contains("above the 50 EUR") && texts[3].contains("Summary: Price: 49 → 51 EUR."), "{}", texts[3]);
    assert!(texts[4].starts_with("Important by qwen2.5:3b") && texts[4].contains("to 49 EUR."), "{}", texts[4]);
    let buttons = browser.execute("return document.querySelectorAll('.timeline form.release').length").await;
    assert_eq!(buttons, 1, "only the held change can be sent");
    look_everywhere(&browser, "ai-watch").await;

    // Another account cannot send it: the 404 page, and it stays held.
    crate::pages::user(&app, "Bobco", "bob@example.com").await;
    let bob = crate::pages::sign_in(&app, "bob@example.com").await;
    let release = format!("/watches/{id}/changes/{}/release", held[4].event_id);
    let answer = bob.submit(&release, &[]).await;
    assert_eq!(answer.status(), 404);
    assert!(answer.text().await.expect("body").contains("<h1>Not found</h1>"));
    assert_eq!(verdicts_of(&store, &id).await[4].state, "held");

    // Send now: the receiver gets the change, with why it had no verdict.
    browser.click(".timeline form.release button").await;
    browser.wait_for_text(".notice", "Sent: 1 delivery queued.").await;
    let got = receiver.wait_for(1).await;
    let body = got[0].json();
    assert_eq!(body["type"], "change.detected");
    assert!(body["data"]["ai"]["error"].as_str().is_some_and(|e| e.contains("no model")), "{body}");
    assert!(verdict_texts(&browser).await[0].starts_with("Sent by hand"));
    assert_eq!(browser.execute("return document.querySelectorAll('.timeline form.release').length").await, 0);

    // Changes shows the same badges.
    browser.goto(&format!("{root}/changes")).await;
    let badges = browser
        .execute("return [...document.querySelectorAll('.changes .verdict .badge')].map(b => b.textContent)")
        .await;
    assert_eq!(
        badges,
        json!([
            "Sent by hand",
            "Waiting for the model",
            "Sent without a verdict",
            "Not important, not sent",
            "Important"
        ])
    );
    look_everywhere(&browser, "ai-changes").await;

    // Emptied, the section saves no `ai` at all.
    browser.goto(&format!("{root}/watches/{id}/edit")).await;
    browser.fill("#f-ai_intent", "").await;
    browser.click("#f-ai_summary").await;
    browser.click("button[value='save']").await;
    browser.wait_for_text(".notice", "Watch saved.").await;
    assert_eq!(browser.execute("return document.querySelector('#ai-intent')").await, Value::Null);
    let options = app.ok(&format!("/watches/{id}"), &token).await["options"].clone();
    assert!(options.get("ai").is_none(), "{options}");
}

pub async fn an_account_sets_its_own_model_on_the_account_page(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let store = store(&app);
    let account = store
        .read(|c| driftwatch_store::users::find_user_by_email(c, EMAIL))
        .await
        .expect("read")
        .expect("the user")
        .account_id;
    let (spender, day) = (account.clone(), now().format("%Y-%m-%d").to_string());
    store.write(move |c| driftwatch_store::verdicts::spend(c, &spender, &day, 1234, 1)).await.expect("spent");

    browser.goto(&format!("{root}/account")).await;
    assert!(browser.text("#model-in-use").await.contains("No model is configured"));
    assert_eq!(browser.text("#model-spent").await, "Used today (UTC): 1,234 of 1,000,000 tokens a day.");
    assert_eq!(
        browser.execute("return document.querySelector('form[action=\"/account/model/clear\"]')").await,
        Value::Null
    );

    // Errors stand beside their fields, what was typed kept.
    browser.fill("#f-base_url", "ftp://models.example/v1").await;
    browser.fill("#f-daily_tokens", "-5").await;
    browser.submit_form("form[action='/account/model#model']").await;
    browser.wait_for("#e-base_url").await;
    assert!(browser.text("#e-model").await.contains("model's name"));
    assert!(browser.text("#e-daily_tokens").await.contains("0 (no limit) or more"));
    assert_eq!(value(&browser, "#f-base_url").await, "ftp://models.example/v1");
    look_everywhere(&browser, "ai-account-errors").await;

    // Saved: the key is sealed, never shown again, and the account's budget applies.
    let key = "sk-test-never-shown-again";
    browser.fill("#f-base_url", "http://127.0.0.1:9/v1").await;
    browser.fill("#f-model", "qwen2.5:3b").await;
    browser.fill("#f-api_key", key).await;
    browser.fill("#f-daily_tokens", "5000").await;
    browser.submit_form("form[action='/account/model#model']").await;
    browser.wait_for_text(".notice", "Saved: qwen2.5:3b now judges your changes.").await;
    assert!(browser.text("#model-in-use").await.contains("Your account's own model, qwen2.5:3b"));
    assert_eq!(browser.text("#model-spent").await, "Used today (UTC): 1,234 of 5,000 tokens a day.");
    assert!(browser.text("#h-api_key").await.starts_with("A key is stored"));
    assert_eq!(value(&browser, "#f-api_key").await, "");
    let source = browser.execute("return document.documentElement.outerHTML").await;
    assert!(!source.as_str().unwrap_or_default().contains(key), "the key is never echoed");
    let owner = account.clone();
    let stored = store.read(move |c| driftwatch_store::verdicts::account_model(c, &owner)).await.expect("read");
    let sealed = stored.api_key.clone().expect("a stored key");
    assert!(driftwatch_core::is_sealed(&sealed) && !sealed.contains(key), "sealed at rest");
    assert_eq!((stored.model.as_deref(), stored.daily_tokens), (Some("qwen2.5:3b"), Some(5000)));
    look_everywhere(&browser, "ai-account").await;

    // Saved again without a key, the stored one is kept.
    browser.fill("#f-model", "qwen2.5:7b").await;
    browser.submit_form("form[action='/account/model#model']").await;
    browser.wait_for_text(".notice", "qwen2.5:7b").await;
    let owner = account.clone();
    let kept = store.read(move |c| driftwatch_store::verdicts::account_model(c, &owner)).await.expect("read");
    assert_eq!(kept.api_key.as_deref(), Some(sealed.as_str()));

    // The watch form names it.
    browser.goto(&format!("{root}/watches/new")).await;
    browser.click("details#ai summary").await;
    let note = browser.text("#ai-model").await;
    assert!(note.contains("Your account's own model, qwen2.5:7b"), "{note}");

    // The key removed, then the account's own model given up.
    browser.goto(&format!("{root}/account")).await;
    browser.submit_form("form[action='/account/model/remove-key']").await;
    browser.wait_for_text(".notice", "stored key is removed").await;
    assert!(browser.text("#h-api_key").await.starts_with("No key is stored"));
    assert!(browser.text("#model-in-use").await.contains("qwen2.5:7b"), "the model stays");
    browser.submit_form("form[action='/account/model/clear']").await;
    browser.wait_for_text(".notice", "Your own model is forgotten.").await;
    assert!(browser.text("#model-in-use").await.contains("No model is configured"));
    let owner = account.clone();
    let cleared = store.read(move |c| driftwatch_store::verdicts::account_model(c, &owner)).await.expect("read");
    assert_eq!(cleared, driftwatch_store::verdicts::AccountModel::default());
}

pub async fn the_servers_model_is_named_where_it_is_used(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start_with(backend, |s| {
        s.llm_base_url = Some("http://127.0.0.1:9/v1".into());
        s.llm_model = Some("llama3.2:1b".into());
        s.llm_daily_tokens = 0;
    })
    .await;
    let root = app.root();
    set_up(&browser, &app).await;
    browser.goto(&format!("{root}/account")).await;
    assert!(browser.text("#model-in-use").await.contains("The server's model, llama3.2:1b"));
    assert_eq!(browser.text("#model-spent").await, "Used today (UTC): 0 tokens, with no daily limit.");
    browser.goto(&format!("{root}/watches/new")).await;
    browser.click("details#ai summary").await;
    assert!(browser.text("#ai-model").await.contains("The server's model, llama3.2:1b"));
    assert_eq!(browser.execute("return document.querySelector('#ai-model').className").await, "hint");
}

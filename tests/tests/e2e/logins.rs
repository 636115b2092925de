//! Logins that stay logged in: named secrets typed by login steps (never shown back, never in
//! options, logs or the database in plaintext), a kept session that makes ten checks one
//! login, `login_required` when the login fails, and a `cookies.txt` imported as a session.
//!
//! The site is a small axum server on loopback: a login form, a session cookie the server
//! honours for a configurable time, and a count of logins.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use driftwatch_test_support::{Backend, Receiver, TestDb};
use serde_json::{Value, json};

use crate::rendering::chromium;
use crate::support::{TestApp, test_settings};

const USER: &str = "ada";
const PASSWORD: &str = "plaintext-login-password-7731";

/// The login site's state.
struct Site {
    /// Session id → when it was issued.
    sessions: Mutex<HashMap<String, Instant>>,
    /// How long a session is honoured.
    ttl: Mutex<Duration>,
    logins: AtomicUsize,
    failed: AtomicUsize,
    balance: Mutex<String>,
}

/// A site with a login form at `/account`: signed in (a valid `sid` cookie), the account page;
/// otherwise the form, which posts to `/login`.
pub struct LoginSite {
    pub url: String,
    site: Arc<Site>,
}

impl LoginSite {
    pub async fn start(ttl: Duration) -> LoginSite {
        let site = Arc::new(Site {
            sessions: Mutex::new(HashMap::new()),
            ttl: Mutex::new(ttl),
            logins: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            balance: Mutex::new("42".into()),
        });
        let app = axum::Router::new()
            .route("/account", axum::routing::get(account))
            .route("/login", axum::routing::post(login))
            .with_state(Arc::clone(&site));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        LoginSite { url: format!("http://{addr}/account"), site }
    }

    /// Successful logins so far.
    pub fn logins(&self) -> usize {
        self.site.logins.load(Ordering::SeqCst)
    }

    /// Refused logins so far.
    pub fn failed(&self) -> usize {
        self.site.failed.load(Ordering::SeqCst)
    }

    /// Every session issued so far has outlived its time: what N seconds do, without waiting
    /// for them.
    pub fn expire_sessions(&self) {
        let ttl = *self.site.ttl.lock().expect("lock");
        let long_ago = Instant::now().checked_sub(ttl + Duration::from_secs(1)).expect("an instant long ago");
        for issued in self.site.sessions.lock().expect("lock").values_mut() {
            *issued = long_ago;
        }
    }

    /// A session issued as a login would (for a cookies.txt).
    pub fn issue_session(&self) -> String {
        let sid = format!("sid-{:x}", rand_u64());
        self.site.sessions.lock().expect("lock").insert(sid.clone(), Instant::now());
        sid
    }

    /// Every session id issued.
    pub fn session_ids(&self) -> Vec<String> {
        self.site.sessions.lock().expect("lock").keys().cloned().collect()
    }

    pub fn set_balance(&self, balance: &str) {
        *self.site.balance.lock().expect("lock") = balance.into();
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

fn signed_in(site: &Site, headers: &HeaderMap) -> bool {
    let ttl = *site.ttl.lock().expect("lock");
    let sessions = site.sessions.lock().expect("lock");
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix("sid="))
        .any(|sid| sessions.get(sid).is_some_and(|issued| issued.elapsed() < ttl))
}

const FORM: &str = "<form method=post action=/login><label>User <input id=user name=user></label>\
    <label>Password <input id=pass name=pass type=password></label><button id=go type=submit>Sign in</button></form>";

async fn account(State(site): State<Arc<Site>>, headers: HeaderMap) -> Html<String> {
    if signed_in(&site, &headers) {
        let balance = site.balance.lock().expect("lock").clone();
        Html(format!(
            "<!doctype html><html><body><div id=account>Signed in as {USER}</div>\
             <p id=balance>Balance: {balance}</p><script>const n = Number(localStorage.getItem('visits') || 0) + 1;\
             localStorage.setItem('visits', String(n));</script></body></html>"
        ))
    } else {
        Html(format!("<!doctype html><html><body><h1>Sign in</h1>{FORM}</body></html>"))
    }
}

async fn login(State(site): State<Arc<Site>>, body: axum::body::Bytes) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    if form.get("user").map(String::as_str) != Some(USER) || form.get("pass").map(String::as_str) != Some(PASSWORD) {
        site.failed.fetch_add(1, Ordering::SeqCst);
        return Html(format!("<!doctype html><html><body><p class=error>Wrong password</p>{FORM}</body></html>"))
            .into_response();
    }
    site.logins.fetch_add(1, Ordering::SeqCst);
    let sid = format!("sid-{:x}", rand_u64());
    let ttl = *site.ttl.lock().expect("lock");
    site.sessions.lock().expect("lock").insert(sid.clone(), Instant::now());
    let cookie = format!("sid={sid}; Path=/; Max-Age={}; HttpOnly", ttl.as_secs().max(1));
    (StatusCode::SEE_OTHER, [(header::LOCATION, "/account".to_owned()), (header::SET_COOKIE, cookie)]).into_response()
}

/// Everything the application logs while this suite runs (its own crates at DEBUG, the rest at
/// INFO, as `serve` writes to stderr), to be searched for what must never be logged.
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let filter = tracing_subscriber::EnvFilter::new(
            "info,chromiumoxide=off,driftwatch_schedule=debug,driftwatch_browser=debug,driftwatch_web=debug",
        );
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(move || SharedWriter(Arc::clone(&sink)))
            .try_init();
        buffer
    })
    .clone()
}

struct SharedWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A request with a body other than JSON, checked against the OpenAPI document like every call.
async fn send_text(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: String,
) -> (StatusCode, Value) {
    let verb = method.to_string();
    let response = app
        .http
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(token)
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .expect("request");
    let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = response.text().await.expect("body");
    crate::conformance::check(&verb, path, status.as_u16(), content_type.as_deref(), &text);
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

async fn put(app: &TestApp, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
    app.call(reqwest::Method::PUT, path, token, Some(body)).await
}

async fn delete(app: &TestApp, path: &str, token: &str) -> StatusCode {
    app.call(reqwest::Method::DELETE, path, token, None).await.0
}

fn field_of(problem: &Value) -> &str {
    problem["errors"][0]["field"].as_str().unwrap_or_default()
}

/// The login watch's body: the browser types the user and the secret, then signs in; the
/// session is kept and `#account` says whether it still signs in.
fn login_watch(url: &str, secret: &str) -> Value {
    json!({"url": url, "selector": "#balance", "name": "Bank", "options": {"fetch": {
        "engine": "browser", "timeout_seconds": 30,
        "steps": [
            {"action": "type", "selector": "#user", "text": USER},
            {"action": "type", "selector": "#pass", "text": {"secret": secret}},
            {"action": "click", "selector": "#go"}
        ],
        "session": {"keep": true, "logged_in": "#account"}
    }}})
}

pub async fn secrets_are_set_replaced_and_never_shown(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let other = app.account("other").await;

    let (status, created) = app.post("/secrets", &token, json!({"name": "bank", "value": PASSWORD})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["name"], "bank");
    assert!(created.get("value").is_none(), "a value is never shown back: {created}");
    let (status, again) = app.post("/secrets", &token, json!({"name": "bank", "value": "x"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    let list = app.ok("/secrets", &token).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    assert!(!list.to_string().contains(PASSWORD), "{list}");
    let (status, replaced) = put(&app, "/secrets/bank", &token, json!({"value": "new-value"})).await;
    assert_eq!(status, StatusCode::OK, "{replaced}");
    assert!(replaced.get("value").is_none());

    // Bad names and values are named; another account's secret is not found.
    for (body, field) in [
        (json!({"name": "has space", "value": "v"}), "name"),
        (json!({"name": "ok", "value": ""}), "value"),
        (json!({"name": "ok", "value": "x".repeat(4097)}), "value"),
    ] {
        let (status, problem) = app.post("/secrets", &token, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(field_of(&problem), field, "{problem}");
    }
    assert_eq!(app.ok("/secrets", &other).await["items"], json!([]));
    assert_eq!(delete(&app, "/secrets/bank", &other).await, StatusCode::NOT_FOUND);
    // A PUT sets the other account's own secret of that name; the first account's is untouched.
    let (status, own) = put(&app, "/secrets/bank", &other, json!({"value": "theirs"})).await;
    assert_eq!(status, StatusCode::OK, "{own}");
    assert_eq!(app.ok("/secrets", &other).await["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(app.ok("/secrets", &token).await["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(delete(&app, "/secrets/bank", &other).await, StatusCode::NO_CONTENT);
    assert_eq!(app.ok("/secrets", &token).await["items"].as_array().map(Vec::len), Some(1), "only its own");

    // A watch whose steps type a secret the account does not keep is refused, naming the step.
    let (status, problem) = app.post("/watches", &token, login_watch("http://127.0.0.1:9/account", "nope")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(field_of(&problem), "options.fetch.steps[1]", "{problem}");
    assert!(problem.to_string().contains("nope"), "{problem}");
    let (status, problem) = app.post("/watches", &other, login_watch("http://127.0.0.1:9/account", "bank")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "another account's secret is no secret: {problem}");
    assert_eq!(app.ok("/watches", &token).await["items"], json!([]), "nothing saved");
    let (status, watch) = app.post("/watches", &token, json!({"url": "http://127.0.0.1:9/", "paused": true})).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    let patch = json!({"options": login_watch("http://127.0.0.1:9/", "nope")["options"]});
    let (status, problem) = app.call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(patch)).await;
    assert_eq!((status, field_of(&problem)), (StatusCode::UNPROCESSABLE_ENTITY, "options.fetch.steps[1]"), "{problem}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["options"]["fetch"]["steps"], json!([]));

    assert_eq!(delete(&app, "/secrets/bank", &token).await, StatusCode::NO_CONTENT);
    assert_eq!(delete(&app, "/secrets/bank", &token).await, StatusCode::NOT_FOUND);
}

pub async fn a_cookies_txt_becomes_a_watch_session(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = LoginSite::start(Duration::from_secs(300)).await;
    let body = json!({"url": site.url, "selector": "#balance", "paused": true,
                      "options": {"fetch": {"session": {"keep": true}}}});
    let (status, watch) = app.post("/watches", &token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    let path = format!("/watches/{id}/session");
    let session = app.ok(&path, &token).await;
    assert_eq!((session["kept"].as_bool(), session["keep"].as_bool()), (Some(false), Some(true)), "{session}");

    // Bad files are refused with the line or the limit named, and nothing is saved.
    let garbage = "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tx\nthis is not a cookie\n";
    let (status, problem) = send_text(&app, reqwest::Method::PUT, &path, &token, garbage.into()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(field_of(&problem), "body", "{problem}");
    assert!(problem.to_string().contains("line 3"), "names the line: {problem}");
    let megabyte: String =
        (0..20_000).map(|i| format!("127.0.0.1\tFALSE\t/\tFALSE\t0\tc{i}\t{}\n", "v".repeat(40))).collect();
    assert!(megabyte.len() > 1024 * 1024);
    let (status, problem) = send_text(&app, reqwest::Method::PUT, &path, &token, megabyte).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{problem}");
    assert!(problem["detail"].as_str().unwrap_or_default().contains("larger than"), "{problem}");
    let many: String = (0..3001).map(|i| format!("127.0.0.1\tFALSE\t/\tFALSE\t0\tc{i}\tv\n")).collect();
    let (status, problem) = send_text(&app, reqwest::Method::PUT, &path, &token, many).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert!(problem.to_string().contains("more than 3000 cookies"), "{problem}");
    assert_eq!(app.ok(&path, &token).await["kept"], false, "nothing saved");

    // A good file signs the watch in over plain HTTP; the site's refreshed cookies are kept.
    let sid = site.issue_session();
    let file = format!(
        "# Netscape HTTP Cookie File\n# exported\n\n#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{sid}\n\
         .example.org\tTRUE\t/\tTRUE\t2000000000\tother\tvalue\n"
    );
    let other = app.account("other").await;
    let (status, _) = send_text(&app, reqwest::Method::PUT, &path, &other, file.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another account's watch");
    let (status, session) = send_text(&app, reqwest::Method::PUT, &path, &token, file).await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!((session["kept"].as_bool(), session["cookies"].as_i64()), (Some(true), Some(2)), "{session}");
    assert_eq!(session["source"], "import");
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "baseline", "the imported session signs in: {run}");
    site.set_balance("43");
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let session = app.ok(&path, &token).await;
    assert_eq!((session["source"].as_str(), session["logins"].as_i64()), (Some("check"), Some(0)), "{session}");
    assert_eq!(site.logins(), 0, "no login ran: the file was the login");

    // Forgotten, the next check meets the login form.
    assert_eq!(delete(&app, &path, &token).await, StatusCode::NO_CONTENT);
    assert_eq!(app.ok(&path, &token).await["kept"], false);
    let run = app.check(&token, id).await;
    assert_eq!(run["error_kind"], "selector_missing", "{run}");
    assert_eq!(delete(&app, &path, &other).await, StatusCode::NOT_FOUND);

    // With a logged_in selector, a session that no longer signs in is login_required, not a
    // missing selector; a new cookies.txt brings the watch back.
    let bad = json!({"options": {"fetch": {"session": {"keep": true, "logged_in": "p["}}}});
    let (status, problem) = app.call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(bad)).await;
    assert_eq!((status, field_of(&problem)), (StatusCode::UNPROCESSABLE_ENTITY, "options.fetch.session.logged_in"));
    let good = json!({"options": {"fetch": {"session": {"keep": true, "logged_in": "#account"}}}});
    let (status, _) = app.call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(good)).await;
    assert_eq!(status, StatusCode::OK);
    let run = app.check(&token, id).await;
    assert_eq!(run["error_kind"], "login_required", "{run}");
    assert!(run["error"].as_str().unwrap_or_default().contains("cookies.txt"), "{run}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "login_required");
    let file = format!("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{}\n", site.issue_session());
    assert_eq!(send_text(&app, reqwest::Method::PUT, &path, &token, file).await.0, StatusCode::OK);
    let run = app.check(&token, id).await;
    assert_eq!(run["error"], Value::Null, "{run}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "ok");
    let events = app.ok(&format!("/events?watch_id={id}"), &token).await;
    let types: Vec<&str> =
        events["items"].as_array().expect("items").iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(types.contains(&"check.login_required") && types.contains(&"check.recovered"), "{types:?}");
}

pub async fn ten_checks_take_one_login(backend: Backend) {
    if !chromium() {
        return;
    }
    let logs = logs();
    let db = TestDb::new(backend);
    let settings = test_settings(&db);
    let roles = driftwatch::Roles { web: true, background: true };
    let app = TestApp::from_app(driftwatch::App::start(&settings, roles).await.expect("starts"));
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    let (status, endpoint) = app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    let site = LoginSite::start(Duration::from_secs(120)).await;
    let (status, _) = app.post("/secrets", &token, json!({"name": "bank", "value": PASSWORD})).await;
    assert_eq!(status, StatusCode::CREATED);

    // The first check logs in; ten more start from the kept session.
    let watch = app.watch_with_baseline(&token, login_watch(&site.url, "bank")).await;
    let id = watch["id"].as_str().expect("id");
    let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
    assert_eq!(runs["items"][0]["outcome"], "baseline", "{runs}");
    assert_eq!(site.logins(), 1);
    for n in 1..=10 {
        let run = app.check(&token, id).await;
        assert_eq!(run["outcome"], "unchanged", "check {n}: {run}");
    }
    assert_eq!(site.logins(), 1, "ten checks, one login");
    let session = app.ok(&format!("/watches/{id}/session"), &token).await;
    assert_eq!((session["kept"].as_bool(), session["logins"].as_i64()), (Some(true), Some(1)), "{session}");
    assert!(session["cookies"].as_i64().unwrap_or(0) >= 1, "{session}");

    // The session expires: one more login, then the new session holds.
    site.expire_sessions();
    assert_eq!(app.check(&token, id).await["outcome"], "unchanged");
    assert_eq!(site.logins(), 2, "one login after the session expired");
    for _ in 0..3 {
        assert_eq!(app.check(&token, id).await["outcome"], "unchanged");
    }
    assert_eq!(site.logins(), 2);
    assert_eq!(app.ok(&format!("/watches/{id}/session"), &token).await["logins"], 2);

    // Wrong credentials: login_required at once, one event, no change, nothing stored.
    let (status, _) = put(&app, "/secrets/bank", &token, json!({"value": "wrong-password"})).await;
    assert_eq!(status, StatusCode::OK);
    site.expire_sessions();
    site.set_balance("99");
    let snapshots_before = app.ok(&format!("/watches/{id}/snapshots"), &token).await["items"].as_array().map(Vec::len);
    for n in 1..=2 {
        let run = app.check(&token, id).await;
        assert_eq!(
            (run["outcome"].as_str(), run["error_kind"].as_str()),
            (Some("failed"), Some("login_required")),
            "check {n}: {run}"
        );
        assert_eq!(run["snapshot_id"], Value::Null, "{run}");
        assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "login_required");
    }
    assert_eq!(site.failed(), 2, "each check tried the login");
    let sent = receiver.wait_for(1).await;
    assert_eq!(sent[0].json()["type"], "check.login_required", "{}", sent[0].json());
    let events = app.ok(&format!("/events?watch_id={id}&type=check.login_required"), &token).await;
    assert_eq!(events["items"].as_array().map(Vec::len), Some(1), "one event while it stays: {events}");
    let snapshots = app.ok(&format!("/watches/{id}/snapshots"), &token).await["items"].as_array().map(Vec::len);
    assert_eq!(snapshots, snapshots_before, "never a change");

    // The right password again: recovered once, and the change is the page's.
    let (status, _) = put(&app, "/secrets/bank", &token, json!({"value": PASSWORD})).await;
    assert_eq!(status, StatusCode::OK);
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let sent = receiver.wait_for(3).await;
    let types: Vec<String> = sent.iter().map(|r| r.json()["type"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(types.iter().filter(|t| *t == "check.recovered").count(), 1, "{types:?}");
    assert_eq!(types.iter().filter(|t| *t == "change.detected").count(), 1, "{types:?}");
    assert_eq!(site.logins(), 3);
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "ok");

    // The password is nowhere: not in the options, not in the logs, not in the database; nor
    // is any session the site issued.
    let watch = app.ok(&format!("/watches/{id}"), &token).await;
    assert!(!watch.to_string().contains(PASSWORD), "{watch}");
    assert_eq!(watch["options"]["fetch"]["steps"][1]["text"], json!({"secret": "bank"}));
    let list = app.ok("/watches", &token).await;
    assert!(!list.to_string().contains(PASSWORD));
    let logged = String::from_utf8_lossy(&logs.lock().expect("lock")).into_owned();
    assert!(logged.contains(id), "the logs were captured");
    assert!(!logged.contains(PASSWORD), "the password is in the logs");
    let running = app.into_app();
    let store = running.store.clone();
    let watch_id = id.to_owned();
    let stored = store
        .read(move |c| {
            use diesel::prelude::*;
            let table = driftwatch_store::schema::watches::table;
            Ok(table.find(&watch_id).select(driftwatch_store::Watch::as_select()).first(c)?)
        })
        .await
        .expect("read");
    // The kept session: sealed, the site's cookie in it, and the page's local storage carried
    // from check to check (the page counts its visits there: one a good check, 16 of them).
    let watch_id = id.to_owned();
    let kept = store.read(move |c| driftwatch_store::logins::session_of(c, &watch_id)).await.expect("read");
    let kept = kept.expect("a kept session");
    assert!(kept.state.starts_with("dwenc:v1:"), "sealed: {}", &kept.state[..20.min(kept.state.len())]);
    let key = driftwatch_core::SecretKey::from_base64(crate::support::TEST_SECRET_KEY).expect("key");
    let opened = driftwatch_core::Keyring::new(key, Vec::new()).open(&kept.state).expect("opens");
    let state: driftwatch_core::SessionState = serde_json::from_str(&opened).expect("a session");
    assert!(state.cookies.iter().any(|c| c.name == "sid" && c.http_only), "{:?}", state.cookies);
    let origin = site.url.trim_end_matches("/account");
    assert_eq!(state.local_storage[origin]["visits"], "16", "{:?}", state.local_storage);
    let export = serde_json::to_string(&driftwatch_import::from_watch(&stored)).expect("export");
    assert!(export.contains("\"secret\":\"bank\""), "{export}");
    assert!(!export.contains(PASSWORD), "the password is in the export: {export}");
    running.shutdown().await;
    let mut needles = vec![PASSWORD.to_owned()];
    needles.extend(site.session_ids());
    let found = crate::secrets_at_rest::found_in_database(backend, &db, &needles);
    assert!(found.is_empty(), "in plaintext in the database: {found:#?}");
}

pub async fn the_ui_keeps_secrets_and_imports_sessions(backend: Backend) {
    use crate::pages::{header, sign_in, user};
    let app = TestApp::start(backend).await;
    let token = user(&app, "Acme", "ada@example.com").await;
    let other = user(&app, "Other", "bob@example.com").await;
    let ada = sign_in(&app, "ada@example.com").await;
    let account = ada.get("/account").await.text().await.expect("page");
    assert!(account.contains("href=\"/secrets\""), "the account page links to the secrets");
    let page = ada.get("/secrets").await.text().await.expect("page");
    assert!(page.contains("No secrets yet"), "{page}");

    // A bad name: the error beside it, the name kept, the value never echoed.
    let refused = ada.submit("/secrets", &[("name", "bad name"), ("value", PASSWORD)]).await;
    assert_eq!(refused.status(), 422);
    let page = refused.text().await.expect("page");
    assert!(page.contains("id=\"e-name\"") && page.contains("value=\"bad name\""), "{page}");
    assert!(!page.contains(PASSWORD), "the value is not shown back");
    let saved = ada.submit("/secrets", &[("name", "bank"), ("value", PASSWORD)]).await;
    assert_eq!((saved.status().as_u16(), header(&saved, "location")), (303, "/secrets".to_owned()));
    let page = ada.get("/secrets").await.text().await.expect("page");
    assert!(page.contains("<code>bank</code>") && !page.contains(PASSWORD), "{page}");
    let taken = ada.submit("/secrets", &[("name", "bank"), ("value", "again")]).await;
    assert_eq!(taken.status(), 422, "a name taken is said beside the name");
    let empty = ada.submit("/secrets/bank/replace", &[("value", "")]).await;
    assert_eq!(empty.status(), 422);
    assert!(empty.text().await.expect("page").contains("id=\"re-bank\""), "the error beside the row's value");
    let replaced = ada.submit("/secrets/bank/replace", &[("value", "another-password")]).await;
    assert_eq!(replaced.status(), 303);
    assert_eq!(app.ok("/secrets", &token).await["items"][0]["name"], "bank");
    let bob = sign_in(&app, "bob@example.com").await;
    assert_eq!(bob.submit("/secrets/bank/delete", &[]).await.status(), 404, "another account's secret");
    assert_eq!(app.ok("/secrets", &other).await["items"], json!([]));

    // The watch form refuses steps that type a secret the account does not keep.
    if chromium() {
        let form = [
            ("url", "http://127.0.0.1:9/account"),
            ("name", "Bank"),
            ("schedule", "interval"),
            ("every", "1"),
            ("unit", "hours"),
            ("engine", "browser"),
            ("steps", "type #user ada\ntype_secret #pass nope\nclick #go"),
            ("keep_session", "on"),
            ("logged_in", "#account"),
            ("action", "save"),
        ];
        let refused = ada.submit("/watches/new", &form).await;
        assert_eq!(refused.status(), 422);
        let page = refused.text().await.expect("page");
        assert!(page.contains("id=\"e-steps\"") && page.contains("no secret named"), "{page}");
        assert_eq!(app.ok("/watches", &token).await["items"], json!([]), "nothing saved");
        let mut good = form;
        good[6] = ("steps", "type #user ada\ntype_secret #pass bank\nclick #go");
        let created = ada.submit("/watches/new", &good).await;
        assert_eq!(created.status(), 303, "{:?}", created.text().await);
        let watch = &app.ok("/watches", &token).await["items"][0];
        assert_eq!(watch["options"]["fetch"]["session"], json!({"keep": true, "logged_in": "#account"}));
        assert_eq!(watch["options"]["fetch"]["steps"][1]["text"], json!({"secret": "bank"}));
    }

    // The watch page: no session, a bad cookies.txt beside its field, a good one, forgotten.
    let body = json!({"url": "http://127.0.0.1:9/", "paused": true, "options": {"fetch": {"session": {"keep": true}}}});
    let (status, watch) = app.post("/watches", &token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    let page = ada.get(&format!("/watches/{id}")).await.text().await.expect("page");
    assert!(page.contains("id=\"session-none\""), "{page}");
    let garbage = "not-a-cookie-line-7731";
    let refused = ada.submit(&format!("/watches/{id}/session"), &[("cookies", garbage)]).await;
    assert_eq!(refused.status(), 422);
    let page = refused.text().await.expect("page");
    assert!(page.contains("id=\"e-cookies\"") && page.contains("line 1"), "{page}");
    assert!(!page.contains(garbage), "what was pasted (a credential) is not shown back");
    let file = "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tui-imported-sid\n";
    let imported = ada.submit(&format!("/watches/{id}/session"), &[("cookies", file)]).await;
    assert_eq!((imported.status().as_u16(), header(&imported, "location")), (303, format!("/watches/{id}#session")));
    let page = ada.get(&format!("/watches/{id}")).await.text().await.expect("page");
    assert!(page.contains("id=\"session-cookies\">1<"), "{page}");
    assert!(!page.contains("ui-imported-sid"), "the cookies are not shown");
    assert_eq!(bob.submit(&format!("/watches/{id}/session"), &[("cookies", file)]).await.status(), 404);
    assert_eq!(bob.submit(&format!("/watches/{id}/session/forget"), &[]).await.status(), 404);
    assert_eq!(app.ok(&format!("/watches/{id}/session"), &token).await["cookies"], 1);
    assert_eq!(ada.submit(&format!("/watches/{id}/session/forget"), &[]).await.status(), 303);
    assert_eq!(app.ok(&format!("/watches/{id}/session"), &token).await["kept"], false);
}

pub async fn the_login_pages_are_accessible_in_a_browser(backend: Backend) {
    use crate::browser::Browser;
    use crate::ui::{EMAIL, look, set_up};
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let root = app.root();

    browser.goto(&format!("{root}/secrets")).await;
    browser.fill("#f-name", "bank").await;
    browser.fill("#f-value", PASSWORD).await;
    browser.submit_form("form[action='/secrets']").await;
    browser.wait_for_text("table.secrets", "bank").await;
    look(&browser, "secrets").await;
    browser.fill("#f-name", "bank").await;
    browser.fill("#f-value", "again").await;
    browser.submit_form("form[action='/secrets']").await;
    browser.wait_for("#e-name").await;
    look(&browser, "secrets-error").await;

    let body = json!({"url": "http://127.0.0.1:9/", "paused": true, "options": {"fetch": {"session": {"keep": true}}}});
    let (status, watch) = app.post("/watches", &token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    browser.goto(&format!("{root}/watches/{id}")).await;
    browser.click("#session summary").await;
    browser.fill("#f-cookies", "garbage").await;
    browser.submit_form(&format!("form[action='/watches/{id}/session']")).await;
    assert!(browser.wait_for_text("#e-cookies", "line 1").await.contains("line 1"));
    look(&browser, "watch-session-error").await;
    // A pasted file keeps its tabs (typed, a tab would move the focus).
    let file = serde_json::to_string("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tabc").expect("json");
    browser.execute(&format!("document.querySelector('#f-cookies').value = {file}; return true;")).await;
    browser.submit_form(&format!("form[action='/watches/{id}/session']")).await;
    assert_eq!(browser.wait_for_text("#session-cookies", "1").await, "1");
    look(&browser, "watch-session").await;
}

pub async fn an_imported_session_spares_the_browser_its_login(backend: Backend) {
    if !chromium() {
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = LoginSite::start(Duration::from_secs(120)).await;
    let (status, _) = app.post("/secrets", &token, json!({"name": "bank", "value": PASSWORD})).await;
    assert_eq!(status, StatusCode::CREATED);
    let mut body = login_watch(&site.url, "bank");
    body["paused"] = json!(true);
    let (status, watch) = app.post("/watches", &token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    // A cookie the browser will not take (for a public suffix) is left out, not fatal.
    let file = format!(
        "#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t{}\n.com\tTRUE\t/\tFALSE\t0\tstray\tx\n",
        site.issue_session()
    );
    let path = format!("/watches/{id}/session");
    assert_eq!(send_text(&app, reqwest::Method::PUT, &path, &token, file).await.0, StatusCode::OK);
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "baseline", "{run}");
    assert_eq!(site.logins(), 0, "the imported session signed in: no login ran");
    let session = app.ok(&path, &token).await;
    assert_eq!((session["source"].as_str(), session["logins"].as_i64()), (Some("check"), Some(0)), "{session}");
}

//! The end-to-end harness: the application in-process with a client for its API whose every
//! answer is checked against the OpenAPI document, and the API steps the scenarios share. The
//! database, page server and webhook receiver are `driftwatch_test_support`'s.

use std::future::Future;

use axum::http::StatusCode;
use driftwatch::{App, Roles, Settings};
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_store::accounts;
use driftwatch_test_support::{Backend, TestDb, eventually};
use serde_json::{Value, json};

/// Settings for tests: loopback allowed, a short retry schedule, quick polling.
pub fn test_settings(db: &TestDb) -> Settings {
    check_webhook_bodies();
    let mut s = Settings::defaults();
    s.database_url = db.url.clone();
    s.listen = "127.0.0.1:0".into();
    s.allow_private_targets = true;
    s.retry_schedule = "50ms".into();
    s.retry_jitter = 0.0;
    s.max_attempts = 3;
    s.min_interval_seconds = 1;
    s.pool_size = 8;
    s.node_id = Some("test".into());
    s.rate_limit_per_minute = 0; // tests poll quickly; the rate-limit scenario turns it on
    // Every node of a test shares one key, as on PostgreSQL they must.
    s.secret_key = Some(TEST_SECRET_KEY.into());
    s
}

/// The secret key test apps run with (32 bytes of 0x2a, base64).
pub const TEST_SECRET_KEY: &str = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";

/// The application under test, with an HTTP client for its API.
/// Holds every webhook body any receiver of this suite gets to the OpenAPI document's
/// `webhooks` section, as [`TestApp::call`] holds every answer to its `paths`.
pub fn check_webhook_bodies() {
    driftwatch_test_support::check_every_request(crate::conformance::check_received);
}

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub app: Option<App>,
    _db: Option<TestDb>,
}

impl TestApp {
    pub async fn start(backend: Backend) -> TestApp {
        TestApp::start_with(backend, |_| {}).await
    }

    pub async fn start_with(backend: Backend, tweak: impl FnOnce(&mut Settings)) -> TestApp {
        check_webhook_bodies();
        let db = TestDb::new(backend);
        let mut settings = test_settings(&db);
        tweak(&mut settings);
        let app = App::start(&settings, Roles { web: true, background: true }).await.expect("app starts");
        let addr = app.addr.expect("web role listens");
        TestApp { base: format!("http://{addr}/api/v1"), http: reqwest::Client::new(), app: Some(app), _db: Some(db) }
    }

    /// Drives an application the test started itself (on a database it keeps).
    pub fn from_app(app: App) -> TestApp {
        check_webhook_bodies();
        let addr = app.addr.expect("web role listens");
        TestApp { base: format!("http://{addr}/api/v1"), http: reqwest::Client::new(), app: Some(app), _db: None }
    }

    /// The application back, still running.
    pub fn into_app(mut self) -> App {
        self.app.take().expect("running")
    }

    /// The server's root URL (where the browser UI is).
    pub fn root(&self) -> String {
        self.base.trim_end_matches("/api/v1").to_owned()
    }

    /// The first-run setup URL `serve` printed (while no user exists).
    pub fn setup_url(&self) -> String {
        self.app.as_ref().and_then(|a| a.setup_url.clone()).expect("a setup URL: no user exists yet")
    }

    /// A write token for the account of the user `email` (signed up through the UI).
    pub async fn token_for_user(&self, email: &str) -> String {
        let store = self.app.as_ref().expect("running").store.clone();
        let email = email.to_owned();
        let now = SystemClock.now().naive_utc();
        store
            .write(move |c| {
                let user = driftwatch_store::users::find_user_by_email(c, &email)?.expect("the user exists");
                accounts::create_token(c, &user.account_id, "test", "read write", now).map(|(_, token)| token)
            })
            .await
            .expect("a token")
    }

    /// Creates an account and a token for it, as `driftwatch account create` and
    /// `driftwatch token create` do; returns the token.
    pub async fn account(&self, name: &str) -> String {
        let store = self.app.as_ref().expect("running").store.clone();
        let name = name.to_owned();
        let now = SystemClock.now().naive_utc();
        store
            .write(move |c| {
                let account = accounts::create_account(c, &name, now)?;
                accounts::create_token(c, &account.id, "test", "read write", now).map(|(_, token)| token)
            })
            .await
            .expect("account and token")
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let verb = method.to_string();
        let mut request = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let problem = content_type.as_deref().is_some_and(|v| v.starts_with("application/problem+json"));
        let text = response.text().await.expect("body");
        crate::conformance::check(&verb, path, status.as_u16(), content_type.as_deref(), &text);
        assert!(!status.is_server_error(), "{verb} {path} -> {status}: {text}");
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if !status.is_success() {
            assert!(problem, "an error must be application/problem+json: {status} {value}");
            assert_eq!(value["status"], status.as_u16(), "problem status matches");
        }
        (status, value)
    }

    pub async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.call(reqwest::Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        self.call(reqwest::Method::POST, path, token, Some(body)).await
    }

    /// GET that must succeed.
    pub async fn ok(&self, path: &str, token: &str) -> Value {
        let (status, body) = self.get(path, token).await;
        assert_eq!(status, StatusCode::OK, "GET {path}: {body}");
        body
    }

    /// Creates a watch and waits for the runner's baseline check; returns the watch.
    pub async fn watch_with_baseline(&self, token: &str, body: Value) -> Value {
        let (status, watch) = self.post("/watches", token, body).await;
        assert_eq!(status, StatusCode::CREATED, "{watch}");
        let id = watch["id"].as_str().expect("id").to_owned();
        let path = format!("/watches/{id}/runs");
        eventually("the baseline check", || async {
            let runs = self.ok(&path, token).await;
            (runs["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
        })
        .await;
        watch
    }

    /// Checks the watch now; the check must succeed. Returns the run.
    pub async fn check(&self, token: &str, watch_id: &str) -> Value {
        let (status, run) = self.post(&format!("/watches/{watch_id}/check"), token, json!({})).await;
        assert_eq!(status, StatusCode::OK, "{run}");
        run
    }

    /// Creates an endpoint to `url` with the fields of `extra` on top; returns its id and
    /// signing secret (empty for a kind that does not sign).
    pub async fn endpoint(&self, token: &str, url: &str, extra: Value) -> (String, String) {
        let mut body = json!({"url": url});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let (status, created) = self.post("/endpoints", token, body).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        (created["id"].as_str().expect("id").to_owned(), created["secret"].as_str().unwrap_or_default().to_owned())
    }

    /// Waits (15 s at most) for the delivery to reach `status`; a timeout shows it as last seen.
    pub async fn wait_delivery(&self, token: &str, delivery_id: &str, status: &str) -> Value {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let d = self.ok(&format!("/deliveries/{delivery_id}"), token).await;
            if d["status"] == status {
                return d;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for delivery {delivery_id} to be {status}; last seen: {d}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Stop the loops before the database goes away.
        if let Some(app) = self.app.take() {
            let handle = tokio::runtime::Handle::current();
            tokio::task::block_in_place(|| handle.block_on(app.shutdown()));
        }
    }
}

/// `send` for requests built by hand (headers, raw bodies): the answer is checked against the
/// OpenAPI document like every answer through [`TestApp::call`].
pub trait SendChecked {
    fn send_checked(self) -> impl Future<Output = reqwest::Result<reqwest::Response>> + Send;
}

impl SendChecked for reqwest::RequestBuilder {
    async fn send_checked(self) -> reqwest::Result<reqwest::Response> {
        {
            let (client, request) = self.build_split();
            let request = request?;
            let method = request.method().to_string();
            let url = request.url().clone();
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?;
            if let Some(path) = url.path().strip_prefix("/api/v1") {
                let content_type = headers.get("content-type").and_then(|v| v.to_str().ok());
                let text = String::from_utf8_lossy(&body);
                crate::conformance::check(&method, path, status.as_u16(), content_type, &text);
                assert!(!status.is_server_error(), "{method} {path} -> {status}: {text}");
            }
            let mut rebuilt = axum::http::Response::builder().status(status.as_u16());
            for (name, value) in &headers {
                rebuilt = rebuilt.header(name.as_str(), value.as_bytes());
            }
            Ok(reqwest::Response::from(rebuilt.body(body).expect("a response")))
        }
    }
}

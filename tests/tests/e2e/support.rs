//! The test harness: databases, the application, a page server and a webhook receiver.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use diesel::{Connection as _, RunQueryDsl as _};
use driftwatch::{App, Roles, Settings};
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_store::accounts;
use serde_json::Value;
use tokio::sync::watch;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    #[allow(dead_code)] // constructed only when the PostgreSQL half is compiled
    Postgres,
}

/// A database of its own for one test, removed afterwards.
pub struct TestDb {
    pub url: String,
    _dir: tempfile::TempDir,
    postgres: Option<(String, String)>,
}

impl TestDb {
    pub fn new(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        match backend {
            Backend::Sqlite => {
                let url = format!("sqlite://{}", dir.path().join("driftwatch.db").display());
                TestDb { url, _dir: dir, postgres: None }
            }
            Backend::Postgres => {
                let admin = std::env::var("DRIFTWATCH_TEST_POSTGRES_URL")
                    .expect("DRIFTWATCH_TEST_POSTGRES_URL must be set for the PostgreSQL half");
                let name =
                    format!("dw_test_{}", driftwatch_core::new_id(driftwatch_core::IdKind::Run).replace("run_", ""));
                let mut conn = diesel::PgConnection::establish(&admin).expect("connect to the admin database");
                diesel::sql_query(format!("CREATE DATABASE {name}")).execute(&mut conn).expect("create database");
                let mut url = url::Url::parse(&admin).expect("postgres URL");
                url.set_path(&format!("/{name}"));
                TestDb { url: url.to_string(), _dir: dir, postgres: Some((admin, name)) }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.postgres
            && let Ok(mut conn) = diesel::PgConnection::establish(admin)
        {
            let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn);
        }
    }
}

/// Settings for tests: loopback allowed, a short retry schedule, quick polling.
pub fn test_settings(db: &TestDb) -> Settings {
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
    s
}

/// The application under test, with an HTTP client for its API.
pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub app: Option<App>,
    _db: TestDb,
}

impl TestApp {
    pub async fn start(backend: Backend) -> TestApp {
        TestApp::start_with(backend, |_| {}).await
    }

    pub async fn start_with(backend: Backend, tweak: impl FnOnce(&mut Settings)) -> TestApp {
        let db = TestDb::new(backend);
        let mut settings = test_settings(&db);
        tweak(&mut settings);
        let app = App::start(&settings, Roles { web: true, background: true }).await.expect("app starts");
        let addr = app.addr.expect("web role listens");
        TestApp { base: format!("http://{addr}/api/v1"), http: reqwest::Client::new(), app: Some(app), _db: db }
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

/// Awaits `probe` returning `Some`, polling briefly, for at most 15 seconds.
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A request the page server got.
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub at: std::time::Instant,
    pub method: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

#[derive(Debug, Clone)]
struct PageState {
    status: u16,
    html: String,
    etag: Option<String>,
    delay: Duration,
}

/// A web page whose status and content the test changes; it answers conditional requests when
/// given an ETag, and records every request.
pub struct PageServer {
    pub url: String,
    state: Arc<Mutex<PageState>>,
    requests: Arc<Mutex<Vec<PageRequest>>>,
}

impl PageServer {
    pub async fn start(html: &str) -> PageServer {
        let state =
            Arc::new(Mutex::new(PageState { status: 200, html: html.to_owned(), etag: None, delay: Duration::ZERO }));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (shared, log) = (Arc::clone(&state), Arc::clone(&requests));
        let app = axum::Router::new().route(
            "/page",
            axum::routing::any(move |method: axum::http::Method, headers: HeaderMap, body: String| {
                let (shared, log) = (Arc::clone(&shared), Arc::clone(&log));
                async move {
                    let headers: HashMap<String, String> = headers
                        .iter()
                        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                        .collect();
                    let page = shared.lock().expect("lock").clone();
                    let not_modified = page
                        .etag
                        .as_deref()
                        .is_some_and(|etag| headers.get("if-none-match").map(String::as_str) == Some(etag));
                    log.lock().expect("lock").push(PageRequest {
                        at: std::time::Instant::now(),
                        method: method.to_string(),
                        headers,
                        body,
                    });
                    if !page.delay.is_zero() {
                        tokio::time::sleep(page.delay).await;
                    }
                    let mut response = axum::response::IntoResponse::into_response((
                        StatusCode::from_u16(if not_modified { 304 } else { page.status }).expect("status"),
                        [("content-type", "text/html; charset=utf-8")],
                        if not_modified { String::new() } else { page.html },
                    ));
                    if let Some(etag) = page.etag {
                        response.headers_mut().insert("etag", etag.parse().expect("etag"));
                    }
                    response
                }
            }),
        );
        let addr = serve(app).await;
        PageServer { url: format!("http://{addr}/page"), state, requests }
    }

    pub fn set(&self, html: &str) {
        self.state.lock().expect("lock").html = html.to_owned();
    }

    pub fn set_status(&self, status: u16) {
        self.state.lock().expect("lock").status = status;
    }

    /// Answers only after `delay` (a slow page).
    pub fn set_delay(&self, delay: Duration) {
        self.state.lock().expect("lock").delay = delay;
    }

    /// Serves this ETag and answers 304 to requests that send it back.
    pub fn set_etag(&self, etag: Option<&str>) {
        self.state.lock().expect("lock").etag = etag.map(str::to_owned);
    }

    pub fn requests(&self) -> Vec<PageRequest> {
        self.requests.lock().expect("lock").clone()
    }
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: Bytes,
    pub at: std::time::Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("webhook body is JSON")
    }

    /// Verifies the Standard Webhooks signature with `secret`.
    pub fn verify(&self, secret: &str) -> Result<(), driftwatch_delivery::VerifyError> {
        driftwatch_delivery::verify(
            secret,
            self.header("webhook-id"),
            self.header("webhook-timestamp"),
            self.header("webhook-signature"),
            &self.body,
            SystemClock.now().timestamp(),
            300,
        )
    }
}

/// How the receiver answers, set on cue.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    retry_after: Option<String>,
    delay: Duration,
}

/// A webhook receiver that records every request and answers with a status set on cue.
pub struct Receiver {
    pub url: String,
    status: Arc<Mutex<Answer>>,
    received: Arc<Mutex<Vec<Received>>>,
    count: watch::Receiver<usize>,
}

impl Receiver {
    pub async fn start(status: u16) -> Receiver {
        let status = Arc::new(Mutex::new(Answer { status, retry_after: None, delay: Duration::ZERO }));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (tx, count) = watch::channel(0usize);
        let tx = Arc::new(tx);
        let (s, r) = (Arc::clone(&status), Arc::clone(&received));
        let app = axum::Router::new().route(
            "/hook",
            post(move |headers: HeaderMap, body: Bytes| {
                let (s, r, tx) = (Arc::clone(&s), Arc::clone(&r), Arc::clone(&tx));
                async move {
                    let headers = headers
                        .iter()
                        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                        .collect();
                    // Decide the answer before anyone can see this request arrived.
                    let answer = s.lock().expect("lock").clone();
                    let n = {
                        let mut all = r.lock().expect("lock");
                        all.push(Received { headers, body, at: std::time::Instant::now() });
                        all.len()
                    };
                    tx.send_replace(n);
                    if !answer.delay.is_zero() {
                        tokio::time::sleep(answer.delay).await;
                    }
                    let mut response = axum::response::IntoResponse::into_response((
                        StatusCode::from_u16(answer.status).expect("status"),
                        "receiver says hi",
                    ));
                    if let Some(value) = answer.retry_after {
                        response.headers_mut().insert("retry-after", value.parse().expect("header value"));
                    }
                    response
                }
            }),
        );
        let addr = serve(app).await;
        Receiver { url: format!("http://{addr}/hook"), status, received, count }
    }

    pub fn set_status(&self, status: u16) {
        self.status.lock().expect("lock").status = status;
    }

    /// Sends `Retry-After: value` with every answer (or none).
    pub fn set_retry_after(&self, value: Option<&str>) {
        self.status.lock().expect("lock").retry_after = value.map(str::to_owned);
    }

    /// Answers only after `delay` (a slow or hanging receiver).
    pub fn set_delay(&self, delay: Duration) {
        self.status.lock().expect("lock").delay = delay;
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// Waits until at least `n` requests arrived (at most 15 seconds); returns all so far.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        let mut count = self.count.clone();
        tokio::time::timeout(Duration::from_secs(15), count.wait_for(|c| *c >= n))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {n} webhooks; got {}", self.received().len()))
            .expect("receiver alive");
        self.received()
    }
}

/// Serves `app` on a loopback port of its own for the rest of the test.
pub async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
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

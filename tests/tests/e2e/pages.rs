//! The browser UI's security rules over plain HTTP, no browser needed: a session cookie and
//! the forms' `_csrf` field handled by hand, redirects reported rather than followed. Form
//! posts need their token and this site's origin; another account's ids are the 404 page;
//! form errors stand beside their fields; signed-in pages are not cached and carry the CSP.

use driftwatch_test_support::{Backend, PageServer, Receiver};
use serde_json::{Value, json};

use crate::support::TestApp;

pub(crate) const PASSWORD: &str = "correct horse battery";

/// A client that reports redirects instead of following them and keeps no cookies.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

/// The `name=value` pair of cookie `name` set by `response`, if it sets one.
fn cookie_set(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| v.split(';').next().unwrap_or(v).to_owned())
}

/// The value of the first `_csrf` hidden field of a page.
fn form_token(html: &str) -> Option<String> {
    html.split("name=\"_csrf\" value=\"").nth(1).and_then(|t| t.split('"').next()).map(str::to_owned)
}

/// The response's `name` header as text ("" when absent).
pub(crate) fn header(response: &reqwest::Response, name: &str) -> String {
    response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
}

/// Creates the account `account` with the user `email` (through the store, as setup does) and
/// an API token for the account; returns the token.
pub(crate) async fn user(app: &TestApp, account: &str, email: &str) -> String {
    let hash = tokio::task::spawn_blocking(|| driftwatch_core::hash_password(PASSWORD))
        .await
        .expect("hashing")
        .expect("a password hash");
    let store = app.app.as_ref().expect("running").store.clone();
    let (account, email) = (account.to_owned(), email.to_owned());
    let now = chrono::Utc::now().naive_utc();
    store
        .write(move |c| {
            let account = driftwatch_store::accounts::create_account(c, &account, now)?;
            driftwatch_store::users::create_user(c, &account.id, &email, &hash, now)?;
            driftwatch_store::accounts::create_token(c, &account.id, "test", "read write", now).map(|(_, t)| t)
        })
        .await
        .expect("account, user and token")
}

/// A signed-in client: its session cookie and the CSRF token its pages' forms carry.
pub(crate) struct Session {
    root: String,
    http: reqwest::Client,
    pub(crate) cookie: String,
    pub(crate) csrf: String,
}

/// Signs `email` in as a browser would: the sign-in form (its token and pre-session cookie),
/// the post, then the home page for the session's form token.
pub(crate) async fn sign_in(app: &TestApp, email: &str) -> Session {
    let (root, http) = (app.root(), client());
    let form = http.get(format!("{root}/sign-in")).send().await.expect("get");
    assert_eq!(form.status(), 200);
    let presession = cookie_set(&form, "dw_presession").expect("a pre-session cookie");
    let token = form_token(&form.text().await.expect("body")).expect("a form token");
    let signed_in = http
        .post(format!("{root}/sign-in"))
        .header("cookie", &presession)
        .form(&[("_csrf", token.as_str()), ("email", email), ("password", PASSWORD), ("next", "/")])
        .send()
        .await
        .expect("post");
    assert_eq!(signed_in.status(), 303, "{:?}", signed_in.text().await);
    assert_eq!(header(&signed_in, "location"), "/");
    let cookie = cookie_set(&signed_in, "dw_session").expect("a session cookie");
    let home = http.get(format!("{root}/")).header("cookie", &cookie).send().await.expect("get");
    assert_eq!(home.status(), 200);
    let csrf = form_token(&home.text().await.expect("body")).expect("the session's form token");
    Session { root, http, cookie, csrf }
}

impl Session {
    /// `GET path` with the session cookie.
    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(format!("{}{path}", self.root)).header("cookie", &self.cookie).send().await.expect("get")
    }

    /// A form post to `path` with the session cookie and no `_csrf` of its own.
    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.post(format!("{}{path}", self.root)).header("cookie", &self.cookie)
    }

    /// Posts `file` as a multipart form's `file` field to `path`, with the session's `_csrf`
    /// unless `csrf` is false, as the page's upload form would.
    pub(crate) async fn upload(&self, path: &str, name: &str, file: Vec<u8>, csrf: bool) -> reqwest::Response {
        let mut form = reqwest::multipart::Form::new();
        if csrf {
            form = form.text("_csrf", self.csrf.clone());
        }
        form = form.part("file", reqwest::multipart::Part::bytes(file).file_name(name.to_owned()));
        self.post(path).multipart(form).send().await.expect("post")
    }

    /// Posts `fields` to `path` with the session's `_csrf`, as the page's form would.
    pub(crate) async fn submit(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        let mut form = vec![("_csrf", self.csrf.as_str())];
        form.extend_from_slice(fields);
        self.post(path).form(&form).send().await.expect("post")
    }
}

/// The new-watch form's fields for a valid watch of `url`.
fn new_watch(url: &str) -> [(&str, &str); 6] {
    [("url", url), ("name", "Pricing"), ("schedule", "interval"), ("every", "1"), ("unit", "hours"), ("action", "save")]
}

/// How many watches the account of `token` has.
async fn watch_count(app: &TestApp, token: &str) -> usize {
    app.ok("/watches", token).await["items"].as_array().map_or(0, Vec::len)
}

/// A form posted without its token, with a wrong one or with another session's is refused
/// before anything changes; with its own token it works and redirects to what it made.
pub async fn a_post_without_its_token_is_refused(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = user(&app, "Acme", "ada@example.com").await;
    let page = PageServer::start("<html><body><p>hello</p></body></html>").await;

    // The sign-in form itself needs the token matching its pre-session cookie.
    let refused = client()
        .post(format!("{}/sign-in", app.root()))
        .form(&[("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("post");
    assert_eq!(refused.status(), 403);
    assert!(cookie_set(&refused, "dw_session").is_none(), "no session without the token");

    let ada = sign_in(&app, "ada@example.com").await;
    let other = sign_in(&app, "ada@example.com").await;
    assert_ne!(ada.cookie, other.cookie, "each sign-in is a session of its own");
    assert_ne!(ada.csrf, other.csrf, "with a form token of its own");

    let fields = new_watch(&page.url);
    let without = ada.post("/watches/new").form(&fields).send().await.expect("post");
    assert_eq!(without.status(), 403);
    assert!(without.text().await.expect("body").contains("security token"));
    for wrong in ["", "not-the-token", other.csrf.as_str()] {
        let mut form = vec![("_csrf", wrong)];
        form.extend_from_slice(&fields);
        let response = ada.post("/watches/new").form(&form).send().await.expect("post");
        assert_eq!(response.status(), 403, "_csrf={wrong:?}");
    }
    assert_eq!(watch_count(&app, &token).await, 0, "nothing was created");

    // With its token: post/redirect/get to the new watch.
    let created = ada.submit("/watches/new", &fields).await;
    assert_eq!(created.status(), 303, "{:?}", created.text().await);
    let location = header(&created, "location");
    let id = location.strip_prefix("/watches/").expect("to the watch").to_owned();
    assert!(id.starts_with("wat_"), "{location}");
    let shown = ada.get(&location).await;
    assert_eq!(shown.status(), 200);
    let html = shown.text().await.expect("body");
    assert!(html.contains("Watch added."), "the notice of the post");
    assert!(html.contains("Pricing"));
    let watches = app.ok("/watches", &token).await;
    assert_eq!(watches["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(watches["items"][0]["id"], id.as_str());
    assert_eq!(watches["items"][0]["name"], "Pricing");
}

/// Sign-in sends the browser on only to a path of this site: a `next` that a browser would
/// turn into another host (a tab or newline it drops, a backslash it reads as a slash, `//`)
/// or that cannot be a `Location` goes to the home page, never to a 500.
pub async fn sign_in_redirects_only_to_this_site(backend: Backend) {
    let app = TestApp::start(backend).await;
    user(&app, "Acme", "ada@example.com").await;
    let ada = sign_in(&app, "ada@example.com").await;
    let hostile = ["/%09/evil.example", "/%0a/x", "/%0d%0aSet-Cookie:%20a=b", "//evil.example", "/%5Cevil.example"];
    for next in hostile {
        let response = ada.get(&format!("/sign-in?next={next}")).await;
        assert_eq!(response.status(), 303, "next={next}");
        assert_eq!(header(&response, "location"), "/", "next={next}");
    }
    let local = ada.get("/sign-in?next=%2Fdeliveries%3Fstatus%3Ddead").await;
    assert_eq!(header(&local, "location"), "/deliveries?status=dead");

    // The form post carries `next` too.
    let (root, http) = (app.root(), client());
    for next in ["/\t/evil.example", "/\n/x", "/\r\nSet-Cookie: a=b", "/deliveries"] {
        let form = http.get(format!("{root}/sign-in")).send().await.expect("get");
        let presession = cookie_set(&form, "dw_presession").expect("a pre-session cookie");
        let token = form_token(&form.text().await.expect("body")).expect("a form token");
        let signed_in = http
            .post(format!("{root}/sign-in"))
            .header("cookie", &presession)
            .form(&[("_csrf", token.as_str()), ("email", "ada@example.com"), ("password", PASSWORD), ("next", next)])
            .send()
            .await
            .expect("post");
        assert_eq!(signed_in.status(), 303, "next={next:?}");
        let expected = if next == "/deliveries" { "/deliveries" } else { "/" };
        assert_eq!(header(&signed_in, "location"), expected, "next={next:?}");
    }
}

/// A form posted from another site (its `Origin`, or its `Referer` without one) is refused
/// even with the right token; from this site it works.
pub async fn a_foreign_origin_is_refused(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = user(&app, "Acme", "ada@example.com").await;
    let page = PageServer::start("<html><body><p>hello</p></body></html>").await;
    let ada = sign_in(&app, "ada@example.com").await;
    let mut form = vec![("_csrf", ada.csrf.as_str())];
    form.extend_from_slice(&new_watch(&page.url));
    // Another server on this host (the page server's port) is another site too.
    let neighbour = page.url.trim_end_matches("/page");
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("origin", neighbour),
        ("referer", "https://evil.example/page-with-a-form"),
    ] {
        let response = ada.post("/watches/new").header(name, value).form(&form).send().await.expect("post");
        assert_eq!(response.status(), 403, "{name}: {value}");
        assert!(response.text().await.expect("body").contains("another site"), "{name}: {value}");
    }
    assert_eq!(watch_count(&app, &token).await, 0, "nothing was created");

    // This site's own origin passes.
    let same = ada.post("/watches/new").header("origin", app.root()).form(&form).send().await.expect("post");
    assert_eq!(same.status(), 303, "{:?}", same.text().await);
    assert_eq!(watch_count(&app, &token).await, 1);
}

/// The fields of one of `token`'s account's resources the tests compare before and after.
async fn fields(app: &TestApp, token: &str, path: &str, names: &[&str]) -> Vec<Value> {
    let value = app.ok(path, token).await;
    names.iter().map(|n| value[*n].clone()).collect()
}

/// How many items the list at `path` has.
async fn count(app: &TestApp, token: &str, path: &str) -> usize {
    app.ok(path, token).await["items"].as_array().map_or(0, Vec::len)
}

/// Signed in to another account, every page and action on the first account's watch,
/// endpoint, delivery, recovery and token is the 404 page, and nothing of theirs changes.
pub async fn another_accounts_ids_answer_not_found(backend: Backend) {
    let app = TestApp::start(backend).await;
    let acme = user(&app, "Acme", "ada@example.com").await;
    user(&app, "Bobco", "bob@example.com").await;
    let page = PageServer::start("<html><body><p>hello</p></body></html>").await;
    let receiver = Receiver::start(200).await;

    // Acme's watch, endpoint, a delivery to it, a recovery count and a token.
    let watch = app.watch_with_baseline(&acme, json!({"url": page.url, "name": "Acme pricing"})).await;
    let w = watch["id"].as_str().expect("id").to_owned();
    let (status, endpoint) =
        app.post("/endpoints", &acme, json!({"url": receiver.url, "description": "Acme hook"})).await;
    assert_eq!(status, 201, "{endpoint}");
    let e = endpoint["id"].as_str().expect("id").to_owned();
    let (status, delivery) = app.post(&format!("/endpoints/{e}/test"), &acme, json!({})).await;
    assert!(status.is_success(), "{delivery}");
    let d = delivery["id"].as_str().expect("id").to_owned();
    receiver.wait_for(1).await;
    driftwatch_test_support::eventually("the test delivery to be sent", || async {
        (app.ok(&format!("/deliveries/{d}"), &acme).await["status"] == "sent").then_some(())
    })
    .await;
    let since = (chrono::Utc::now() - chrono::TimeDelta::hours(1)).to_rfc3339();
    let (status, recovery) =
        app.post(&format!("/endpoints/{e}/recover"), &acme, json!({"since": since, "dry_run": true})).await;
    assert_eq!(status, 200, "{recovery}");
    let r = recovery["id"].as_str().expect("id").to_owned();
    let t = app.ok("/tokens", &acme).await["items"][0]["id"].as_str().expect("id").to_owned();

    let watch_fields = ["name", "url", "state", "tags", "updated_at"];
    let endpoint_fields = ["url", "description", "enabled", "previous_secret_expires_at", "updated_at"];
    let delivery_fields = ["status", "attempts", "updated_at"];
    let before = (
        fields(&app, &acme, &format!("/watches/{w}"), &watch_fields).await,
        fields(&app, &acme, &format!("/endpoints/{e}"), &endpoint_fields).await,
        fields(&app, &acme, &format!("/deliveries/{d}"), &delivery_fields).await,
    );
    let runs_before = count(&app, &acme, &format!("/watches/{w}/runs")).await;

    let bob = sign_in(&app, "bob@example.com").await;
    for path in [
        "/no/such/page".to_owned(),
        format!("/watches/{w}"),
        format!("/watches/{w}/edit"),
        format!("/watches/{w}/delete"),
        format!("/watches/{w}/export"),
        format!("/endpoints/{e}"),
        format!("/endpoints/{e}/edit"),
        format!("/deliveries/{d}"),
        format!("/recoveries/{r}"),
    ] {
        let response = bob.get(&path).await;
        assert_eq!(response.status(), 404, "GET {path}");
        let html = response.text().await.expect("body");
        assert!(html.contains("<h1>Not found</h1>"), "GET {path}: {html}");
        // Still signed in: the 404 keeps the navigation and the way out.
        assert!(html.contains("action=\"/sign-out\"") && html.contains("href=\"/endpoints\""), "GET {path}: {html}");
        assert!(!html.contains("Acme"), "GET {path}");
    }
    let since_local = (chrono::Utc::now() - chrono::TimeDelta::hours(1)).format("%Y-%m-%dT%H:%M").to_string();
    let posts: Vec<(String, Vec<(&str, &str)>)> = vec![
        (format!("/watches/{w}/check"), vec![]),
        (format!("/watches/{w}/pause"), vec![]),
        (format!("/watches/{w}/resume"), vec![]),
        (format!("/watches/{w}/delete"), vec![]),
        (format!("/watches/{w}/edit"), new_watch(&page.url).to_vec()),
        (format!("/endpoints/{e}/enable"), vec![]),
        (format!("/endpoints/{e}/disable"), vec![]),
        (format!("/endpoints/{e}/rotate-secret"), vec![]),
        (format!("/endpoints/{e}/test"), vec![]),
        (
            format!("/endpoints/{e}/recover"),
            vec![("since", since_local.as_str()), ("failed", "on"), ("dead", "on"), ("action", "start")],
        ),
        (format!("/endpoints/{e}/edit"), vec![("url", receiver.url.as_str()), ("description", "Bob's now")]),
        // A bad form does not turn the 404 into a 422 that shows the id exists.
        (format!("/endpoints/{e}/edit"), vec![("url", "not a url"), ("max_attempts", "lots")]),
        (format!("/watches/{w}/edit"), vec![("url", "ftp://nowhere"), ("schedule", "interval")]),
        (format!("/deliveries/{d}/redeliver"), vec![]),
        (format!("/tokens/{t}/revoke"), vec![]),
    ];
    for (path, form) in &posts {
        let response = bob.submit(path, form).await;
        assert_eq!(response.status(), 404, "POST {path}");
        let html = response.text().await.expect("body");
        assert!(html.contains("<h1>Not found</h1>"), "POST {path}: {html}");
        assert!(!html.contains("Acme"), "POST {path}");
    }
    // Bulk actions act on the viewer's own watches among the ids: none here.
    let bulk = bob.submit("/watches/bulk", &[("ids", w.as_str()), ("action", "delete")]).await;
    assert_eq!(bulk.status(), 303);
    let back = bob.get(&header(&bulk, "location")).await.text().await.expect("body");
    assert!(back.contains("0 watches deleted."), "{back}");

    // Bob's own lists show nothing of Acme's.
    for path in ["/", "/endpoints", "/deliveries", "/changes", "/tokens"] {
        let html = bob.get(path).await.text().await.expect("body");
        assert!(!html.contains(&w) && !html.contains(&e) && !html.contains(&d), "{path}");
        assert!(!html.contains("Acme"), "{path}");
    }

    // Acme's data is as it was.
    let after = (
        fields(&app, &acme, &format!("/watches/{w}"), &watch_fields).await,
        fields(&app, &acme, &format!("/endpoints/{e}"), &endpoint_fields).await,
        fields(&app, &acme, &format!("/deliveries/{d}"), &delivery_fields).await,
    );
    assert_eq!(before, after);
    assert_eq!(after.0[2], "active");
    assert_eq!(after.1[2], true);
    assert_eq!(count(&app, &acme, &format!("/watches/{w}/runs")).await, runs_before, "no check ran");
    assert_eq!(count(&app, &acme, "/deliveries").await, 1, "no test event queued");
    assert_eq!(count(&app, &acme, "/recoveries").await, 1, "no recovery started");
    assert_eq!(receiver.received().len(), 1, "nothing redelivered");
    let tokens = app.ok("/tokens", &acme).await;
    assert!(tokens["items"][0]["revoked_at"].is_null(), "{tokens}");
}

/// The `.field` block holding the form field `name`: its label, input, error and hint.
fn field_block<'a>(html: &'a str, name: &str) -> &'a str {
    let input = html.find(&format!("id=\"f-{name}\"")).unwrap_or_else(|| panic!("no field {name}"));
    let start = html[..input].rfind("<div class=\"field").expect("the field's block");
    let end = input + html[input..].find("</div>").expect("the block's end");
    &html[start..end]
}

/// The `<input>` or `<textarea>` tag of the form field `name`.
fn input_tag<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html.find(&format!("id=\"f-{name}\"")).unwrap_or_else(|| panic!("no field {name}"));
    let start = html[..at].rfind('<').expect("the tag's start");
    let end = at + html[at..].find('>').expect("the tag's end");
    &html[start..=end]
}

/// A form with errors answers 422 and shows each error beside its field (linked by
/// `aria-describedby`), keeping what was typed; nothing is saved.
pub async fn form_errors_stand_beside_their_fields(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = user(&app, "Acme", "ada@example.com").await;
    let ada = sign_in(&app, "ada@example.com").await;

    let response = ada
        .submit(
            "/watches/new",
            &[
                ("url", "not a url"),
                ("name", "Pricing"),
                ("selector", "div["),
                ("schedule", "interval"),
                ("every", "soon"),
                ("unit", "hours"),
                ("action", "save"),
            ],
        )
        .await;
    assert_eq!(response.status(), 422);
    assert_eq!(header(&response, "cache-control"), "no-store");
    let html = response.text().await.expect("body");
    assert!(html.contains("Please correct the 3 fields marked below."), "{html}");

    let url = field_block(&html, "url");
    let tag = input_tag(url, "url");
    assert!(tag.contains("value=\"not a url\""), "what was typed is kept: {tag}");
    assert!(tag.contains("aria-invalid=\"true\"") && tag.contains("aria-describedby=\"e-url\""), "{tag}");
    assert!(
        url.contains("<p class=\"error\" id=\"e-url\">must be an http:// or https:// URL with a host</p>"),
        "{url}"
    );

    let selector = field_block(&html, "selector");
    assert!(input_tag(selector, "selector").contains("value=\"div[\""), "{selector}");
    assert!(input_tag(selector, "selector").contains("aria-describedby=\"e-selector\""), "{selector}");
    assert!(selector.contains("<p class=\"error\" id=\"e-selector\">"), "{selector}");

    let every = input_tag(&html, "every");
    assert!(every.contains("value=\"soon\"") && every.contains("aria-describedby=\"e-every\""), "{every}");
    assert!(html.contains("<p class=\"error\" id=\"e-every\">enter a number</p>"));

    // A field without an error keeps its value and only its hint.
    let name = field_block(&html, "name");
    let tag = input_tag(name, "name");
    assert!(tag.contains("value=\"Pricing\"") && tag.contains("aria-describedby=\"h-name\""), "{tag}");
    assert!(!tag.contains("aria-invalid") && !name.contains("class=\"error\""), "{name}");
    assert_eq!(watch_count(&app, &token).await, 0, "nothing was saved");

    // The endpoint form does the same.
    let response =
        ada.submit("/endpoints/new", &[("kind", "webhook"), ("url", "not a url"), ("description", "Ours")]).await;
    assert_eq!(response.status(), 422);
    let html = response.text().await.expect("body");
    let url = field_block(&html, "url");
    assert!(input_tag(url, "url").contains("aria-describedby=\"e-url\""), "{url}");
    assert!(url.contains("id=\"e-url\""), "{url}");
    assert!(input_tag(&html, "description").contains("value=\"Ours\""));
    assert_eq!(count(&app, &token, "/endpoints").await, 0, "nothing was saved");
}

/// Signed-in pages are never cached and carry the security headers; without a session (none,
/// a made-up one, or one signed out) every page and form leads to sign-in; the session cookie
/// is HttpOnly and SameSite=Lax, and the API does not take it.
pub async fn pages_are_private_and_locked_down(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = user(&app, "Acme", "ada@example.com").await;
    let page = PageServer::start("<html><body><p>hello</p></body></html>").await;
    let receiver = Receiver::start(200).await;
    let (status, watch) = app.post("/watches", &token, json!({"url": page.url, "name": "Pricing"})).await;
    assert_eq!(status, 201, "{watch}");
    let w = watch["id"].as_str().expect("id").to_owned();
    let (status, endpoint) = app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    assert_eq!(status, 201, "{endpoint}");
    let e = endpoint["id"].as_str().expect("id").to_owned();

    // The session cookie's flags.
    let (root, http) = (app.root(), client());
    let form = http.get(format!("{root}/sign-in")).send().await.expect("get");
    let presession = cookie_set(&form, "dw_presession").expect("a pre-session cookie");
    let csrf = form_token(&form.text().await.expect("body")).expect("a form token");
    let signed_in = http
        .post(format!("{root}/sign-in"))
        .header("cookie", &presession)
        .form(&[("_csrf", csrf.as_str()), ("email", "ada@example.com"), ("password", PASSWORD)])
        .send()
        .await
        .expect("post");
    assert_eq!(signed_in.status(), 303);
    let set = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("dw_session="))
        .expect("a session cookie")
        .to_owned();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Lax") && set.contains("Path=/"), "{set}");
    assert!(!set.contains("Secure"), "plain http on loopback: {set}");

    let ada = sign_in(&app, "ada@example.com").await;
    let pages = [
        "/".to_owned(),
        "/watches/new".to_owned(),
        format!("/watches/{w}"),
        format!("/watches/{w}/edit"),
        format!("/watches/{w}/delete"),
        "/changes".to_owned(),
        "/endpoints".to_owned(),
        "/endpoints/new".to_owned(),
        format!("/endpoints/{e}"),
        format!("/endpoints/{e}/edit"),
        "/deliveries".to_owned(),
        "/dlq".to_owned(),
        "/tokens".to_owned(),
        "/account".to_owned(),
    ];
    for path in &pages {
        let response = ada.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(header(&response, "cache-control"), "no-store", "{path}");
        assert!(header(&response, "content-type").starts_with("text/html"), "{path}");
        let csp = header(&response, "content-security-policy");
        assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(!csp.contains("'unsafe-inline'"), "{path}: {csp}");
        assert_eq!(header(&response, "x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header(&response, "x-frame-options"), "DENY", "{path}");
        let html = response.text().await.expect("body");
        assert_eq!(form_token(&html).as_deref(), Some(ada.csrf.as_str()), "{path}: its forms carry the token");
    }

    // The API never takes the session cookie.
    let api = ada.get("/api/v1/watches").await;
    assert_eq!(api.status(), 401);

    // Without a session, with a made-up one, and after signing out: to sign-in, back after.
    let signed_out = ada.submit("/sign-out", &[]).await;
    assert_eq!(signed_out.status(), 303);
    assert_eq!(header(&signed_out, "location"), "/signed-out");
    for cookie in [None, Some("dw_session=made-up"), Some(ada.cookie.as_str())] {
        for path in &pages {
            let mut request = http.get(format!("{root}{path}"));
            if let Some(cookie) = cookie {
                request = request.header("cookie", cookie);
            }
            let response = request.send().await.expect("get");
            assert_eq!(response.status(), 303, "{cookie:?} {path}");
            let location = header(&response, "location");
            let expected =
                if path == "/" { "/sign-in".to_owned() } else { format!("/sign-in?next={}", path.replace('/', "%2F")) };
            assert_eq!(location, expected, "{cookie:?} {path}");
        }
        // A form post goes to sign-in too, and changes nothing.
        let mut request = http.post(format!("{root}/watches/{w}/pause"));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.form(&[("_csrf", ada.csrf.as_str())]).send().await.expect("post");
        assert_eq!(response.status(), 303, "{cookie:?}");
        assert_eq!(header(&response, "location"), "/sign-in", "{cookie:?}");
    }
    assert_eq!(app.ok(&format!("/watches/{w}"), &token).await["state"], "active", "nothing changed");
}

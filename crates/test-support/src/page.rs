//! A web page whose status and content the test changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};

/// A request the page server got.
#[derive(Debug, Clone)]
pub struct PageRequest {
    /// When it arrived.
    pub at: std::time::Instant,
    /// Its method.
    pub method: String,
    /// Its headers, names lower case.
    pub headers: HashMap<String, String>,
    /// Its body.
    pub body: String,
}

#[derive(Debug, Clone)]
struct PageState {
    status: u16,
    html: String,
    etag: Option<String>,
    delay: Duration,
    content_type: String,
    /// Other paths the page loads (`/data.json`): content type, body and delay.
    resources: HashMap<String, (String, String, Duration)>,
    /// A bot wall answered instead of the page.
    wall: Option<Wall>,
    /// Extra headers of the page's own answers.
    headers: Vec<(String, String)>,
}

/// A bot wall a [`PageServer`] puts up: its answer, and whom it stops.
#[derive(Debug, Clone)]
pub struct Wall {
    /// The status it answers with (a challenge is usually 403 or 503).
    pub status: u16,
    /// Its headers (`cf-mitigated: challenge`, `server: cloudflare`...).
    pub headers: Vec<(String, String)>,
    /// Its page.
    pub body: String,
    /// Only requests whose `User-Agent` contains this are stopped (`None`: all are): a wall
    /// that lets a browser through.
    pub stops_agent: Option<String>,
}

impl Wall {
    /// Cloudflare's managed challenge, as it answers a client that runs no scripts: 403,
    /// `cf-mitigated: challenge`, and the "Just a moment..." page with `_cf_chl_opt`.
    pub fn cloudflare_challenge() -> Wall {
        Wall {
            status: 403,
            headers: vec![
                ("server".into(), "cloudflare".into()),
                ("cf-ray".into(), "8f1e2d3c4b5a6978-FRA".into()),
                ("cf-mitigated".into(), "challenge".into()),
                ("cache-control".into(), "private, max-age=0, no-store, no-cache, must-revalidate".into()),
            ],
            body: "<!DOCTYPE html><html lang=\"en-US\"><head><title>Just a moment...</title>\
                   <meta http-equiv=\"refresh\" content=\"390\"></head><body><div class=\"main-wrapper\" role=\"main\">\
                   <div class=\"main-content\"><noscript><div class=\"h2\"><span id=\"challenge-error-text\">\
                   Enable JavaScript and cookies to continue</span></div></noscript></div></div>\
                   <script>(function(){window._cf_chl_opt={cvId: '3',cZone: \"shop.example\",cType: 'managed',\
                   cRay: '8f1e2d3c4b5a6978'};var cpo=document.createElement('script');\
                   cpo.src='/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8f1e2d3c4b5a6978';\
                   document.getElementsByTagName('head')[0].appendChild(cpo);}());</script></body></html>"
                .into(),
            stops_agent: None,
        }
    }
}

/// A web page whose status and content the test changes; it answers conditional requests when
/// given an ETag, and records every request.
pub struct PageServer {
    /// The page's URL.
    pub url: String,
    state: Arc<Mutex<PageState>>,
    requests: Arc<Mutex<Vec<PageRequest>>>,
}

impl PageServer {
    /// Serves `html` with status 200 on a loopback port of its own.
    pub async fn start(html: &str) -> PageServer {
        let state = Arc::new(Mutex::new(PageState {
            status: 200,
            html: html.to_owned(),
            etag: None,
            delay: Duration::ZERO,
            content_type: "text/html; charset=utf-8".to_owned(),
            resources: HashMap::new(),
            wall: None,
            headers: Vec::new(),
        }));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (shared, log) = (Arc::clone(&state), Arc::clone(&requests));
        let resources = Arc::clone(&state);
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let resource = resources.lock().expect("lock").resources.get(uri.path()).cloned();
            async move {
                let Some((content_type, body, delay)) = resource else {
                    return axum::response::IntoResponse::into_response(StatusCode::NOT_FOUND);
                };
                tokio::time::sleep(delay).await;
                axum::response::IntoResponse::into_response(([("content-type", content_type)], body))
            }
        });
        let app = app.route(
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
                    let agent = headers.get("user-agent").cloned();
                    log.lock().expect("lock").push(PageRequest {
                        at: std::time::Instant::now(),
                        method: method.to_string(),
                        headers,
                        body,
                    });
                    if !page.delay.is_zero() {
                        tokio::time::sleep(page.delay).await;
                    }
                    let stopped = page.wall.as_ref().filter(|wall| match &wall.stops_agent {
                        None => true,
                        Some(part) => agent.as_deref().is_some_and(|agent| agent.contains(part.as_str())),
                    });
                    if let Some(wall) = stopped {
                        let mut response = axum::response::IntoResponse::into_response((
                            StatusCode::from_u16(wall.status).expect("status"),
                            [("content-type", "text/html; charset=UTF-8")],
                            wall.body.clone(),
                        ));
                        for (name, value) in &wall.headers {
                            let name = axum::http::HeaderName::from_bytes(name.as_bytes()).expect("header name");
                            response.headers_mut().insert(name, value.parse().expect("header value"));
                        }
                        return response;
                    }
                    let mut response = axum::response::IntoResponse::into_response((
                        StatusCode::from_u16(if not_modified { 304 } else { page.status }).expect("status"),
                        [("content-type", page.content_type)],
                        if not_modified { String::new() } else { page.html },
                    ));
                    for (name, value) in &page.headers {
                        let name = axum::http::HeaderName::from_bytes(name.as_bytes()).expect("header name");
                        response.headers_mut().append(name, value.parse().expect("header value"));
                    }
                    if let Some(etag) = page.etag {
                        response.headers_mut().insert("etag", etag.parse().expect("etag"));
                    }
                    response
                }
            }),
        );
        let addr = crate::serve(app).await;
        PageServer { url: format!("http://{addr}/page"), state, requests }
    }

    /// Serves `html` from now on.
    pub fn set(&self, html: &str) {
        self.state.lock().expect("lock").html = html.to_owned();
    }

    /// Serves its content as `content_type` from now on (`application/json` for an API).
    pub fn set_content_type(&self, content_type: &str) {
        self.state.lock().expect("lock").content_type = content_type.to_owned();
    }

    /// Serves `body` as `content_type` at `path` (`/data.json`, beside `/page`), each answer
    /// only after `delay`: what a page's scripts fetch.
    pub fn set_resource(&self, path: &str, content_type: &str, body: &str, delay: Duration) {
        let resource = (content_type.to_owned(), body.to_owned(), delay);
        self.state.lock().expect("lock").resources.insert(path.to_owned(), resource);
    }

    /// Puts up `wall` (or takes it down with `None`) from now on.
    pub fn set_wall(&self, wall: Option<Wall>) {
        self.state.lock().expect("lock").wall = wall;
    }

    /// Sends these headers with the page's own answers from now on.
    pub fn set_headers(&self, headers: &[(&str, &str)]) {
        self.state.lock().expect("lock").headers =
            headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
    }

    /// Answers with `status` from now on.
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

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<PageRequest> {
        self.requests.lock().expect("lock").clone()
    }
}

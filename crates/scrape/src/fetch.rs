use std::time::Duration;

use driftwatch_net::{ClientOptions, Redirects, TargetPolicy, blocked_reason, vet_url};
use url::Url;

use crate::walls;

/// Settings of the page fetcher.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Which targets may be fetched.
    pub policy: TargetPolicy,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Bodies longer than this fail the check.
    pub max_body_bytes: usize,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// Redirect hops followed.
    pub max_redirects: usize,
    /// The proxy pages are fetched through (never one from the environment); see
    /// [`driftwatch_net::ClientOptions::proxy`] for what the guard can promise behind it.
    pub proxy: Option<Url>,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            policy: TargetPolicy::default(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_body_bytes: 5 * 1024 * 1024,
            user_agent: format!("driftwatch/{} (+https://github.com/driftwatch)", env!("CARGO_PKG_VERSION")),
            max_redirects: 5,
            proxy: None,
        }
    }
}

/// A fetched page.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body, at most `max_body_bytes`.
    pub body: Vec<u8>,
    /// The `ETag` header, for the next conditional request.
    pub etag: Option<String>,
    /// The `Last-Modified` header, for the next conditional request.
    pub last_modified: Option<String>,
    /// Where the page ended (after redirects).
    pub final_url: Option<String>,
    /// The answer's `Set-Cookie` headers, for a watch that keeps its session.
    pub set_cookies: Vec<String>,
}

/// What a fetch brought back.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// A page.
    Page(Page),
    /// 304: the page has not changed since the validators were issued.
    NotModified,
}

/// One request for a page: the watch's own request settings and the validators of the last
/// page fetched (sent as `If-None-Match` / `If-Modified-Since` on `GET`).
#[derive(Debug, Clone, Default)]
pub struct PageRequest<'a> {
    /// Method, headers, body, cookies, user agent and timeout.
    pub spec: Option<&'a driftwatch_core::FetchSpec>,
    /// The last `ETag`.
    pub etag: Option<&'a str>,
    /// The last `Last-Modified`.
    pub last_modified: Option<&'a str>,
    /// The kept session's cookies for this URL (a `Cookie` header's value), sent with the
    /// watch's own cookies.
    pub session_cookie: Option<&'a str>,
}

/// Why a fetch failed. Each is a failed check, never a change.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL is malformed or its target is refused.
    #[error("{0}")]
    Target(String),
    /// No answer in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The connection could not be made.
    #[error("connection failed: {0}")]
    Connect(String),
    /// The server answered with a non-success status.
    #[error("HTTP {status}")]
    Status {
        /// The status code.
        status: u16,
    },
    /// The body exceeded the cap.
    #[error("body larger than {0} bytes")]
    TooLarge(usize),
    /// A bot wall (a challenge, a CAPTCHA, a waiting room) answered instead of the page.
    #[error("{wall}")]
    Blocked {
        /// Who put it up and what gave it away.
        wall: crate::walls::Wall,
        /// The status it answered with.
        status: u16,
    },
    /// The proxy the request went through failed (it does not answer, refuses the tunnel or
    /// wants other credentials): the message names the proxy, not the page.
    #[error("{0}")]
    Proxy(String),
    /// Anything else on the wire.
    #[error("request failed: {0}")]
    Other(String),
}

impl FetchError {
    /// A short name for the kind of failure, stored with the run: `target`, `timeout`,
    /// `connect`, `status`, `too_large`, `blocked`, `proxy` or `fetch`.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::Target(_) => "target",
            FetchError::Timeout(_) => "timeout",
            FetchError::Connect(_) => "connect",
            FetchError::Status { .. } => "status",
            FetchError::TooLarge(_) => "too_large",
            FetchError::Blocked { .. } => "blocked",
            FetchError::Proxy(_) => "proxy",
            FetchError::Other(_) => "fetch",
        }
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            FetchError::Status { status } | FetchError::Blocked { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Downloads pages. Cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    options: FetchOptions,
    /// Clients for other proxies than the default, by proxy URL: a client holds its pool of
    /// connections, so each proxy keeps its own between checks.
    clients: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<Url, reqwest::Client>>>,
}

/// Clients for proxies other than the default kept at once (past that, they are built anew).
const MAX_CLIENTS: usize = 64;

impl Fetcher {
    /// Builds the HTTP client.
    pub fn new(options: FetchOptions) -> Result<Fetcher, FetchError> {
        let client = driftwatch_net::client_builder(&ClientOptions {
            policy: options.policy,
            connect_timeout: options.connect_timeout,
            timeout: options.timeout,
            user_agent: options.user_agent.clone(),
            redirects: Redirects::Follow(options.max_redirects),
            proxy: options.proxy.clone(),
        })
        .and_then(reqwest::ClientBuilder::build)
        .map_err(|e| FetchError::Other(e.to_string()))?;
        Ok(Fetcher { client, options, clients: Default::default() })
    }

    /// The settings in use.
    pub fn options(&self) -> &FetchOptions {
        &self.options
    }

    /// The client that leaves through `proxy` (`None`: directly).
    fn client_for(&self, proxy: Option<&Url>) -> Result<reqwest::Client, FetchError> {
        if proxy == self.options.proxy.as_ref() {
            return Ok(self.client.clone());
        }
        let cached = proxy.and_then(|p| self.clients.lock().ok()?.get(p).cloned());
        if let Some(client) = cached {
            return Ok(client);
        }
        let client = driftwatch_net::client_builder(&ClientOptions {
            policy: self.options.policy,
            connect_timeout: self.options.connect_timeout,
            timeout: self.options.timeout,
            user_agent: self.options.user_agent.clone(),
            redirects: Redirects::Follow(self.options.max_redirects),
            proxy: proxy.cloned(),
        })
        .and_then(reqwest::ClientBuilder::build)
        .map_err(|e| FetchError::Other(e.to_string()))?;
        if let (Some(proxy), Ok(mut clients)) = (proxy, self.clients.lock()) {
            if clients.len() >= MAX_CLIENTS {
                clients.clear();
            }
            clients.insert(proxy.clone(), client.clone());
        }
        Ok(client)
    }

    /// Requests `url` as `request` says, through `proxy` (`None`: directly); a non-2xx status
    /// (other than 304 to a conditional request), a refused target or an oversized body is an
    /// error.
    pub async fn fetch_with(
        &self,
        url: &str,
        request: &PageRequest<'_>,
        proxy: Option<&Url>,
    ) -> Result<Fetched, FetchError> {
        use reqwest::header::{COOKIE, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, USER_AGENT};
        let parsed = Url::parse(url).map_err(|e| FetchError::Target(format!("invalid URL: {e}")))?;
        vet_url(&parsed, self.options.policy, proxy.is_some()).await.map_err(|e| FetchError::Target(e.to_string()))?;
        let spec = request.spec.cloned().unwrap_or_default();
        let method = match spec.method.as_deref().map(str::to_ascii_uppercase).as_deref() {
            None | Some("GET") => reqwest::Method::GET,
            Some("POST") => reqwest::Method::POST,
            Some("PUT") => reqwest::Method::PUT,
            Some("PATCH") => reqwest::Method::PATCH,
            Some(other) => return Err(FetchError::Target(format!("unsupported method {other}"))),
        };
        let conditional = method == reqwest::Method::GET;
        let mut builder = self.client_for(proxy)?.request(method, parsed);
        for (name, value) in &spec.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let mut cookies: Vec<String> = spec.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
        cookies.extend(request.session_cookie.map(str::to_owned));
        if !cookies.is_empty() {
            builder = builder.header(COOKIE, cookies.join("; "));
        }
        if let Some(agent) = &spec.user_agent {
            builder = builder.header(USER_AGENT, agent.as_str());
        }
        if let Some(seconds) = spec.timeout_seconds {
            builder = builder.timeout(Duration::from_secs(u64::from(seconds.clamp(1, 300))));
        }
        if let Some(body) = spec.body {
            builder = builder.body(body);
        }
        if conditional {
            if let Some(etag) = request.etag {
                builder = builder.header(IF_NONE_MATCH, etag);
            }
            if let Some(modified) = request.last_modified {
                builder = builder.header(IF_MODIFIED_SINCE, modified);
            }
        }
        let mut response = match builder.send().await {
            Ok(response) => response,
            Err(e) => return Err(self.classify_through(&e, proxy).await),
        };
        let status = response.status().as_u16();
        if status == 304 && conditional && (request.etag.is_some() || request.last_modified.is_some()) {
            return Ok(Fetched::NotModified);
        }
        let headers = header_pairs(response.headers());
        if status == 407
            && let Some(proxy) = proxy
        {
            // The proxy's answer, not the page's.
            let shown = driftwatch_net::redact_proxy(proxy);
            return Err(FetchError::Proxy(format!(
                "the proxy {shown} wants credentials (407 Proxy Authentication Required): check the user and password"
            )));
        }
        let final_url = Some(response.url().to_string());
        let set_cookies: Vec<String> = response
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        if !response.status().is_success() {
            // An error page may be a wall: read what the classifier looks at (a body that
            // breaks off is read as far as it came).
            let mut body = Vec::new();
            while body.len() < walls::SCAN_BYTES {
                match response.chunk().await {
                    Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                    Ok(None) | Err(_) => break,
                }
            }
            return Err(match walls::detect(&walls::Answer { status, headers: &headers, body: &body }) {
                Some(wall) => FetchError::Blocked { wall, status },
                None => FetchError::Status { status },
            });
        }
        let header = |name: reqwest::header::HeaderName| {
            headers.iter().find(|(n, _)| n.as_str() == name.as_str()).map(|(_, v)| v.clone())
        };
        let (content_type, etag, last_modified) =
            (header(reqwest::header::CONTENT_TYPE), header(ETAG), header(LAST_MODIFIED));
        let cap = self.options.max_body_bytes;
        if response.content_length().is_some_and(|len| len > cap as u64) {
            return Err(FetchError::TooLarge(cap));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.classify(&e))? {
            if body.len() + chunk.len() > cap {
                return Err(FetchError::TooLarge(cap));
            }
            body.extend_from_slice(&chunk);
        }
        // A few walls answer 200 (a waiting room, some challenges).
        if let Some(wall) = walls::detect(&walls::Answer { status, headers: &headers, body: &body }) {
            return Err(FetchError::Blocked { wall, status });
        }
        Ok(Fetched::Page(Page { status, content_type, body, etag, last_modified, final_url, set_cookies }))
    }

    /// [`Fetcher::classify`], naming the proxy when it is the proxy that failed: one that does
    /// not accept connections, refuses the tunnel or wants credentials.
    async fn classify_through(&self, err: &reqwest::Error, proxy: Option<&Url>) -> FetchError {
        let classified = self.classify(err);
        let Some(proxy) = proxy else { return classified };
        if !matches!(classified, FetchError::Connect(_) | FetchError::Timeout(_) | FetchError::Other(_)) {
            return classified;
        }
        if let Err(e) = driftwatch_net::probe_proxy(proxy).await {
            return FetchError::Proxy(e.to_string());
        }
        let chain = error_chain(err);
        let lower = chain.to_ascii_lowercase();
        if lower.contains("proxy") || lower.contains("tunnel") || lower.contains("socks") {
            let shown = driftwatch_net::redact_proxy(proxy);
            return FetchError::Proxy(format!("the proxy {shown} failed: {}", chain.replace(proxy.as_str(), &shown)));
        }
        classified
    }

    fn classify(&self, err: &reqwest::Error) -> FetchError {
        if let Some(reason) = blocked_reason(err) {
            FetchError::Target(reason)
        } else if err.is_timeout() {
            FetchError::Timeout(self.options.timeout)
        } else if err.is_connect() {
            FetchError::Connect(error_chain(err))
        } else {
            FetchError::Other(error_chain(err))
        }
    }
}

/// A response's headers as the wall classifier reads them: lowercase names, values that are
/// text (others are left out).
fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect()
}

/// The error and its sources on one line (reqwest's own message alone says little).
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        out.push_str(": ");
        out.push_str(&e.to_string());
        source = e.source();
    }
    out
}

use std::time::Duration;

use driftwatch_net::{ClientOptions, Redirects, TargetPolicy, blocked_reason, check_url};
use url::Url;

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
        }
    }
}

/// A fetched page.
#[derive(Debug, Clone)]
pub struct Page {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body, at most `max_body_bytes`.
    pub body: Vec<u8>,
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
    /// Anything else on the wire.
    #[error("request failed: {0}")]
    Other(String),
}

impl FetchError {
    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            FetchError::Status { status } => Some(*status),
            _ => None,
        }
    }
}

/// Downloads pages. Cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    options: FetchOptions,
}

impl Fetcher {
    /// Builds the HTTP client.
    pub fn new(options: FetchOptions) -> Result<Fetcher, FetchError> {
        let client = driftwatch_net::client_builder(&ClientOptions {
            policy: options.policy,
            connect_timeout: options.connect_timeout,
            timeout: options.timeout,
            user_agent: options.user_agent.clone(),
            redirects: Redirects::Follow(options.max_redirects),
        })
        .build()
        .map_err(|e| FetchError::Other(e.to_string()))?;
        Ok(Fetcher { client, options })
    }

    /// The settings in use.
    pub fn options(&self) -> &FetchOptions {
        &self.options
    }

    /// GETs `url`; a non-2xx status, a refused target or an oversized body is an error.
    pub async fn fetch(&self, url: &str) -> Result<Page, FetchError> {
        let parsed = Url::parse(url).map_err(|e| FetchError::Target(format!("invalid URL: {e}")))?;
        check_url(&parsed, self.options.policy).map_err(|e| FetchError::Target(e.to_string()))?;
        let mut response = self.client.get(parsed).send().await.map_err(|e| self.classify(&e))?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            return Err(FetchError::Status { status });
        }
        let content_type =
            response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
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
        Ok(Page { status, content_type, body })
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

//! Who is signed in: the session cookie, the [`Viewer`] extractor, CSRF-checked form posts and
//! the sign-in throttle.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, ORIGIN, REFERER};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use driftwatch_core::hash_token;
use driftwatch_store::{Session, User, users};
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq as _;

use super::error::UiError;
use super::layout::Layout;
use crate::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "dw_session";
/// The cookie carrying the CSRF token of forms shown before sign-in (double submit).
pub const PRE_SESSION_COOKIE: &str = "dw_presession";
/// Largest form body accepted.
const MAX_FORM_BYTES: usize = 256 * 1024;

/// The signed-in user of a page request.
#[derive(Debug, Clone)]
pub struct Viewer {
    /// The user.
    pub user: User,
    /// Their session (its `csrf_token` goes into every form).
    pub session: Session,
    /// The name of their account, shown in the header: what `driftwatch token create
    /// --account` and `account list` call it.
    pub account_name: String,
}

impl Viewer {
    /// The account every query of this request is scoped to.
    pub fn account_id(&self) -> &str {
        &self.user.account_id
    }
}

/// The value of cookie `name`, if sent.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value with the flags every driftwatch cookie carries.
pub fn set_cookie(name: &str, value: &str, max_age: Option<i64>, secure: bool) -> String {
    let mut cookie = format!("{name}={value}; HttpOnly; SameSite=Lax; Path=/");
    if let Some(age) = max_age {
        cookie.push_str(&format!("; Max-Age={age}"));
    }
    if secure {
        cookie.push_str("; Secure");
    }
    cookie
}

impl Layout {
    /// The layout of a signed-in page.
    pub fn signed_in(viewer: &Viewer, section: &'static str, title: impl Into<String>) -> Layout {
        Layout {
            title: title.into(),
            section,
            email: Some(viewer.user.email.clone()),
            account: Some(viewer.account_name.clone()),
            csrf: viewer.session.csrf_token.clone(),
            ..Layout::public("")
        }
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = UiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Viewer, UiError> {
        if let Some(viewer) = parts.extensions.get::<Viewer>() {
            return Ok(viewer.clone());
        }
        let next = parts.uri.path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_else(|| "/".into());
        let to_sign_in = || UiError::SignIn { next: (parts.method == Method::GET).then(|| next.clone()) };
        let Some(id) = cookie(&parts.headers, SESSION_COOKIE).map(str::to_owned) else { return Err(to_sign_in()) };
        let now = state.clock.now().naive_utc();
        let limits = state.ui.session_limits;
        let found = state
            .store
            .read(move |c| {
                let Some((session, user)) = users::find_session(c, &id, now, limits)? else { return Ok(None) };
                let account = driftwatch_store::accounts::get_account(c, &user.account_id)?;
                Ok(Some((session, user, account.map(|a| a.name).unwrap_or_default())))
            })
            .await?;
        let Some((session, user, account_name)) = found else { return Err(to_sign_in()) };
        let viewer = Viewer { user, session, account_name };
        parts.extensions.insert(viewer.clone());
        Ok(viewer)
    }
}

/// Whether `sent` (an origin, `scheme://host[:port]`) is this site: the configured public URL's
/// origin when there is one, else the host the request was sent to (any scheme, so a TLS proxy
/// in front needs no setting).
fn same_site(sent: &str, headers: &HeaderMap, state: &AppState) -> bool {
    let Ok(sent) = url::Url::parse(sent) else { return false };
    if let Some(public) = &state.ui.public_url {
        return url::Url::parse(public).is_ok_and(|p| p.origin() == sent.origin());
    }
    let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()) else { return false };
    let authority = match (sent.host_str(), sent.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        _ => return false,
    };
    authority.eq_ignore_ascii_case(host)
}

/// Refuses a state-changing request whose `Origin` (or, without one, `Referer`) names another
/// site. A request with neither still needs its CSRF token.
fn check_origin(headers: &HeaderMap, state: &AppState) -> Result<(), UiError> {
    let sent =
        headers.get(ORIGIN).or_else(|| headers.get(REFERER)).and_then(|v| v.to_str().ok()).filter(|v| *v != "null");
    match sent {
        Some(sent) if !same_site(sent, headers, state) => {
            Err(UiError::Forbidden("this form was sent from another site".into()))
        }
        _ => Ok(()),
    }
}

fn tokens_match(sent: &str, expected: &str) -> bool {
    !expected.is_empty() && bool::from(sent.as_bytes().ct_eq(expected.as_bytes()))
}

/// Reads a urlencoded form body into `T` after taking out `_csrf`.
async fn read_form<T: DeserializeOwned>(body: axum::body::Body) -> Result<(T, String), UiError> {
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| UiError::BadRequest("the form is too large".into()))?;
    let mut csrf = String::new();
    let mut pairs = Vec::new();
    for (k, v) in form_urlencoded::parse(&bytes) {
        if k == "_csrf" {
            csrf = v.into_owned();
        } else if v.contains('\0') {
            return Err(UiError::BadRequest(format!("{k}: NUL characters are not allowed")));
        } else {
            pairs.push((k.into_owned(), v.into_owned()));
        }
    }
    let encoded = form_urlencoded::Serializer::new(String::new()).extend_pairs(&pairs).finish();
    let form = serde_urlencoded::from_str(&encoded).map_err(|e| UiError::BadRequest(format!("the form: {e}")))?;
    Ok((form, csrf))
}

/// A form posted by the signed-in viewer, its CSRF token and origin checked (403 otherwise,
/// before anything changes).
pub struct Post<T> {
    /// Who posted it.
    pub viewer: Viewer,
    /// The form's fields.
    pub form: T,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for Post<T> {
    type Rejection = UiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, UiError> {
        let (mut parts, body) = req.into_parts();
        check_origin(&parts.headers, state)?;
        let viewer = Viewer::from_request_parts(&mut parts, state).await?;
        let (form, csrf) = read_form(body).await?;
        if !tokens_match(&csrf, &viewer.session.csrf_token) {
            return Err(UiError::Forbidden("the form's security token is missing or stale; reload the page".into()));
        }
        Ok(Post { viewer, form })
    }
}

/// A file posted by the signed-in viewer in a multipart form (fields `_csrf` and `file`),
/// its origin and CSRF token checked (403 otherwise) before the caller reads it. The route
/// sets how large it may be (`DefaultBodyLimit`).
pub struct Upload {
    /// Who posted it.
    pub viewer: Viewer,
    /// The file's name, as the browser gave it.
    pub file_name: String,
    /// Its bytes (empty when no file was chosen).
    pub bytes: Vec<u8>,
}

impl FromRequest<AppState> for Upload {
    type Rejection = UiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, UiError> {
        let (mut parts, body) = req.into_parts();
        check_origin(&parts.headers, state)?;
        let viewer = Viewer::from_request_parts(&mut parts, state).await?;
        let unreadable = |e: axum::extract::multipart::MultipartError| {
            UiError::BadRequest(format!("the upload cannot be read ({}): {e}", e.status()))
        };
        let mut multipart = axum::extract::Multipart::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(|e| UiError::BadRequest(format!("the upload is not a form with a file: {e}")))?;
        let (mut csrf, mut file_name, mut bytes) = (String::new(), String::new(), Vec::new());
        while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
            match field.name() {
                Some("_csrf") => csrf = field.text().await.map_err(unreadable)?,
                Some("file") => {
                    file_name = field.file_name().unwrap_or_default().to_owned();
                    bytes = field.bytes().await.map_err(unreadable)?.to_vec();
                }
                _ => {}
            }
        }
        if !tokens_match(&csrf, &viewer.session.csrf_token) {
            return Err(UiError::Forbidden("the form's security token is missing or stale; reload the page".into()));
        }
        Ok(Upload { viewer, file_name, bytes })
    }
}

/// A form posted before sign-in (sign-in, setup): origin checked, and its token must equal the
/// pre-session cookie set when the form was shown (double submit).
pub struct AnonPost<T> {
    /// The form's fields.
    pub form: T,
    /// The client's address (for throttling), when known.
    pub client: Option<IpAddr>,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for AnonPost<T> {
    type Rejection = UiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, UiError> {
        let (parts, body) = req.into_parts();
        check_origin(&parts.headers, state)?;
        let expected = cookie(&parts.headers, PRE_SESSION_COOKIE).unwrap_or("").to_owned();
        let client = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        let (form, csrf) = read_form(body).await?;
        if !tokens_match(&hash_token(&csrf), &expected) {
            return Err(UiError::Forbidden("the form's security token is missing or stale; reload the page".into()));
        }
        Ok(AnonPost { form, client })
    }
}

/// Failed sign-ins, counted per email and per client address in a sliding window; past the
/// limit, sign-in is refused until the window's oldest failure ages out.
///
/// Kept in memory: each node throttles what it sees, so an attacker spread over `n` nodes gets
/// `n` times the budget, still far too little to guess an Argon2id-hashed password.
#[derive(Debug)]
pub struct SignInThrottle {
    limit: usize,
    window: Duration,
    failures: Mutex<HashMap<String, Vec<Instant>>>,
}

impl SignInThrottle {
    /// At most `limit` failures per key within `window`.
    pub fn new(limit: usize, window: Duration) -> SignInThrottle {
        SignInThrottle { limit, window, failures: Mutex::new(HashMap::new()) }
    }

    fn keys(email: &str, client: Option<IpAddr>) -> Vec<String> {
        let mut keys = vec![format!("email:{}", email.trim().to_lowercase())];
        if let Some(ip) = client {
            keys.push(format!("ip:{ip}"));
        }
        keys
    }

    /// How long until another try is allowed, if the email or the address is over the limit.
    pub fn retry_after(&self, email: &str, client: Option<IpAddr>) -> Option<Duration> {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        Self::keys(email, client)
            .iter()
            .filter_map(|key| {
                let times = failures.get_mut(key)?;
                times.retain(|t| now.duration_since(*t) < self.window);
                (times.len() >= self.limit).then(|| self.window - now.duration_since(times[0]))
            })
            .max()
    }

    /// Counts a failed sign-in.
    pub fn failed(&self, email: &str, client: Option<IpAddr>) {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() > 100_000 {
            failures.retain(|_, times| times.iter().any(|t| now.duration_since(*t) < self.window));
        }
        for key in Self::keys(email, client) {
            failures.entry(key).or_default().push(now);
        }
    }

    /// Forgets the email's failures after a successful sign-in.
    pub fn succeeded(&self, email: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(&format!("email:{}", email.trim().to_lowercase()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_counts_per_email_and_address() {
        let throttle = SignInThrottle::new(3, Duration::from_secs(60));
        let ip: IpAddr = "127.0.0.7".parse().expect("ip");
        for _ in 0..3 {
            assert!(throttle.retry_after("a@example.com", Some(ip)).is_none());
            throttle.failed("A@example.com", Some(ip));
        }
        assert!(throttle.retry_after("a@example.com", None).is_some(), "by email, any case");
        assert!(throttle.retry_after("b@example.com", Some(ip)).is_some(), "by address");
        assert!(throttle.retry_after("b@example.com", None).is_none());
        throttle.succeeded("a@example.com");
        assert!(throttle.retry_after("a@example.com", None).is_none());
    }

    #[test]
    fn cookies_are_read_and_set_with_their_flags() {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, "a=1; dw_session=xyz".parse().expect("header"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("xyz"));
        assert_eq!(set_cookie("n", "v", Some(5), true), "n=v; HttpOnly; SameSite=Lax; Path=/; Max-Age=5; Secure");
    }
}

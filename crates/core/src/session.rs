//! A watch's kept session: the site's cookies and, for the browser, its local storage per
//! origin, carried from one check to the next (sealed at rest by the store's caller).
//!
//! Pure: the cookie rules a check over HTTP needs (which cookies go with a request, what a
//! `Set-Cookie` keeps), and the Netscape `cookies.txt` reader for an imported session.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// At most this many cookies in a session (an import over it is refused; a browser's jar past it
/// is cut, oldest-expiring first kept last).
pub const MAX_SESSION_COOKIES: usize = 3000;
/// A `cookies.txt` import larger than this is refused.
pub const MAX_COOKIES_TXT_BYTES: usize = 1024 * 1024;
/// Local storage kept per origin, in bytes of keys and values; an origin over it is not kept.
pub const MAX_LOCAL_STORAGE_BYTES: usize = 512 * 1024;

/// One cookie as a browser keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionCookie {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// `.example.com` for a cookie of the domain and its subdomains, `example.com` for the host
    /// only.
    pub domain: String,
    /// The path it is sent under.
    pub path: String,
    /// Only over HTTPS.
    #[serde(default)]
    pub secure: bool,
    /// Hidden from scripts.
    #[serde(default)]
    pub http_only: bool,
    /// When it expires, in seconds since the epoch; `None` for a cookie of the browser's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<f64>,
    /// `Strict`, `Lax` or `None`, as the site set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
}

impl SessionCookie {
    /// Whether it has expired at `now` (seconds since the epoch).
    pub fn expired(&self, now: i64) -> bool {
        self.expires.is_some_and(|at| at <= now as f64)
    }

    /// Whether it goes with a request to `host` (lower case, no port) and `path` over HTTPS or
    /// not (RFC 6265's domain-match and path-match).
    pub fn matches(&self, host: &str, path: &str, https: bool) -> bool {
        if self.secure && !https {
            return false;
        }
        let domain = self.domain.to_ascii_lowercase();
        let domain_ok = match domain.strip_prefix('.') {
            Some(parent) => host == parent || host.ends_with(&format!(".{parent}")),
            None => host == domain,
        };
        let cookie_path = if self.path.is_empty() { "/" } else { &self.path };
        let path_ok = path == cookie_path
            || (path.starts_with(cookie_path)
                && (cookie_path.ends_with('/') || path[cookie_path.len()..].starts_with('/')));
        domain_ok && path_ok
    }
}

/// A watch's session: cookies, and the browser's local storage by origin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// The cookie jar.
    #[serde(default)]
    pub cookies: Vec<SessionCookie>,
    /// `https://example.com` → its local storage's keys and values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub local_storage: BTreeMap<String, BTreeMap<String, String>>,
}

impl SessionState {
    /// The `Cookie` header of a request to `host` and `path` (HTTPS or not) at `now`, or `None`
    /// when no cookie goes with it. Longer paths first, as browsers send them.
    pub fn cookie_header(&self, host: &str, path: &str, https: bool, now: i64) -> Option<String> {
        let host = host.to_ascii_lowercase();
        let mut sent: Vec<&SessionCookie> =
            self.cookies.iter().filter(|c| !c.expired(now) && c.matches(&host, path, https)).collect();
        sent.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
        let pairs: Vec<String> = sent.iter().map(|c| format!("{}={}", c.name, c.value)).collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }

    /// Keeps what a `Set-Cookie` header (`header`) of an answer from `host` for `path` says:
    /// a new or replaced cookie, or one removed (expired). A header that is not a cookie, or
    /// names a domain `host` is not in, is ignored.
    pub fn set_cookie(&mut self, host: &str, path: &str, header: &str, now: i64) {
        let Some(cookie) = parse_set_cookie(&host.to_ascii_lowercase(), path, header, now) else { return };
        self.cookies.retain(|c| !(c.name == cookie.name && c.domain == cookie.domain && c.path == cookie.path));
        if !cookie.expired(now) && self.cookies.len() < MAX_SESSION_COOKIES {
            self.cookies.push(cookie);
        }
    }

    /// Drops the cookies expired at `now`.
    pub fn drop_expired(&mut self, now: i64) {
        self.cookies.retain(|c| !c.expired(now));
    }
}

/// The secrets a watch's steps type (`{"secret": "name"}`), each with the index of the first
/// step naming it.
pub fn secret_names(fetch: &crate::FetchSpec) -> Vec<(usize, String)> {
    let mut names: Vec<(usize, String)> = Vec::new();
    for (i, step) in fetch.steps.iter().enumerate() {
        if let crate::Step::Type { text: crate::StepText::Secret { secret }, .. } = step
            && !names.iter().any(|(_, n)| n == secret)
        {
            names.push((i, secret.clone()));
        }
    }
    names
}

/// A `Set-Cookie` header as a cookie, with the defaults of RFC 6265 for what it leaves out.
fn parse_set_cookie(host: &str, request_path: &str, header: &str, now: i64) -> Option<SessionCookie> {
    let mut parts = header.split(';');
    let (name, value) = parts.next()?.split_once('=')?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let default_path = match request_path.rfind('/') {
        Some(0) | None => "/".to_owned(),
        Some(at) => request_path[..at].to_owned(),
    };
    let mut cookie = SessionCookie {
        name: name.to_owned(),
        value: value.trim().trim_matches('"').to_owned(),
        domain: host.to_owned(),
        path: default_path,
        secure: false,
        http_only: false,
        expires: None,
        same_site: None,
    };
    let mut max_age: Option<i64> = None;
    for attribute in parts {
        let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        match key.as_str() {
            "domain" if !value.is_empty() => {
                let domain = value.trim_start_matches('.').to_ascii_lowercase();
                if host != domain && !host.ends_with(&format!(".{domain}")) {
                    return None;
                }
                cookie.domain = format!(".{domain}");
            }
            "path" if value.starts_with('/') => cookie.path = value.to_owned(),
            "secure" => cookie.secure = true,
            "httponly" => cookie.http_only = true,
            "samesite" if !value.is_empty() => cookie.same_site = Some(value.to_owned()),
            "max-age" => max_age = value.parse().ok(),
            "expires" => {
                if let Ok(at) = chrono::DateTime::parse_from_rfc2822(&value.replace('-', " ")) {
                    cookie.expires = Some(at.timestamp() as f64);
                }
            }
            _ => {}
        }
    }
    if let Some(seconds) = max_age {
        cookie.expires = Some(now.saturating_add(seconds) as f64);
    }
    Some(cookie)
}

/// Why a `cookies.txt` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CookiesTxtError {
    /// Larger than [`MAX_COOKIES_TXT_BYTES`].
    #[error("the file is larger than {MAX_COOKIES_TXT_BYTES} bytes")]
    TooLarge,
    /// More cookies than [`MAX_SESSION_COOKIES`].
    #[error("the file holds more than {MAX_SESSION_COOKIES} cookies")]
    TooMany,
    /// A line that is neither a comment nor a cookie.
    #[error("line {line}: {reason}")]
    Line {
        /// 1-based.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Nothing in it.
    #[error("the file holds no cookie")]
    Empty,
}

/// Reads a Netscape `cookies.txt` (what browser extensions and yt-dlp export): per line,
/// tab-separated, the domain, whether subdomains share it (`TRUE`/`FALSE`), the path, whether
/// only over HTTPS, the expiry (seconds since the epoch, `0` for a session cookie), the name
/// and the value. `#` starts a comment, except `#HttpOnly_` before a domain.
pub fn parse_cookies_txt(text: &str) -> Result<Vec<SessionCookie>, CookiesTxtError> {
    if text.len() > MAX_COOKIES_TXT_BYTES {
        return Err(CookiesTxtError::TooLarge);
    }
    let mut cookies = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let (line, http_only) = match line.strip_prefix("#HttpOnly_") {
            Some(rest) => (rest, true),
            None => (line, false),
        };
        if line.trim().is_empty() || (!http_only && line.starts_with('#')) {
            continue;
        }
        let bad = |reason: &str| CookiesTxtError::Line { line: i + 1, reason: reason.to_owned() };
        let fields: Vec<&str> = line.split('\t').collect();
        let (domain, subdomains, path, secure, expiry, name, value) = match fields.as_slice() {
            [d, s, p, sec, e, n, v] => (*d, *s, *p, *sec, *e, *n, *v),
            [d, s, p, sec, e, n] => (*d, *s, *p, *sec, *e, *n, ""),
            _ => return Err(bad("not a cookie: expected 7 fields separated by tabs")),
        };
        let flag = |text: &str, what: &str| match text.to_ascii_uppercase().as_str() {
            "TRUE" => Ok(true),
            "FALSE" => Ok(false),
            _ => Err(bad(&format!("{what} must be TRUE or FALSE"))),
        };
        let domain = domain.trim().to_ascii_lowercase();
        if domain.trim_start_matches('.').is_empty()
            || !domain.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'))
        {
            return Err(bad("the domain is not a host name"));
        }
        let subdomains = flag(subdomains, "the second field (subdomains)")?;
        let secure = flag(secure, "the fourth field (secure)")?;
        if !path.starts_with('/') {
            return Err(bad("the path must start with /"));
        }
        let expiry: f64 = expiry.trim().parse().map_err(|_| bad("the expiry is not a number of seconds"))?;
        if name.is_empty() || name.contains(['=', ';', ' ']) || value.contains([';', '\n']) {
            return Err(bad("the cookie's name or value is not valid"));
        }
        let bare = domain.trim_start_matches('.');
        cookies.push(SessionCookie {
            name: name.to_owned(),
            value: value.to_owned(),
            domain: if subdomains { format!(".{bare}") } else { bare.to_owned() },
            path: path.to_owned(),
            secure,
            http_only,
            expires: (expiry > 0.0).then_some(expiry),
            same_site: None,
        });
        if cookies.len() > MAX_SESSION_COOKIES {
            return Err(CookiesTxtError::TooMany);
        }
    }
    if cookies.is_empty() {
        return Err(CookiesTxtError::Empty);
    }
    Ok(cookies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookies_txt_is_read_with_its_http_only_lines_and_comments() {
        let text = "# Netscape HTTP Cookie File\n\n.example.com\tTRUE\t/\tTRUE\t1999999999\tsid\tabc\n#HttpOnly_shop.example.com\tFALSE\t/cart\tFALSE\t0\ttok\tx y\n";
        let cookies = parse_cookies_txt(text).expect("cookies");
        assert_eq!(cookies.len(), 2);
        assert_eq!(cookies[0].domain, ".example.com");
        assert!(cookies[0].secure && !cookies[0].http_only);
        assert_eq!(cookies[1].domain, "shop.example.com");
        assert!(cookies[1].http_only && cookies[1].expires.is_none());
    }

    #[test]
    fn garbage_names_its_line_and_too_much_is_refused() {
        let err = parse_cookies_txt("# c\n.a.com\tTRUE\t/\tFALSE\t0\tn\tv\nhello world\n").expect_err("garbage");
        assert_eq!(
            err,
            CookiesTxtError::Line { line: 3, reason: "not a cookie: expected 7 fields separated by tabs".into() }
        );
        let many: String = (0..3001).map(|i| format!(".a.com\tTRUE\t/\tFALSE\t0\tc{i}\tv\n")).collect();
        assert_eq!(parse_cookies_txt(&many), Err(CookiesTxtError::TooMany));
        let big = "#".repeat(MAX_COOKIES_TXT_BYTES + 1);
        assert_eq!(parse_cookies_txt(&big), Err(CookiesTxtError::TooLarge));
        assert_eq!(parse_cookies_txt("# nothing\n"), Err(CookiesTxtError::Empty));
    }

    #[test]
    fn cookies_go_where_their_domain_path_and_scheme_say() {
        let mut jar = SessionState::default();
        jar.set_cookie("shop.example.com", "/account/login", "sid=1; Path=/; Domain=example.com; HttpOnly", 100);
        jar.set_cookie("shop.example.com", "/account/login", "pref=2", 100);
        jar.set_cookie("shop.example.com", "/", "sec=3; Secure; Max-Age=10", 100);
        jar.set_cookie("shop.example.com", "/", "evil=4; Domain=other.com", 100);
        assert_eq!(jar.cookies.len(), 3);
        assert_eq!(jar.cookie_header("www.example.com", "/", false, 100).as_deref(), Some("sid=1"));
        assert_eq!(jar.cookie_header("shop.example.com", "/account/x", false, 100).as_deref(), Some("pref=2; sid=1"));
        assert_eq!(jar.cookie_header("shop.example.com", "/", true, 100).as_deref(), Some("sid=1; sec=3"));
        assert_eq!(jar.cookie_header("shop.example.com", "/", true, 110).as_deref(), Some("sid=1"));
        jar.set_cookie("shop.example.com", "/", "sid=; Domain=example.com; Path=/; Max-Age=0", 120);
        assert_eq!(jar.cookie_header("shop.example.com", "/", false, 120), None);
    }
}

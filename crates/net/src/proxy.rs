//! Proxies that users name: what a proxy URL may be, how it is shown without its password, and
//! the promise about the proxy's own address (a proxy is a way out, so one on a private address
//! is allowed only when the operator says so).

use std::net::IpAddr;
use std::time::Duration;

use url::Url;

use crate::is_non_public;

/// The schemes a proxy URL may have.
pub const PROXY_SCHEMES: &[&str] = &["http", "https", "socks5", "socks5h"];

/// Time to resolve a proxy's name or to open a connection to it when probing.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Parses a proxy URL: `http://`, `https://`, `socks5://` or `socks5h://`, a host, optionally
/// a port and credentials, and nothing else (no path, query or fragment). The error is a
/// sentence for the user.
pub fn parse_proxy_url(value: &str) -> Result<Url, String> {
    let url = Url::parse(value.trim()).map_err(|e| {
        format!("not a proxy URL ({e}); use http://HOST:PORT, socks5://HOST:PORT or the name of one of your proxies")
    })?;
    if !PROXY_SCHEMES.contains(&url.scheme()) {
        return Err(format!("a proxy is http://, https://, socks5:// or socks5h://, not {}://", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the proxy URL has no host".into());
    }
    if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
        return Err("a proxy URL is a scheme, a host and a port, without a path or query".into());
    }
    Ok(url)
}

/// The URL with its password replaced by `****` (and nothing else changed), for pages, logs
/// and errors.
pub fn redact_proxy(url: &Url) -> String {
    if url.password().is_none() {
        return url.as_str().trim_end_matches('/').to_owned();
    }
    let mut shown = url.clone();
    let _ = shown.set_password(Some("****"));
    shown.as_str().trim_end_matches('/').to_owned()
}

/// Why a proxy cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProxyError {
    /// The proxy is, or resolves to, a non-public address and the operator did not allow it.
    #[error(
        "the proxy {0} is a private, loopback or link-local address; set DRIFTWATCH_ALLOW_PRIVATE_PROXIES=true to allow it"
    )]
    Private(String),
    /// The proxy's name does not resolve.
    #[error("the proxy {0} cannot be found: {1}")]
    Unresolved(String, String),
    /// The proxy does not accept connections.
    #[error("the proxy {0} does not answer: {1}")]
    Unreachable(String, String),
}

/// Checks the proxy's own address: unless `allow_private`, its host must be public (an IP
/// literal, or a name whose every address is public). Resolving a name takes at most a few
/// seconds.
pub async fn vet_proxy(url: &Url, allow_private: bool) -> Result<(), ProxyError> {
    if allow_private {
        return Ok(());
    }
    let shown = redact_proxy(url);
    for ip in proxy_addresses(url).await? {
        if is_non_public(ip) {
            return Err(ProxyError::Private(shown));
        }
    }
    Ok(())
}

/// Opens (and closes) a TCP connection to the proxy: whether it is there at all, to tell a dead
/// proxy from a page that does not answer behind it.
pub async fn probe_proxy(url: &Url) -> Result<(), ProxyError> {
    let shown = redact_proxy(url);
    let port = proxy_port(url);
    let mut last = String::from("no address");
    for ip in proxy_addresses(url).await? {
        match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect((ip, port))).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = format!("no connection within {}s", PROBE_TIMEOUT.as_secs()),
        }
    }
    Err(ProxyError::Unreachable(shown, last))
}

/// The proxy's port: the URL's, else 1080 for SOCKS, 443 for https and 80 for http.
pub fn proxy_port(url: &Url) -> u16 {
    url.port().unwrap_or(match url.scheme() {
        "socks5" | "socks5h" => 1080,
        "https" => 443,
        _ => 80,
    })
}

async fn proxy_addresses(url: &Url) -> Result<Vec<IpAddr>, ProxyError> {
    let shown = redact_proxy(url);
    match url.host() {
        Some(url::Host::Ipv4(v4)) => Ok(vec![IpAddr::V4(v4)]),
        Some(url::Host::Ipv6(v6)) => Ok(vec![IpAddr::V6(v6)]),
        Some(url::Host::Domain(name)) => {
            let lookup = tokio::net::lookup_host((name, proxy_port(url)));
            match tokio::time::timeout(PROBE_TIMEOUT, lookup).await {
                Ok(Ok(addrs)) => {
                    let ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
                    if ips.is_empty() { Err(ProxyError::Unresolved(shown, "no address".into())) } else { Ok(ips) }
                }
                Ok(Err(e)) => Err(ProxyError::Unresolved(shown, e.to_string())),
                Err(_) => Err(ProxyError::Unresolved(shown, format!("no answer within {}s", PROBE_TIMEOUT.as_secs()))),
            }
        }
        None => Err(ProxyError::Unresolved(shown, "no host".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls_are_checked_and_shown_without_their_password() {
        for ok in ["http://p.example:3128", "https://p.example", "socks5://u:pw@10.0.0.1:1080", "socks5h://p.example/"]
        {
            assert!(parse_proxy_url(ok).is_ok(), "{ok}");
        }
        assert!(parse_proxy_url("ftp://p.example").unwrap_err().contains("not ftp://"));
        assert!(parse_proxy_url("p.example:3128").is_err());
        assert!(parse_proxy_url("http://p.example/path").unwrap_err().contains("without a path"));
        assert!(parse_proxy_url("http://").is_err());
        let url = parse_proxy_url("socks5://alice:s3cret@p.example:1080").expect("url");
        assert_eq!(redact_proxy(&url), "socks5://alice:****@p.example:1080");
        assert_eq!(redact_proxy(&parse_proxy_url("http://p.example:3128").expect("url")), "http://p.example:3128");
        assert_eq!(proxy_port(&parse_proxy_url("socks5://p.example").expect("url")), 1080);
    }

    #[tokio::test]
    async fn a_private_proxy_needs_the_operators_word_and_a_dead_one_is_named() {
        let url = parse_proxy_url("http://u:pw@127.0.0.1:9").expect("url");
        let refused = vet_proxy(&url, false).await.unwrap_err();
        assert_eq!(refused, ProxyError::Private("http://u:****@127.0.0.1:9".into()));
        assert!(vet_proxy(&url, true).await.is_ok());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let dead = parse_proxy_url(&format!("http://127.0.0.1:{port}")).expect("url");
        let error = probe_proxy(&dead).await.unwrap_err().to_string();
        assert!(error.starts_with(&format!("the proxy http://127.0.0.1:{port} does not answer")), "{error}");
    }
}

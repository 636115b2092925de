//! Outbound HTTP policy shared by page fetches and webhook deliveries.
//!
//! Both send requests to addresses that users type in, so both must refuse private, loopback
//! and link-local targets unless the operator allows them. The guard sits in the DNS resolver
//! that reqwest uses: the client connects only to addresses the guard vetted, so a name that
//! resolves differently a moment later (DNS rebinding) cannot slip through. IP literals never
//! reach a resolver, so [`check_url`] vets them, and the redirect policy re-checks every hop.
//!
//! Proxies are never taken from the environment (`HTTP_PROXY` and friends): a proxy is an
//! explicit setting ([`ClientOptions::proxy`]). Through a proxy the proxy resolves the target's
//! name, not this client, so [`vet_url`] resolves it here first and refuses it unless every
//! address is public. What a proxy cannot guarantee: the proxy looks the name up again, so a
//! name that changes its answer between the two lookups (DNS rebinding), or that the proxy's
//! DNS answers differently (split horizon), reaches whatever the proxy can reach; give the
//! proxy egress rules of its own when that matters.

mod proxy;

pub use proxy::{PROXY_SCHEMES, ProxyError, parse_proxy_url, probe_proxy, proxy_port, redact_proxy, vet_proxy};

use std::error::Error as StdError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

/// Which targets outbound requests may reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Allow private, loopback, link-local and other non-public addresses (tests, intranets).
    pub allow_private: bool,
}

/// A URL that outbound requests must not reach.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    /// Not http or https.
    #[error("unsupported URL scheme `{0}` (use http or https)")]
    Scheme(String),
    /// No host to connect to.
    #[error("the URL has no host")]
    NoHost,
    /// The host is, or resolves only to, a non-public address.
    #[error("{0} is a private, loopback or link-local address; set DRIFTWATCH_ALLOW_PRIVATE_TARGETS=true to allow it")]
    Private(String),
    /// Through a proxy, a name that does not resolve here cannot be vetted, so it is refused.
    #[error("cannot vet {0} before handing it to the proxy; only names that resolve here are sent through it")]
    Unvetted(String),
}

/// Whether `ip` is a non-public address: loopback, private, link-local, shared (CGNAT),
/// unspecified, multicast, broadcast, documentation or unique-local.
pub fn is_non_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_non_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return is_non_public_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (first & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (first == 0x2001 && v6.segments()[1] == 0x0db8) // documentation
                || (first == 0x64 && v6.segments()[1] == 0xff9b && v6.segments()[2] == 1) // local-use NAT64
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0)
        }
    }
}

/// The IPv4 address an IPv6 address carries and routes to: IPv4-mapped `::ffff:0:0/96`,
/// IPv4-compatible `::/96`, the well-known NAT64 prefix `64:ff9b::/96`, and 6to4 `2002::/16`.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    match s {
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) != (0, 0) && (hi, lo) != (0, 1) => Some(low(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

fn is_non_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || a >= 240 // reserved
}

/// Checks a URL's scheme and, when its host is an IP literal, the address.
///
/// Names are checked later, at resolution, by the client from [`client_builder`].
pub fn check_url(url: &Url, policy: TargetPolicy) -> Result<(), TargetError> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(TargetError::Scheme(other.to_owned())),
    }
    let host = url.host().ok_or(TargetError::NoHost)?;
    if policy.allow_private {
        return Ok(());
    }
    let ip = match host {
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
        url::Host::Domain(name) => {
            if name.eq_ignore_ascii_case("localhost") || name.to_ascii_lowercase().ends_with(".localhost") {
                return Err(TargetError::Private(name.to_owned()));
            }
            return Ok(());
        }
    };
    if is_non_public(ip) { Err(TargetError::Private(ip.to_string())) } else { Ok(()) }
}

/// [`check_url`], and, when a proxy will carry the request (`proxied`), the name vetted here:
/// it must resolve on this host, and only to public addresses (the proxy may pick any of them).
/// Without a proxy the guarded resolver vets names as the client connects.
pub async fn vet_url(url: &Url, policy: TargetPolicy, proxied: bool) -> Result<(), TargetError> {
    check_url(url, policy)?;
    match url.host() {
        Some(url::Host::Domain(name)) if proxied && !policy.allow_private => {
            let port = url.port_or_known_default().unwrap_or(80);
            let resolved: Vec<IpAddr> = tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| TargetError::Unvetted(format!("{name}: {e}")))?
                .map(|a| a.ip())
                .collect();
            vet_addresses(name, &resolved)
        }
        _ => Ok(()),
    }
}

/// [`vet_url`] for a redirect hop, inside reqwest's (synchronous) redirect policy: the lookup
/// blocks, so on a multi-threaded runtime the thread is handed over to other tasks meanwhile.
fn vet_url_blocking(url: &Url, policy: TargetPolicy) -> Result<(), TargetError> {
    check_url(url, policy)?;
    let Some(url::Host::Domain(name)) = url.host() else { return Ok(()) };
    if policy.allow_private {
        return Ok(());
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let lookup = || {
        use std::net::ToSocketAddrs as _;
        (name, port).to_socket_addrs().map(|addrs| addrs.map(|a| a.ip()).collect::<Vec<_>>())
    };
    let multi_threaded = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    let resolved = if multi_threaded { tokio::task::block_in_place(lookup) } else { lookup() };
    vet_addresses(name, &resolved.map_err(|e| TargetError::Unvetted(format!("{name}: {e}")))?)
}

/// A name passes when it resolved, and only to public addresses.
fn vet_addresses(name: &str, resolved: &[IpAddr]) -> Result<(), TargetError> {
    match resolved.iter().find(|ip| is_non_public(**ip)) {
        Some(ip) => {
            tracing::warn!(target.host = %name, "refused a non-public target behind the proxy");
            Err(TargetError::Private(format!("{name} ({ip})")))
        }
        None if resolved.is_empty() => Err(TargetError::Unvetted(format!("{name}: no address"))),
        None => Ok(()),
    }
}

/// Resolves `host` (a name or an IP literal, IPv6 possibly in brackets) and returns the socket
/// addresses the policy allows, in resolver order; an error when the name does not resolve or
/// when any address is refused (same rule as the fetcher: a name with any non-public address is
/// refused unless `policy.allow_private`).
///
/// Callers connect to the returned addresses, never to the name again, so the answer that was
/// vetted is the one used (no DNS rebinding between check and connect).
pub async fn resolve_vetted(host: &str, port: u16, policy: TargetPolicy) -> Result<Vec<SocketAddr>, TargetError> {
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if host.is_empty() {
        return Err(TargetError::NoHost);
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        if !policy.allow_private && is_non_public(ip) {
            return Err(TargetError::Private(ip.to_string()));
        }
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let lower = host.trim_end_matches('.').to_ascii_lowercase();
    if !policy.allow_private && (lower == "localhost" || lower.ends_with(".localhost")) {
        return Err(TargetError::Private(host.to_owned()));
    }
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| TargetError::Unvetted(format!("{host}: {e}")))?
        .collect();
    if resolved.is_empty() {
        return Err(TargetError::Unvetted(format!("{host}: no address")));
    }
    if !policy.allow_private {
        let ips: Vec<IpAddr> = resolved.iter().map(SocketAddr::ip).collect();
        vet_addresses(host, &ips)?;
    }
    Ok(resolved)
}

/// If `err` (or anything in its source chain) is a refusal by the guard, its message.
pub fn blocked_reason(err: &(dyn StdError + 'static)) -> Option<String> {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(t) = e.downcast_ref::<TargetError>() {
            return Some(t.to_string());
        }
        current = e.source();
    }
    None
}

/// A resolver that drops non-public addresses unless the policy allows them. The configured
/// proxy's own name is the operator's choice and passes as it resolves.
#[derive(Debug)]
struct GuardedResolver {
    policy: TargetPolicy,
    proxy_host: Option<String>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        let exempt = self.proxy_host.as_deref().is_some_and(|proxy| proxy.eq_ignore_ascii_case(name.as_str()));
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> =
                resolved.iter().copied().filter(|a| exempt || policy.allow_private || !is_non_public(a.ip())).collect();
            if allowed.is_empty() {
                let shown = resolved.first().map_or(host.clone(), |a| format!("{host} ({})", a.ip()));
                tracing::warn!(target.host = %host, "refused a non-public target");
                return Err(Box::new(TargetError::Private(shown)) as Box<dyn StdError + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// How a client treats redirects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirects {
    /// Never follow (webhooks: a 3xx is the receiver's answer).
    None,
    /// Follow up to this many hops, each checked against the policy.
    Follow(usize),
}

/// Settings of an outbound client.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Which targets are allowed.
    pub policy: TargetPolicy,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Time for the whole request, body included.
    pub timeout: Duration,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// Redirect handling.
    pub redirects: Redirects,
    /// The HTTP(S) proxy every request goes through; none when absent (the environment's
    /// `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` are ignored). Callers vet each URL with
    /// [`vet_url`] before sending through it.
    pub proxy: Option<Url>,
}

/// A reqwest client builder with the guard, timeouts, user agent, redirect rule and proxy set;
/// fails only on a proxy URL reqwest cannot use.
///
/// Callers may add more before `build()`.
pub fn client_builder(options: &ClientOptions) -> Result<reqwest::ClientBuilder, reqwest::Error> {
    let policy = options.policy;
    let proxied = options.proxy.is_some();
    let redirect = match options.redirects {
        Redirects::None => reqwest::redirect::Policy::none(),
        Redirects::Follow(max) => reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= max {
                return attempt.error(format!("more than {max} redirects"));
            }
            let vetted =
                if proxied { vet_url_blocking(attempt.url(), policy) } else { check_url(attempt.url(), policy) };
            match vetted {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(e),
            }
        }),
    };
    let proxy_host = options.proxy.as_ref().and_then(|p| p.host_str()).map(str::to_owned);
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { policy, proxy_host }))
        .connect_timeout(options.connect_timeout)
        .timeout(options.timeout)
        .user_agent(options.user_agent.clone())
        .redirect(redirect);
    if let Some(proxy) = &options.proxy {
        builder = builder.proxy(reqwest::Proxy::all(proxy.as_str())?);
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            "2002:c0a8:101::1",
            "::7f00:1",
        ] {
            assert!(
                is_non_public(private.parse().unwrap_or_else(|_| panic!("{private}"))),
                "{private} should be non-public"
            );
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "172.32.0.1", "64:ff9b::101:101"] {
            assert!(!is_non_public(public.parse().unwrap_or_else(|_| panic!("{public}"))), "{public} should be public");
        }
    }

    #[test]
    fn checks_urls() {
        let deny = TargetPolicy::default();
        let allow = TargetPolicy { allow_private: true };
        let url = |s: &str| Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(matches!(check_url(&url("http://127.0.0.1:8080/"), deny), Err(TargetError::Private(_))));
        assert!(matches!(check_url(&url("http://[::1]/"), deny), Err(TargetError::Private(_))));
        assert!(matches!(check_url(&url("http://localhost/"), deny), Err(TargetError::Private(_))));
        assert!(matches!(check_url(&url("ftp://example.com/"), allow), Err(TargetError::Scheme(_))));
        assert_eq!(check_url(&url("http://127.0.0.1/"), allow), Ok(()));
        assert_eq!(check_url(&url("https://example.com/"), deny), Ok(()));
    }

    #[test]
    fn behind_a_proxy_every_address_of_a_name_must_be_public() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap_or_else(|_| panic!("{s}"));
        assert_eq!(vet_addresses("shop.example", &[ip("93.184.216.34"), ip("2606:4700::1")]), Ok(()));
        assert!(matches!(
            vet_addresses("mixed.example", &[ip("93.184.216.34"), ip("10.0.0.7")]),
            Err(TargetError::Private(m)) if m.contains("10.0.0.7")
        ));
        assert!(matches!(vet_addresses("nothing.example", &[]), Err(TargetError::Unvetted(_))));
    }

    #[tokio::test]
    async fn names_are_vetted_only_when_a_proxy_carries_them() {
        let deny = TargetPolicy::default();
        let url = |s: &str| Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        // Without a proxy the resolver vets names as the client connects.
        assert_eq!(vet_url(&url("http://metadata.invalid/"), deny, false).await, Ok(()));
        assert!(matches!(vet_url(&url("http://metadata.invalid/"), deny, true).await, Err(TargetError::Unvetted(_))));
        assert_eq!(vet_url(&url("http://93.184.216.34/"), deny, true).await, Ok(()));
        assert!(matches!(vet_url(&url("http://10.0.0.1/"), deny, true).await, Err(TargetError::Private(_))));
        let allow = TargetPolicy { allow_private: true };
        assert_eq!(vet_url(&url("http://metadata.invalid/"), allow, true).await, Ok(()));
    }

    #[tokio::test]
    async fn resolve_vetted_applies_the_policy() {
        let deny = TargetPolicy::default();
        let allow = TargetPolicy { allow_private: true };
        assert!(matches!(resolve_vetted("127.0.0.1", 80, deny).await, Err(TargetError::Private(_))));
        assert!(matches!(resolve_vetted("[::1]", 80, deny).await, Err(TargetError::Private(_))));
        assert!(matches!(resolve_vetted("localhost", 80, deny).await, Err(TargetError::Private(_))));
        assert!(matches!(resolve_vetted("", 80, deny).await, Err(TargetError::NoHost)));
        assert_eq!(resolve_vetted("127.0.0.1", 8080, allow).await, Ok(vec![SocketAddr::from(([127, 0, 0, 1], 8080))]));
        assert_eq!(
            resolve_vetted("[::1]", 443, allow).await,
            Ok(vec![SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 443)])
        );
        assert_eq!(
            resolve_vetted("93.184.216.34", 443, deny).await,
            Ok(vec![SocketAddr::from(([93, 184, 216, 34], 443))])
        );
        assert!(matches!(resolve_vetted("metadata.invalid", 80, deny).await, Err(TargetError::Unvetted(_))));
    }

    #[tokio::test]
    async fn the_client_refuses_names_that_resolve_to_loopback() {
        let options = ClientOptions {
            policy: TargetPolicy::default(),
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(2),
            user_agent: "test".into(),
            redirects: Redirects::None,
            proxy: None,
        };
        let client = client_builder(&options).expect("builder").build().expect("client");
        let err = client.get("http://localhost:9/").send().await.expect_err("must be refused");
        let reason = blocked_reason(&err).expect("refused by the guard");
        assert!(reason.contains("localhost"), "{reason}");
    }
}

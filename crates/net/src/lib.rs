//! Outbound HTTP policy shared by page fetches and webhook deliveries.
//!
//! Both send requests to addresses that users type in, so both must refuse private, loopback
//! and link-local targets unless the operator allows them. The guard sits in the DNS resolver
//! that reqwest uses: the client connects only to addresses the guard vetted, so a name that
//! resolves differently a moment later (DNS rebinding) cannot slip through. IP literals never
//! reach a resolver, so [`check_url`] vets them, and the redirect policy re-checks every hop.

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

/// A resolver that drops non-public addresses unless the policy allows them.
#[derive(Debug)]
struct GuardedResolver {
    policy: TargetPolicy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> =
                resolved.iter().copied().filter(|a| policy.allow_private || !is_non_public(a.ip())).collect();
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
}

/// A reqwest client builder with the guard, timeouts, user agent and redirect rule set.
///
/// Callers may add more before `build()`.
pub fn client_builder(options: &ClientOptions) -> reqwest::ClientBuilder {
    let policy = options.policy;
    let redirect = match options.redirects {
        Redirects::None => reqwest::redirect::Policy::none(),
        Redirects::Follow(max) => reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= max {
                return attempt.error(format!("more than {max} redirects"));
            }
            match check_url(attempt.url(), policy) {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(e),
            }
        }),
    };
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .connect_timeout(options.connect_timeout)
        .timeout(options.timeout)
        .user_agent(options.user_agent.clone())
        .redirect(redirect)
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

    #[tokio::test]
    async fn the_client_refuses_names_that_resolve_to_loopback() {
        let options = ClientOptions {
            policy: TargetPolicy::default(),
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(2),
            user_agent: "test".into(),
            redirects: Redirects::None,
        };
        let client = client_builder(&options).build().expect("client");
        let err = client.get("http://localhost:9/").send().await.expect_err("must be refused");
        let reason = blocked_reason(&err).expect("refused by the guard");
        assert!(reason.contains("localhost"), "{reason}");
    }
}

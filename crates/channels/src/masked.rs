//! Credential URLs as people may see them: a chat service's webhook URL is its own key, so it
//! is shown with the part that grants access masked.

use crate::EndpointKind;

/// What stands in for the masked part.
pub const MASK: &str = "••••";

/// `url` with its last path segment, its query and any user info masked, keeping what tells
/// endpoints apart: `https://discord.com/api/webhooks/1234/abcd` is shown as
/// `https://discord.com/api/webhooks/1234/••••`. A URL that does not parse is masked whole.
pub fn masked_url(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url.trim()) else { return MASK.to_owned() };
    let Some(host) = parsed.host_str() else { return MASK.to_owned() };
    let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
    let mut segments: Vec<&str> =
        parsed.path_segments().map(|s| s.filter(|s| !s.is_empty()).collect()).unwrap_or_default();
    segments.pop();
    let mut shown = format!("{}://{host}{port}/", parsed.scheme());
    for segment in segments {
        shown.push_str(segment);
        shown.push('/');
    }
    shown.push_str(MASK);
    if parsed.query().is_some() {
        shown.push('?');
        shown.push_str(MASK);
    }
    shown
}

/// The URL as stored and shown for an endpoint of `kind` whose real URL is `url`, with the
/// real one to seal: `(url, None)` when the kind's URL is not a credential, else the masked
/// URL and `Some(url)`.
pub fn shown_and_sealed(kind: EndpointKind, url: &str) -> (String, Option<String>) {
    if kind.spec().credential_url { (masked_url(url), Some(url.to_owned())) } else { (url.to_owned(), None) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_of_a_credential_url_is_masked() {
        let cases = [
            ("https://discord.com/api/webhooks/1234/abcDEF-xyz", "https://discord.com/api/webhooks/1234/••••"),
            ("https://hooks.slack.com/services/T0/B0/XXXX", "https://hooks.slack.com/services/T0/B0/••••"),
            ("https://mm.example.com:8065/hooks/key123", "https://mm.example.com:8065/hooks/••••"),
            (
                "https://prod.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=SECRET",
                "https://prod.logic.azure.com/workflows/abc/triggers/manual/paths/••••?••••",
            ),
            ("https://user:pass@example.com/", "https://example.com/••••"),
            ("not a url", "••••"),
        ];
        for (url, shown) in cases {
            assert_eq!(masked_url(url), shown, "{url}");
        }
    }

    #[test]
    fn only_credential_kinds_are_sealed() {
        let url = "https://discord.com/api/webhooks/1/k";
        assert_eq!(shown_and_sealed(EndpointKind::Discord, url).1.as_deref(), Some(url));
        assert_eq!(shown_and_sealed(EndpointKind::Webhook, url), (url.to_owned(), None));
        let credential: Vec<&str> =
            EndpointKind::ALL.iter().filter(|k| k.spec().credential_url).map(|k| k.as_str()).collect();
        assert_eq!(credential, ["slack", "discord", "teams", "mattermost"]);
    }
}

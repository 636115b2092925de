//! The rules: what, alone or together, makes an answer a wall, vendor by vendor. Headers are
//! read first (they cost nothing); the body's markers come from one scan.
//!
//! A marker that normal pages behind a vendor also carry counts only on an answer shaped like a
//! wall: a refusal (4xx, 5xx, AWS WAF's 202) or a page with almost no text.

use std::cell::OnceCell;

use super::markers::{M, Seen, little_text, triggered};
use super::{Answer, Vendor, Wall};

/// At most this many bytes of visible text make "a page with almost no text". Challenge and
/// block pages show a few hundred (a title, a sentence, a reference); a real page shows more.
pub(super) const LITTLE_TEXT: usize = 1200;

fn wall(vendor: Vendor, evidence: impl Into<String>) -> Option<Wall> {
    Some(Wall { vendor, evidence: evidence.into() })
}

/// The wall the headers alone show, if they show one.
pub(super) fn by_headers(answer: &Answer<'_>) -> Option<Wall> {
    let status = answer.status;
    if answer.header("cf-mitigated").is_some_and(|v| v.trim().eq_ignore_ascii_case("challenge")) {
        return wall(Vendor::Cloudflare, "header cf-mitigated: challenge");
    }
    if let Some(value) = answer.header("x-vercel-mitigated").and_then(|v| known(v, &["challenge", "deny"])) {
        return wall(Vendor::Vercel, format!("header x-vercel-mitigated: {value}"));
    }
    if let Some(value) = answer.header("x-amzn-waf-action") {
        let value = known(value, &["captcha", "challenge", "block"]).unwrap_or("…");
        return wall(Vendor::AwsWaf, format!("header x-amzn-waf-action: {value}"));
    }
    if answer.header("x-sucuri-block").is_some() {
        return wall(Vendor::Sucuri, "header x-sucuri-block");
    }
    let refused = matches!(status, 401 | 403 | 405 | 429);
    if refused {
        let datadome = ["x-datadome", "x-dd-b", "x-datadome-cid"].into_iter().find(|h| answer.header(h).is_some());
        if let Some(name) = datadome {
            return wall(Vendor::DataDome, format!("header {name} on a {status}"));
        }
        if answer.headers.iter().any(|(n, _)| n.len() > 8 && n[..8].eq_ignore_ascii_case("x-kpsdk-")) {
            return wall(Vendor::Kasada, format!("x-kpsdk-* headers on a {status}"));
        }
    }
    if (300..400).contains(&status)
        && answer.header("location").is_some_and(|l| contains_ignore_case(l, "queue-it.net"))
    {
        return wall(Vendor::Queue, "a redirect to Queue-it (queue-it.net)");
    }
    None
}

/// What a rule looks at: the answer, the markers its body carries, and (worked out once, only
/// if a rule asks) whether it shows almost no text.
pub(super) struct Clues<'a> {
    pub(super) answer: &'a Answer<'a>,
    pub(super) body: &'a [u8],
    pub(super) seen: Seen,
    little: OnceCell<bool>,
}

impl<'a> Clues<'a> {
    /// Scans `body` (already cut to `SCAN_BYTES`) if it may be a wall: a refusal, a page with
    /// almost no text, or a page carrying one of the markers that count on any page.
    pub(super) fn gather(answer: &'a Answer<'a>, body: &'a [u8]) -> Option<Self> {
        let little = OnceCell::new();
        let refused = is_refusal(answer.status);
        if !refused && !*little.get_or_init(|| little_text(body, LITTLE_TEXT)) && !triggered(body) {
            return None;
        }
        Some(Clues { answer, body, seen: Seen::scan(body), little })
    }

    fn has(&self, marker: M) -> bool {
        self.seen.has(marker)
    }

    /// A refusal: the server did not answer with the page.
    fn refused(&self) -> bool {
        is_refusal(self.answer.status)
    }

    fn little_text(&self) -> bool {
        *self.little.get_or_init(|| little_text(self.body, LITTLE_TEXT))
    }

    /// A refusal, or a page with almost no text.
    fn wall_shaped(&self) -> bool {
        self.refused() || self.little_text()
    }

    fn served_by_cloudflare(&self) -> bool {
        self.answer.header("server").is_some_and(|s| s.trim().eq_ignore_ascii_case("cloudflare"))
            || self.answer.header("cf-ray").is_some()
    }

    fn status(&self) -> u16 {
        self.answer.status
    }
}

fn is_refusal(status: u16) -> bool {
    status >= 400 || status == 202
}

/// The wall the body shows, vendor by vendor, the surest rules first.
pub(super) fn by_body(c: &Clues<'_>) -> Option<Wall> {
    cloudflare(c)
        .or_else(|| akamai(c))
        .or_else(|| perimeterx(c))
        .or_else(|| others(c))
        .or_else(|| queue(c))
        .or_else(|| captcha(c))
}

fn cloudflare(c: &Clues<'_>) -> Option<Wall> {
    let cf = Vendor::Cloudflare;
    if c.has(M::CfChlOpt) {
        return wall(cf, "_cf_chl_opt (the challenge's options) in the body");
    }
    if c.has(M::CfChlToken) {
        return wall(cf, "a challenge token (__cf_chl_) in the body");
    }
    if c.has(M::CfChallengePlatform) && c.has(M::Orchestrate) {
        return wall(cf, "the challenge script /cdn-cgi/challenge-platform/…/orchestrate/ in the body");
    }
    let block_words = c.seen.any(&[M::YouHaveBeenBlocked, M::AttentionRequired]);
    if let Some(words) = block_words
        && (c.has(M::CfErrorDetails) || c.served_by_cloudflare())
        && c.wall_shaped()
    {
        let words = if words == M::YouHaveBeenBlocked { "Sorry, you have been blocked" } else { "Attention Required!" };
        return wall(cf, format!("the block page (\"{words}\")"));
    }
    if c.refused()
        && let Some(code) = c.seen.after(M::CfErrorCode, c.body).and_then(blocking_error_code)
    {
        return wall(cf, format!("error {code} on a {}", c.status()));
    }
    if matches!(c.status(), 403 | 429 | 503) && c.served_by_cloudflare() {
        if let Some(words) = c.seen.any(&[M::JustAMoment, M::CheckingYourBrowser]) {
            let words = if words == M::JustAMoment { "Just a moment..." } else { "Checking your browser" };
            return wall(cf, format!("\"{words}\" on a {} from Cloudflare", c.status()));
        }
        if c.seen.any(&[M::Turnstile, M::TurnstileHost]).is_some() {
            return wall(cf, format!("a Turnstile challenge on a {} from Cloudflare", c.status()));
        }
    }
    if c.has(M::InWaitingRoom) || (waiting_room_cookie(c.answer) && c.little_text() && in_line_words(c)) {
        return wall(Vendor::Queue, "Cloudflare's waiting room (the __cfwaitingroom cookie and its page)");
    }
    None
}

/// Cloudflare's 1xxx errors that refuse a visitor (banned, rate limited, denied by the site's
/// rules), not those that say the site is misconfigured.
fn blocking_error_code(after: &[u8]) -> Option<u16> {
    let digits = after.get(..4)?;
    let code: u16 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    matches!(code, 1005..=1012 | 1015 | 1020 | 1025).then_some(code)
}

fn akamai(c: &Clues<'_>) -> Option<Wall> {
    let ak = Vendor::Akamai;
    if c.has(M::AkamaiChallenge) && c.wall_shaped() {
        return wall(ak, "Akamai's challenge (/_sec/cp_challenge/)");
    }
    let reference = [M::Reference, M::ReferenceEncoded]
        .into_iter()
        .find(|m| c.seen.after(*m, c.body).is_some_and(is_akamai_reference));
    if reference.is_some() && (c.refused() || c.has(M::AccessDenied) || c.little_text()) {
        return wall(ak, "an Akamai reference (\"Reference #18.…\") on an Access Denied page");
    }
    if c.seen.any(&[M::Edgesuite, M::EdgesuiteEncoded]).is_some() && c.wall_shaped() {
        return wall(ak, "errors.edgesuite.net on an Access Denied page");
    }
    let ghost = c.answer.header("server").is_some_and(|s| contains_ignore_case(s, "akamaighost"));
    if ghost && c.status() == 403 && c.has(M::AccessDenied) && c.little_text() {
        return wall(ak, "Access Denied on a 403 from AkamaiGHost");
    }
    None
}

/// Whether `after` starts an Akamai reference: `18.2d351ab8.1557333295.a4e16ab`, dots possibly
/// written `&#46;`.
fn is_akamai_reference(after: &[u8]) -> bool {
    let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = &after[digits..];
    let dot = if rest.starts_with(b".") {
        1
    } else if rest.starts_with(b"&#46;") {
        5
    } else {
        return false;
    };
    digits > 0 && rest.get(dot).is_some_and(u8::is_ascii_hexdigit)
}

fn perimeterx(c: &Clues<'_>) -> Option<Wall> {
    let px = Vendor::PerimeterX;
    if let Some(host) = c.seen.any(&[M::PxCaptchaCdn, M::PxCaptchaCloud]) {
        return wall(px, format!("the CAPTCHA script from {}", Seen::text(host)));
    }
    let hold = c.seen.any(&[M::PressAndHold, M::PressAndHoldEncoded]).is_some();
    if c.has(M::PxCaptcha) && (c.wall_shaped() || hold) {
        return wall(px, if hold { "px-captcha and \"Press & Hold\"" } else { "the px-captcha block page" });
    }
    if c.has(M::PxAppId) && c.refused() && (hold || c.little_text()) {
        return wall(px, format!("_pxAppId on a {} with almost no text", c.status()));
    }
    None
}

/// DataDome, Imperva, Sucuri, Kasada, AWS WAF, Vercel.
fn others(c: &Clues<'_>) -> Option<Wall> {
    if c.has(M::CaptchaDelivery) && c.wall_shaped() {
        return wall(Vendor::DataDome, "DataDome's CAPTCHA (captcha-delivery.com)");
    }
    if c.has(M::IncapsulaIncident) {
        return wall(Vendor::Imperva, "\"Incapsula incident ID\" in the body");
    }
    if c.has(M::IncapsulaResource) && (c.refused() || c.has(M::IncidentId) || c.has(M::RequestUnsuccessful)) {
        return wall(Vendor::Imperva, "the _Incapsula_Resource block frame (\"Request unsuccessful\")");
    }
    if c.has(M::PardonOurInterruption) && c.wall_shaped() {
        return wall(Vendor::Imperva, "\"Pardon Our Interruption\" (Imperva's, once Distil's, bot page)");
    }
    if c.has(M::SucuriFirewall) && c.wall_shaped() {
        return wall(Vendor::Sucuri, "\"Sucuri WebSite Firewall\" block page");
    }
    if c.has(M::SucuriCloudproxy) && c.little_text() {
        return wall(Vendor::Sucuri, "Sucuri's JavaScript challenge (sucuri_cloudproxy_js)");
    }
    if c.has(M::Kpsdk) && c.refused() && c.little_text() {
        return wall(Vendor::Kasada, format!("Kasada's KPSDK challenge on a {}", c.status()));
    }
    if c.has(M::GokuProps) && c.wall_shaped() {
        return wall(Vendor::AwsWaf, "AWS WAF's challenge page (gokuProps)");
    }
    if c.has(M::AwsWaf) && c.refused() && c.little_text() {
        return wall(Vendor::AwsWaf, format!("an awswaf.com script on a {} with almost no text", c.status()));
    }
    if c.has(M::VercelCheckpoint) && c.wall_shaped() {
        return wall(Vendor::Vercel, "\"Vercel Security Checkpoint\"");
    }
    None
}

fn queue(c: &Clues<'_>) -> Option<Wall> {
    (c.has(M::QueueIt) && in_line_words(c) && c.little_text())
        .then(|| Wall { vendor: Vendor::Queue, evidence: "Queue-it's queue page".into() })
}

fn in_line_words(c: &Clues<'_>) -> bool {
    c.seen.any(&[M::NowInLine, M::NumberInLine, M::WaitTime]).is_some()
}

fn waiting_room_cookie(answer: &Answer<'_>) -> bool {
    answer.headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("set-cookie") && v.starts_with("__cfwaitingroom"))
}

/// Anyone's CAPTCHA standing in for the page: a widget and words asking for a human, on a
/// refusal or a page with almost no text, and no password field (a login form's CAPTCHA is
/// part of the page).
fn captcha(c: &Clues<'_>) -> Option<Wall> {
    const WIDGETS: &[M] = &[
        M::GRecaptcha,
        M::RecaptchaApi,
        M::HCaptcha,
        M::HCaptchaHost,
        M::Turnstile,
        M::TurnstileHost,
        M::FriendlyCaptcha,
        M::Arkose,
    ];
    const WORDS: &[M] = &[
        M::YouAreHuman,
        M::YoureHuman,
        M::YoureHumanCurly,
        M::AreYouHuman,
        M::YouAreAHuman,
        M::NotARobot,
        M::AreYouARobot,
        M::UnusualTraffic,
        M::HumanVerification,
    ];
    let widget = c.seen.any(WIDGETS)?;
    let words = c.seen.any(WORDS)?;
    if c.seen.any(&[M::Password, M::PasswordSingle]).is_some() || !c.wall_shaped() {
        return None;
    }
    wall(Vendor::Captcha, format!("a CAPTCHA ({}) asking \"{}\"", Seen::text(widget), Seen::text(words)))
}

/// `value` if it is one of `known` (ignoring case), so hostile header values never reach the
/// evidence.
fn known<'k>(value: &str, known: &[&'k str]) -> Option<&'k str> {
    known.iter().copied().find(|k| value.trim().eq_ignore_ascii_case(k))
}

fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    haystack.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

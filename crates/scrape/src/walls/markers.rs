//! The strings a wall's body may carry, found in one pass: an Aho-Corasick automaton over all
//! of them (ASCII case ignored), built once. What a marker means is for `rules` to say; many
//! are also found on normal pages and only count together with something else.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

macro_rules! markers {
    ($($name:ident = $text:literal,)*) => {
        /// A string looked for in the body.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum M { $($name,)* }

        /// Each marker's text, in the order of [`M`].
        const TEXTS: &[&str] = &[$($text,)*];
    };
}

markers! {
    // Cloudflare: the challenge page's options and tokens, its orchestrate script (the jsd
    // beacon on normal pages is `/cdn-cgi/challenge-platform/scripts/jsd/` or `.../h/b/scripts/jsd/`,
    // never `/orchestrate/`), the block page, the old interstitial.
    CfChlOpt = "_cf_chl_opt",
    CfChlToken = "__cf_chl_",
    CfChallengePlatform = "/cdn-cgi/challenge-platform/",
    Orchestrate = "/orchestrate/",
    CfErrorDetails = "cf-error-details",
    CfErrorCode = "cf-error-code\">",
    YouHaveBeenBlocked = "you have been blocked",
    AttentionRequired = "attention required! | cloudflare",
    JustAMoment = "just a moment...",
    CheckingYourBrowser = "checking your browser",
    InWaitingRoom = "\"inwaitingroom\":true",
    // Akamai: the Access Denied page's reference, plain and HTML-encoded as Akamai sends it.
    Reference = "reference #",
    ReferenceEncoded = "reference&#32;&#35;",
    Edgesuite = "errors.edgesuite.net",
    EdgesuiteEncoded = "errors&#46;edgesuite&#46;net",
    AccessDenied = "access denied",
    AkamaiChallenge = "/_sec/cp_challenge/",
    // PerimeterX / HUMAN: the block page's CAPTCHA (the normal page's sensor is
    // `client.perimeterx.net` and sets `window._pxAppId` too).
    PxCaptchaCdn = "captcha.px-cdn.net",
    PxCaptchaCloud = "captcha.px-cloud.net",
    PxCaptcha = "px-captcha",
    PressAndHold = "press & hold",
    PressAndHoldEncoded = "press &amp; hold",
    PxAppId = "_pxappid",
    // DataDome: the CAPTCHA and interstitial host (the normal page's tag is js.datadome.co).
    CaptchaDelivery = "captcha-delivery.com",
    // Imperva / Incapsula (the normal page carries an injected `/_Incapsula_Resource?SWJIYLWA=`
    // script), and Distil's "Pardon Our Interruption", now Imperva's.
    IncapsulaIncident = "incapsula incident id",
    IncapsulaResource = "_incapsula_resource",
    IncidentId = "incident_id=",
    RequestUnsuccessful = "request unsuccessful",
    PardonOurInterruption = "pardon our interruption",
    // Sucuri.
    SucuriFirewall = "sucuri website firewall",
    SucuriCloudproxy = "sucuri_cloudproxy_js",
    // Kasada's challenge script.
    Kpsdk = "kpsdk.",
    // AWS WAF's CAPTCHA and challenge pages.
    GokuProps = "gokuprops",
    AwsWaf = "awswaf.com",
    // Vercel's challenge page.
    VercelCheckpoint = "vercel security checkpoint",
    // Queue-it's queue page (the normal page's connector is on static.queue-it.net).
    QueueIt = "queue-it",
    NowInLine = "you are now in line",
    NumberInLine = "number in line",
    WaitTime = "estimated wait time",
    // CAPTCHA widgets, and the words asking for a human.
    GRecaptcha = "g-recaptcha",
    RecaptchaApi = "/recaptcha/api",
    HCaptcha = "h-captcha",
    HCaptchaHost = "hcaptcha.com",
    Turnstile = "cf-turnstile",
    TurnstileHost = "challenges.cloudflare.com/turnstile",
    FriendlyCaptcha = "frc-captcha",
    Arkose = "arkoselabs.com",
    YouAreHuman = "you are human",
    YoureHuman = "you're human",
    YoureHumanCurly = "you\u{2019}re human",
    AreYouHuman = "are you human",
    YouAreAHuman = "you are a human",
    NotARobot = "not a robot",
    AreYouARobot = "are you a robot",
    UnusualTraffic = "unusual traffic",
    HumanVerification = "human verification",
    // A password field: a login form, whose CAPTCHA is not a wall.
    Password = "type=\"password\"",
    PasswordSingle = "type='password'",
}

const COUNT: usize = TEXTS.len();
const _: () = assert!(COUNT <= 64, "the seen set is one u64");

static AUTOMATON: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostFirst)
        .kind(Some(AhoCorasickKind::DFA))
        .build(TEXTS)
        .expect("the markers are a handful of short literals")
});

/// What a page full of text must carry for any rule to call it a wall, as vendors write it
/// (case kept, so the search runs on SIMD): `rules` asks a refusal or little text of every other
/// marker. A normal page is let go after this one fast pass.
const TRIGGERS: &[&str] = &[
    "_cf_chl_",
    "/orchestrate/",
    "inWaitingRoom",
    "Reference #",
    "reference #",
    "Reference&#32;&#35;",
    ".px-cdn.net",
    ".px-cloud.net",
    "px-captcha",
    "Incapsula incident",
    "_Incapsula_Resource",
];

/// Leftmost-first, case kept: what lets the automaton hand the search to a SIMD (Teddy) scan.
static TRIGGER_AUTOMATON: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostFirst)
        .build(TRIGGERS)
        .expect("the triggers are a handful of short literals")
});

/// Whether `body` carries any of [`TRIGGERS`].
pub(super) fn triggered(body: &[u8]) -> bool {
    TRIGGER_AUTOMATON.is_match(body)
}

/// The markers a body carries, with where each was first found.
pub(super) struct Seen {
    bits: u64,
    first: [u32; COUNT],
}

impl Seen {
    /// Scans `body` once (the caller has cut it to `SCAN_BYTES`).
    pub(super) fn scan(body: &[u8]) -> Seen {
        let mut seen = Seen { bits: 0, first: [0; COUNT] };
        for found in AUTOMATON.find_iter(body) {
            let index = found.pattern().as_usize();
            if seen.bits & (1 << index) == 0 {
                seen.bits |= 1 << index;
                seen.first[index] = u32::try_from(found.start()).unwrap_or(u32::MAX);
            }
        }
        seen
    }

    /// Whether the body carries `marker`.
    pub(super) fn has(&self, marker: M) -> bool {
        self.bits & (1 << marker as usize) != 0
    }

    /// Whether the body carries any of `markers`; the first one it carries.
    pub(super) fn any(&self, markers: &[M]) -> Option<M> {
        markers.iter().copied().find(|m| self.has(*m))
    }

    /// The bytes right after the first `marker`, if the body carries it.
    pub(super) fn after<'b>(&self, marker: M, body: &'b [u8]) -> Option<&'b [u8]> {
        self.has(marker).then(|| {
            let start = (self.first[marker as usize] as usize).saturating_add(TEXTS[marker as usize].len());
            body.get(start..).unwrap_or_default()
        })
    }

    /// The text of `marker`, for evidence.
    pub(super) fn text(marker: M) -> &'static str {
        TEXTS[marker as usize]
    }
}

/// Whether an HTML body shows at most `limit` bytes of visible text (not counting white space,
/// markup, scripts, styles and comments). Stops as soon as it has seen more, so it costs
/// little on a real page; it runs only when a marker needs it.
pub(super) fn little_text(body: &[u8], limit: usize) -> bool {
    let mut shown = 0;
    let mut at = 0;
    while at < body.len() {
        let Some(open) = memchr::memchr(b'<', &body[at..]).map(|i| at + i) else {
            shown += visible(&body[at..], limit - shown);
            break;
        };
        shown += visible(&body[at..open], limit - shown);
        if shown > limit {
            return false;
        }
        let rest = &body[open..];
        at = if let Some(close) = raw_text_end(rest) {
            open + close
        } else if rest.starts_with(b"<!--") {
            open + memchr::memmem::find(rest, b"-->").map_or(rest.len(), |i| i + 3)
        } else {
            open + memchr::memchr(b'>', rest).map_or(rest.len(), |i| i + 1)
        };
    }
    shown <= limit
}

/// The bytes of `text` that are not white space, counted up to one past `budget`.
fn visible(text: &[u8], budget: usize) -> usize {
    let mut shown = 0;
    for byte in text {
        shown += usize::from(!byte.is_ascii_whitespace());
        if shown > budget {
            break;
        }
    }
    shown
}

/// Past the end of a `<script>` or `<style>` element that `rest` opens, if it opens one.
fn raw_text_end(rest: &[u8]) -> Option<usize> {
    let (closing, name_len): (&[u8], usize) = if starts_with_ignore_case(&rest[1..], b"script") {
        (b"</script", 7)
    } else if starts_with_ignore_case(&rest[1..], b"style") {
        (b"</style", 6)
    } else {
        return None;
    };
    if rest.get(name_len).is_some_and(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let end = find_ignore_case(rest, closing).unwrap_or(rest.len());
    Some(end.max(1))
}

fn starts_with_ignore_case(text: &[u8], prefix: &[u8]) -> bool {
    text.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

fn find_ignore_case(text: &[u8], needle: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memmem::find(&text[from..], b"</").map(|i| from + i) {
        if starts_with_ignore_case(&text[i..], needle) {
            return Some(i);
        }
        from = i + 2;
    }
    None
}

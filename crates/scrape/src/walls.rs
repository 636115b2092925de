//! Bot walls: answers that stand in for the page (a challenge, a CAPTCHA, a block page, a
//! waiting room), told apart from the page itself by what the answer carries.
//!
//! A wall is never the page's content: the check that meets one records no snapshot and no
//! change, and the watch's health says who put it up. The trap is the other way round: normal
//! pages behind these vendors carry their scripts and headers (Cloudflare's `cf-ray` and its
//! `/cdn-cgi/challenge-platform/.../jsd/` beacon), and those are not walls.

/// Who put up a wall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// Cloudflare's challenge ("Just a moment...") or block page.
    Cloudflare,
    /// Akamai's "Access Denied" with a "Reference #".
    Akamai,
    /// PerimeterX / HUMAN ("Press & Hold").
    PerimeterX,
    /// DataDome.
    DataDome,
    /// Imperva / Incapsula.
    Imperva,
    /// A queue or waiting room (Queue-it, Cloudflare's waiting room).
    Queue,
    /// A CAPTCHA page of anyone else.
    Captcha,
}

impl Vendor {
    /// The name used in health, events and the API (`cloudflare`, `akamai`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Vendor::Cloudflare => "cloudflare",
            Vendor::Akamai => "akamai",
            Vendor::PerimeterX => "perimeterx",
            Vendor::DataDome => "datadome",
            Vendor::Imperva => "imperva",
            Vendor::Queue => "queue",
            Vendor::Captcha => "captcha",
        }
    }

    /// The name in words, for pages and messages.
    pub fn label(self) -> &'static str {
        match self {
            Vendor::Cloudflare => "Cloudflare",
            Vendor::Akamai => "Akamai",
            Vendor::PerimeterX => "PerimeterX (HUMAN)",
            Vendor::DataDome => "DataDome",
            Vendor::Imperva => "Imperva (Incapsula)",
            Vendor::Queue => "a queue or waiting room",
            Vendor::Captcha => "a CAPTCHA",
        }
    }
}

/// A wall that answered instead of the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wall {
    /// Who put it up.
    pub vendor: Vendor,
    /// What gave it away, in words (`header cf-mitigated: challenge`, `_cf_chl_opt in the body`).
    pub evidence: String,
}

impl std::fmt::Display for Wall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "blocked by {} ({})", self.vendor.label(), self.evidence)
    }
}

/// An answer as the classifier sees it: its status, its headers (names in any case) and its
/// body (at most the first [`SCAN_BYTES`] are looked at).
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The HTTP status.
    pub status: u16,
    /// Header names and values.
    pub headers: &'a [(String, String)],
    /// The body.
    pub body: &'a [u8],
}

/// The most bytes of a body the classifier reads.
pub const SCAN_BYTES: usize = 512 * 1024;

impl Answer<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The wall `answer` is, if it is one.
pub fn detect(answer: &Answer<'_>) -> Option<Wall> {
    let wall = |vendor, evidence: &str| Some(Wall { vendor, evidence: evidence.to_owned() });
    if answer.header("cf-mitigated").is_some_and(|v| v.eq_ignore_ascii_case("challenge")) {
        return wall(Vendor::Cloudflare, "header cf-mitigated: challenge");
    }
    let body = &answer.body[..answer.body.len().min(SCAN_BYTES)];
    let has = |needle: &str| body.windows(needle.len()).any(|w| w == needle.as_bytes());
    if has("_cf_chl_opt") {
        return wall(Vendor::Cloudflare, "_cf_chl_opt in the body");
    }
    None
}

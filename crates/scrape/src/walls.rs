//! Bot walls: answers that stand in for the page (a challenge, a CAPTCHA, a block page, a
//! waiting room), told apart from the page itself by what the answer carries.
//!
//! A wall is never the page's content: the check that meets one records no snapshot and no
//! change, and the watch's health says who put it up. The trap is the other way round: normal
//! pages behind these vendors carry their scripts and headers (Cloudflare's `cf-ray` and its
//! `/cdn-cgi/challenge-platform/.../jsd/` beacon), and those are not walls.
//!
//! The rules come from public detectors (microlinkhq/is-antibot, crawl4ai's antibot detector)
//! made stricter: a marker that normal pages also carry counts only on an answer shaped like a
//! wall (a refusal, or a page with almost no text). Headers are read first. A page full of text
//! costs one fast pass for the few markers that count on any page; the others, and refusals,
//! get one scan of the body (its first [`SCAN_BYTES`]) for every marker together.
//! `tests/walls/` holds the fixture corpus, walls and normal pages with vendor beacons.

mod markers;
mod rules;
#[cfg(test)]
mod tests;

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
    /// AWS WAF's CAPTCHA or challenge.
    AwsWaf,
    /// Vercel's firewall challenge.
    Vercel,
    /// Sucuri's website firewall.
    Sucuri,
    /// Kasada.
    Kasada,
}

impl Vendor {
    /// Every vendor, in the order above.
    pub const ALL: [Vendor; 11] = [
        Vendor::Cloudflare,
        Vendor::Akamai,
        Vendor::PerimeterX,
        Vendor::DataDome,
        Vendor::Imperva,
        Vendor::Queue,
        Vendor::Captcha,
        Vendor::AwsWaf,
        Vendor::Vercel,
        Vendor::Sucuri,
        Vendor::Kasada,
    ];

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
            Vendor::AwsWaf => "aws_waf",
            Vendor::Vercel => "vercel",
            Vendor::Sucuri => "sucuri",
            Vendor::Kasada => "kasada",
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
            Vendor::AwsWaf => "AWS WAF",
            Vendor::Vercel => "Vercel",
            Vendor::Sucuri => "Sucuri",
            Vendor::Kasada => "Kasada",
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
        write!(f, "{} answered instead of the page ({})", self.vendor.label(), self.evidence)
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

/// The wall `answer` is, if it is one: the headers first, then one scan of the body.
pub fn detect(answer: &Answer<'_>) -> Option<Wall> {
    if let Some(wall) = rules::by_headers(answer) {
        return Some(wall);
    }
    let body = &answer.body[..answer.body.len().min(SCAN_BYTES)];
    rules::by_body(&rules::Clues::gather(answer, body)?)
}

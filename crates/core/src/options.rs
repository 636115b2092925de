//! What a watch extracts and what counts as a change worth an alert: stored as JSON on the
//! watch, validated (regexes compiled) by the crates that apply them.

use serde::{Deserialize, Serialize};

/// Per-watch extraction and noise settings. Every field is optional; the defaults extract the
/// whole text and alert on any change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WatchOptions {
    /// How the page is requested.
    pub fetch: FetchSpec,
    /// How the page becomes text.
    pub extract: ExtractOptions,
    /// Line rules applied to the extracted text, in the documented order.
    pub rules: TextRules,
    /// What change raises an alert.
    pub noise: NoiseRules,
    /// Named values read on every check (at most 10).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 10)]
    pub values: Vec<crate::values::ValueSpec>,
    /// When set, a change alerts only when these hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<crate::values::Conditions>,
    /// When set, a language model judges each change against an intent and may summarise it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai: Option<AiOptions>,
    /// When set, what the page is expected to do: change by a deadline, or keep its values
    /// meeting conditions; `expectation.missed` and `expectation.met` tell when it does not
    /// and when it does again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<crate::expect::Expect>,
}

impl WatchOptions {
    /// Whether a check keeps the page's text and values to judge conditions on (the watch's
    /// own conditions, or an expectation about its values).
    pub fn judges_values(&self) -> bool {
        self.conditions.is_some() || self.expect.as_ref().is_some_and(|e| e.values.is_some())
    }
}

/// What a language model does with a watch's changes: judge each against `intent` (only an
/// important change is delivered), and/or write a summary that rides the alert.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AiOptions {
    /// What matters, in plain words ("alert me when the price drops below 50 EUR"; at most
    /// 4,000 characters). A change that does not match it is recorded, not delivered.
    #[schema(max_length = 4000)]
    pub intent: Option<String>,
    /// Add a short summary of each change to its alert (`data.ai.summary`).
    pub summary: bool,
    /// When the model gives no verdict in time: `open` (the default) delivers the change
    /// without one; `hold` keeps it, recorded and undelivered, until it is sent by hand.
    pub on_error: AiOnError,
}

/// The most characters an intent may have.
pub const MAX_INTENT_CHARS: usize = 4000;

impl AiOptions {
    /// The intent, trimmed, when there is one.
    pub fn intent(&self) -> Option<&str> {
        self.intent.as_deref().map(str::trim).filter(|i| !i.is_empty())
    }

    /// Whether a model has anything to do for this watch.
    pub fn active(&self) -> bool {
        self.intent().is_some() || self.summary
    }
}

/// What happens to a change whose verdict does not come in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AiOnError {
    /// Deliver it without a verdict (fail open).
    #[default]
    Open,
    /// Keep it undelivered until someone sends it.
    Hold,
}

impl AiOnError {
    /// The name used in options and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            AiOnError::Open => "open",
            AiOnError::Hold => "hold",
        }
    }
}

/// How a page is requested.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FetchSpec {
    /// `GET` (default), `POST`, `PUT` or `PATCH` (any case).
    #[schema(pattern = "^([Gg][Ee][Tt]|[Pp][Oo][Ss][Tt]|[Pp][Uu][Tt]|[Pp][Aa][Tt][Cc][Hh])$")]
    pub method: Option<String>,
    /// Extra request headers.
    pub headers: std::collections::BTreeMap<String, String>,
    /// A request body (for `POST`, `PUT`, `PATCH`).
    pub body: Option<String>,
    /// Cookies sent with the request.
    pub cookies: std::collections::BTreeMap<String, String>,
    /// A `User-Agent` instead of driftwatch's own.
    pub user_agent: Option<String>,
    /// Request timeout in seconds (1-300), instead of the global one. With the browser it
    /// bounds the whole render: loading, waiting, steps and the screenshot.
    #[schema(minimum = 1, maximum = 300)]
    pub timeout_seconds: Option<u32>,
    /// What loads the page: `http` (the default), `browser` (Chromium runs its scripts) or
    /// `auto` (HTTP first, the browser when HTTP gives an empty shell).
    pub engine: Engine,
    /// With the browser: what to wait for once the page has loaded. `"load"`,
    /// `"network_idle"`, a delay in milliseconds (`1500`), or a CSS selector to appear. When
    /// unset: with a selector, until the selected element has text or the network is idle;
    /// without one, `load`.
    pub wait: Option<Wait>,
    /// With the browser: actions run in order before the text is read (at most 20).
    #[schema(max_items = 20)]
    pub steps: Vec<Step>,
    /// With the browser: keep a screenshot with each snapshot.
    pub screenshot: ScreenshotMode,
    /// The proxy the page is fetched through, HTTP and browser alike: a URL (`http://`,
    /// `https://`, `socks5://`, `socks5h://`, credentials allowed), the name of one of the
    /// account's proxies, or `"none"` (directly, even when the operator set a default proxy).
    /// Unset: the operator's `DRIFTWATCH_OUTBOUND_PROXY`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// Keep the site's session (cookies, and the browser's local storage) from one check to
    /// the next, and run the login steps only when it is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionSpec>,
    /// What to try when a bot wall blocks a check: the browser, then a proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when_blocked: Option<WhenBlocked>,
}

/// The proxy value that means "no proxy, not even the operator's".
pub const NO_PROXY: &str = "none";

/// A watch's kept session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SessionSpec {
    /// Keep the cookies (and, in the browser, local storage) after a good check, sealed, and
    /// start the next check from them.
    pub keep: bool,
    /// With the browser: a CSS selector present only when signed in. When it matches after
    /// the page loads with the kept session, the steps (the login) are skipped; when it does
    /// not, the steps run, and it must match after them or the health is `login_required`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_in: Option<String>,
}

/// What a check tries, in this order, when the page answers with a bot wall.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WhenBlocked {
    /// Render the page in the browser (when HTTP was blocked).
    pub browser: bool,
    /// Then go through this proxy (a URL or the name of one of the account's proxies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
}

/// What loads a watch's page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// A plain HTTP request; scripts do not run.
    #[default]
    Http,
    /// Chromium renders the page and runs its scripts.
    Browser,
    /// HTTP first; the browser when the HTTP page is an empty shell (the selector finds
    /// nothing, or scripts and almost no text). Remembered per watch, re-tried over HTTP daily.
    Auto,
}

impl Engine {
    /// The name used in options and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Http => "http",
            Engine::Browser => "browser",
            Engine::Auto => "auto",
        }
    }
}

/// What the browser waits for after the page's `load` event, as written: a delay in
/// milliseconds, or text (`load`, `network_idle`, or a CSS selector). See [`Wait::kind`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum Wait {
    /// Milliseconds to wait after `load` (at most 60000).
    Delay(u32),
    /// `load`, `network_idle`, or a CSS selector.
    Text(String),
}

/// A [`Wait`] as it is carried out.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitKind<'a> {
    /// The `load` event (what every render waits for anyway).
    Load,
    /// No network request for half a second after `load`.
    NetworkIdle,
    /// A fixed delay after `load`.
    Delay(std::time::Duration),
    /// An element matching this CSS selector exists.
    Selector(&'a str),
}

impl Wait {
    /// How the wait is carried out.
    pub fn kind(&self) -> WaitKind<'_> {
        match self {
            Wait::Delay(ms) => WaitKind::Delay(std::time::Duration::from_millis(u64::from(*ms))),
            Wait::Text(text) => match text.trim() {
                "" | "load" => WaitKind::Load,
                "network_idle" | "networkidle" => WaitKind::NetworkIdle,
                selector => WaitKind::Selector(selector),
            },
        }
    }
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wait::Delay(ms) => write!(f, "{ms}"),
            Wait::Text(text) => f.write_str(text),
        }
    }
}

/// One action in the page before its text is read. Each waits (within the render's timeout)
/// for its element to appear; a step that cannot be done fails the check, naming the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Click the element (a cookie banner's button, "load more", a tab).
    Click {
        /// CSS selector of the element.
        selector: String,
    },
    /// Type text into a field.
    Type {
        /// CSS selector of the field.
        selector: String,
        /// The text typed: as written, or `{"secret": "name"}` for one of the account's
        /// secrets (a password never sits in the options).
        text: StepText,
    },
    /// Press a key (`Enter`, `Escape`, `Tab`, `ArrowDown`, a letter...) in the focused element.
    Press {
        /// The key's name, as in `KeyboardEvent.key`.
        key: String,
    },
    /// Choose an option of a `<select>` by its value.
    Select {
        /// CSS selector of the `<select>`.
        selector: String,
        /// The option's value.
        value: String,
    },
    /// Scroll an element into view, or to the bottom of the page without a selector.
    Scroll {
        /// CSS selector of the element.
        #[serde(default)]
        selector: Option<String>,
    },
    /// Wait for an element to appear, or for some milliseconds.
    WaitFor {
        /// CSS selector of the element.
        #[serde(default)]
        selector: Option<String>,
        /// Milliseconds (at most 60000).
        #[serde(default)]
        #[schema(minimum = 0, maximum = 60000)]
        ms: Option<u32>,
    },
}

impl Step {
    /// The action's name (`click`, `type`...).
    pub fn action(&self) -> &'static str {
        match self {
            Step::Click { .. } => "click",
            Step::Type { .. } => "type",
            Step::Press { .. } => "press",
            Step::Select { .. } => "select",
            Step::Scroll { .. } => "scroll",
            Step::WaitFor { .. } => "wait_for",
        }
    }

    /// The CSS selector the step looks for, if any.
    pub fn selector(&self) -> Option<&str> {
        match self {
            Step::Click { selector } | Step::Type { selector, .. } | Step::Select { selector, .. } => Some(selector),
            Step::Scroll { selector } | Step::WaitFor { selector, .. } => selector.as_deref(),
            Step::Press { .. } => None,
        }
    }
}

/// What a `type` step types.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum StepText {
    /// This text.
    Text(String),
    /// The value of one of the account's named secrets, opened only to type it.
    Secret {
        /// The secret's name.
        secret: String,
    },
}

impl StepText {
    /// The text, when it is written out.
    pub fn plain(&self) -> Option<&str> {
        match self {
            StepText::Text(text) => Some(text),
            StepText::Secret { .. } => None,
        }
    }

    /// The secret's name, when it names one.
    pub fn secret(&self) -> Option<&str> {
        match self {
            StepText::Secret { secret } => Some(secret),
            StepText::Text(_) => None,
        }
    }
}

impl From<&str> for StepText {
    fn from(text: &str) -> StepText {
        StepText::Text(text.to_owned())
    }
}

/// The most steps a watch may have.
pub const MAX_STEPS: usize = 20;

/// Which screenshot a browser check keeps with its snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScreenshotMode {
    /// None.
    #[default]
    Off,
    /// What a 1280x900 window shows.
    Viewport,
    /// The whole page, cut at a height cap.
    FullPage,
}

/// How the page becomes text (the CSS `selector` lives on the watch itself).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractOptions {
    /// CSS selectors of elements removed before the text is taken (ads, counters, footers).
    pub remove_selectors: Vec<String>,
    /// Keep link targets: `text (https://...)`.
    pub keep_links: bool,
    /// For JSON bodies: a JSON Pointer (RFC 6901) to the part that matters, e.g. `/data/price`.
    pub json_pointer: Option<String>,
}

/// Line rules, applied in this order: `ignore_lines`, `extract_regex`, `keep_lines_containing`,
/// `masks`, `sort_lines`, `unique_lines`. (Trimming and whitespace collapsing always happen
/// first, in extraction.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TextRules {
    /// Drop lines matching any of these regexes.
    pub ignore_lines: Vec<String>,
    /// Keep only the matches of this regex (its first capture group when it has one), one per line.
    pub extract_regex: Option<String>,
    /// Keep only lines containing one of these texts (case-insensitive).
    pub keep_lines_containing: Vec<String>,
    /// Replace volatile tokens: presets `dates`, `times`, `numbers`, `uuids`, `hex_ids`, or any regex.
    pub masks: Vec<String>,
    /// Sort the lines (for lists whose order shuffles).
    pub sort_lines: bool,
    /// Drop repeated lines, keeping the first.
    pub unique_lines: bool,
}

/// When a change is worth an alert.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NoiseRules {
    /// Alert only when the new text contains one of these (`/.../` for a regex, else text, case-insensitive).
    pub trigger_text: Vec<String>,
    /// No alert while the new text contains one of these (same syntax).
    pub block_text: Vec<String>,
    /// Alert only when lines were added.
    pub only_added: bool,
    /// Alert only when lines were removed.
    pub only_removed: bool,
    /// At least this many changed lines (added + removed).
    pub min_changed_lines: Option<u32>,
    /// At least this share of words changed, in percent (0-100).
    #[schema(minimum = 0, maximum = 100)]
    pub min_change_percent: Option<f64>,
    /// No alert when the page returns to one of its last N distinct states (flapping pages).
    pub known_states: Option<u32>,
    /// Fetch again this many seconds (1-60) after a change and alert only if it holds.
    #[schema(minimum = 1, maximum = 60)]
    pub confirm_after_seconds: Option<u32>,
    /// What is compared: `text` (the default), `text_or_visual` (the text, or the screenshot
    /// when the text is the same) or `visual` (only the screenshot). Visual needs a screenshot.
    pub compare: Compare,
    /// A visual change counts when at least this share of pixels differ, in percent (0-100;
    /// 1 when not set).
    #[schema(minimum = 0, maximum = 100)]
    pub min_visual_change_percent: Option<f64>,
    /// Rectangles of the screenshot ignored when comparing (ads, clocks), in page pixels.
    #[schema(max_items = 50)]
    pub ignore_regions: Vec<Region>,
}

/// What a check compares with the last snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// The extracted text.
    #[default]
    Text,
    /// The text; when it is the same, the screenshot.
    TextOrVisual,
    /// Only the screenshot: text changes are kept but raise no alert.
    Visual,
}

impl Compare {
    /// The screenshot is compared.
    pub fn visual(self) -> bool {
        self != Compare::Text
    }
}

/// A rectangle of a screenshot, in page pixels from the top left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// The default [`NoiseRules::min_visual_change_percent`].
pub const DEFAULT_MIN_VISUAL_CHANGE_PERCENT: f64 = 1.0;

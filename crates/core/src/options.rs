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
    /// Request timeout in seconds (1-300), instead of the global one.
    #[schema(minimum = 1, maximum = 300)]
    pub timeout_seconds: Option<u32>,
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
}

//! The portable form of a watch: what `driftwatch export` writes, the UI's export serves and
//! `driftwatch import` reads back.

use driftwatch_core::WatchOptions;
use serde::{Deserialize, Serialize};

/// A watch as exported and imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortableWatch {
    /// The page.
    pub url: String,
    /// Its name (the URL when absent).
    #[serde(default)]
    pub name: Option<String>,
    /// CSS selector.
    #[serde(default)]
    pub selector: Option<String>,
    /// Interval schedule.
    #[serde(default)]
    pub interval_seconds: Option<i64>,
    /// Cron schedule.
    #[serde(default)]
    pub cron: Option<String>,
    /// Time zone of the cron schedule.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// Extraction, rules and noise options.
    #[serde(default)]
    pub options: WatchOptions,
    /// Paused watches stay paused.
    #[serde(default)]
    pub paused: bool,
    /// Muted watches stay muted: checked and recorded, nobody told.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub muted: bool,
    /// Tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

impl PortableWatch {
    /// A watch of `url` with every default.
    pub fn at(url: &str) -> PortableWatch {
        PortableWatch {
            url: url.to_owned(),
            name: None,
            selector: None,
            interval_seconds: None,
            cron: None,
            time_zone: None,
            options: WatchOptions::default(),
            paused: false,
            muted: false,
            tags: Vec::new(),
        }
    }
}

/// The portable form of a stored watch.
pub fn from_watch(watch: &driftwatch_store::Watch) -> PortableWatch {
    PortableWatch {
        url: watch.url.clone(),
        name: Some(watch.name.clone()),
        selector: watch.selector.clone(),
        interval_seconds: watch.interval_seconds,
        cron: watch.cron.clone(),
        time_zone: watch.time_zone.clone(),
        options: watch.options(),
        paused: watch.state == driftwatch_core::WatchState::Paused.as_str(),
        muted: watch.muted,
        tags: watch.tag_list().into_iter().map(str::to_owned).collect(),
    }
}

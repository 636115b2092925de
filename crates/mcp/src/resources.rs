//! Resources: a watch, its latest diff and its snapshots, each at a stable URI, read through
//! the API as the tools are (so another account's watch is "not found" here too).

use rmcp::model::{Resource, ResourceTemplate};

/// The URI of every watch's resources start with this.
pub const WATCHES: &str = "driftwatch://watches";

/// What a resource URI names: the API path that answers it.
pub fn path_of(uri: &str) -> Option<String> {
    if uri == WATCHES {
        return Some("/watches?limit=500".to_owned());
    }
    let rest = uri.strip_prefix(WATCHES)?.strip_prefix('/')?;
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let valid_id = !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !valid_id {
        return None;
    }
    match tail {
        "" => Some(format!("/watches/{id}")),
        "diff/latest" => Some(format!("/watches/{id}/diff")),
        "snapshots" => Some(format!("/watches/{id}/snapshots")),
        _ => None,
    }
}

/// For a watch's `diff/latest`, the watch's own API path: that diff is not found until the
/// watch's second snapshot, but the resource is there as soon as the watch is.
pub fn watch_of_diff(uri: &str) -> Option<String> {
    path_of(uri)?.strip_suffix("/diff").map(str::to_owned)
}

/// What a watch's `diff/latest` reads before its first change.
pub fn no_change_yet() -> serde_json::Value {
    serde_json::json!({
        "from": null,
        "to": null,
        "change": null,
        "detail": "no change yet: a diff needs two snapshots of this watch, and it has fewer",
    })
}

/// The resources listed for a watch.
pub fn of_watch(id: &str, name: &str, url: &str) -> Vec<Resource> {
    let title = if name.is_empty() { url } else { name };
    vec![
        Resource::new(format!("{WATCHES}/{id}"), format!("watch {title}"))
            .with_description(format!("The watch of {url}: settings, health, last check"))
            .with_mime_type("application/json"),
        Resource::new(format!("{WATCHES}/{id}/diff/latest"), format!("latest diff of {title}"))
            .with_description("What changed between its latest two snapshots, unified and per word")
            .with_mime_type("application/json"),
    ]
}

/// The URI templates, for any watch id.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(WATCHES, "all watches").with_mime_type("application/json"),
        ResourceTemplate::new(format!("{WATCHES}/{{id}}"), "watch").with_mime_type("application/json"),
        ResourceTemplate::new(format!("{WATCHES}/{{id}}/diff/latest"), "latest diff")
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{WATCHES}/{{id}}/snapshots"), "snapshots").with_mime_type("application/json"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_api_paths_and_nothing_else() {
        assert_eq!(path_of("driftwatch://watches/wat_1").as_deref(), Some("/watches/wat_1"));
        assert_eq!(path_of("driftwatch://watches/wat_1/diff/latest").as_deref(), Some("/watches/wat_1/diff"));
        assert_eq!(path_of("driftwatch://watches/wat_1/snapshots").as_deref(), Some("/watches/wat_1/snapshots"));
        assert_eq!(path_of("driftwatch://watches").as_deref(), Some("/watches?limit=500"), "all of them");
        assert_eq!(watch_of_diff("driftwatch://watches/wat_1/diff/latest").as_deref(), Some("/watches/wat_1"));
        assert_eq!(watch_of_diff("driftwatch://watches/wat_1"), None, "only a diff");
        for bad in [
            "driftwatch://watches/",
            "driftwatch://watches/../tokens",
            "driftwatch://watches/wat_1?x=1",
            "driftwatch://watches/wat_1/runs",
            "https://watches/wat_1",
        ] {
            assert_eq!(path_of(bad), None, "{bad}");
        }
    }
}

//! Prompts that help a model set up a good watch: choosing what to watch on a page, and
//! quieting a watch that alerts on noise. Each walks the model through the tools.

use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::{Map, Value};

/// The prompts listed.
pub fn list() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "set_up_watch",
            Some("Set up a watch for a page: choose the part that matters and when it should alert"),
            Some(vec![
                PromptArgument::new("url").with_description("The page to watch").with_required(true),
                PromptArgument::new("goal")
                    .with_description("What the user cares about (a price below 50, a new job posting, ...)")
                    .with_required(false),
            ]),
        ),
        Prompt::new(
            "quiet_noisy_watch",
            Some("Look at a watch's recent changes and propose rules that keep the noise out"),
            Some(vec![PromptArgument::new("watch_id").with_description("The watch (wat_...)").with_required(true)]),
        ),
    ]
}

/// The prompt `name` with `arguments`; the error says what is missing.
pub fn get(name: &str, arguments: &Map<String, Value>) -> Result<GetPromptResult, String> {
    let argument = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let text = match name {
        "set_up_watch" => {
            let url = argument("url").ok_or("`url` is required")?;
            let goal = argument("goal").map(|g| format!(" The user's goal: {g}.")).unwrap_or_default();
            format!(
                "Set up a driftwatch watch for {url}.{goal}\n\
                 1. Create it with create_watch (url, a name, and an idempotency_key), without a selector \
                 first, then run check_now and read the page's text with list_snapshots and get_diff: \
                 that is what the watch compares.\n\
                 2. Narrow it to the part that matters with update_watch: a CSS `selector` (an id or a class \
                 around the content), and `options.rules` to drop lines that change on every visit \
                 (dates, counters, ads) with `ignore_lines` or `masks`.\n\
                 3. If the goal is a price or stock level, add `options.values` (for shops, \
                 {{\"name\": \"price\", \"type\": \"money\", \"structured\": \"price\"}} reads the page's \
                 structured data) and `options.conditions`, for example \
                 {{\"preset\": \"price_below\", \"amount\": 50}} or {{\"preset\": \"back_in_stock\"}}, so \
                 only the changes that matter alert.\n\
                 4. Run check_now again and confirm the outcome and note say what you expect. Refusals name \
                 the field at fault: fix that field and retry."
            )
        }
        "quiet_noisy_watch" => {
            let id = argument("watch_id").ok_or("`watch_id` is required")?;
            format!(
                "The watch {id} alerts too often. Read its settings with get_watch and its recent changes \
                 with list_snapshots and get_diff (between consecutive snapshots). Find lines that change \
                 without meaning (timestamps, view counts, rotating teasers, session tokens) and propose \
                 `options.rules` (`ignore_lines`, `masks` such as `dates` or `numbers`) or noise rules \
                 (`options.noise`: `min_changed_lines`, `only_added`, `known_states`). Show the user the \
                 rules and which recent changes they would have kept quiet before applying them with \
                 update_watch."
            )
        }
        other => return Err(format!("there is no prompt `{other}`")),
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_need_their_arguments() {
        assert_eq!(list().len(), 2);
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let made = get("set_up_watch", &args(serde_json::json!({"url": "https://x.example/", "goal": "under 50"})))
            .expect("made");
        assert_eq!(made.messages.len(), 1);
        assert_eq!(get("set_up_watch", &Map::new()).expect_err("no url"), "`url` is required");
        assert!(get("nope", &Map::new()).is_err());
    }
}

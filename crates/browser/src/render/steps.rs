//! The watch's steps in the page: each waits for its element, then clicks, types, presses,
//! selects, scrolls or waits.

use std::collections::BTreeMap;
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::InsertTextParams;
use driftwatch_core::{Step, StepText};
use tokio::time::Instant;

use super::{POLL, RenderError, eval_in, js_str, wait_for_selector};

/// Runs the watch's steps in order; the first that fails fails the render.
pub(super) async fn run_steps(
    page: &Page,
    steps: &[Step],
    secrets: &BTreeMap<String, String>,
    give_up: Instant,
) -> Result<(), RenderError> {
    for (i, step) in steps.iter().enumerate() {
        run_step(page, step, secrets, give_up).await.map_err(|reason| RenderError::Step {
            number: i + 1,
            action: step.action(),
            target: step.selector().map(|s| format!(" {s}")).unwrap_or_default(),
            reason,
        })?;
    }
    Ok(())
}

/// Does one step: waits for its element, then acts.
async fn run_step(
    page: &Page,
    step: &Step,
    secrets: &BTreeMap<String, String>,
    give_up: Instant,
) -> Result<(), String> {
    if let Some(selector) = step.selector() {
        wait_for_selector(page, selector, give_up).await?;
    }
    match step {
        Step::Click { selector } => {
            let js = format!(
                "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center'}}); e.click(); return true; }})()",
                js_str(selector)
            );
            eval_in(page, &js).await?;
            settle(page).await
        }
        Step::Type { selector, text } => {
            let js = format!(
                "(() => {{ const e = document.querySelector({}); e.focus(); if ('select' in e) e.select(); return document.activeElement === e; }})()",
                js_str(selector)
            );
            if eval_in(page, &js).await? != serde_json::Value::Bool(true) {
                return Err("the element cannot take text".into());
            }
            // A secret is opened only to be typed; its name is all an error says.
            let text = match text {
                StepText::Text(text) => text,
                StepText::Secret { secret } => {
                    secrets.get(secret).ok_or_else(|| format!("the account has no secret named {secret:?}"))?
                }
            };
            page.execute(InsertTextParams::new(text.to_owned())).await.map_err(|e| e.to_string())?;
            Ok(())
        }
        Step::Press { key } => {
            if chromiumoxide::keys::get_key_definition(key).is_none() {
                return Err(format!("unknown key {key:?}"));
            }
            let focused = match page.find_element(":focus").await {
                Ok(element) => element,
                Err(_) => page.find_element("body").await.map_err(|e| e.to_string())?,
            };
            focused.press_key(key).await.map_err(|e| e.to_string())?;
            settle(page).await
        }
        Step::Select { selector, value } => {
            let js = format!(
                "(() => {{ const e = document.querySelector({}); const v = {}; \
                 if (!e.options || ![...e.options].some(o => o.value === v)) return false; \
                 e.value = v; e.dispatchEvent(new Event('input', {{bubbles: true}})); \
                 e.dispatchEvent(new Event('change', {{bubbles: true}})); return true; }})()",
                js_str(selector),
                js_str(value)
            );
            if eval_in(page, &js).await? != serde_json::Value::Bool(true) {
                return Err(format!("no option with the value {value:?}"));
            }
            Ok(())
        }
        Step::Scroll { selector: Some(selector) } => {
            let js = format!("document.querySelector({}).scrollIntoView({{block: 'center'}})", js_str(selector));
            eval_in(page, &js).await.map(drop)
        }
        Step::Scroll { selector: None } => {
            eval_in(page, "window.scrollTo(0, document.scrollingElement.scrollHeight)").await.map(drop)
        }
        Step::WaitFor { selector: Some(_), .. } => Ok(()),
        Step::WaitFor { selector: None, ms } => {
            tokio::time::sleep(Duration::from_millis(u64::from(ms.unwrap_or(0).min(60_000)))).await;
            Ok(())
        }
    }
}

/// After a click or a key: lets a navigation it started finish loading.
async fn settle(page: &Page) -> Result<(), String> {
    // A navigation starts on the next task; give it that turn, then wait for the document.
    tokio::time::sleep(POLL).await;
    loop {
        match eval_in(page, "document.readyState").await {
            Ok(state) if state == "complete" => return Ok(()),
            // Between two documents there is no context to evaluate in: look again.
            Ok(_) | Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

//! A watch's browser settings: the engine is available, waits and steps are well formed and only
//! asked of the browser, visual comparison has a screenshot to compare.

use driftwatch_core::{Engine, FetchSpec, MAX_STEPS, NoiseRules, ScreenshotMode, Step, Wait, WaitKind, WatchOptions};

use crate::{FieldError, Limits};

/// Checks the browser's settings: the engine is available, waits and steps are well formed and
/// only asked of the browser, visual comparison has a screenshot to compare.
pub(super) fn valid_browser_options(options: &WatchOptions, limits: &Limits) -> Result<(), FieldError> {
    let fetch = &options.fetch;
    valid_engine(fetch, limits)?;
    valid_wait(fetch.wait.as_ref())?;
    valid_steps(&fetch.steps)?;
    if let Some(selector) = fetch.session.as_ref().and_then(|s| s.logged_in.as_deref()) {
        valid_css("options.fetch.session.logged_in".into(), selector)?;
    }
    valid_screenshot_noise(&options.noise, fetch.screenshot)
}

/// A CSS selector for the browser: not blank, and one the scraper can parse.
fn valid_css(field: String, selector: &str) -> Result<(), FieldError> {
    if selector.trim().is_empty() {
        return Err(FieldError::new(field, "a CSS selector is needed"));
    }
    driftwatch_scrape::validate_selector(selector).map_err(|e| FieldError::new(field, e.to_string()))
}

/// The engine is available, browser-only settings are not asked of plain HTTP, and the browser
/// is not asked for another method or a body.
fn valid_engine(fetch: &FetchSpec, limits: &Limits) -> Result<(), FieldError> {
    if fetch.engine == Engine::Browser && !limits.browser_available {
        return Err(FieldError::new(
            "options.fetch.engine",
            "no browser on this server: install Chromium (Debian: apt-get install chromium), or set \
             DRIFTWATCH_CHROMIUM or DRIFTWATCH_BROWSER_WS",
        ));
    }
    let renders = fetch.engine != Engine::Http;
    if !renders {
        let needs = if !fetch.steps.is_empty() {
            Some("options.fetch.steps")
        } else if fetch.wait.is_some() {
            Some("options.fetch.wait")
        } else if fetch.screenshot != ScreenshotMode::Off {
            Some("options.fetch.screenshot")
        } else {
            None
        };
        if let Some(field) = needs {
            return Err(FieldError::new(field, "needs the browser: set options.fetch.engine to browser or auto"));
        }
    }
    if fetch.engine == Engine::Browser
        && (fetch.body.is_some() || fetch.method.as_deref().is_some_and(|m| !m.eq_ignore_ascii_case("GET")))
    {
        return Err(FieldError::new("options.fetch.method", "the browser loads pages with GET and no body"));
    }
    Ok(())
}

/// The wait after loading: a delay of at most a minute, or a valid selector.
fn valid_wait(wait: Option<&Wait>) -> Result<(), FieldError> {
    match wait {
        Some(Wait::Delay(ms)) if *ms > 60_000 => {
            return Err(FieldError::new("options.fetch.wait", "at most 60000 milliseconds"));
        }
        Some(wait) => {
            if let WaitKind::Selector(css) = wait.kind() {
                valid_css("options.fetch.wait".into(), css)?;
            }
        }
        None => {}
    }
    Ok(())
}

/// The browser steps: not too many, each with valid selectors, text, key or wait.
fn valid_steps(steps: &[Step]) -> Result<(), FieldError> {
    if steps.len() > MAX_STEPS {
        return Err(FieldError::new("options.fetch.steps", format!("at most {MAX_STEPS} steps")));
    }
    for (i, step) in steps.iter().enumerate() {
        let field = |name: &str| format!("options.fetch.steps[{i}].{name}");
        match step {
            Step::Click { selector: css } | Step::Select { selector: css, .. } => valid_css(field("selector"), css)?,
            Step::Type { selector: css, text } => {
                valid_css(field("selector"), css)?;
                match text {
                    driftwatch_core::StepText::Text(text) if text.chars().count() > 1000 => {
                        return Err(FieldError::new(field("text"), "at most 1000 characters"));
                    }
                    driftwatch_core::StepText::Secret { secret } if !crate::secret_name_ok(secret) => {
                        return Err(FieldError::new(field("text.secret"), crate::SECRET_NAME_RULE));
                    }
                    _ => {}
                }
            }
            Step::Press { key } => {
                if key.trim().is_empty() || key.chars().count() > 32 {
                    return Err(FieldError::new(field("key"), "a key name such as Enter, Escape or a"));
                }
            }
            Step::Scroll { selector: css } => {
                if let Some(css) = css {
                    valid_css(field("selector"), css)?;
                }
            }
            Step::WaitFor { selector: css, ms } => match (css, ms) {
                (Some(css), None) => valid_css(field("selector"), css)?,
                (None, Some(ms)) if *ms <= 60_000 => {}
                (None, Some(_)) => return Err(FieldError::new(field("ms"), "at most 60000 milliseconds")),
                _ => return Err(FieldError::new(field("selector"), "wait_for takes a selector or ms, one of them")),
            },
        }
    }
    Ok(())
}

/// Visual comparison has a screenshot, its threshold is a percentage, and the ignored regions
/// are few and not empty.
fn valid_screenshot_noise(noise: &NoiseRules, screenshot: ScreenshotMode) -> Result<(), FieldError> {
    if noise.compare.visual() && screenshot == ScreenshotMode::Off {
        return Err(FieldError::new(
            "options.noise.compare",
            "comparing how the page looks needs a screenshot: set options.fetch.screenshot",
        ));
    }
    if noise.min_visual_change_percent.is_some_and(|p| !(0.0..=100.0).contains(&p)) {
        return Err(FieldError::new("options.noise.min_visual_change_percent", "must be between 0 and 100"));
    }
    if noise.ignore_regions.len() > 50 {
        return Err(FieldError::new("options.noise.ignore_regions", "at most 50 regions"));
    }
    for (i, region) in noise.ignore_regions.iter().enumerate() {
        if region.width == 0 || region.height == 0 {
            return Err(FieldError::new(
                format!("options.noise.ignore_regions[{i}]"),
                "width and height must be above 0",
            ));
        }
    }
    Ok(())
}

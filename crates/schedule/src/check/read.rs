//! Read: the watch's page fetched (over HTTP or in the browser) and its text extracted.

use std::time::Duration;

use driftwatch_core::{Engine, WatchOptions};
use std::collections::HashMap;

use driftwatch_html::scripts::Scripts;
use driftwatch_scrape::{Also, ExtractError, Fetched, PageRequest, Rules, extract_also};
use driftwatch_store::Watch;
use driftwatch_values::{Reader, Readings};
use tokio_util::sync::CancellationToken;

use driftwatch_scrape::walls;

use super::{PageRead, PageText, join_notes};
use crate::access::Access;
use crate::reader::PageReader;

impl PageReader {
    /// Reads the watch's page with its engine (conditionally over HTTP when `conditional`)
    /// through the watch's extraction options and line rules. `None` when `stop` was
    /// cancelled before the host's turn came (nothing was fetched).
    pub(super) async fn read(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        access: &Access,
        conditional: bool,
        stop: Option<&CancellationToken>,
    ) -> Option<PageRead> {
        let host = crate::fair::host_key(&watch.url);
        let turn = self.hosts().enter(&host);
        let _turn = match stop {
            Some(stop) => tokio::select! {
                biased;
                () = stop.cancelled() => return None,
                turn = turn => turn,
            },
            None => turn.await,
        };
        let read = match options.fetch.engine {
            Engine::Http => self.read_http(watch, options, access, conditional).await,
            Engine::Browser => self.read_browser(watch, options, access).await,
            Engine::Auto => self.read_auto(watch, options, access, conditional).await,
        };
        Some(self.past_the_wall(watch, options, access, read).await)
    }

    /// A read a bot wall blocked, tried again as the watch's `when_blocked` says: in the
    /// browser (when HTTP was blocked), then through its proxy. The first read that is not
    /// blocked is the answer, with a note saying how it got through; when every way is
    /// blocked, the last wall is.
    async fn past_the_wall(&self, watch: &Watch, options: &WatchOptions, access: &Access, read: PageRead) -> PageRead {
        let Some(when) = options.fetch.when_blocked.as_ref() else { return read };
        let PageText::Blocked(first) = &read.text else { return read };
        let first = format!("{} blocked {}", first.vendor.label(), read.engine_name());
        let mut read = read;
        if when.browser && read.engine == "http" && self.browsers().is_some_and(|b| b.available()) {
            read = self.read_browser(watch, options, access).await;
            if !matches!(read.text, PageText::Blocked(_)) {
                read.note = join_notes(Some(format!("when blocked: {first}; the browser got through")), read.note);
                return read;
            }
        }
        let Some(proxy) = access.blocked_proxy.as_ref() else { return read };
        let through = Access { proxy: Some(proxy.clone()), blocked_proxy: None, ..access.clone() };
        let browser = read.engine == "browser";
        let mut again = match browser {
            true => self.read_browser(watch, options, &through).await,
            false => self.read_http(watch, options, &through, false).await,
        };
        if !matches!(again.text, PageText::Blocked(_)) {
            let how = if browser { "the browser through the proxy" } else { "the proxy" };
            again.note = join_notes(Some(format!("when blocked: {first}; {how} got through")), again.note);
        }
        again
    }

    /// An `auto` watch: the browser while the watch is known to need it (HTTP is tried again
    /// once a day), else HTTP, and the browser when HTTP brings back an empty shell.
    async fn read_auto(&self, watch: &Watch, options: &WatchOptions, access: &Access, conditional: bool) -> PageRead {
        let now = self.now();
        let browsers = self.browsers().filter(|b| b.available());
        let needs_browser = watch.engine_in_use(options, now) == Engine::Browser;
        if needs_browser && browsers.is_some() {
            return self.read_browser(watch, options, access).await;
        }
        let mut http = self.read_http(watch, options, access, conditional && watch.browser_since.is_none()).await;
        if !http.shell {
            if watch.browser_since.is_some() && matches!(http.text, PageText::Text(..)) {
                http.browser_since = Some(None);
                http.note = Some("auto: HTTP reads this page again; the browser is no longer used".into());
            }
            return http;
        }
        if browsers.is_none() {
            http.note = Some(format!(
                "auto: the page looks like it needs a browser, but none is available ({})",
                self.browsers().map(|b| b.unavailable_reason()).unwrap_or_default()
            ));
            return http;
        }
        // What the switch means is said by the caller: a check keeps it, a preview saves nothing.
        let mut rendered = self.read_browser(watch, options, access).await;
        if matches!(rendered.text, PageText::Text(..)) {
            rendered.browser_since = Some(Some(now));
        }
        rendered
    }

    /// Renders the watch's page in the browser and reads its text.
    pub(super) async fn read_browser(&self, watch: &Watch, options: &WatchOptions, access: &Access) -> PageRead {
        let Some(browsers) = self.browsers() else {
            return PageRead::failed(
                "browser",
                None,
                "no browser is configured on this node (DRIFTWATCH_CHROMIUM or DRIFTWATCH_BROWSER_WS)".into(),
                "browser",
            );
        };
        let timeout = options
            .fetch
            .timeout_seconds
            .map_or(self.fetcher().options().timeout, |s| Duration::from_secs(u64::from(s.clamp(1, 300))));
        let request = driftwatch_browser::RenderRequest {
            url: &watch.url,
            spec: &options.fetch,
            selector: watch.selector.as_deref(),
            timeout,
            proxy: access.proxy.as_ref(),
            secrets: &access.secrets,
            session: access.session.as_ref(),
        };
        let started = std::time::Instant::now();
        let rendered = browsers.render(request).await;
        let result = rendered.as_ref().map_or_else(driftwatch_browser::RenderError::kind, |_| "ok");
        self.config().metrics.render_finished(result, started.elapsed());
        let rendered = match rendered {
            Ok(rendered) => rendered,
            Err(e) => {
                let failed_step = match &e {
                    driftwatch_browser::RenderError::Step { number, .. } => number.checked_sub(1),
                    _ => None,
                };
                // Through a proxy, a dead proxy is named rather than the page it hid.
                if let Some(proxy) = access.proxy.as_ref()
                    && let Err(dead) = driftwatch_net::probe_proxy(proxy).await
                {
                    return PageRead::failed("browser", None, dead.to_string(), "proxy");
                }
                let failed = PageRead::failed("browser", e.status().map(i32::from), e.to_string(), e.kind());
                return PageRead { failed_step, ..failed };
            }
        };
        let status = rendered.status.unwrap_or(200);
        // What the browser was shown may be a wall (a challenge it did not pass, a queue).
        let answer = walls::Answer { status, headers: &[], body: rendered.html.as_bytes() };
        if let Some(wall) = walls::detect(&answer) {
            return PageRead {
                text: PageText::Blocked(wall),
                note: rendered.note,
                ..PageRead::failed("browser", rendered.status.map(i32::from), String::new(), "blocked")
            };
        }
        let page = driftwatch_scrape::Page {
            status,
            content_type: Some("text/html; charset=utf-8".into()),
            body: rendered.html.into_bytes(),
            ..driftwatch_scrape::Page::default()
        };
        let bytes = page.body.len() as i64;
        let text = self.page_text(watch, options, page).await;
        PageRead {
            http_status: rendered.status.map(i32::from),
            bytes,
            validators: None,
            text: match text {
                Ok((text, _, readings)) => PageText::Text(text, readings),
                Err((error, kind)) if kind == "selector_missing" || kind == "empty" => {
                    let error = format!(
                        "{error} (if a script writes it later, set \"Wait for\" to the selector, or to network_idle)"
                    );
                    PageText::Failed { error, kind }
                }
                Err((error, kind)) => PageText::Failed { error, kind },
            },
            engine: "browser",
            screenshot: rendered.screenshot,
            browser_since: None,
            note: rendered.note,
            shell: false,
            failed_step: None,
            session: rendered.session,
            logged_in_by_steps: rendered.logged_in_by_steps,
        }
    }

    /// Fetches the watch's page over HTTP and reads its text.
    pub(super) async fn read_http(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        access: &Access,
        conditional: bool,
    ) -> PageRead {
        let keep = options.fetch.session.as_ref().is_some_and(|s| s.keep);
        let session_cookie =
            access.session.as_ref().filter(|_| keep).and_then(|s| cookies_for(s, &watch.url, self.now()));
        let request = PageRequest {
            spec: Some(&options.fetch),
            etag: watch.etag.as_deref().filter(|_| conditional),
            last_modified: watch.last_modified.as_deref().filter(|_| conditional),
            session_cookie: session_cookie.as_deref(),
        };
        match self.fetcher().fetch_with(&watch.url, &request, access.proxy.as_ref()).await {
            Ok(Fetched::NotModified) => PageRead {
                http_status: Some(304),
                text: PageText::NotModified,
                ..PageRead::failed("http", None, String::new(), "")
            },
            Ok(Fetched::Page(page)) => {
                let http_status = Some(i32::from(page.status));
                let logged_in = options.fetch.session.as_ref().filter(|_| keep).and_then(|s| s.logged_in.clone());
                if let Some(selector) = logged_in
                    && !signed_in(&page, &selector).await
                {
                    let error = format!(
                        "not signed in: {selector} matched nothing (the kept session is gone: import a new cookies.txt, \
                         or render the page in the browser with login steps)"
                    );
                    return PageRead::failed("http", http_status, error, "login_required");
                }
                let session = keep.then(|| kept_cookies(access.session.clone(), &page, &watch.url, self.now()));
                let (bytes, validators) =
                    (page.body.len() as i64, Some((page.etag.clone(), page.last_modified.clone())));
                let text = self.page_text(watch, options, page).await;
                let shell = match &text {
                    Err((_, kind)) => *kind == "selector_missing" || *kind == "empty",
                    Ok((_, thin, _)) => *thin,
                };
                PageRead {
                    http_status,
                    bytes,
                    validators,
                    text: match text {
                        Ok((text, _, readings)) => PageText::Text(text, readings),
                        Err((error, kind)) => PageText::Failed { error, kind },
                    },
                    engine: "http",
                    screenshot: None,
                    browser_since: None,
                    note: None,
                    shell: shell && options.fetch.engine == Engine::Auto,
                    failed_step: None,
                    session,
                    logged_in_by_steps: false,
                }
            }
            Err(driftwatch_scrape::FetchError::Blocked { wall, status }) => PageRead {
                text: PageText::Blocked(wall),
                ..PageRead::failed("http", Some(i32::from(status)), String::new(), "blocked")
            },
            Err(e) => PageRead::failed("http", e.status().map(i32::from), e.to_string(), e.kind()),
        }
    }

    /// The page's text, read off the async threads (parsing is CPU work on whatever a page
    /// sends: a pathological page slows its own check, not every request and check), and
    /// whether an `auto` watch's page is a script shell: scripts, and almost no text in the
    /// whole page (the selected element's text aside).
    async fn page_text(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        page: driftwatch_scrape::Page,
    ) -> Result<(String, bool, Option<Readings>), (String, &'static str)> {
        let (selector, options, cap) = (watch.selector.clone(), options.clone(), self.config().max_text_bytes);
        let auto = options.fetch.engine == Engine::Auto;
        tokio::task::spawn_blocking(move || {
            let scripted = auto && has_script(&page.body);
            // Values only for watches that have them: the others pay nothing.
            let reader = (!options.values.is_empty()).then(|| Reader::new(&options.values));
            // Selector values are read in the page text's own pass over the page.
            let mut also: Vec<&str> = match &reader {
                Some(Ok(reader)) => reader.text_selectors().collect(),
                _ => Vec::new(),
            };
            // Whether a script page is a shell is the whole page's question, not the selected
            // element's: its text rides the same pass.
            let whole_page = scripted && selector.is_some();
            if whole_page {
                also.push("body");
            }
            // Structured values' scripts ride the same pass.
            let scripts = matches!(&reader, Some(Ok(reader)) if reader.reads_structured_data());
            let mut extracted =
                extract_also(&page, selector.as_deref(), &options.extract, Also { selectors: &also, scripts });
            let letters = |text: &str| text.chars().filter(|c| c.is_alphanumeric()).count();
            let page_letters = match whole_page {
                true => {
                    also.pop();
                    extracted.also.pop().and_then(Result::ok).map_or(0, |text| letters(&text))
                }
                false => extracted.text.as_deref().map_or(0, letters),
            };
            let thin = scripted && page_letters < 100;
            let readings = reader.as_ref().map(|reader| match reader {
                Ok(reader) => read_values(reader, &page, &also, extracted.also, extracted.scripts, &extracted.body),
                Err(e) => Readings { failures: vec![("values".to_owned(), e.to_string())], ..Readings::default() },
            });
            let text = ruled_text(extracted.text, &options, cap)?;
            Ok((text, thin, readings))
        })
        .await
        .unwrap_or_else(|e| Err((format!("reading the page failed: {e}"), "extract")))
    }
}

/// The watch's values read from the page, with the text of each selector value (`also`) as the
/// page text's pass read it (`selected`, empty when the page is not HTML), and the structured
/// data's scripts when that pass collected them.
fn read_values(
    reader: &Reader,
    page: &driftwatch_scrape::Page,
    also: &[&str],
    selected: Vec<Result<String, ExtractError>>,
    scripts: Option<Scripts>,
    body: &str,
) -> Readings {
    let content_type = page.content_type.as_deref().unwrap_or("").to_ascii_lowercase();
    let selected: HashMap<&str, Result<String, ExtractError>> = also.iter().copied().zip(selected).collect();
    let text_of = |selector: &str| {
        Some(match selected.get(selector) {
            Some(Ok(text)) => Ok(text.clone()),
            Some(Err(ExtractError::SelectorMissing(_))) => Err("the selector matched nothing".to_owned()),
            Some(Err(e)) => Err(e.to_string()),
            // The extractor reads JSON and plain text pages whole, whatever a selector says.
            None => {
                Err(format!("a selector reads HTML, and this page is {content_type}: use json_pointer, jsonpath or jq"))
            }
        })
    };
    reader.read_with(body, &text_of, scripts)
}

/// The `Cookie` header the kept session sends to `url` at `now`.
fn cookies_for(session: &driftwatch_core::SessionState, url: &str, now: chrono::NaiveDateTime) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    session.cookie_header(url.host_str()?, url.path(), url.scheme() == "https", now.and_utc().timestamp())
}

/// Whether `selector` matches in the page (read off the async threads).
async fn signed_in(page: &driftwatch_scrape::Page, selector: &str) -> bool {
    let (page, selector) = (page.clone(), selector.to_owned());
    tokio::task::spawn_blocking(move || {
        let also = Also { selectors: &[], scripts: false };
        let read = extract_also(&page, Some(&selector), &driftwatch_core::ExtractOptions::default(), also);
        !matches!(read.text, Err(ExtractError::SelectorMissing(_)))
    })
    .await
    .unwrap_or(true)
}

/// The kept session after an HTTP answer: what it held, with the answer's `Set-Cookie`s.
fn kept_cookies(
    session: Option<driftwatch_core::SessionState>,
    page: &driftwatch_scrape::Page,
    url: &str,
    now: chrono::NaiveDateTime,
) -> driftwatch_core::SessionState {
    let mut session = session.unwrap_or_default();
    let at = page.final_url.as_deref().unwrap_or(url);
    if let Ok(at) = url::Url::parse(at)
        && let Some(host) = at.host_str()
    {
        for header in &page.set_cookies {
            session.set_cookie(host, at.path(), header, now.and_utc().timestamp());
        }
    }
    session
}

/// Whether an HTML body loads or holds scripts (`<script`, any case).
fn has_script(body: &[u8]) -> bool {
    body.windows(7).any(|w| w.eq_ignore_ascii_case(b"<script"))
}

/// A page's text as the watch reads it: extracted (`extracted`), through its line rules, cut at
/// `max_bytes` (at a line end, with a line saying so). The error says why there is none, and
/// its kind (`selector_missing`, `extract`, `rules`, `empty`).
fn ruled_text(
    extracted: Result<String, ExtractError>,
    options: &WatchOptions,
    max_bytes: usize,
) -> Result<String, (String, &'static str)> {
    let text = extracted.map_err(|e| {
        let kind = match e {
            ExtractError::SelectorMissing(_) => "selector_missing",
            // An element (or page) whose text its scripts write: empty in the HTML.
            ExtractError::Empty => "empty",
            _ => "extract",
        };
        (e.to_string(), kind)
    })?;
    let rules = Rules::new(&options.rules).map_err(|e| (e.to_string(), "rules"))?;
    let mut text = rules.apply(&text);
    if text.trim().is_empty() {
        return Err(("nothing is left after the line rules".to_owned(), "empty"));
    }
    if text.len() > max_bytes {
        let mut at = max_bytes;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let at = text[..at].rfind('\n').map_or(at, |nl| nl + 1);
        text.truncate(at);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[driftwatch: the text was cut at {max_bytes} bytes]\n"));
    }
    Ok(text)
}

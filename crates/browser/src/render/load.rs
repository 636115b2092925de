//! Loading the page and waiting for it: the requests nothing read needs refused, the
//! navigation and its status, then the watch's wait (load, a delay, a selector, network idle,
//! or by default the selector's text).

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{
    EnableParams as FetchEnableParams, EventRequestPaused, FailRequestParams, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, LoaderId, ResourceType};
use chromiumoxide::cdp::browser_protocol::page::{EventLifecycleEvent, NavigateParams};
use chromiumoxide::error::CdpError;
use chromiumoxide::listeners::EventStream;
use driftwatch_core::WaitKind;
use futures_util::StreamExt;
use tokio::time::Instant;
use url::Url;

use super::{POLL, RenderError, browser, eval, eval_in, js_str, wait_for_selector};

/// With no screenshot, images, fonts and media change nothing that is read (a selector's text,
/// the document, a step's element): the page's requests for them are refused as they are made,
/// each for one DevTools message instead of a download and a decode. The refusals stop with
/// the page.
pub(super) async fn skip_unseen(page: &Page) -> Result<(), RenderError> {
    let mut paused = page.event_listener::<EventRequestPaused>().await.map_err(browser)?;
    let patterns = [ResourceType::Image, ResourceType::Font, ResourceType::Media]
        .map(|kind| RequestPattern::builder().resource_type(kind).request_stage(RequestStage::Request).build())
        .to_vec();
    page.execute(FetchEnableParams::builder().patterns(patterns).build()).await.map_err(browser)?;
    let page = page.clone();
    tokio::spawn(async move {
        while let Some(request) = paused.next().await {
            let refuse = FailRequestParams::new(request.request_id.clone(), ErrorReason::BlockedByClient);
            if page.execute(refuse).await.is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Lifecycle events of the page, listened to before loading when the wait needs them.
type Lifecycle = Option<EventStream<EventLifecycleEvent>>;

/// Navigates to `url` and checks the main document's status; returns the status, the loader of
/// the navigation and, when `listen` (a wait for network idle), the page's lifecycle events.
pub(super) async fn load(
    page: &Page,
    url: &Url,
    listen: bool,
) -> Result<(Option<u16>, Option<LoaderId>, Lifecycle), RenderError> {
    let lifecycle = match listen {
        true => Some(page.event_listener::<EventLifecycleEvent>().await.map_err(browser)?),
        false => None,
    };
    let navigated = page.execute(NavigateParams::new(url.as_str())).await.map_err(|e| match e {
        CdpError::ChromeMessage(message) => load_error(&message),
        other => browser(other),
    })?;
    if let Some(text) = navigated.result.error_text.as_deref() {
        return Err(load_error(text));
    }
    let status = eval(page, STATUS_JS).await?.as_u64().and_then(|s| u16::try_from(s).ok()).filter(|s| *s > 0);
    if let Some(status) = status.filter(|s| *s >= 400) {
        return Err(RenderError::Status { status });
    }
    Ok((status, navigated.result.loader_id.clone(), lifecycle))
}

/// Waits as the watch asks after the page loaded; the lifecycle events are dropped after.
pub(super) async fn wait_after_load(
    page: &Page,
    wait: WaitKind<'_>,
    loader: Option<LoaderId>,
    mut lifecycle: Lifecycle,
    give_up: Instant,
) -> Result<(), RenderError> {
    match wait {
        WaitKind::Load => {}
        WaitKind::Delay(delay) => tokio::time::sleep(delay).await,
        WaitKind::Selector(selector) => wait_for_selector(page, selector, give_up)
            .await
            .map_err(|reason| RenderError::Wait(format!("waiting for {selector}: {reason}")))?,
        WaitKind::NetworkIdle => {
            if let Some(events) = lifecycle.as_mut() {
                network_idle(events, loader.as_ref()).await?;
            }
        }
    }
    drop(lifecycle);
    Ok(())
}

/// Waits for the navigation of `loader` to have had no request in flight for a while.
async fn network_idle(
    events: &mut EventStream<EventLifecycleEvent>,
    loader: Option<&LoaderId>,
) -> Result<(), RenderError> {
    loop {
        match events.next().await {
            Some(event) if event.name == "networkIdle" && loader.is_none_or(|l| *l == event.loader_id) => {
                return Ok(());
            }
            Some(_) => {}
            None => return Err(RenderError::Browser("the page closed while loading".into())),
        }
    }
}

/// The default wait of a watch with a selector: until an element it selects has text or the
/// network has gone idle, whichever comes first, giving up quietly at `give_up` (what is
/// there then is read, and a selector that still matches nothing says so).
pub(super) async fn wait_for_text_or_idle(
    page: &Page,
    selector: &str,
    loader: Option<LoaderId>,
    mut lifecycle: Lifecycle,
    give_up: Instant,
) -> Result<(), RenderError> {
    let idle = async {
        match lifecycle.as_mut() {
            Some(events) => network_idle(events, loader.as_ref()).await,
            None => std::future::pending().await,
        }
    };
    let filled = async {
        // A selector the browser does not take (`null`) leaves the network to decide.
        let probe = format!(
            "(() => {{ try {{ return Array.from(document.querySelectorAll({})).some(e => (e.innerText || e.textContent || '').trim() !== ''); }} catch (e) {{ return null; }} }})()",
            js_str(selector)
        );
        loop {
            // An error here is the page navigating away mid-probe (a script's redirect): look
            // again in the new document.
            match eval_in(page, &probe).await {
                Ok(serde_json::Value::Bool(true)) => return Ok::<(), RenderError>(()),
                Ok(serde_json::Value::Null) => return std::future::pending().await,
                _ => tokio::time::sleep(POLL).await,
            }
        }
    };
    tokio::select! {
        done = idle => done,
        done = filled => done,
        () = tokio::time::sleep_until(give_up) => Ok(()),
    }
}

/// The main document's status, as the Navigation Timing entry has it (0 when unknown).
const STATUS_JS: &str = "(() => { const e = performance.getEntriesByType('navigation')[0]; return e && e.responseStatus ? e.responseStatus : 0; })()";

/// A failed navigation: refused by the guard, or unreachable.
fn load_error(message: &str) -> RenderError {
    if message.contains("ERR_TUNNEL_CONNECTION_FAILED") || message.contains("ERR_PROXY") {
        RenderError::Load(format!("{message} (refused by the address guard, or unreachable)"))
    } else {
        RenderError::Load(message.to_owned())
    }
}

//! Compare: the page's text (and screenshot) against the watch's last snapshot.

use std::time::Duration;

use driftwatch_alert::{Noise, SnapshotPair, WatchRef, change_payload_rendered, is_alert, with_value_changes};
use driftwatch_core::{Compare, EventType, IdKind, RunOutcome, WatchOptions, hex, new_id};
use driftwatch_diff::DiffLimits;
use driftwatch_store::outbox::NewEvent;
use driftwatch_store::screenshots::{self, StoredScreenshot};
use driftwatch_store::{Event, Snapshot, StoreError, Watch, snapshots};
use sha2::{Digest, Sha256};

use super::{CheckFacts, Compared, PageText};
use crate::runner::Runner;

/// A change from `prev` to `current`, as its `change.detected` event tells it.
struct ChangeOf<'a> {
    watch: &'a Watch,
    change: &'a driftwatch_diff::TextChange,
    prev: &'a Snapshot,
    current: &'a Snapshot,
    /// What loaded the page: `http` or `browser`.
    engine: &'static str,
    visual_change_percent: Option<f64>,
    now: chrono::NaiveDateTime,
}

impl Runner {
    /// Compares the page's text (and, when the watch compares them, its screenshot) with the
    /// watch's last snapshot: a baseline, unchanged, or a change (with its new snapshot, and
    /// its event unless the noise rules or a confirming fetch keep it quiet); or the error
    /// that left no text to compare.
    pub(super) async fn compare(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        text: PageText,
        shot: Option<driftwatch_browser::Screenshot>,
        engine: &'static str,
    ) -> Result<Compared, StoreError> {
        let (text, readings) = match text {
            // 304: the page is as it was, so is its text; nothing to extract or compare.
            PageText::NotModified => return Ok(Compared::outcome(RunOutcome::Unchanged)),
            PageText::Failed { error, kind } => {
                return Ok(Compared {
                    error: Some(error),
                    error_kind: Some(kind),
                    ..Compared::outcome(RunOutcome::Failed)
                });
            }
            PageText::Text(text, readings) => (text, readings),
        };
        let kept_text = options.conditions.is_some().then(|| text.clone());
        let values = readings.as_ref().map(|r| r.values.clone()).unwrap_or_default();
        let mut previous_readings = None;
        let mut compared =
            self.compare_text(watch, options, text, &readings, &mut previous_readings, shot, engine).await?;
        let value_note = readings.as_ref().and_then(driftwatch_values::Readings::note);
        if let Some(note) = &value_note {
            compared.note = Some(match compared.note.take() {
                Some(before) => format!("{before}; {note}"),
                None => note.clone(),
            });
        }
        if readings.is_some() {
            compared.value_failure = Some(value_note);
        }
        if let Some(text) = kept_text {
            let (added, removed, change_size) = compared.lines.take().unwrap_or_default();
            let previous = previous_readings.as_deref().map(|r| serde_json::from_str(r).unwrap_or_default());
            compared.facts = Some(CheckFacts { text, values, previous, added, removed, change_size });
        }
        Ok(compared)
    }

    /// [`Runner::compare`] once the page's text was read: `previous_readings` is set to the
    /// values stored with the last snapshot.
    #[allow(clippy::too_many_arguments)]
    async fn compare_text(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        text: String,
        readings: &Option<driftwatch_values::Readings>,
        previous_readings: &mut Option<String>,
        shot: Option<driftwatch_browser::Screenshot>,
        engine: &'static str,
    ) -> Result<Compared, StoreError> {
        // The values are part of what the page says: a price only in the structured data
        // changes the snapshot as a changed line would.
        let stored_values = readings.as_ref().map(|r| serde_json::to_string(&r.values).unwrap_or_default());
        let hash = match &stored_values {
            Some(values) => hex(&Sha256::new()
                .chain_update(text.as_bytes())
                .chain_update(b"\0values\0")
                .chain_update(values.as_bytes())
                .finalize()),
            None => hex(&Sha256::digest(text.as_bytes())),
        };
        let watch_id = watch.id.clone();
        let previous = self.store().read(move |c| snapshots::latest_snapshot(c, &watch_id)).await?;
        *previous_readings = previous.as_ref().and_then(|p| p.readings.clone());
        let now = self.now();
        let shot = shot.map(|s| StoredScreenshot {
            hash: hex(&Sha256::digest(&s.bytes)),
            format: s.format.to_owned(),
            width: i32::try_from(s.width).unwrap_or(i32::MAX),
            height: i32::try_from(s.height).unwrap_or(i32::MAX),
            bytes: s.bytes,
            created_at: now,
        });
        let shot_hash = shot.as_ref().map(|s| s.hash.clone());
        let snapshot = |content: String, visual: Option<f64>| Snapshot {
            id: new_id(IdKind::Snapshot),
            watch_id: watch.id.clone(),
            content_hash: hash.clone(),
            content,
            created_at: now,
            screenshot_hash: shot_hash.clone(),
            visual_change_percent: visual,
            readings: stored_values.clone(),
            kept_quiet: None,
        };
        let visual = options.noise.compare.visual();
        let min_visual =
            options.noise.min_visual_change_percent.unwrap_or(driftwatch_core::DEFAULT_MIN_VISUAL_CHANGE_PERCENT);
        let prev = match previous {
            // First check, or the first since the watch's settings changed.
            _ if watch.rebaseline && previous.as_ref().is_none_or(|p| p.content_hash != hash) => None,
            None => None,
            Some(prev) if prev.content_hash == hash => {
                // The same text; the page may still look different.
                let Some(shot) = shot.filter(|_| visual) else { return Ok(Compared::outcome(RunOutcome::Unchanged)) };
                let Some(percent) = self.visual_change(&prev, &shot, options).await? else {
                    // The first screenshot of this text: kept as the reference, no alert.
                    return Ok(Compared {
                        snapshot: Some(snapshot(text, None)),
                        screenshot: Some(shot),
                        note: Some("first screenshot kept as the reference".into()),
                        ..Compared::outcome(RunOutcome::Baseline)
                    });
                };
                if percent < min_visual {
                    return Ok(Compared::outcome(RunOutcome::Unchanged));
                }
                let current = snapshot(text, Some(percent));
                let change = driftwatch_diff::diff_texts_within(
                    &prev.content,
                    &current.content,
                    &prev.id,
                    &current.id,
                    DiffLimits::PAYLOAD,
                );
                let event = self.change_event(ChangeOf {
                    watch,
                    change: &change,
                    prev: &prev,
                    current: &current,
                    engine,
                    visual_change_percent: Some(percent),
                    now,
                });
                return Ok(Compared {
                    event: Some(event),
                    note: Some(format!("the page looks different ({percent:.2}% of pixels)")),
                    snapshot: Some(current),
                    screenshot: Some(shot),
                    ..Compared::outcome(RunOutcome::Changed)
                });
            }
            Some(prev) => Some(prev),
        };
        let Some(prev) = prev else {
            return Ok(Compared {
                snapshot: Some(snapshot(text, None)),
                screenshot: shot,
                ..Compared::outcome(RunOutcome::Baseline)
            });
        };
        let percent = match shot.as_ref().filter(|_| visual) {
            Some(shot) => self.visual_change(&prev, shot, options).await?,
            None => None,
        };
        let current = snapshot(String::new(), percent);
        // Bounded in time and size (a payload goes to every endpoint), and off the async threads.
        let current_id = current.id.clone();
        let diffed = tokio::task::spawn_blocking(move || {
            let change =
                driftwatch_diff::diff_texts_within(&prev.content, &text, &prev.id, &current_id, DiffLimits::PAYLOAD);
            (change, prev, text)
        })
        .await;
        let Ok((change, prev, text)) = diffed else {
            return Ok(Compared {
                error: Some("comparing the text failed".into()),
                error_kind: Some("diff"),
                ..Compared::outcome(RunOutcome::Failed)
            });
        };
        let mut compared = Compared::outcome(RunOutcome::Changed);
        let quiet = match options.noise.compare {
            // Only the picture counts: a text change alone is kept, quietly.
            Compare::Visual => match percent {
                Some(p) if p >= min_visual => None,
                Some(p) => Some(format!("the page looks the same ({p:.2}% of pixels differ, under {min_visual}%)")),
                None => Some("no earlier screenshot to compare with".to_owned()),
            },
            _ => self.quiet(watch, options, &change, (&prev.content, &text), &hash).await?,
        };
        // A value that moved is a change worth telling even when no line did (a price only in
        // the structured data); the conditions, if any, decide after.
        let values_moved = stored_values.is_some() && stored_values != prev.readings;
        if ((is_alert(&change) || options.noise.compare == Compare::Visual) && quiet.is_none()) || values_moved {
            let mut event = self.change_event(ChangeOf {
                watch,
                change: &change,
                prev: &prev,
                current: &current,
                engine,
                visual_change_percent: percent,
                now,
            });
            if values_moved {
                // What moved, typed, for every watch with values (conditions or not).
                let before: driftwatch_values::Values =
                    prev.readings.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
                let after = readings.as_ref().map(|r| &r.values).cloned().unwrap_or_default();
                let moved = driftwatch_values::changes(&before, &after);
                event.event.payload = with_value_changes(std::mem::take(&mut event.event.payload), moved);
            }
            compared.event = Some(event);
        }
        // Kept quiet: said on the run and, for the timeline, on the snapshot.
        let kept_quiet = quiet.filter(|_| compared.event.is_none());
        compared.note = kept_quiet.as_ref().map(|why| format!("no alert: {why}"));
        if options.conditions.is_some() {
            compared.lines = Some(crate::backtest::changed_lines(&change));
        }
        compared.snapshot = Some(Snapshot { content: text, kept_quiet, ..current });
        compared.screenshot = shot;
        Ok(compared)
    }

    /// The `change.detected` event of a change from `prev` to `current`.
    fn change_event(&self, of: ChangeOf<'_>) -> NewEvent {
        let ChangeOf { watch, change, prev, current, engine, visual_change_percent, now } = of;
        let event_id = new_id(IdKind::Event);
        let link = |snapshot: &Snapshot| {
            snapshot
                .screenshot_hash
                .as_ref()
                .map(|_| format!("/api/v1/watches/{}/snapshots/{}/screenshot", watch.id, snapshot.id))
        };
        let render = (engine == "browser").then(|| driftwatch_alert::v1::Render {
            browser: true,
            screenshot: link(current),
            previous_screenshot: link(prev),
            visual_change_percent,
        });
        let payload = change_payload_rendered(
            &event_id,
            WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
            change,
            SnapshotPair { previous: &prev.id, current: &current.id },
            now.and_utc(),
            render,
        );
        let event = Event {
            id: event_id,
            account_id: watch.account_id.clone(),
            watch_id: Some(watch.id.clone()),
            endpoint_id: None,
            event_type: EventType::ChangeDetected.as_str().to_owned(),
            previous_snapshot_id: Some(prev.id.clone()),
            snapshot_id: Some(current.id.clone()),
            added: change.added as i32,
            removed: change.removed as i32,
            payload,
            created_at: now,
        };
        NewEvent { event }
    }

    /// How much `shot` differs from `prev`'s screenshot, in percent of the pixels compared
    /// (outside the watch's ignored regions); `None` when `prev` has no screenshot or it cannot
    /// be read.
    async fn visual_change(
        &self,
        prev: &Snapshot,
        shot: &StoredScreenshot,
        options: &WatchOptions,
    ) -> Result<Option<f64>, StoreError> {
        let Some(hash) = prev.screenshot_hash.clone() else { return Ok(None) };
        if hash == shot.hash {
            return Ok(Some(0.0));
        }
        let Some(before) = self.store().read(move |c| screenshots::by_hash(c, &hash)).await? else { return Ok(None) };
        let after = shot.bytes.clone();
        let ignore: Vec<driftwatch_visual::Rect> = options
            .noise
            .ignore_regions
            .iter()
            .map(|r| driftwatch_visual::Rect { x: r.x, y: r.y, width: r.width, height: r.height })
            .collect();
        // Decoding and comparing pictures is CPU work: off the async threads.
        let compared = tokio::task::spawn_blocking(move || {
            driftwatch_visual::compare(&before.bytes, &after, &ignore, driftwatch_visual::Tolerance::default())
        })
        .await;
        Ok(match compared {
            Ok(Ok(change)) => Some(change.changed_percent),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "comparing screenshots failed");
                None
            }
            Err(_) => None,
        })
    }

    /// Why a change should raise no alert, if it should not: the watch's noise rules say so
    /// (a return to one of the recent states is judged on `hash`, the new snapshot's), or a
    /// second fetch a little later does not show the same text.
    async fn quiet(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        change: &driftwatch_diff::TextChange,
        (before, after): (&str, &str),
        hash: &str,
    ) -> Result<Option<String>, StoreError> {
        let known = match options.noise.known_states.filter(|n| *n > 0) {
            Some(n) => {
                // The snapshot's own hash: with values it covers them too.
                let (watch_id, hash) = (watch.id.clone(), hash.to_owned());
                self.store().read(move |c| snapshots::is_recent_state(c, &watch_id, &hash, i64::from(n))).await?
            }
            None => false,
        };
        // Rules were validated when saved; should they no longer compile, alert.
        if let Ok(Err(quiet)) = Noise::new(&options.noise).map(|noise| noise.decide(change, before, after, known)) {
            return Ok(Some(quiet.to_string()));
        }
        if let Some(seconds) = options.noise.confirm_after_seconds.filter(|_| is_alert(change)) {
            // Ask again a little later: alert only if the page agrees.
            tokio::time::sleep(Duration::from_secs(u64::from(seconds.clamp(1, 60)))).await;
            let again = self.read(watch, options, false, None).await.map(|page| page.text);
            if !matches!(again, Some(PageText::Text(again, _)) if again == after) {
                return Ok(Some("a second fetch did not confirm the change".into()));
            }
        }
        Ok(None)
    }
}

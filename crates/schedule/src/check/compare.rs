//! Compare: the page's text (and screenshot) against the watch's last snapshot.
//!
//! In steps joined by a [`Comparison`]: [`Runner::hash_and_snapshot`] (the new hash, the
//! snapshot before) → [`Runner::unchanged_or_visual`] (a baseline, the same text, or a change
//! only the screenshot shows) → [`diff`] → [`Runner::alert_decision`] (noise rules, values,
//! the change event).

use std::ops::ControlFlow;
use std::time::Duration;

use chrono::NaiveDateTime;
use driftwatch_alert::{ChangeExtras, Noise, SnapshotPair, WatchRef, change_payload_with, is_alert};
use driftwatch_core::{Compare, EventType, IdKind, RunOutcome, WatchOptions, hex, new_id};
use driftwatch_diff::{DiffLimits, TextChange};
use driftwatch_store::screenshots::{self, StoredScreenshot};
use driftwatch_store::{Event, Snapshot, StoreError, Watch, snapshots};
use driftwatch_values::{Readings, ValueChange, Values};
use sha2::{Digest, Sha256};

use super::{CheckFacts, Compared, PageText};
use crate::access::Access;
use crate::runner::Runner;

/// One comparison of a page with the watch's last snapshot: what its steps share.
struct Comparison<'a> {
    watch: &'a Watch,
    options: &'a WatchOptions,
    /// The account's part of the read, for a confirming refetch.
    access: &'a Access,
    /// What loaded the page: `http` or `browser`.
    engine: &'static str,
    now: NaiveDateTime,
    /// The new snapshot's hash: of the text, and of the values when the watch has some.
    hash: String,
    /// The values read, typed (`None` for a watch without values).
    values: Option<&'a Values>,
    /// The same values as the snapshot stores them.
    stored_values: Option<String>,
    /// The page's screenshot, ready to store, until a step keeps it.
    shot: Option<StoredScreenshot>,
    /// Its hash, which the new snapshot refers to.
    shot_hash: Option<String>,
}

impl Comparison<'_> {
    /// Whether the watch compares screenshots.
    fn visual(&self) -> bool {
        self.options.noise.compare.visual()
    }

    /// Least share of changed pixels that makes the page look different, in percent.
    fn min_visual(&self) -> f64 {
        self.options.noise.min_visual_change_percent.unwrap_or(driftwatch_core::DEFAULT_MIN_VISUAL_CHANGE_PERCENT)
    }

    /// A new snapshot of the page holding `content`.
    fn snapshot(&self, content: String, visual_change_percent: Option<f64>) -> Snapshot {
        Snapshot {
            id: new_id(IdKind::Snapshot),
            watch_id: self.watch.id.clone(),
            content_hash: self.hash.clone(),
            content,
            created_at: self.now,
            screenshot_hash: self.shot_hash.clone(),
            visual_change_percent,
            readings: self.stored_values.clone(),
            kept_quiet: None,
        }
    }

    /// The values that moved since `prev` (none for a watch without values).
    fn moved_since(&self, prev: &Snapshot) -> Vec<ValueChange> {
        let Some(after) = self.values else { return Vec::new() };
        let before: Values = prev.readings.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
        driftwatch_values::changes(&before, after)
    }

    /// The `change.detected` event of `change` from `prev` to `current`, typed with the
    /// values that moved (`values`) inside.
    fn change_event(
        &self,
        change: &TextChange,
        (prev, current): (&Snapshot, &Snapshot),
        visual_change_percent: Option<f64>,
        values: Vec<ValueChange>,
    ) -> Event {
        let watch = self.watch;
        let event_id = new_id(IdKind::Event);
        let link = |snapshot: &Snapshot| {
            snapshot
                .screenshot_hash
                .as_ref()
                .map(|_| format!("/api/v1/watches/{}/snapshots/{}/screenshot", watch.id, snapshot.id))
        };
        let render = (self.engine == "browser").then(|| driftwatch_alert::v1::Render {
            browser: true,
            screenshot: link(current),
            previous_screenshot: link(prev),
            visual_change_percent,
        });
        let payload = change_payload_with(
            &event_id,
            WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
            change,
            SnapshotPair { previous: &prev.id, current: &current.id },
            self.now.and_utc(),
            ChangeExtras { render, values },
        );
        Event::about_watch(event_id, watch, EventType::ChangeDetected, payload, self.now).of_change(
            &prev.id,
            &current.id,
            (change.added, change.removed),
        )
    }
}

impl Runner {
    /// Compares the page's text (and, when the watch compares them, its screenshot) with the
    /// watch's last snapshot: a baseline, unchanged, or a change (with its new snapshot, and
    /// its event unless the noise rules or a confirming fetch keep it quiet); or the error
    /// that left no text to compare.
    pub(super) async fn compare(
        &self,
        (watch, options, access): (&Watch, &WatchOptions, &Access),
        text: PageText,
        shot: Option<driftwatch_browser::Screenshot>,
        engine: &'static str,
    ) -> Result<Compared, StoreError> {
        let (text, readings) = match text {
            // 304: the page is as it was, so is its text; nothing to extract or compare.
            PageText::NotModified => return Ok(Compared::outcome(RunOutcome::Unchanged)),
            // A wall is not the page: nothing is stored or compared, the health says who.
            PageText::Blocked(wall) => {
                return Ok(Compared {
                    error: Some(wall.to_string()),
                    error_kind: Some("blocked"),
                    blocked_by: Some(wall.vendor.as_str()),
                    ..Compared::outcome(RunOutcome::Blocked)
                });
            }
            PageText::Failed { error, kind } => {
                // A page read too early (or broken) is not a page whose text went away.
                let empty = matches!(kind, "empty" | "selector_missing") && watch.last_run_at.is_some();
                return Ok(Compared {
                    error: Some(error),
                    error_kind: Some(kind),
                    note: empty.then(|| "an empty read is a failed run, not a change: the last snapshot stays".into()),
                    ..Compared::outcome(RunOutcome::Failed)
                });
            }
            PageText::Text(text, readings) => (text, readings),
        };
        let kept_text = options.judges_values().then(|| text.clone());
        let values = readings.as_ref().map(|r| &r.values);
        let (comparison, previous) =
            self.hash_and_snapshot((watch, options, access, engine), &text, values, shot).await?;
        // Kept for the conditions only.
        let previous_values = kept_text.as_ref().and_then(|_| previous.as_ref()?.readings.clone());
        let mut compared = self.compare_text(comparison, text, previous).await?;
        let value_note = readings.as_ref().and_then(Readings::note);
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
            let previous = previous_values.as_deref().map(|r| serde_json::from_str(r).unwrap_or_default());
            let values = readings.map(|r| r.values).unwrap_or_default();
            compared.facts = Some(CheckFacts { text, values, previous, added, removed, change_size });
        }
        Ok(compared)
    }

    /// The first step: the new snapshot's hash (the values are part of what the page says: a
    /// price only in the structured data changes the snapshot as a changed line would), the
    /// screenshot ready to store, and the watch's last snapshot.
    async fn hash_and_snapshot<'a>(
        &self,
        (watch, options, access, engine): (&'a Watch, &'a WatchOptions, &'a Access, &'static str),
        text: &str,
        values: Option<&'a Values>,
        shot: Option<driftwatch_browser::Screenshot>,
    ) -> Result<(Comparison<'a>, Option<Snapshot>), StoreError> {
        let stored_values = values.map(|v| serde_json::to_string(v).unwrap_or_default());
        let hash = driftwatch_core::content_hash(text, stored_values.as_deref());
        let watch_id = watch.id.clone();
        let previous = self.store().read(move |c| snapshots::latest_snapshot(c, &watch_id)).await?;
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
        let comparison =
            Comparison { watch, options, access, engine, now, hash, values, stored_values, shot, shot_hash };
        Ok((comparison, previous))
    }

    /// [`Runner::compare`] once the text is hashed and the last snapshot read: the steps after
    /// the first.
    async fn compare_text(
        &self,
        mut cmp: Comparison<'_>,
        text: String,
        previous: Option<Snapshot>,
    ) -> Result<Compared, StoreError> {
        let (prev, text) = match self.unchanged_or_visual(&mut cmp, text, previous).await? {
            ControlFlow::Break(done) => return Ok(done),
            ControlFlow::Continue(changed) => changed,
        };
        let percent = match cmp.shot.as_ref().filter(|_| cmp.visual()) {
            Some(shot) => self.visual_change(&prev, shot, cmp.options).await?,
            None => None,
        };
        let current = cmp.snapshot(String::new(), percent);
        let Some((change, prev, text)) = diff(prev, text, current.id.clone()).await else {
            return Ok(Compared {
                error: Some("comparing the text failed".into()),
                error_kind: Some("diff"),
                ..Compared::outcome(RunOutcome::Failed)
            });
        };
        let (event, kept_quiet) = self.alert_decision(&cmp, &change, (&prev, &current), &text, percent).await?;
        Ok(Compared {
            event,
            // Kept quiet: said on the run and, for the timeline, on the snapshot.
            note: kept_quiet.as_ref().map(|why| format!("no alert: {why}")),
            lines: cmp.options.judges_values().then(|| crate::backtest::changed_lines(&change)),
            snapshot: Some(Snapshot { content: text, kept_quiet, ..current }),
            screenshot: cmp.shot,
            ..Compared::outcome(RunOutcome::Changed)
        })
    }

    /// The second step: whether there is a text change to diff (`Continue` with the snapshot
    /// before and the text), or the comparison ends here: a baseline (no snapshot before, or
    /// the first since the watch's settings changed), or the same text, which still looks the
    /// same or is a change only the screenshot shows.
    async fn unchanged_or_visual(
        &self,
        cmp: &mut Comparison<'_>,
        text: String,
        previous: Option<Snapshot>,
    ) -> Result<ControlFlow<Compared, (Snapshot, String)>, StoreError> {
        // A watch whose settings changed, or just imported with another tool's history,
        // takes its first own reading as the new baseline, without an alert, and says so.
        let rebase = cmp.watch.rebaseline && previous.as_ref().is_none_or(|p| p.content_hash != cmp.hash);
        let rebased = rebase && previous.is_some();
        let prev = match previous {
            _ if rebase => None,
            Some(prev) if prev.content_hash == cmp.hash => {
                return self.visual_only(cmp, text, prev).await.map(ControlFlow::Break);
            }
            previous => previous,
        };
        Ok(match prev {
            Some(prev) => ControlFlow::Continue((prev, text)),
            None => ControlFlow::Break(Compared {
                snapshot: Some(cmp.snapshot(text, None)),
                screenshot: cmp.shot.take(),
                note: rebased.then(|| {
                    "a new baseline, without an alert: the watch's settings changed or its history was imported".into()
                }),
                ..Compared::outcome(RunOutcome::Baseline)
            }),
        })
    }

    /// The same text as `prev`: unchanged, unless the watch compares screenshots and the page
    /// looks different enough (or this is the first screenshot of this text, kept as the
    /// reference).
    async fn visual_only(
        &self,
        cmp: &mut Comparison<'_>,
        text: String,
        prev: Snapshot,
    ) -> Result<Compared, StoreError> {
        let Some(shot) = cmp.shot.take().filter(|_| cmp.visual()) else {
            return Ok(Compared::outcome(RunOutcome::Unchanged));
        };
        let Some(percent) = self.visual_change(&prev, &shot, cmp.options).await? else {
            return Ok(Compared {
                snapshot: Some(cmp.snapshot(text, None)),
                screenshot: Some(shot),
                note: Some("first screenshot kept as the reference".into()),
                ..Compared::outcome(RunOutcome::Baseline)
            });
        };
        if percent < cmp.min_visual() {
            return Ok(Compared::outcome(RunOutcome::Unchanged));
        }
        let current = cmp.snapshot(text, Some(percent));
        let change = driftwatch_diff::diff_texts_within(
            &prev.content,
            &current.content,
            &prev.id,
            &current.id,
            DiffLimits::PAYLOAD,
        );
        // The same hash: the values (part of it) did not move.
        let event = cmp.change_event(&change, (&prev, &current), Some(percent), Vec::new());
        Ok(Compared {
            event: Some(event),
            note: Some(format!("the page looks different ({percent:.2}% of pixels)")),
            snapshot: Some(current),
            screenshot: Some(shot),
            ..Compared::outcome(RunOutcome::Changed)
        })
    }

    /// The last step: whether the change alerts. Its event, unless the picture, the noise
    /// rules or a confirming fetch keep it quiet (then why); a value that moved is a change
    /// worth telling even when no line did (a price only in the structured data). The
    /// conditions, if any, decide after.
    async fn alert_decision(
        &self,
        cmp: &Comparison<'_>,
        change: &TextChange,
        (prev, current): (&Snapshot, &Snapshot),
        text: &str,
        percent: Option<f64>,
    ) -> Result<(Option<Event>, Option<String>), StoreError> {
        let visual_only = cmp.options.noise.compare == Compare::Visual;
        let quiet = match percent {
            // Only the picture counts: a text change alone is kept, quietly.
            _ if !visual_only => {
                self.quiet((cmp.watch, cmp.options, cmp.access), change, (&prev.content, text), &cmp.hash).await?
            }
            Some(p) if p >= cmp.min_visual() => None,
            Some(p) => Some(format!("the page looks the same ({p:.2}% of pixels differ, under {}%)", cmp.min_visual())),
            None => Some("no earlier screenshot to compare with".to_owned()),
        };
        let values_moved = cmp.stored_values.is_some() && cmp.stored_values != prev.readings;
        let alerts = ((is_alert(change) || visual_only) && quiet.is_none()) || values_moved;
        let event = alerts.then(|| {
            // What moved, typed, for every watch with values (conditions or not).
            let moved = if values_moved { cmp.moved_since(prev) } else { Vec::new() };
            cmp.change_event(change, (prev, current), percent, moved)
        });
        let kept_quiet = quiet.filter(|_| event.is_none());
        Ok((event, kept_quiet))
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
        (watch, options, access): (&Watch, &WatchOptions, &Access),
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
            let again = self.reader().read(watch, options, access, false, None).await.map(|page| page.text);
            if !matches!(again, Some(PageText::Text(again, _)) if again == after) {
                return Ok(Some("a second fetch did not confirm the change".into()));
            }
        }
        Ok(None)
    }
}

/// The third step: the diff from `prev` to `text` (the new snapshot `current_id`), bounded in
/// time and size (a payload goes to every endpoint) and off the async threads; `None` when
/// that task failed.
async fn diff(prev: Snapshot, text: String, current_id: String) -> Option<(TextChange, Snapshot, String)> {
    tokio::task::spawn_blocking(move || {
        let change =
            driftwatch_diff::diff_texts_within(&prev.content, &text, &prev.id, &current_id, DiffLimits::PAYLOAD);
        (change, prev, text)
    })
    .await
    .ok()
}

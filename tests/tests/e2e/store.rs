//! The store's claims under contention: concurrent claimers never take the same row.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::TimeDelta;
use driftwatch_core::{Clock as _, IdKind, RunOutcome, SystemClock, new_id};
use driftwatch_store::checks::{self, CheckResult};
use driftwatch_store::endpoints::DisabledEvent;
use driftwatch_store::render::PayloadOnly;
use driftwatch_store::{
    Endpoint, Event, PoolOptions, Run, Store, Watch, accounts, deliveries, endpoints, runs, watches,
};
use driftwatch_test_support::{Backend, TestDb};

const DELIVERIES: usize = 120;

pub async fn concurrent_claims_never_overlap(backend: Backend) {
    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions { max_size: 6, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now().naive_utc();

    // One change event fanned out to DELIVERIES endpoints, written the way the runner writes it.
    let queued = store
        .write(move |c| {
            let account = accounts::create_account(c, "acme", now)?;
            for i in 0..DELIVERIES {
                endpoints::insert_endpoint(
                    c,
                    &Endpoint::webhook(&account.id, &format!("http://127.0.0.1:9/{i}"), now),
                )?;
            }
            let watch = Watch {
                lease_owner: Some("runner".into()),
                lease_until: Some(now + TimeDelta::minutes(1)),
                ..Watch::new(&account.id, "http://127.0.0.1:9/", now)
            };
            watches::insert_watch(c, &watch)?;
            // A long check extends its own lease; another owner cannot.
            assert!(watches::extend_lease(c, &watch.id, "runner", now + TimeDelta::minutes(12))?);
            assert!(!watches::extend_lease(c, &watch.id, "thief", now + TimeDelta::hours(1))?);
            let leased = watches::get_watch(c, &account.id, &watch.id)?.expect("watch");
            let until = leased.lease_until.expect("leased");
            assert!((until - (now + TimeDelta::minutes(12))).num_milliseconds().abs() < 1, "{until}");
            let event_id = new_id(IdKind::Event);
            let result = CheckResult {
                watch_id: watch.id.clone(),
                account_id: account.id.clone(),
                lease_owner: "runner".into(),
                run: Run {
                    id: new_id(IdKind::Run),
                    watch_id: watch.id.clone(),
                    started_at: now,
                    finished_at: now,
                    outcome: RunOutcome::Changed.as_str().into(),
                    http_status: Some(200),
                    duration_ms: 1,
                    bytes: 1,
                    error: None,
                    note: None,
                    snapshot_id: None,
                    event_id: Some(event_id.clone()),
                    engine: Some("http".into()),
                    error_kind: None,
                },
                snapshot: None,
                screenshot: None,
                browser_since: None,
                conditions_met: None,
                value_failures: None,
                expect: None,
                events: vec![Event {
                    id: event_id,
                    account_id: account.id,
                    watch_id: Some(watch.id.clone()),
                    endpoint_id: None,
                    event_type: "change.detected".into(),
                    previous_snapshot_id: None,
                    snapshot_id: None,
                    added: 1,
                    removed: 0,
                    payload: "{}".into(),
                    created_at: now,
                }],
                undelivered: Vec::new(),
                verdicts: Vec::new(),
                health: "ok".into(),
                validators: None,
                max_attempts: 3,
                consecutive_failures: 0,
                next_run_at: now + TimeDelta::hours(1),
                watch_updated_at: now,
                now,
            };
            let queued = checks::record(c, &PayloadOnly, &result)?;
            // The write released the lease: a second write under it is refused and changes nothing.
            let again = checks::record(
                c,
                &PayloadOnly,
                &CheckResult { run: Run { id: new_id(IdKind::Run), ..result.run.clone() }, ..result.clone() },
            );
            assert!(matches!(again, Err(driftwatch_store::StoreError::LeaseLost)), "{again:?}");

            // Checks written in one batch: each under its own savepoint, so the one whose lease
            // is gone writes nothing and the other is written.
            let other = Watch {
                lease_owner: Some("runner-2".into()),
                lease_until: Some(now + TimeDelta::minutes(1)),
                ..Watch::new(&result.account_id, "http://127.0.0.1:9/other", now)
            };
            watches::insert_watch(c, &other)?;
            let lost = CheckResult { run: Run { id: new_id(IdKind::Run), ..result.run.clone() }, ..result.clone() };
            let written = CheckResult {
                watch_id: other.id.clone(),
                lease_owner: "runner-2".into(),
                run: Run { id: new_id(IdKind::Run), watch_id: other.id.clone(), event_id: None, ..result.run.clone() },
                events: Vec::new(),
                undelivered: Vec::new(),
                verdicts: Vec::new(),
                ..result.clone()
            };
            let answers = checks::record_all(c, &PayloadOnly, &[lost.clone(), written.clone()])?;
            assert!(matches!(answers[0], Err(driftwatch_store::StoreError::LeaseLost)), "{answers:?}");
            assert!(matches!(answers[1], Ok(0)), "{answers:?}");
            assert_eq!(runs::newest_run(c, &other.id)?.map(|r| r.id), Some(written.run.id));
            assert_eq!(runs::newest_run(c, &watch.id)?.map(|r| r.id), Some(result.run.id.clone()), "not the lost one");
            let released = watches::get_watch(c, &result.account_id, &other.id)?.expect("watch");
            assert_eq!(released.lease_owner, None, "the batch released the written watch's lease");

            // A check whose own write fails (its run names a snapshot that does not exist) gets
            // its error and leaves its watch leased; the rest of the batch is written.
            let leased = |url: &str, owner: &str| Watch {
                lease_owner: Some(owner.into()),
                lease_until: Some(now + TimeDelta::minutes(1)),
                ..Watch::new(&result.account_id, url, now)
            };
            let (broken, fine) =
                (leased("http://127.0.0.1:9/broken", "runner-3"), leased("http://127.0.0.1:9/fine", "runner-4"));
            watches::insert_watch(c, &broken)?;
            watches::insert_watch(c, &fine)?;
            let check_of = |watch: &Watch, snapshot_id: Option<String>| CheckResult {
                watch_id: watch.id.clone(),
                lease_owner: watch.lease_owner.clone().expect("leased"),
                run: Run {
                    id: new_id(IdKind::Run),
                    watch_id: watch.id.clone(),
                    event_id: None,
                    snapshot_id,
                    ..result.run.clone()
                },
                events: Vec::new(),
                undelivered: Vec::new(),
                verdicts: Vec::new(),
                ..result.clone()
            };
            let answers = checks::record_all(
                c,
                &PayloadOnly,
                &[check_of(&broken, Some("snp_missing".into())), check_of(&fine, None)],
            )?;
            assert!(matches!(answers[0], Err(driftwatch_store::StoreError::Query(_))), "{answers:?}");
            assert!(matches!(answers[1], Ok(0)), "{answers:?}");
            assert!(runs::newest_run(c, &broken.id)?.is_none(), "the failed check wrote nothing");
            let still = watches::get_watch(c, &result.account_id, &broken.id)?.expect("watch");
            assert_eq!(still.lease_owner.as_deref(), Some("runner-3"), "and kept its lease");
            assert!(runs::newest_run(c, &fine.id)?.is_some(), "the other check was written");
            Ok(queued)
        })
        .await
        .expect("record");
    assert_eq!(queued, DELIVERIES, "one delivery per enabled endpoint");

    // The watch is not due again for an hour, and its lease was released with the write.
    let due = store.write(move |c| watches::claim_due(c, "other", now, now + TimeDelta::minutes(1), 10)).await;
    assert!(due.expect("claim").is_empty());

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut claimers = Vec::new();
    for n in 0..4 {
        let (store, seen) = (store.clone(), Arc::clone(&seen));
        claimers.push(tokio::spawn(async move {
            loop {
                let owner = format!("claimer-{n}-{}", new_id(IdKind::Run));
                let now = SystemClock.now().naive_utc();
                let jobs = store
                    .write(move |c| {
                        deliveries::claim_due(
                            c,
                            &owner,
                            now,
                            now + TimeDelta::minutes(5),
                            7,
                            &[],
                            &deliveries::Room::ANY,
                        )
                    })
                    .await
                    .expect("claim");
                if jobs.is_empty() {
                    break;
                }
                for job in &jobs {
                    assert_eq!(
                        job.delivery.lease_owner.as_deref().map(|o| o.starts_with(&format!("claimer-{n}-"))),
                        Some(true)
                    );
                    assert_eq!(job.body, b"{}", "the stored body comes with the claim");
                }
                seen.lock().expect("lock").extend(jobs.into_iter().map(|j| j.delivery.id));
            }
        }));
    }
    for claimer in claimers {
        claimer.await.expect("claimer");
    }
    let seen = seen.lock().expect("lock").clone();
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(seen.len(), DELIVERIES, "every delivery claimed exactly once");
    assert_eq!(unique.len(), DELIVERIES, "no delivery claimed twice");
}

/// A batch of events fanned out wider than one statement's 65,535 parameters allows on
/// PostgreSQL (60 events to 120 endpoints: 7,200 deliveries of 13 columns) is queued whole.
pub async fn a_wide_fan_out_is_queued_whole(backend: Backend) {
    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions::default()).expect("open");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now().naive_utc();
    let queued = store
        .write(move |c| {
            let account = accounts::create_account(c, "acme", now)?;
            for i in 0..120 {
                endpoints::insert_endpoint(
                    c,
                    &Endpoint::webhook(&account.id, &format!("http://127.0.0.1:9/{i}"), now),
                )?;
            }
            let events: Vec<Event> = (0..60)
                .map(|n| Event {
                    id: new_id(IdKind::Event),
                    account_id: account.id.clone(),
                    watch_id: None,
                    endpoint_id: None,
                    event_type: "change.detected".into(),
                    previous_snapshot_id: None,
                    snapshot_id: None,
                    added: 1,
                    removed: 0,
                    payload: format!("{{\"n\":{n}}}"),
                    created_at: now,
                })
                .collect();
            let batch: Vec<_> = events.iter().map(|e| (e, 3, now)).collect();
            let queued = diesel::Connection::transaction(c, |c| {
                driftwatch_store::outbox::enqueue_many(c, &PayloadOnly, &batch)
            })?;
            assert!(queued.values().all(|&n| n == 120), "every event to every endpoint");
            let total: i64 = {
                use diesel::prelude::*;
                driftwatch_store::schema::deliveries::table.count().get_result(c)?
            };
            Ok((queued.len(), total))
        })
        .await
        .expect("enqueue");
    assert_eq!(queued, (60, 7_200));
}

pub async fn sessions_expire_idle_and_absolute_and_unseen_is_per_user(backend: Backend) {
    use driftwatch_store::users::{self, SessionLimits};
    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now().naive_utc();
    store
        .write(move |c| {
            let limits = SessionLimits { idle: TimeDelta::hours(1), absolute: TimeDelta::hours(3) };
            let user = users::create_first_user(c, "acme", "Ada@Example.com", "$argon2id$x", now)?;
            assert_eq!(user.email, "ada@example.com");
            assert!(
                users::create_first_user(c, "other", "b@example.com", "$argon2id$x", now).is_err(),
                "setup works once"
            );
            users::create_session(c, &user.id, "sid-1", "csrf", now, limits)?;
            let stored: Vec<String> = {
                use diesel::prelude::*;
                driftwatch_store::schema::sessions::table.select(driftwatch_store::schema::sessions::id_hash).load(c)?
            };
            assert_eq!(stored, [driftwatch_core::hash_token("sid-1")], "only the hash is stored");
            // Used within the idle limit, it lives on; it refreshes last_seen_at.
            let used = now + TimeDelta::minutes(50);
            assert!(users::find_session(c, "sid-1", used, limits)?.is_some());
            assert!(
                users::find_session(c, "sid-1", used + TimeDelta::minutes(50), limits)?.is_some(),
                "idle counts from the last use"
            );
            // Idle too long: gone (and deleted).
            assert!(
                users::find_session(c, "sid-1", used + TimeDelta::minutes(50) + TimeDelta::minutes(61), limits)?
                    .is_none()
            );
            assert!(users::find_session(c, "sid-1", used, limits)?.is_none(), "deleted");
            // However busy, a session ends at its absolute expiry.
            users::create_session(c, &user.id, "sid-2", "csrf", now, limits)?;
            let mut at = now;
            while at < now + TimeDelta::hours(3) - TimeDelta::minutes(30) {
                at += TimeDelta::minutes(30);
                assert!(users::find_session(c, "sid-2", at, limits)?.is_some());
            }
            assert!(users::find_session(c, "sid-2", now + TimeDelta::hours(3), limits)?.is_none());
            // Sign out everywhere ends every session of the user.
            users::create_session(c, &user.id, "sid-3", "csrf", now, limits)?;
            users::create_session(c, &user.id, "sid-4", "csrf", now, limits)?;
            assert_eq!(users::delete_user_sessions(c, &user.id)?, 2);
            // What a user has seen is theirs alone.
            let other = users::create_user(c, &user.account_id, "b@example.com", "$argon2id$x", now)?;
            let watch = Watch::new(&user.account_id, "https://example.com/", now);
            watches::insert_watch(c, &watch)?;
            users::mark_seen(c, &user.id, &watch.id, "snp_1", now)?;
            users::mark_seen(c, &user.id, &watch.id, "snp_2", now)?;
            let ids = [watch.id.clone()];
            assert_eq!(users::seen_snapshots(c, &user.id, &ids)?.get(&watch.id).map(String::as_str), Some("snp_2"));
            assert!(users::seen_snapshots(c, &other.id, &ids)?.is_empty());
            Ok(())
        })
        .await
        .expect("store");
}

/// The claim and the completion use their indexes with a mostly finished outbox (statistics
/// fresh, as autovacuum leaves them), and the claim's skipped endpoints are bound, not spliced.
pub async fn outbox_statements_use_their_indexes(backend: Backend) {
    use driftwatch_core::{AttemptTrigger, DeliveryStatus};
    use driftwatch_store::DeliveryAttempt;
    use driftwatch_store::deliveries::{AttemptRecord, Completion};
    use driftwatch_store::endpoints::Health;
    use driftwatch_store::outbox::{self, Target};

    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now().naive_utc();
    let (first, second) = store
        .write(move |c| {
            let account = accounts::create_account(c, "acme", now)?;
            let ids: Vec<String> = (0..2)
                .map(|i| {
                    let endpoint = Endpoint::webhook(&account.id, &format!("http://127.0.0.1:9/{i}"), now);
                    endpoints::insert_endpoint(c, &endpoint).map(|()| endpoint.id)
                })
                .collect::<Result<_, _>>()?;
            for n in 0..1_000 {
                outbox::enqueue(c, &PayloadOnly, &test_event(&account.id, n, now), Target::AllEnabled, 3, now)?;
            }
            Ok((ids[0].clone(), ids[1].clone()))
        })
        .await
        .expect("seed");

    // Skipping the first endpoint, bound as a parameter (a quote in an id is just data).
    let skip = vec![first.clone(), "end_x' OR '1'='1".to_owned()];
    let jobs = store
        .write(move |c| {
            deliveries::claim_due(c, "worker", now, now + TimeDelta::minutes(5), 1_900, &skip, &deliveries::Room::ANY)
        })
        .await
        .expect("claim");
    assert_eq!(jobs.len(), 1_000, "only the second endpoint's deliveries");
    assert!(jobs.iter().all(|j| j.endpoint.id == second && j.delivery.lease_owner.as_deref() == Some("worker")));
    assert!(jobs.windows(2).all(|w| w[0].delivery.next_attempt_at <= w[1].delivery.next_attempt_at), "due order");

    // Finish them all in one batch.
    let records: Vec<AttemptRecord> = jobs
        .iter()
        .map(|job| AttemptRecord {
            delivery_id: job.delivery.id.clone(),
            endpoint_id: job.endpoint.id.clone(),
            owner: "worker".into(),
            completion: Completion {
                status: DeliveryStatus::Sent,
                attempts: 1,
                next_attempt_at: now,
                last_status_code: Some(200),
                last_error: None,
                now,
                default_max_attempts: 3,
            },
            attempt: DeliveryAttempt {
                id: new_id(IdKind::Attempt),
                delivery_id: job.delivery.id.clone(),
                attempt_number: 1,
                started_at: now,
                duration_ms: 1,
                status_code: Some(200),
                error_kind: None,
                error: None,
                response_snippet: Some("ok".into()),
                trigger: AttemptTrigger::Scheduled.as_str().into(),
            },
            health: Health::Success,
        })
        .collect();
    // A lost lease, alone in its batch and beside its delivery's own record: nothing written.
    let stolen = |r: &AttemptRecord| AttemptRecord {
        owner: "thief".into(),
        attempt: DeliveryAttempt { id: new_id(IdKind::Attempt), ..r.attempt.clone() },
        ..r.clone()
    };
    let mut first_batch = records[..999].to_vec();
    first_batch.push(stolen(&records[999]));
    let last_batch = vec![stolen(&records[999]), records[999].clone(), stolen(&records[0])];
    let recorded = store
        .write(move |c| {
            let first = deliveries::complete_all(
                c,
                &first_batch,
                DisabledEvent { event: &|_, _| unreachable!("no endpoint is disabled"), render: &PayloadOnly },
            )?;
            let last = deliveries::complete_all(
                c,
                &last_batch,
                DisabledEvent { event: &|_, _| unreachable!("no endpoint is disabled"), render: &PayloadOnly },
            )?;
            Ok((first, last))
        })
        .await
        .expect("complete");
    assert_eq!(recorded.0.iter().filter(|r| **r).count(), 999);
    assert!(!recorded.0[999], "a record under a lost lease writes nothing");
    assert_eq!(recorded.1, [false, true, false], "the lease holder's record alone is written");
    let one = records[0].delivery_id.clone();
    let attempts = store
        .read(move |c| {
            use diesel::prelude::*;
            use driftwatch_store::schema::deliveries as rows;
            let account: String = rows::table.find(&one).select(rows::account_id).get_result(c)?;
            deliveries::list_attempts(c, &account, &one)
        })
        .await
        .expect("attempts");
    assert_eq!(attempts.len(), 1, "one attempt row per attempt, not one per record");
    assert_eq!(attempts[0].response_snippet.as_deref(), Some("ok"));

    // Fresh statistics of a mostly finished outbox, then the plans.
    store
        .read(|c| {
            use diesel::connection::SimpleConnection as _;
            c.batch_execute("ANALYZE")?;
            Ok(())
        })
        .await
        .expect("analyze");
    let claim = store.read(move |c| deliveries::explain_claim(c, now)).await.expect("explain claim");
    assert!(claim.contains("deliveries_due"), "the claim walks the due index:\n{claim}");
    for bad in ["Seq Scan on deliveries", "Bitmap", "SCAN deliveries"] {
        assert!(!claim.contains(bad), "the claim must not {bad}:\n{claim}");
    }
    // Due rows are read in the index's order and cut at a few times the limit; only those are
    // sorted after (ranked per endpoint, then put back in due order), never the whole queue.
    let walk = claim.split("SCAN due").next().unwrap_or_default();
    assert!(!walk.contains("TEMP B-TREE"), "the claim must not sort what it has not cut:\n{claim}");
    if backend == Backend::Sqlite {
        assert!(claim.contains("SCAN due"), "{claim}");
    }
    let completion = store.read(deliveries::explain_completion).await.expect("explain completion");
    assert!(
        completion.contains("deliveries_pkey") || completion.contains("sqlite_autoindex_deliveries_1"),
        "the completion finds deliveries by key:\n{completion}"
    );
    assert!(!completion.contains("Seq Scan on deliveries"), "{completion}");
    eprintln!("claim plan ({backend:?}):\n{claim}\ncompletion plan:\n{completion}");
}

/// Every list under a watch or a delivery takes the account id: another account's ids find
/// nothing at the store level, not only behind the API's ownership check.
pub async fn another_accounts_ids_find_nothing_in_the_store(backend: Backend) {
    use crate::support::TestApp;
    use driftwatch_test_support::{PageServer, Receiver};
    use serde_json::json;

    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    app.account("other").await;
    let site = PageServer::start("<p id=v>1</p>").await;
    let receiver = Receiver::start(200).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#v"})).await;
    let (_, endpoint) = app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    let endpoint_id = endpoint["id"].as_str().expect("id");
    let (_, delivery) = app.post(&format!("/endpoints/{endpoint_id}/test"), &token, json!({})).await;
    let delivery_id = delivery["id"].as_str().expect("id").to_owned();
    receiver.wait_for(1).await;
    driftwatch_test_support::eventually("the attempt recorded", || async {
        let d = app.ok(&format!("/deliveries/{delivery_id}"), &token).await;
        (d["status"] == "sent").then_some(())
    })
    .await;

    let store = app.app.as_ref().expect("running").store.clone();
    let watch_id = watch["id"].as_str().expect("id").to_owned();
    let counts = store
        .read(move |c| {
            let page = driftwatch_store::Page { after: None, limit: 50 };
            let mut counts = Vec::new();
            for name in ["acme", "other"] {
                let account = accounts::find_account_by_name(c, name)?.expect("the account").id;
                let snapshots = driftwatch_store::snapshots::list_snapshots(c, &account, &watch_id, &page)?;
                let snapshot = snapshots.first().map(|s| s.id.clone()).unwrap_or_default();
                counts.push([
                    driftwatch_store::runs::list_runs(c, &account, &watch_id, &page)?.len(),
                    snapshots.len(),
                    deliveries::list_attempts(c, &account, &delivery_id)?.len(),
                    usize::from(deliveries::get_delivery(c, &account, &delivery_id)?.is_some()),
                    usize::from(deliveries::delivery_body(c, &account, &delivery_id)?.is_some()),
                    usize::from(driftwatch_store::watches::get_watch(c, &account, &watch_id)?.is_some()),
                ]);
                // The owner's snapshot, asked for by the other account, is not found either.
                if name == "acme" {
                    let other = accounts::find_account_by_name(c, "other")?.expect("the account").id;
                    assert!(driftwatch_store::snapshots::get_snapshot(c, &other, &snapshot)?.is_none());
                }
            }
            Ok(counts)
        })
        .await
        .expect("read");
    assert_eq!(counts[0], [1, 1, 1, 1, 1, 1], "the owner sees its rows");
    assert_eq!(counts[1], [0, 0, 0, 0, 0, 0], "another account finds nothing");
}

/// Limited endpoints take turns in `claim_limited` (a cursor, so endpoints at their cap never
/// starve the ones behind them), each endpoint's claim walks its own due index, and a delivery
/// flagged `limited` whose endpoint has no limit any more goes back to the outbox claim.
pub async fn limited_endpoints_take_turns(backend: Backend) {
    use driftwatch_store::outbox::{self, Target};

    const ENDPOINTS: usize = 40;
    const PER_CLAIM: i64 = 32;
    let caps =
        |lease| deliveries::LimitedCaps { lease, default_cap: 8, max_deliveries: 1_000, max_endpoints: PER_CLAIM };
    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now().naive_utc();
    let (limited_ids, free_id) = store
        .write(move |c| {
            let account = accounts::create_account(c, "acme", now)?;
            let mut ids = Vec::new();
            for i in 0..ENDPOINTS {
                let endpoint = Endpoint {
                    max_in_flight: Some(1),
                    ..Endpoint::webhook(&account.id, &format!("http://127.0.0.1:9/{i}"), now)
                };
                endpoints::insert_endpoint(c, &endpoint)?;
                ids.push(endpoint.id);
            }
            let free = Endpoint::webhook(&account.id, "http://127.0.0.1:9/free", now);
            endpoints::insert_endpoint(c, &free)?;
            for n in 0..2 {
                outbox::enqueue(c, &PayloadOnly, &test_event(&account.id, n, now), Target::AllEnabled, 3, now)?;
            }
            ids.sort();
            Ok((ids, free.id))
        })
        .await
        .expect("seed");

    // The outbox claim takes only the endpoint without a limit.
    let lease = TimeDelta::minutes(5);
    let outbox = store
        .write(move |c| deliveries::claim_due(c, "worker", now, now + lease, 1_000, &[], &deliveries::Room::ANY))
        .await
        .expect("claim due");
    assert_eq!(outbox.len(), 2, "the free endpoint's two deliveries");
    assert!(outbox.iter().all(|j| j.endpoint.id == free_id));

    // Each limited endpoint has 2 due and a cap of 1: the first claim serves the first 32.
    let claim = |after: String| store.write(move |c| deliveries::claim_limited(c, "worker", now, &caps(lease), &after));
    let first = claim(String::new()).await.expect("first claim");
    let served: Vec<String> = first.jobs.iter().map(|j| j.job.endpoint.id.clone()).collect();
    assert_eq!(served, limited_ids[..PER_CLAIM as usize], "one each, in id order");
    assert_eq!(first.cursor, limited_ids[PER_CLAIM as usize - 1]);
    // Without the cursor the same 32, all at their cap, would be looked at again and nothing
    // claimed; after it, the other 8 get their turn.
    let stuck = claim(String::new()).await.expect("claim from the start");
    assert!(stuck.jobs.is_empty(), "the first 32 are at their cap");
    let second = claim(first.cursor.clone()).await.expect("second claim");
    let served: Vec<String> = second.jobs.iter().map(|j| j.job.endpoint.id.clone()).collect();
    assert_eq!(served, limited_ids[PER_CLAIM as usize..], "the endpoints behind the cursor");
    let third = claim(second.cursor.clone()).await.expect("third claim");
    assert!(third.jobs.is_empty(), "every endpoint is at its cap");

    // The endpoint claim walks its due index.
    let one = limited_ids[0].clone();
    let plan = store.read(move |c| deliveries::explain_endpoint_claim(c, &one, now)).await.expect("explain");
    assert!(plan.contains("deliveries_endpoint_due"), "the endpoint claim walks its due index:\n{plan}");
    // (PostgreSQL may read this tiny table's rows by key with a sequential scan; what matters is
    // that the due rows are walked in index order, never gathered and sorted.)
    for bad in ["SCAN deliveries", "TEMP B-TREE", "Sort", "Bitmap"] {
        assert!(!plan.contains(bad), "the endpoint claim must not {bad}:\n{plan}");
    }

    // An endpoint that lost its limit with a delivery still flagged (queued in the instant the
    // limit went): the limited claim hands it back, and the outbox claim sends it.
    let last = limited_ids[ENDPOINTS - 1].clone();
    let endpoint = last.clone();
    store
        .write(move |c| {
            use diesel::prelude::*;
            use driftwatch_store::schema::endpoints as rows;
            // Behind `update_endpoint`'s back, so the flags stay as they were.
            diesel::update(rows::table.find(&endpoint)).set(rows::max_in_flight.eq(None::<i32>)).execute(c)?;
            Ok(())
        })
        .await
        .expect("drop the limit");
    let later = now + TimeDelta::minutes(10); // every lease above has expired
    let after = limited_ids[ENDPOINTS - 2].clone(); // the stale endpoint is looked at first
    let handed_back = store
        .write(move |c| deliveries::claim_limited(c, "worker", later, &caps(lease), &after))
        .await
        .expect("limited claim");
    assert!(handed_back.jobs.iter().all(|j| j.job.endpoint.id != last), "not claimed as limited");
    assert_eq!(handed_back.jobs.len(), PER_CLAIM as usize - 1, "the rest wrap around to the start");
    let free = store
        .write(move |c| deliveries::claim_due(c, "worker", later, later + lease, 1_000, &[], &deliveries::Room::ANY))
        .await
        .expect("claim due");
    let ids: HashSet<&str> = free.iter().map(|j| j.endpoint.id.as_str()).collect();
    assert!(ids.contains(limited_ids[ENDPOINTS - 1].as_str()), "the outbox claim takes it now: {ids:?}");
}

/// Events queued on request share one transaction, and each is answered as if alone: the good
/// ones queue exactly one delivery each, one naming another account's endpoint queues nothing,
/// and one whose endpoint is gone (its foreign key fails the whole batch) fails only itself.
pub async fn batched_enqueues_answer_each_request_alone(backend: Backend) {
    use driftwatch_store::outbox::{self, ForEndpoint};

    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now().naive_utc();
    let answers = store
        .write(move |c| {
            let acme = accounts::create_account(c, "acme", now)?;
            let other = accounts::create_account(c, "other", now)?;
            let mine = Endpoint::webhook(&acme.id, "http://127.0.0.1:9/mine", now);
            let theirs = Endpoint::webhook(&other.id, "http://127.0.0.1:9/theirs", now);
            endpoints::insert_endpoint(c, &mine)?;
            endpoints::insert_endpoint(c, &theirs)?;
            let item = |n: usize, account: &str, endpoint: &str, about: Option<&str>| {
                let mut event = test_event(account, n, now);
                event.endpoint_id = about.map(str::to_owned);
                ForEndpoint { event, endpoint_id: endpoint.to_owned(), default_max_attempts: 3, now }
            };
            let good = vec![item(0, &acme.id, &mine.id, Some(&mine.id)), item(1, &acme.id, &mine.id, None)];
            let first = outbox::enqueue_each_for_endpoint(c, &PayloadOnly, &good)?;
            let mixed = vec![
                item(2, &acme.id, &mine.id, Some(&mine.id)),
                item(3, &acme.id, &theirs.id, None),
                // The event names an endpoint that no longer exists: its foreign key fails.
                item(4, &acme.id, "end_gone", Some("end_gone")),
                item(5, &acme.id, &mine.id, None),
            ];
            let second = outbox::enqueue_each_for_endpoint(c, &PayloadOnly, &mixed)?;
            let page = driftwatch_store::Page { after: None, limit: 100 };
            let queued = deliveries::list_deliveries(c, &acme.id, &deliveries::DeliveryFilter::default(), &page)?;
            let theirs_queued =
                deliveries::list_deliveries(c, &other.id, &deliveries::DeliveryFilter::default(), &page)?;
            Ok((mine.id, first, second, queued, theirs_queued))
        })
        .await
        .expect("enqueue");
    let (mine, first, second, queued, theirs_queued) = answers;
    let delivered_to = |answer: &driftwatch_store::StoreResult<Option<driftwatch_store::Delivery>>| {
        answer.as_ref().ok().and_then(|d| d.as_ref()).map(|d| (d.endpoint_id.clone(), d.status.clone()))
    };
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|a| delivered_to(a) == Some((mine.clone(), "queued".into()))), "{first:?}");
    assert_eq!(second.len(), 4);
    assert_eq!(delivered_to(&second[0]), Some((mine.clone(), "queued".into())));
    assert!(matches!(second[1], Ok(None)), "another account's endpoint queues nothing: {:?}", second[1]);
    assert!(second[2].is_err(), "the vanished endpoint fails its own request: {:?}", second[2]);
    assert_eq!(delivered_to(&second[3]), Some((mine.clone(), "queued".into())));
    assert_eq!(queued.len(), 4, "one delivery per good request, nothing of the failed batch twice");
    assert!(theirs_queued.is_empty());
}

/// An `endpoint.test` event of the account numbered `n`, as the outbox takes it.
fn test_event(account_id: &str, n: usize, now: chrono::NaiveDateTime) -> Event {
    Event {
        id: new_id(IdKind::Event),
        account_id: account_id.to_owned(),
        watch_id: None,
        endpoint_id: None,
        event_type: "endpoint.test".into(),
        previous_snapshot_id: None,
        snapshot_id: None,
        added: 0,
        removed: 0,
        payload: format!("{{\"n\":{n}}}"),
        created_at: now,
    }
}

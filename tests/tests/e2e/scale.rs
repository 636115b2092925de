//! Several worker nodes on one database drain a large outbox, sending each delivery once.

use std::collections::{HashMap, HashSet};

use chrono::TimeDelta;

use diesel::Connection as _;
use driftwatch::{App, Roles};
use driftwatch_core::{Clock as _, EventType, IdKind, SystemClock, new_id};
use driftwatch_store::outbox::Target;
use driftwatch_store::{Endpoint, Event, PoolOptions, Store, accounts, deliveries, endpoints, outbox};
use driftwatch_test_support::{Backend, Receiver, TestDb, eventually};

use crate::support::test_settings;

const DELIVERIES: usize = 2000;
const NODES: usize = 3;

pub async fn three_workers_send_each_delivery_once(backend: Backend) {
    let db = TestDb::new(backend);
    let receiver = Receiver::start(200).await;
    let store = Store::open(&db.url, &PoolOptions { max_size: 4, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let url = receiver.url.clone();
    let account_id = store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "acme", now)?;
            let endpoint = Endpoint { max_in_flight: Some(64), ..Endpoint::webhook(&account.id, &url, now) };
            endpoints::insert_endpoint(c, &endpoint)?;
            c.transaction(|c| queue(c, &account.id, &endpoint.id, DELIVERIES))?;
            Ok(account.id.clone())
        })
        .await
        .expect("seed the outbox");

    let nodes = start_nodes(&db).await;
    let received = receiver.wait_for(DELIVERIES).await;
    let account = account_id.clone();
    eventually("every delivery to be marked sent", || {
        let (store, account) = (store.clone(), account.clone());
        async move {
            let counts = store.read(move |c| deliveries::count_by_status(c, &account)).await.expect("count");
            (counts == vec![("sent".to_owned(), DELIVERIES as i64)]).then_some(())
        }
    })
    .await;
    for node in nodes {
        node.shutdown().await;
    }
    let mut per_id: HashMap<&str, usize> = HashMap::new();
    for hook in &received {
        *per_id.entry(hook.header("webhook-id")).or_default() += 1;
    }
    assert_eq!(per_id.len(), DELIVERIES, "every delivery arrived");
    let repeated: Vec<_> = per_id.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "sent more than once: {repeated:?}");
    assert_eq!(receiver.received().len(), DELIVERIES, "nothing was sent twice");
}

/// Starts `NODES` worker nodes (no web server) on the database.
async fn start_nodes(db: &TestDb) -> Vec<App> {
    let mut nodes = Vec::new();
    for n in 0..NODES {
        let mut settings = test_settings(db);
        settings.node_id = Some(format!("node-{n}"));
        settings.pool_size = 4;
        nodes.push(App::start(&settings, Roles { web: false, background: true }).await.expect("node starts"));
    }
    nodes
}

/// Queues `n` test events to `endpoint`, one delivery each.
fn queue(
    c: &mut driftwatch_store::DbConn,
    account_id: &str,
    endpoint_id: &str,
    n: usize,
) -> driftwatch_store::StoreResult<()> {
    let now = SystemClock.now().naive_utc();
    for i in 0..n {
        let event = Event {
            id: new_id(IdKind::Event),
            account_id: account_id.to_owned(),
            watch_id: None,
            endpoint_id: Some(endpoint_id.to_owned()),
            event_type: EventType::EndpointTest.as_str().into(),
            previous_snapshot_id: None,
            snapshot_id: None,
            added: 0,
            removed: 0,
            payload: format!("{{\"n\":{i}}}"),
            created_at: now,
        };
        outbox::enqueue(c, &driftwatch_store::render::PayloadOnly, &event, Target::One(endpoint_id), 5, now)?;
    }
    Ok(())
}

/// Most arrivals within any window of `width` (each arrival opening one).
fn most_within(arrivals: &[std::time::Instant], width: std::time::Duration) -> usize {
    arrivals
        .iter()
        .map(|start| arrivals.iter().filter(|at| **at >= *start && **at < *start + width).count())
        .max()
        .unwrap_or(0)
}

/// An endpoint's `rate_limit_per_second`, its `max_in_flight` and its half-open probe hold for
/// the cluster: three nodes on one PostgreSQL database together send a 5/s endpoint about 5 a
/// second, keep a `max_in_flight = 2` endpoint to two requests at a time, and send one probe
/// when an open circuit's period ends.
pub async fn limits_hold_across_three_nodes(backend: Backend) {
    use std::time::Duration;
    let db = TestDb::new(backend);
    let paced = Receiver::start(200).await;
    let capped = Receiver::start(200).await;
    capped.set_delay(Duration::from_millis(300));
    let probed = Receiver::start(200).await;
    probed.set_delay(Duration::from_millis(500));
    let store = Store::open(&db.url, &PoolOptions { max_size: 4, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let urls = (paced.url.clone(), capped.url.clone(), probed.url.clone());
    let opens_at = SystemClock.now().naive_utc() + chrono::TimeDelta::milliseconds(1_500);
    store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "acme", now)?;
            let a = Endpoint { rate_limit_per_second: Some(5), ..Endpoint::webhook(&account.id, &urls.0, now) };
            let b = Endpoint { max_in_flight: Some(2), ..Endpoint::webhook(&account.id, &urls.1, now) };
            let p = Endpoint {
                consecutive_failures: 5,
                failing_since: Some(now),
                circuit_open_until: Some(opens_at),
                ..Endpoint::webhook(&account.id, &urls.2, now)
            };
            for endpoint in [&a, &b, &p] {
                endpoints::insert_endpoint(c, endpoint)?;
            }
            c.transaction(|c| {
                queue(c, &account.id, &a.id, 20)?;
                queue(c, &account.id, &b.id, 12)?;
                queue(c, &account.id, &p.id, 6)
            })
        })
        .await
        .expect("seed");

    let nodes = start_nodes(&db).await;
    let (a, b, p) = tokio::join!(paced.wait_for(20), capped.wait_for(12), probed.wait_for(6));
    for node in nodes {
        node.shutdown().await;
    }

    let times = |hooks: &[driftwatch_test_support::Received]| hooks.iter().map(|h| h.at).collect::<Vec<_>>();
    let a = times(&a);
    let in_a_second = most_within(&a, Duration::from_secs(1));
    let spread = a[a.len() - 1] - a[0];
    assert!(in_a_second <= 6, "a 5/s endpoint got {in_a_second} in one second across three nodes");
    assert!(spread >= Duration::from_millis(3_500), "20 at 5/s take about 4 s, not {spread:?}");

    let b = times(&b);
    let at_once = most_within(&b, Duration::from_millis(290));
    assert!(at_once <= 2, "max_in_flight 2: {at_once} requests within one request's 300 ms");

    let p = times(&p);
    eprintln!(
        "limits across three nodes ({backend:?}): 5/s endpoint {in_a_second} in its busiest second, 20 over {spread:?}; \
         max_in_flight 2: {at_once} at once; probe, then the next {:?} later",
        p[1] - p[0]
    );
    assert!(
        p[1] - p[0] >= Duration::from_millis(450),
        "one probe first, the rest after it succeeded: {:?}",
        p[1] - p[0]
    );
    assert_eq!(probed.received().len(), 6, "each once");
}

/// Deliveries queued in the instant their endpoint gained a limit carry a stale `limited = false`:
/// the outbox claim takes them, and the worker gives them back flagged, so the cluster-wide cap
/// still holds (without that, three nodes would send them all at once).
pub async fn a_limit_gained_behind_the_flags_still_holds(backend: Backend) {
    use std::time::Duration;
    let db = TestDb::new(backend);
    let capped = Receiver::start(200).await;
    capped.set_delay(Duration::from_millis(300));
    let store = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let url = capped.url.clone();
    store
        .write(move |c| {
            use diesel::prelude::*;
            use driftwatch_store::schema::{deliveries, endpoints as rows};
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "acme", now)?;
            let endpoint = Endpoint::webhook(&account.id, &url, now);
            endpoints::insert_endpoint(c, &endpoint)?;
            c.transaction(|c| queue(c, &account.id, &endpoint.id, 6))?;
            // The limit lands behind `update_endpoint`'s back: the flags stay as queued.
            diesel::update(rows::table.find(&endpoint.id)).set(rows::max_in_flight.eq(Some(1))).execute(c)?;
            let stale: i64 = deliveries::table
                .filter(deliveries::endpoint_id.eq(&endpoint.id))
                .filter(deliveries::limited.eq(false))
                .count()
                .get_result(c)?;
            assert_eq!(stale, 6, "queued before the limit, flagged unlimited");
            Ok(())
        })
        .await
        .expect("seed");

    let nodes = start_nodes(&db).await;
    let hooks = capped.wait_for(6).await;
    for node in nodes {
        node.shutdown().await;
    }
    let arrivals: Vec<_> = hooks.iter().map(|h| h.at).collect();
    let at_once = most_within(&arrivals, Duration::from_millis(290));
    assert!(at_once <= 1, "max_in_flight 1: {at_once} requests within one request's 300 ms");
    assert_eq!(capped.received().len(), 6, "each once");
}

/// A delivery queued by another node (here the test, writing to the outbox as another node's
/// API or checks would, waking nothing in this process) is claimed at once by an idle node: on
/// PostgreSQL the outbox's trigger notifies every listening worker, so the node's poll (an hour
/// here) is not what it waits for. SQLite is one node, woken in-process; nothing listens there.
pub async fn an_idle_node_hears_of_work_queued_elsewhere(backend: Backend) {
    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    if !store.can_listen() {
        assert_eq!(backend, Backend::Sqlite, "only SQLite has no other nodes to hear from");
        return;
    }
    let receiver = Receiver::start(200).await;
    let url = receiver.url.clone();
    let (account_id, endpoint_id) = store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "acme", now)?;
            let endpoint = Endpoint::webhook(&account.id, &url, now);
            endpoints::insert_endpoint(c, &endpoint)?;
            Ok((account.id, endpoint.id))
        })
        .await
        .expect("seed");
    let mut settings = test_settings(&db);
    settings.poll_interval = driftwatch::HumanDuration(std::time::Duration::from_secs(3600));
    let node = App::start(&settings, Roles { web: false, background: true }).await.expect("node starts");
    eventually("the node to listen for queued deliveries", || {
        let store = store.clone();
        async move { (store.read(listeners).await.expect("listeners") == 1).then_some(()) }
    })
    .await;
    // Idle: nothing is due, so the worker sleeps until its poll. Queue one delivery, then another
    // once the first arrived (the node is idle again by then), each heard of by notification.
    for n in 1..=2 {
        let (account, endpoint) = (account_id.clone(), endpoint_id.clone());
        store.write(move |c| c.transaction(|c| queue(c, &account, &endpoint, 1))).await.expect("queue");
        let received = receiver.wait_for(n).await;
        assert_eq!(received.len(), n, "delivered without waiting for the poll");
    }
    node.shutdown().await;
}

/// The outbox's notifications name the pool that queued (so a node's listener skips its own,
/// which woke its worker in-process already); a session of another tool names none.
pub async fn the_outbox_notification_names_who_queued(backend: Backend) {
    use diesel::{Connection as _, RunQueryDsl as _};
    let db = TestDb::new(backend);
    let own = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    own.migrate().await.expect("migrate");
    if !own.can_listen() {
        assert_eq!(backend, Backend::Sqlite, "only SQLite has no notifications");
        return;
    }
    let other = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    assert_ne!(own.origin(), other.origin(), "each pool has its own name");
    let (account_id, endpoint_id) = own
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "acme", now)?;
            let endpoint = Endpoint::webhook(&account.id, "http://127.0.0.1:9/", now);
            endpoints::insert_endpoint(c, &endpoint)?;
            Ok((account.id, endpoint.id))
        })
        .await
        .expect("seed");
    let mut listening = diesel::PgConnection::establish(&db.url).expect("connect");
    diesel::sql_query(format!("LISTEN {}", driftwatch_store::OUTBOX_CHANNEL)).execute(&mut listening).expect("listen");
    let mut heard = Vec::new();
    for store in [&own, &other] {
        let (account, endpoint) = (account_id.clone(), endpoint_id.clone());
        store.write(move |c| c.transaction(|c| queue(c, &account, &endpoint, 2))).await.expect("queue");
        // Committed before `write` returned, so the notification is on its way.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let before = heard.len();
            heard.extend(listening.notifications_iter().map(|n| n.expect("notification").payload));
            if heard.len() > before {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no notification for a queued delivery");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    assert_eq!(heard, [own.origin(), other.origin()], "one notification per queuing transaction, naming its pool");
}

/// Sessions of this database listening on the outbox's channel.
fn listeners(c: &mut driftwatch_store::DbConn) -> driftwatch_store::StoreResult<i64> {
    use diesel::RunQueryDsl as _;
    let driftwatch_store::DbConn::Pg(pg) = c else { return Ok(0) };
    let query = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN {}'",
        driftwatch_store::OUTBOX_CHANNEL
    );
    Ok(diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(&format!("({query})"))).get_result(pg)?)
}

/// A claim takes no more for an endpoint than the node has room for (its per-endpoint cap less
/// what it has in flight there), so nothing is leased only to be given back; each endpoint's
/// share is its oldest due deliveries, and the rest stay for the next claim or another node.
pub async fn a_claim_takes_only_what_each_endpoint_has_room_for(backend: Backend) {
    let db = TestDb::new(backend);
    let store = Store::open(&db.url, &PoolOptions { max_size: 2, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now().naive_utc();
    let (busy, idle) = store
        .write(move |c| {
            let account = accounts::create_account(c, "acme", now)?;
            let mut ids = Vec::new();
            for k in 0..2 {
                let endpoint = Endpoint::webhook(&account.id, &format!("http://127.0.0.1:9/{k}"), now);
                endpoints::insert_endpoint(c, &endpoint)?;
                ids.push(endpoint.id.clone());
            }
            c.transaction(|c| {
                queue(c, &account.id, &ids[0], 40)?;
                queue(c, &account.id, &ids[1], 40)
            })?;
            Ok((ids[0].clone(), ids[1].clone()))
        })
        .await
        .expect("seed");
    let claim = |owner: &'static str, in_flight: Vec<(String, i64)>| {
        let store = store.clone();
        async move {
            store
                .write(move |c| {
                    let room = deliveries::Room { per_endpoint: 16, in_flight: &in_flight };
                    let now = SystemClock.now().naive_utc();
                    deliveries::claim_due(c, owner, now, now + TimeDelta::minutes(5), 100, &[], &room)
                })
                .await
                .expect("claim")
        }
    };
    // Ten in flight to the busy endpoint: six more of it, sixteen of the idle one. A quote in
    // an id of the in-flight map is only data.
    let first = claim("one", vec![(busy.clone(), 10), ("end_x' OR '1'='1".into(), 3)]).await;
    let count = |jobs: &[deliveries::Job], id: &str| jobs.iter().filter(|j| j.endpoint.id == id).count();
    assert_eq!((count(&first, &busy), count(&first, &idle)), (6, 16), "each endpoint's room");
    // Nothing in flight now: the next claim takes the following sixteen of each, no overlap.
    let second = claim("two", Vec::new()).await;
    assert_eq!((count(&second, &busy), count(&second, &idle)), (16, 16));
    let ids: HashSet<&str> = first.iter().chain(&second).map(|j| j.delivery.id.as_str()).collect();
    assert_eq!(ids.len(), 6 + 16 + 16 + 16, "no delivery claimed twice");
    // Each endpoint's share was its oldest: the first claim's are due before the second's.
    let due = |jobs: &[deliveries::Job], id: &str| -> Vec<(chrono::NaiveDateTime, String)> {
        let mut due: Vec<_> = jobs
            .iter()
            .filter(|j| j.endpoint.id == id)
            .map(|j| (j.delivery.next_attempt_at, j.delivery.id.clone()))
            .collect();
        due.sort();
        due
    };
    for id in [&busy, &idle] {
        assert!(due(&first, id).last() < due(&second, id).first(), "{id}: oldest first");
    }
}

//! Several worker nodes on one database drain a large outbox, sending each delivery once.

use std::collections::HashMap;

use diesel::Connection as _;
use driftwatch::{App, Roles};
use driftwatch_core::{Clock as _, EventType, IdKind, SystemClock, new_id};
use driftwatch_store::outbox::{NewEvent, Target};
use driftwatch_store::{Endpoint, Event, PoolOptions, Store, accounts, deliveries, endpoints, outbox};

use crate::support::{Backend, Receiver, TestDb, eventually, test_settings};

const DELIVERIES: usize = 2000;
const NODES: usize = 3;

pub async fn three_workers_send_each_delivery_once(backend: Backend) {
    let db = TestDb::new(backend);
    let receiver = Receiver::start(200).await;
    let store = Store::open(&db.url, &PoolOptions { max_size: 4, ..PoolOptions::default() }).expect("open");
    store.migrate().await.expect("migrate");
    let url = receiver.url.clone();
    let account_id = store
        .run(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "acme", now)?;
            let endpoint = Endpoint { max_in_flight: Some(64), ..Endpoint::webhook(&account.id, &url, now) };
            endpoints::insert_endpoint(c, &endpoint)?;
            c.transaction(|c| {
                for i in 0..DELIVERIES {
                    let id = new_id(IdKind::Event);
                    let event = Event {
                        id: id.clone(),
                        account_id: account.id.clone(),
                        watch_id: None,
                        endpoint_id: Some(endpoint.id.clone()),
                        event_type: EventType::EndpointTest.as_str().into(),
                        previous_snapshot_id: None,
                        snapshot_id: None,
                        added: 0,
                        removed: 0,
                        payload: format!("{{\"n\":{i}}}"),
                        created_at: now,
                    };
                    outbox::enqueue(
                        c,
                        &NewEvent { event, slack_body: String::new() },
                        Target::One(&endpoint.id),
                        5,
                        now,
                    )?;
                }
                Ok(account.id.clone())
            })
        })
        .await
        .expect("seed the outbox");

    let mut nodes = Vec::new();
    for n in 0..NODES {
        let mut settings = test_settings(&db);
        settings.node_id = Some(format!("node-{n}"));
        settings.pool_size = 4;
        nodes.push(App::start(&settings, Roles { web: false, background: true }).await.expect("node starts"));
    }
    let received = receiver.wait_for(DELIVERIES).await;
    let account = account_id.clone();
    eventually("every delivery to be marked sent", || {
        let (store, account) = (store.clone(), account.clone());
        async move {
            let counts = store.run(move |c| deliveries::count_by_status(c, &account)).await.expect("count");
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

//! Moving in from changedetection.io: a backup zip made as cd makes one becomes watches with
//! their filters, tags and whole history, and endpoints routed as cd routed its notification
//! URLs; the second import adds nothing; the first own check takes a new baseline without an
//! alert; a damaged or hostile zip is refused and leaves the account empty.

use driftwatch_core::{Clock, Keyring, SecretKey, SystemClock};
use driftwatch_import::{ReadLimits, Report};
use driftwatch_test_support::{Backend, CdBackup, CdSnapshot, PageServer};
use serde_json::{Value, json};

use crate::support::{TEST_SECRET_KEY, TestApp};

pub const GROUP: &str = "4f1e8a2c-5b6d-4e7f-8a9b-0c1d2e3f4a5b";
pub const WIDGET: &str = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d";
pub const LAMP: &str = "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e";
pub const QUIET: &str = "c3d4e5f6-a7b8-4c9d-8e0f-2a3b4c5d6e7f";

/// The widget page: what the imported watch's first own check reads.
pub fn widget_page(price: &str) -> String {
    format!(
        "<html><body><div class=\"ad\">Buy more!</div><div id=\"price\">{price}</div>\
         <div id=\"stock\">In stock</div><p>Updated at 10:00</p></body></html>"
    )
}

/// A backup of three watches (one without a URL), one group and three notification URLs: the
/// widget's history of three snapshots (one brotli-compressed), a restock watch rendered in a
/// browser with steps, and a paused watch that falls back to the global URL.
pub fn backup(site: &str) -> CdBackup {
    let settings = json!({
        "app_guid": "2b0d2d8e-2d5e-4f8e-9c39-6c0b5e1b8f00",
        "version_tag": "0.60.10",
        "settings": {
            "application": {
                "api_access_token": "cd-api-token-never-imported",
                "fetch_backend": "html_requests",
                "global_ignore_text": ["Updated at"],
                "global_subtractive_selectors": [],
                "notification_urls": ["json://127.0.0.1:9/global"],
                "tags": {}
            },
            "requests": {"time_between_check": {"weeks": null, "days": null, "hours": 3, "minutes": null, "seconds": null}}
        }
    });
    let widget = json!({
        "url": format!("{site}?widget"), "title": "Widget price", "tags": [GROUP], "processor": "text_json_diff",
        "include_filters": ["#price", "xpath://div[@id='stock']"], "subtractive_selectors": [".ad"],
        "time_between_check_use_default": false,
        "time_between_check": {"weeks": null, "days": null, "hours": null, "minutes": 30, "seconds": null},
        "fetch_backend": "system", "headers": {"X-From": "cd"}, "notification_urls": [], "date_created": 1_700_000_000,
        "paused": false, "check_unique_lines": false, "conditions": []
    });
    let lamp = json!({
        "url": format!("{site}?lamp"), "title": "Lamp", "tags": [GROUP], "processor": "restock_diff",
        "fetch_backend": "html_webdriver", "notification_urls": ["tgram://123456:ABCdef/987654"],
        "browser_steps": [
            {"operation": "Goto site", "selector": "", "optional_value": ""},
            {"operation": "Click element", "selector": "#accept", "optional_value": ""},
            {"operation": "Execute JS", "selector": "", "optional_value": "window.x = 1"}
        ],
        "conditions": [{"field": "page_filtered_text", "operator": "contains_regex", "argument": "x"}],
        "date_created": 1_700_000_001
    });
    let quiet = json!({"url": format!("{site}?quiet"), "title": "", "paused": true, "date_created": 1_700_000_002});
    CdBackup::new(settings)
        .group(GROUP, "Shops", &["ntfy://127.0.0.1:9/shops"])
        .watch(WIDGET, widget, &[
            CdSnapshot::text(1_700_000_100, "10.00 EUR\nIn stock"),
            CdSnapshot::brotli(1_700_003_700, "11.00 EUR\nIn stock"),
            CdSnapshot::text(1_700_007_300, "12.00 EUR\nIn stock"),
        ])
        .watch(LAMP, lamp, &[CdSnapshot::text(1_700_000_200, "Lamp\nOut of stock")])
        .member(
            &format!("{LAMP}/restock_diff.json"),
            br#"{"restock_diff": {"in_stock_processing": "in_stock_only", "price_change_min": 50, "follow_price_changes": true}}"#,
        )
        .watch(QUIET, quiet, &[])
        .watch("d4e5f6a7-b8c9-4d0e-9f1a-3b4c5d6e7f80", json!({"title": "no address"}), &[])
}

/// Imports `bytes` into `account` as `driftwatch import` does.
pub async fn import(app: &TestApp, account: &str, bytes: Vec<u8>, limits: ReadLimits) -> Result<Report, String> {
    let store = app.app.as_ref().expect("running").store.clone();
    let name = account.to_owned();
    let account_id = store
        .read(move |c| driftwatch_store::accounts::find_account_by_name(c, &name))
        .await
        .expect("lookup")
        .expect("account")
        .id;
    let plan = driftwatch_import::read(bytes, &limits).map_err(|e| e.to_string())?;
    store
        .write(move |c| {
            let keyring = Keyring::new(SecretKey::from_base64(TEST_SECRET_KEY).expect("key"), Vec::new());
            let rules = driftwatch_validate::Limits {
                min_interval_seconds: 1,
                browser_available: true,
                ..driftwatch_validate::Limits::default()
            };
            let target = driftwatch_import::Target {
                account_id: &account_id,
                limits: &rules,
                policy: driftwatch_net::TargetPolicy { allow_private: true },
                now: SystemClock.now(),
                keyring: Some(&keyring),
                max_text_bytes: 1 << 20,
            };
            Ok(driftwatch_import::apply(c, plan, &target).map_err(|e| e.to_string()))
        })
        .await
        .expect("store")
}

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

pub async fn a_changedetection_backup_moves_in_with_its_history(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&widget_page("12.00 EUR")).await;
    let zip = backup(&site.url).zip();

    let report = import(&app, "acme", zip.clone(), ReadLimits::default()).await.expect("imported");
    assert_eq!((report.watches_created, report.watches_skipped, report.snapshots), (3, 0, 4), "{report:?}");
    let kinds: Vec<(&str, usize)> = report.endpoints_created.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(kinds, [("http", 1), ("ntfy", 1), ("telegram", 1)], "{report:?}");
    let problems: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
    for expected in ["Lamp: browser step 3 (Execute JS)", "Lamp: its conditions", "watch d4e5f6a7"] {
        assert!(problems.iter().any(|p| p.starts_with(expected)), "{expected}: {problems:#?}");
    }
    assert!(!format!("{report:?}").contains("cd-api-token"), "cd's own token is never read");

    let watches = items(&app.ok("/watches?limit=50", &token).await);
    assert_eq!(watches.len(), 3, "{watches:#?}");
    let find = |name: &str| watches.iter().find(|w| w["name"] == name).cloned().unwrap_or_else(|| panic!("{name}"));
    let widget = find("Widget price");
    assert_eq!(widget["url"], format!("{}?widget", site.url));
    assert_eq!(widget["selector"], "#price, div[id=\"stock\"]");
    assert_eq!(widget["interval_seconds"], 1800);
    assert_eq!(widget["tags"], json!(["shops"]));
    assert_eq!(widget["options"]["extract"]["remove_selectors"], json!([".ad"]));
    assert_eq!(widget["options"]["rules"]["ignore_lines"], json!(["(?i)Updated at"]));
    assert_eq!(widget["options"]["fetch"]["headers"], json!({"X-From": "cd"}));
    let lamp = find("Lamp");
    assert_eq!(lamp["options"]["fetch"]["engine"], "browser");
    assert_eq!(lamp["options"]["fetch"]["steps"], json!([{"action": "click", "selector": "#accept"}]));
    let values: Vec<&str> =
        lamp["options"]["values"].as_array().expect("values").iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(values, ["price", "stock"]);
    assert_eq!(lamp["options"]["conditions"]["match"], "any", "{lamp}");
    assert_eq!(lamp["options"]["conditions"]["rules"].as_array().map(Vec::len), Some(2), "{lamp}");
    let quiet = find(&format!("{}?quiet", site.url));
    assert_eq!((quiet["state"].as_str(), &quiet["interval_seconds"]), (Some("paused"), &json!(3 * 3600)));

    // Every snapshot, with its time and text, oldest to newest.
    let widget_id = widget["id"].as_str().expect("id");
    let snapshots = items(&app.ok(&format!("/watches/{widget_id}/snapshots"), &token).await);
    let times: Vec<&str> = snapshots.iter().rev().filter_map(|s| s["created_at"].as_str()).collect();
    assert_eq!(times, ["2023-11-14T22:15:00Z", "2023-11-14T23:15:00Z", "2023-11-15T00:15:00Z"]);
    let newest = snapshots[0]["id"].as_str().expect("id");
    let content = app.ok(&format!("/snapshots/{newest}"), &token).await;
    assert_eq!(content["content"], "12.00 EUR\nIn stock");
    let brotli = snapshots[1]["id"].as_str().expect("id");
    assert_eq!(app.ok(&format!("/snapshots/{brotli}"), &token).await["content"], "11.00 EUR\nIn stock");

    // Routed as cd routed them: the lamp's own, the group's for the widget, the global for the rest.
    let endpoints = items(&app.ok("/endpoints", &token).await);
    let route = |kind: &str| endpoints.iter().find(|e| e["kind"] == kind).map(|e| e["route"].clone()).expect(kind);
    let lamp_id = lamp["id"].as_str().expect("id");
    let quiet_id = quiet["id"].as_str().expect("id");
    assert_eq!(route("telegram")["watches"], json!([lamp_id]), "{endpoints:#?}");
    assert_eq!(route("ntfy")["watches"], json!([widget_id]), "the group's other watch had its own");
    assert_eq!(route("http")["watches"], json!([quiet_id]));

    // Run twice: nothing new.
    let again = import(&app, "acme", zip, ReadLimits::default()).await.expect("imported again");
    assert_eq!((again.watches_created, again.watches_skipped, again.snapshots), (0, 3, 0), "{again:?}");
    assert!(again.endpoints_created.is_empty() && again.endpoints_skipped == 3, "{again:?}");
    assert_eq!(items(&app.ok("/watches?limit=50", &token).await).len(), 3);
    assert_eq!(items(&app.ok("/endpoints", &token).await).len(), 3);

    // The first own check: the page has not changed, our text differs from cd's; a new
    // baseline, said on the run, and no event. The next real change is an alert.
    let run = app.check(&token, widget_id).await;
    assert_eq!(run["outcome"], "baseline", "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("imported")), "{run}");
    assert_eq!(run["event_id"], Value::Null, "{run}");
    site.set(&widget_page("9.00 EUR"));
    let run = app.check(&token, widget_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let snapshots = items(&app.ok(&format!("/watches/{widget_id}/snapshots"), &token).await);
    assert_eq!(snapshots.len(), 5, "three imported, our baseline, the change");
}

pub async fn a_bad_backup_is_refused_and_imports_nothing(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = "http://127.0.0.1:9/";
    let good = backup(site).zip();
    let refusals: Vec<(&str, Vec<u8>, ReadLimits, &str)> = vec![
        ("truncated", good[..good.len() / 2].to_vec(), ReadLimits::default(), "cannot be read as one"),
        ("a climbing name", backup(site).member("../evil.txt", b"x").zip(), ReadLimits::default(), "outside itself"),
        ("an absolute name", backup(site).member("/tmp/evil.txt", b"x").zip(), ReadLimits::default(), "outside itself"),
        (
            "a bomb",
            backup(site)
                .watch(
                    "e5f6a7b8-c9d0-4e1f-8a2b-4c5d6e7f8091",
                    json!({"url": format!("{site}?bomb")}),
                    &[CdSnapshot::text(1_700_000_000, &"0".repeat(200_000))],
                )
                .zip(),
            ReadLimits { member_bytes: 64 << 10, ..ReadLimits::default() },
            "inflates past",
        ),
        (
            "malformed JSON",
            backup(site).member("f6a7b8c9-d0e1-4f2a-8b3c-5d6e7f8091a2/watch.json", b"{\"url\": ").zip(),
            ReadLimits::default(),
            "not valid JSON",
        ),
        ("not a zip", vec![0x89, b'P', b'N', b'G', 0, 1, 2, 3, 0xff, 0xfe], ReadLimits::default(), "neither a zip"),
        (
            "a zip of something else",
            CdBackup::zip_of(&[("notes/readme.txt", b"hello")]),
            ReadLimits::default(),
            "not a changedetection.io backup",
        ),
    ];
    for (what, bytes, limits, expected) in refusals {
        let error = import(&app, "acme", bytes, limits).await.expect_err(what);
        assert!(error.contains(expected), "{what}: {error}");
        assert!(items(&app.ok("/watches", &token).await).is_empty(), "{what}: nothing imported");
        assert!(items(&app.ok("/endpoints", &token).await).is_empty(), "{what}: nothing imported");
    }
    // Members are read, never extracted: the names that climb out were never written.
    assert!(!std::path::Path::new("/tmp/evil.txt").exists() && !std::path::Path::new("../evil.txt").exists());
}

/// The import page: a file is shown as what it will create and what cannot be mapped, nothing
/// is created until the import is confirmed, the confirmation is the uploader's alone, and a
/// bad file is said beside the field. In a browser: the pages look right, light, dark and at
/// phone width.
pub async fn the_import_page_previews_then_imports(backend: Backend) {
    use crate::pages::{header, sign_in, user};
    let app = TestApp::start(backend).await;
    let token = user(&app, "Acme", "ada@example.com").await;
    user(&app, "Other", "bob@example.com").await;
    let site = PageServer::start(&widget_page("12.00 EUR")).await;
    let zip = backup(&site.url).zip();
    let ada = sign_in(&app, "ada@example.com").await;
    let home = ada.get("/").await.text().await.expect("page");
    assert!(home.contains("href=\"/import\""), "the watches page leads to the import");

    let refused = ada.upload("/import", "backup.zip", zip.clone(), false).await;
    assert_eq!(refused.status(), 403, "no token, no upload");
    let empty = ada.upload("/import", "", Vec::new(), true).await;
    assert_eq!(empty.status(), 422);
    assert!(empty.text().await.expect("page").contains("id=\"e-file\""), "the error beside the field");
    let garbage = ada.upload("/import", "photo.png", vec![0x89, b'P', b'N', b'G', 0, 1, 2], true).await;
    assert_eq!(garbage.status(), 422);
    let page = garbage.text().await.expect("page");
    assert!(page.contains("id=\"e-file\"") && page.contains("neither a zip"), "{page}");

    let preview = ada.upload("/import", "changedetection-backup-20261207.zip", zip.clone(), true).await;
    assert_eq!(preview.status(), 200);
    let page = preview.text().await.expect("page");
    for expected in [
        "a changedetection.io backup",
        "<strong>3</strong> watches",
        "<strong>4</strong> snapshots",
        "Execute JS",
        "Widget price",
    ] {
        assert!(page.contains(expected), "{expected}: {page}");
    }
    assert!(!page.contains("ABCdef") && !page.contains("cd-api-token"), "no token of the file is shown");
    assert!(items(&app.ok("/watches", &token).await).is_empty(), "nothing created by the preview");
    let id = page.split("action=\"/import/").nth(1).and_then(|rest| rest.split('"').next()).expect("the confirm form");

    // Another account's user cannot confirm it; its uploader can, once.
    let bob = sign_in(&app, "bob@example.com").await;
    let stolen = bob.submit(&format!("/import/{id}"), &[]).await;
    assert_eq!((stolen.status().as_u16(), header(&stolen, "location")), (303, "/import".to_owned()));
    let done = ada.submit(&format!("/import/{id}"), &[]).await;
    assert_eq!((done.status().as_u16(), header(&done, "location")), (303, "/".to_owned()));
    let home = ada.get("/").await.text().await.expect("page");
    assert!(home.contains("Imported 3 watches with 4 snapshots of history and 3 endpoints"), "{home}");
    assert_eq!(items(&app.ok("/watches?limit=50", &token).await).len(), 3);
    let again = ada.submit(&format!("/import/{id}"), &[]).await;
    assert_eq!(header(&again, "location"), "/import", "an upload is imported once");
    assert_eq!(items(&app.ok("/watches?limit=50", &token).await).len(), 3);

    let Some(browser) = crate::browser::Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    crate::ui::set_up(&browser, &app).await;
    crate::ui::look(&browser, "watches-empty-with-import").await;
    browser.goto(&format!("{}/import", app.root())).await;
    crate::ui::look(&browser, "import").await;
    browser.submit_form("form[action='/import']").await;
    assert!(browser.wait_for_text("#e-file", "Choose a file").await.contains("Choose a file"));
    crate::ui::look(&browser, "import-error").await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("changedetection-backup-20261207.zip");
    std::fs::write(&file, &zip).expect("write");
    browser.attach("#f-file", &file).await;
    browser.submit_form("form[action='/import']").await;
    browser.wait_for_text("h1", "check and confirm").await;
    crate::ui::look(&browser, "import-preview").await;
    if let Some(wide) = crate::polish::sideways_at_phone_width(&browser).await {
        panic!("the preview scrolls sideways at phone width: {wide}");
    }
    browser.submit_form("form[action^='/import/']").await;
    browser.wait_for_text("h1", "Watches").await;
    assert!(browser.text("main").await.contains("Imported 3 watches"));
    crate::ui::look(&browser, "watches-after-import").await;
}

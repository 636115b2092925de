//! Renders in a real Chromium (skipped, with one line, when none is installed; required under
//! `DRIFTWATCH_REQUIRE_BROWSER=1`): scripts run, steps act, screenshots are taken, and the
//! guard refuses what the page asks of private addresses.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use driftwatch_browser::{BrowserConfig, Browsers, RenderError, RenderRequest};
use driftwatch_core::{FetchSpec, ScreenshotMode, Step, Wait};
use driftwatch_net::TargetPolicy;

/// The default settings, Chromium looked for on this process's `PATH`.
fn on_path() -> BrowserConfig {
    BrowserConfig { search_path: std::env::var_os("PATH"), ..BrowserConfig::default() }
}

/// A browser allowed to reach loopback (the test pages live there), or `None` to skip.
fn browsers(policy: TargetPolicy) -> Option<Browsers> {
    let browsers = Browsers::new(BrowserConfig { policy, ..on_path() });
    if browsers.available() {
        return Some(browsers);
    }
    if std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
        panic!("DRIFTWATCH_REQUIRE_BROWSER=1 but {}", browsers.unavailable_reason());
    }
    eprintln!("SKIPPED browser render tests: {}", browsers.unavailable_reason());
    None
}

/// Serves `routes` (path -> (content type, body)) on loopback, counting every request.
async fn serve(routes: Vec<(&'static str, &'static str, String)>) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let held = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let routes = routes.clone();
            let counter = counter.clone();
            let held = held.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0u8; 8192];
                let mut read = 0;
                loop {
                    let Ok(n) = socket.read(&mut buf[read..]).await else { return };
                    if n == 0 {
                        return;
                    }
                    read += n;
                    if buf[..read].windows(4).any(|w| w == b"\r\n\r\n") || read == buf.len() {
                        break;
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let head = String::from_utf8_lossy(&buf[..read]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                if path == "/slow" {
                    // Never answers in a test's time: the render hangs on it.
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                if path == "/held" && held.fetch_add(1, Ordering::SeqCst) == 0 {
                    // The first ask hangs like /slow; later ones are answered.
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                let (status, kind, body) = match routes.iter().find(|(p, _, _)| *p == path) {
                    Some((_, kind, body)) => ("200 OK", *kind, body.clone()),
                    None => ("404 Not Found", "text/plain", "not here".to_owned()),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), hits)
}

const PRICE_PAGE: &str = r#"<!doctype html><html><body><h1>Shop</h1><div id="price"></div>
<script>document.getElementById('price').textContent = 'Price: ' + (40 + 2) + ' EUR';</script></body></html>"#;

fn request<'a>(url: &'a str, spec: &'a FetchSpec) -> RenderRequest<'a> {
    RenderRequest::new(url, spec, None, Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_run_steps_act_and_screenshots_are_taken() {
    let Some(browsers) = browsers(TargetPolicy { allow_private: true }) else { return };
    let banner = r#"<!doctype html><html><body>
<div id="banner">We use cookies <button id="accept" onclick="document.getElementById('banner').remove(); document.getElementById('content').textContent = 'Welcome in';">Accept</button></div>
<div id="content">hidden until accepted</div>
<select id="size"><option value="s">S</option><option value="m">M</option></select><p id="chosen"></p>
<script>document.getElementById('size').addEventListener('change', e => document.getElementById('chosen').textContent = 'size ' + e.target.value);</script>
</body></html>"#;
    let (base, _) =
        serve(vec![("/price", "text/html", PRICE_PAGE.into()), ("/banner", "text/html", banner.into())]).await;

    let spec = FetchSpec { wait: Some(Wait::Text("#price".into())), ..FetchSpec::default() };
    let url = format!("{base}/price");
    let rendered = browsers.render(request(&url, &spec)).await.expect("rendered");
    assert!(rendered.html.contains("Price: 42 EUR"), "{}", rendered.html);
    assert_eq!(rendered.status, Some(200));
    assert!(rendered.screenshot.is_none());

    let spec = FetchSpec {
        steps: vec![
            Step::Click { selector: "#accept".into() },
            Step::Select { selector: "#size".into(), value: "m".into() },
        ],
        screenshot: ScreenshotMode::Viewport,
        ..FetchSpec::default()
    };
    let url = format!("{base}/banner");
    let rendered = browsers.render(request(&url, &spec)).await.expect("rendered");
    assert!(rendered.html.contains("Welcome in") && !rendered.html.contains("We use cookies"), "{}", rendered.html);
    assert!(rendered.html.contains("size m"), "{}", rendered.html);
    let shot = rendered.screenshot.expect("a screenshot");
    assert_eq!((shot.width, shot.height), (1280, 900));
    assert_eq!(&shot.bytes[..4], b"RIFF", "WebP");

    let spec = FetchSpec { steps: vec![Step::Click { selector: "#nothing-like-it".into() }], ..FetchSpec::default() };
    let short = RenderRequest { timeout: Duration::from_secs(3), ..request(&url, &spec) };
    match browsers.render(short).await {
        Err(e @ RenderError::Step { number: 1, .. }) => {
            let message = e.to_string();
            assert!(message.starts_with("step 1 (click #nothing-like-it): no element matched"), "{message}");
        }
        other => panic!("a step whose element never appears fails, naming itself: {other:?}"),
    }
    // The browser is still fine for the next page.
    let spec = FetchSpec::default();
    let url = format!("{base}/price");
    assert!(browsers.render(request(&url, &spec)).await.expect("rendered").html.contains("42 EUR"));
    browsers.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_keeps_a_page_from_reaching_private_addresses() {
    // The loopback server the page tries to reach: it must see no request at all.
    let (private, hits) = serve(vec![
        ("/secret", "text/plain", "secret".into()),
        ("/x.js", "text/javascript", "document.title = 'pwned';".into()),
        ("/pixel.png", "image/png", "x".into()),
    ])
    .await;
    let port = private.rsplit(':').next().expect("port");
    // The page itself stands in for a public one: its exact address is exempted from the
    // policy (as an operator may exempt one internal service); nothing else is.
    let page = format!(
        r#"<!doctype html><html><body><p id="state">loading</p>
<img src="{private}/pixel.png"><script src="{private}/x.js"></script>
<iframe src="{private}/secret"></iframe><iframe src="http://localhost:{port}/secret"></iframe>
<link rel="stylesheet" href="http://[::1]:{port}/secret">
<script>
  const out = [];
  const note = t => {{ out.push(t); document.getElementById('state').textContent = out.join(' '); }};
  fetch('{private}/secret').then(r => r.text()).then(t => note('fetch:' + t), () => note('fetch:refused'));
  try {{ const ws = new WebSocket('ws://127.0.0.1:{port}/ws'); ws.onerror = () => note('ws:refused'); ws.onopen = () => note('ws:open'); }} catch (e) {{ note('ws:refused'); }}
  const x = new XMLHttpRequest(); x.open('GET', 'http://127.0.0.1:{port}/secret'); x.onload = () => note('xhr:' + x.responseText); x.onerror = () => note('xhr:refused'); x.send();
</script></body></html>"#
    );
    let (public, public_hits) = serve(vec![("/", "text/html", page)]).await;
    let public_addr: std::net::SocketAddr = public.trim_start_matches("http://").parse().expect("addr");
    let browsers = Browsers::new(BrowserConfig {
        policy: TargetPolicy { allow_private: false },
        exempt: vec![public_addr],
        ..on_path()
    });
    if !browsers.available() {
        let _ = self::browsers(TargetPolicy::default());
        return;
    }
    let spec = FetchSpec { wait: Some(Wait::Text("network_idle".into())), ..FetchSpec::default() };
    let url = format!("{public}/");
    let rendered = browsers.render(request(&url, &spec)).await.expect("the public page renders");
    assert!(public_hits.load(Ordering::SeqCst) >= 1);
    assert!(rendered.html.contains("fetch:refused"), "{}", rendered.html);
    assert!(rendered.html.contains("xhr:refused"), "{}", rendered.html);
    assert!(rendered.html.contains("ws:refused"), "{}", rendered.html);
    assert!(!rendered.html.contains("pwned") && !rendered.html.contains("secret</"), "{}", rendered.html);
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the private server saw no request");
    let (passed, refused) = browsers.proxy_counts().await.expect("the proxy ran");
    assert!(passed >= 1 && refused >= 5, "passed {passed}, refused {refused}");

    // Asked for directly, a private page is refused before the browser is asked.
    match browsers.render(request(&format!("{private}/secret"), &FetchSpec::default())).await {
        Err(RenderError::Target(why)) => assert!(why.contains("private") || why.contains("loopback"), "{why}"),
        other => panic!("a private page is refused: {other:?}"),
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    browsers.shutdown(Duration::from_secs(5)).await;
}

/// Waits (up to 20 s) for `done`, looking every 20 ms.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_killed_mid_render_fails_that_render_and_the_next_one_works() {
    let Some(browsers) = browsers(TargetPolicy { allow_private: true }) else { return };
    let (base, hits) = serve(vec![("/price", "text/html", PRICE_PAGE.into())]).await;
    let spec = FetchSpec::default();
    let price = format!("{base}/price");
    browsers.render(request(&price, &spec)).await.expect("first render");
    let first = browsers.stats().await.pid.expect("a local browser runs");
    assert!(driftwatch_browser::group_members(first).len() > 1, "Chromium runs as a group of processes");

    let slow = format!("{base}/slow");
    let hanging = {
        let browsers = browsers.clone();
        tokio::spawn(async move {
            let spec = FetchSpec::default();
            browsers.render(RenderRequest::new(&slow, &spec, None, Duration::from_secs(30))).await
        })
    };
    until("the hanging page to be asked for", || hits.load(Ordering::SeqCst) >= 2).await;
    let killed = std::process::Command::new("kill").args(["-KILL", &first.to_string()]).status().expect("kill");
    assert!(killed.success());
    match hanging.await.expect("joined") {
        Err(e) => assert_eq!(e.kind(), "browser", "{e}"),
        Ok(_) => panic!("a render whose browser died cannot succeed"),
    }
    let rendered = browsers.render(request(&price, &spec)).await.expect("the next render starts a new browser");
    assert!(rendered.html.contains("42 EUR"));
    let second = browsers.stats().await.pid.expect("a local browser runs");
    assert_ne!(first, second);
    assert_eq!(browsers.stats().await.starts, 2);
    until("the killed browser's processes to be gone", || driftwatch_browser::group_members(first).is_empty()).await;
    browsers.shutdown(Duration::from_secs(5)).await;
    until("every Chromium process to be gone", || driftwatch_browser::group_members(second).is_empty()).await;
    assert!(browsers.render(request(&price, &spec)).await.is_err(), "no renders after shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_screenshot_images_fonts_and_media_are_not_fetched() {
    let Some(browsers) = browsers(TargetPolicy { allow_private: true }) else { return };
    let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>"#;
    let (assets, asked) =
        serve(vec![("/pic.svg", "image/svg+xml", svg.into()), ("/font.woff2", "font/woff2", "x".into())]).await;
    let page = format!(
        "<style>@font-face {{ font-family: F; src: url({assets}/font.woff2) }} p {{ font-family: F }}</style>\
         <img src=\"{assets}/pic.svg\"><video src=\"{assets}/clip.mp4\" preload=\"auto\"></video>{PRICE_PAGE}<p>text</p>"
    );
    let (base, _) = serve(vec![("/page", "text/html", page)]).await;
    let url = format!("{base}/page");

    let plain = FetchSpec::default();
    let rendered = browsers.render(request(&url, &plain)).await.expect("render without a screenshot");
    assert!(rendered.html.contains("42 EUR") && rendered.html.contains("pic.svg"), "{}", rendered.html);
    assert_eq!(asked.load(Ordering::SeqCst), 0, "no image, font or video is asked for");

    let shot = FetchSpec { screenshot: ScreenshotMode::Viewport, ..FetchSpec::default() };
    let rendered = browsers.render(request(&url, &shot)).await.expect("render with a screenshot");
    assert!(rendered.screenshot.is_some());
    assert!(asked.load(Ordering::SeqCst) >= 2, "a screenshot shows the image and the font: they are fetched");
    browsers.shutdown(Duration::from_secs(5)).await;
}

/// The renderer processes of the browser whose main process is `pid`.
fn renderers(pid: u32) -> Vec<u32> {
    driftwatch_browser::group_members(pid)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--type=renderer"))
        })
        .collect()
}

/// Kills every renderer of the browser whose main process is `pid`; how many it killed.
fn kill_renderers(pid: u32) -> usize {
    let found = renderers(pid);
    for renderer in &found {
        let _ = std::process::Command::new("kill").args(["-KILL", &renderer.to_string()]).status();
    }
    found.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_renderer_is_named_and_tried_once_more_in_the_same_browser() {
    let Some(browsers) = browsers(TargetPolicy { allow_private: true }) else { return };
    let page = "<p id=\"x\"></p><script>fetch('/held').then(r => r.text()).then(t => x.textContent = t)</script>";
    let (base, hits) =
        serve(vec![("/page", "text/html", page.into()), ("/held", "text/plain", "held price".into())]).await;
    let (url, spec) = (format!("{base}/page"), FetchSpec::default());
    // A minute: far more than the test needs, so only the crash, noticed, ends the first try.
    let render = || {
        let (browsers, url, spec) = (browsers.clone(), url.clone(), spec.clone());
        tokio::spawn(async move {
            browsers.render(RenderRequest::new(&url, &spec, Some("#x"), Duration::from_secs(60))).await
        })
    };

    // The first try hangs on /held; its renderer is killed; the second try is answered.
    let rendering = render();
    until("the page to ask for /held", || hits.load(Ordering::SeqCst) >= 2).await;
    let pid = browsers.stats().await.pid.expect("a local browser runs");
    assert!(kill_renderers(pid) > 0, "the page has a renderer");
    let rendered = rendering.await.expect("joined").expect("the second try renders");
    assert!(rendered.html.contains("held price"), "{}", rendered.html);
    let note = rendered.note.unwrap_or_default();
    assert!(note.contains("crashed the browser's renderer") && note.contains("second try"), "{note}");
    assert_eq!(browsers.stats().await.pid, Some(pid), "a renderer's crash leaves the browser running");

    // A renderer that dies on every try fails the render as a crash, not as a slow page.
    let slow = format!("{base}/slow");
    let (b, s) = (browsers.clone(), spec.clone());
    let rendering =
        tokio::spawn(async move { b.render(RenderRequest::new(&slow, &s, None, Duration::from_secs(60))).await });
    let mut killed = 0;
    while !rendering.is_finished() {
        killed += kill_renderers(pid);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    match rendering.await.expect("joined") {
        Err(e) => assert_eq!(e.kind(), "crashed", "{e} (killed {killed} renderers)"),
        Ok(r) => panic!("a page whose renderer always dies cannot render: {}", r.html),
    }
    let rendered = browsers.render(request(&format!("{base}/page"), &spec)).await.expect("the browser renders on");
    assert!(rendered.note.is_none(), "{:?}", rendered.note);
    browsers.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renders_share_nothing_typing_and_keys_work_and_the_browser_is_recycled() {
    let Some(_) = browsers(TargetPolicy { allow_private: true }) else { return };
    let browsers =
        Browsers::new(BrowserConfig { policy: TargetPolicy { allow_private: true }, recycle_after: 3, ..on_path() });
    let memory = r#"<!doctype html><html><body><p id="before"></p><script>
document.getElementById('before').textContent = 'cookie=[' + document.cookie + '] stored=[' + (localStorage.getItem('k') || '') + ']';
document.cookie = 'visited=yes; max-age=3600'; localStorage.setItem('k', 'v');
</script></body></html>"#;
    let search = r#"<!doctype html><html><body><input id="q"><p id="out"></p><script>
document.getElementById('q').addEventListener('keydown', e => { if (e.key === 'Enter') document.getElementById('out').textContent = 'searched ' + e.target.value; });
</script></body></html>"#;
    let (base, _) = serve(vec![("/memory", "text/html", memory.into()), ("/search", "text/html", search.into())]).await;
    let url = format!("{base}/memory");
    let spec = FetchSpec::default();
    let mut pids = Vec::new();
    for _ in 0..4 {
        let rendered = browsers.render(request(&url, &spec)).await.expect("rendered");
        assert!(rendered.html.contains("cookie=[] stored=[]"), "nothing carried over: {}", rendered.html);
        pids.push(browsers.stats().await.pid.expect("pid"));
    }
    assert_eq!(pids[0], pids[2], "one browser for three renders");
    assert_ne!(pids[2], pids[3], "then a fresh one");
    assert_eq!(browsers.stats().await.starts, 2);

    let spec = FetchSpec {
        steps: vec![
            Step::Type { selector: "#q".into(), text: "running shoes".into() },
            Step::Press { key: "Enter".into() },
        ],
        ..FetchSpec::default()
    };
    let url = format!("{base}/search");
    let rendered = browsers.render(request(&url, &spec)).await.expect("rendered");
    assert!(rendered.html.contains("searched running shoes"), "{}", rendered.html);
    let spec = FetchSpec { steps: vec![Step::Press { key: "NoSuchKey".into() }], ..FetchSpec::default() };
    match browsers.render(request(&url, &spec)).await {
        Err(RenderError::Step { number: 1, reason, .. }) => assert!(reason.contains("NoSuchKey"), "{reason}"),
        other => panic!("an unknown key fails its step: {other:?}"),
    }
    browsers.shutdown(Duration::from_secs(5)).await;
    until("the browsers to be gone", || pids.iter().all(|p| driftwatch_browser::group_members(*p).is_empty())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_browser_renders_behind_the_same_guard() {
    let Some(local) = browsers(TargetPolicy::default()) else { return };
    drop(local);
    let chromium = driftwatch_browser::find_chromium(None, std::env::var_os("PATH").as_deref()).expect("chromium");
    let profile = tempfile::tempdir().expect("profile");
    // A browser someone else runs: its DevTools endpoint is all driftwatch is given.
    let mut remote = tokio::process::Command::new(chromium)
        .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0", "about:blank"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("chromium starts");
    let stderr = remote.stderr.take().expect("stderr");
    let ws = tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                return url.trim().to_owned();
            }
        }
        panic!("no DevTools address");
    })
    .await
    .expect("DevTools address in time");
    let (private, hits) = serve(vec![("/price", "text/html", PRICE_PAGE.into())]).await;
    let addr: std::net::SocketAddr = private.trim_start_matches("http://").parse().expect("addr");
    let browsers = Browsers::new(BrowserConfig { remote: Some(ws), exempt: vec![addr], ..on_path() });
    assert!(browsers.available());
    let spec = FetchSpec::default();
    let rendered = browsers.render(request(&format!("{private}/price"), &spec)).await.expect("rendered remotely");
    assert!(rendered.html.contains("42 EUR"));
    assert_eq!(browsers.stats().await.pid, None, "nothing started locally");
    assert!(hits.load(Ordering::SeqCst) >= 1, "the page (and its favicon) came through the guard");
    // The remote browser's traffic goes through the guard too: another loopback port is refused.
    let (other, other_hits) = serve(vec![("/", "text/html", "<p>internal</p>".into())]).await;
    let page = format!(r#"<!doctype html><html><body><img src="{other}/"><p>public</p></body></html>"#);
    let (public, _) = serve(vec![("/", "text/html", page)]).await;
    let public_addr: std::net::SocketAddr = public.trim_start_matches("http://").parse().expect("addr");
    let browsers = Browsers::new(BrowserConfig {
        remote: browsers.config().remote.clone(),
        exempt: vec![public_addr],
        ..on_path()
    });
    let spec = FetchSpec { wait: Some(Wait::Text("network_idle".into())), ..FetchSpec::default() };
    browsers.render(request(&format!("{public}/"), &spec)).await.expect("rendered remotely");
    assert_eq!(other_hits.load(Ordering::SeqCst), 0);
    browsers.shutdown(Duration::from_secs(2)).await;
    let _ = remote.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_over_its_memory_cap_is_replaced() {
    let Some(_) = browsers(TargetPolicy { allow_private: true }) else { return };
    // Any Chromium uses more than a byte: measured every tenth render, it is replaced then.
    let browsers =
        Browsers::new(BrowserConfig { policy: TargetPolicy { allow_private: true }, memory_cap: 1, ..on_path() });
    let (base, _) = serve(vec![("/price", "text/html", PRICE_PAGE.into())]).await;
    let (url, spec) = (format!("{base}/price"), FetchSpec::default());
    let mut pids = Vec::new();
    for _ in 0..11 {
        browsers.render(request(&url, &spec)).await.expect("rendered");
        pids.push(browsers.stats().await.pid.expect("pid"));
    }
    // Measured before every tenth render: the tenth runs in a new browser.
    assert!(pids[..9].iter().all(|p| *p == pids[0]), "{pids:?}");
    assert_ne!(pids[9], pids[0], "replaced once measured over its cap: {pids:?}");
    assert_eq!(pids[9], pids[10]);
    browsers.shutdown(Duration::from_secs(5)).await;
}

/// Rendering a plain page, the guard refuses none of the page's requests. What Chromium asks
/// for itself (Debian's build turns on extension updates and sign-in, whatever the flags say:
/// `update.googleapis.com`, `clients2.google.com`, `accounts.google.com`) arrives on the
/// proxy's other listener, counted apart (and logged at DEBUG, not INFO).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_page_makes_the_guard_refuse_nothing() {
    let Some(browsers) = browsers(TargetPolicy { allow_private: true }) else { return };
    let (base, hits) =
        serve(vec![("/", "text/html", "<!doctype html><html><body><p>plain</p></body></html>".into())]).await;
    let url = format!("{base}/");
    for _ in 0..2 {
        let rendered = browsers.render(request(&url, &FetchSpec::default())).await.expect("rendered");
        assert!(rendered.html.contains("plain"), "{}", rendered.html);
    }
    assert!(hits.load(Ordering::SeqCst) >= 2);
    let (passed, refused) = browsers.proxy_counts().await.expect("the proxy ran");
    assert_eq!((passed >= 2, refused), (true, 0), "the page's own requests");
    browsers.shutdown(Duration::from_secs(5)).await;
}

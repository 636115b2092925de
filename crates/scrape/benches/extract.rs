//! Extraction throughput on a ~20 KB product page, whole page and through a selector, by the
//! DOM path and by the streaming path `extract` takes when it can; line rules (compiled as a
//! check compiles them, then applied); bot-wall classification of a 100 KiB page (the path
//! every check takes), with and without a wall.
//! Run with `cargo bench -p driftwatch-scrape`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use driftwatch_core::{ExtractOptions, TextRules};
use driftwatch_scrape::walls::{Answer, detect};
use driftwatch_scrape::{ExtractPath, Page, Rules, extract, extract_with, extract_with_dom, extract_with_path};

fn page() -> Page {
    let mut html =
        String::from("<html><head><title>Shop</title><style>.x{color:red}</style></head><body><nav>Home</nav>");
    for i in 0..200 {
        html.push_str(&format!(
            "<div class=\"item\"><h3>Item {i}</h3><p>Some <b>descriptive</b> text for item {i}.</p><span class=\"price\">{i}.99 EUR</span></div>"
        ));
    }
    html.push_str("<div id=\"main-price\">Price: 10 EUR</div><script>var tracking = 1;</script></body></html>");
    Page {
        status: 200,
        content_type: Some("text/html; charset=utf-8".into()),
        body: html.into_bytes(),
        ..Page::default()
    }
}

/// A 100 KiB news page behind Cloudflare (its jsd beacon), `extra` at the top of the body.
fn walled_page(extra: &str) -> Vec<u8> {
    let mut html = String::from("<!doctype html><html><head><title>News</title>");
    html.push_str("<script>window.__CF$cv$params={r:'8f1b',t:'MTcz'};</script>");
    html.push_str("<script src=\"/cdn-cgi/challenge-platform/scripts/jsd/main.js\"></script></head><body>");
    html.push_str(extra);
    let mut i = 0;
    while html.len() < 100 * 1024 {
        html.push_str(&format!(
            "<div class=\"story\"><h3>Story {i}</h3><p>The council voted on Tuesday to extend the riverside path by {i} metres, <a href=\"/s/{i}\">more</a>.</p></div>\n"
        ));
        i += 1;
    }
    html.push_str("</body></html>");
    html.into_bytes()
}

fn measure(name: &str, iterations: u32, mut f: impl FnMut()) {
    for _ in 0..iterations / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    let per = start.elapsed() / iterations;
    println!("{name:<32} {:>10.1} µs/op {:>10.0} ops/s", per.as_secs_f64() * 1e6, 1.0 / per.as_secs_f64());
}

fn main() {
    let page = page();
    println!("page size: {} bytes", page.body.len());
    let plain = ExtractOptions::default();
    for (label, selector) in
        [("whole page", None), ("#main-price", Some("#main-price")), (".price (200 hits)", Some(".price"))]
    {
        let (_, path) = extract_with_path(&page, selector, &plain);
        assert_eq!(path, ExtractPath::Streaming, "the bench page must stream");
        measure(&format!("dom: {label}"), 300, || {
            black_box(extract_with_dom(black_box(&page), selector, &plain).ok());
        });
        measure(&format!("streaming: {label}"), 3000, || {
            black_box(extract(black_box(&page), selector).ok());
        });
    }
    let options = ExtractOptions { remove_selectors: vec!["nav".into(), "script".into()], keep_links: true, ..plain };
    assert_eq!(extract_with_path(&page, Some("#main-price"), &options).1, ExtractPath::Streaming);
    measure("dom: #main-price, 2 removes", 300, || {
        black_box(extract_with_dom(black_box(&page), Some("#main-price"), &options).ok());
    });
    measure("streaming: #main-price, 2 removes", 3000, || {
        black_box(extract_with(black_box(&page), Some("#main-price"), &options).ok());
    });
    let spec = TextRules {
        ignore_lines: vec!["(?i)^(home|menu)$".into(), r"(?i)\bsponsored\b".into()],
        masks: ["dates", "times", "numbers", "uuids", "hex_ids"].map(String::from).to_vec(),
        ..TextRules::default()
    };
    let text = extract(&page, None).unwrap_or_default();
    measure("rules: compile (5 masks, 2 ignores)", 300, || {
        black_box(Rules::new(black_box(&spec)).ok());
    });
    let rules = Rules::new(&spec).expect("rules");
    measure("rules: apply to the page's text", 300, || {
        black_box(rules.apply(black_box(&text)));
    });
    walls();
}

/// Bot walls: a normal page (one SIMD pass), one with a CAPTCHA widget, a challenge (full scan).
fn walls() {
    let headers: Vec<(String, String)> = [("server", "cloudflare"), ("cf-ray", "8f1b2c3d4e5f6a7b-FRA")]
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .to_vec();
    let normal = walled_page("");
    let widget = walled_page("<div class=\"g-recaptcha\"></div><p>Are you a robot?</p>");
    let challenge = walled_page("<script>window._cf_chl_opt={cvId:'3'};</script>");
    println!("bot walls, page size: {} bytes", normal.len());
    for (label, status, body) in [
        ("200 behind Cloudflare (no wall)", 200, &normal),
        ("200 with a CAPTCHA widget (text counted)", 200, &widget),
        ("challenge (_cf_chl_opt)", 403, &challenge),
    ] {
        assert_eq!(detect(&Answer { status, headers: &headers, body }).is_some(), label.starts_with("challenge"));
        measure(&format!("walls: {label}"), 2000, || {
            black_box(detect(black_box(&Answer { status, headers: &headers, body })));
        });
    }
}

//! Extraction throughput on a ~20 KB product page, whole page and through a selector, by the
//! DOM path and by the streaming path `extract` takes when it can; line rules (compiled as a
//! check compiles them, then applied).
//! Run with `cargo bench -p driftwatch-scrape`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use driftwatch_core::{ExtractOptions, TextRules};
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
}

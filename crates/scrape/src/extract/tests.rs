//! The extractor's unit tests (both paths).

use super::*;

#[track_caller]
fn check(content_type: &str, body: &[u8], selector: Option<&str>, expected: Result<&str, ExtractError>) {
    let page =
        Page { status: 200, content_type: Some(content_type.to_owned()), body: body.to_vec(), ..Page::default() };
    assert_eq!(extract(&page, selector).as_deref().map_err(Clone::clone), expected);
}

const HTML: &str = "text/html";

#[test]
fn html_text_keeps_blocks_and_collapses_whitespace() {
    check(HTML, b"<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1>\n<p>Hello   <b>big</b>\n world</p><script>x()</script><ul><li>a</li><li>b</li></ul>line<br>break</body></html>",
        None, Ok("Title\nHello big world\na\nb\nline\nbreak\n"));
    check(HTML, b"<pre>a\n  b</pre>", None, Ok("a\nb\n"));
    check(HTML, b"<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>", None, Ok("1 2\n3\n"));
    check(HTML, "<p>caf\u{e9}&nbsp;&amp;\u{a0}co</p>".as_bytes(), None, Ok("caf\u{e9} & co\n"));
}

#[test]
fn selectors_narrow_the_text() {
    let page = b"<div id=nav>Menu</div><div class=price>10 EUR</div><div class=price>12 EUR</div>";
    check(HTML, page, Some(".price"), Ok("10 EUR\n12 EUR\n"));
    check(HTML, page, Some("#missing"), Err(ExtractError::SelectorMissing("#missing".into())));
    assert!(matches!(validate_selector("div[["), Err(ExtractError::InvalidSelector { .. })));
}

#[test]
fn charsets_are_honoured() {
    check("text/html; charset=ISO-8859-1", b"<p>caf\xe9</p>", None, Ok("caf\u{e9}\n"));
    check(HTML, b"<meta charset=\"windows-1252\"><p>\x93quoted\x94</p>", None, Ok("\u{201c}quoted\u{201d}\n"));
    check(HTML, b"<p>bad \xff byte</p>", None, Ok("bad \u{fffd} byte\n"));
}

#[test]
fn json_is_canonical_and_text_is_normalised() {
    let a = br#"{"b": 1, "a": {"d": [1, 2], "c": null}}"#;
    let b = br#"{"a": {"c": null, "d": [1, 2]}, "b": 1}"#;
    let page = |body: &[u8]| Page {
        status: 200,
        content_type: Some("application/json".into()),
        body: body.to_vec(),
        ..Page::default()
    };
    assert_eq!(extract(&page(a), None), extract(&page(b), None));
    assert!(matches!(extract(&page(b"{oops"), None), Err(ExtractError::InvalidJson(_))));
    check("text/plain", b"  one  two \n\n three\n", None, Ok("one two\nthree\n"));
    check(HTML, b"<html><body>  </body></html>", None, Err(ExtractError::Empty));
}

#[track_caller]
fn check_with(content_type: &str, body: &str, options: ExtractOptions, expected: Result<&str, ExtractError>) {
    let page = Page {
        status: 200,
        content_type: Some(content_type.to_owned()),
        body: body.as_bytes().to_vec(),
        ..Page::default()
    };
    assert_eq!(extract_with(&page, None, &options).as_deref().map_err(Clone::clone), expected);
}

#[test]
fn extraction_options() {
    let remove = |s: &[&str]| ExtractOptions {
        remove_selectors: s.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    check_with(
        HTML,
        "<p>price 10</p><p class=ad>buy now</p><span id=n>42 visitors</span>",
        remove(&[".ad", "#n"]),
        Ok("price 10\n"),
    );
    let page = Page { status: 200, content_type: Some(HTML.into()), body: b"<p>x</p>".to_vec(), ..Page::default() };
    assert!(matches!(extract_with(&page, None, &remove(&["[["])), Err(ExtractError::InvalidSelector { .. })));
    let links = ExtractOptions { keep_links: true, ..Default::default() };
    check_with(HTML, "<p>see <a href=\"/docs\">the docs</a></p>", links, Ok("see the docs (/docs)\n"));
    let pointer = |p: &str| ExtractOptions { json_pointer: Some(p.into()), ..Default::default() };
    check_with("application/json", r#"{"data": {"price": 10, "ts": 99}}"#, pointer("/data/price"), Ok("10\n"));
    check_with(
        "application/json",
        r#"{"data": {}}"#,
        pointer("/data/price"),
        Err(ExtractError::SelectorMissing("/data/price".into())),
    );
}

fn html_page(body: &str) -> Page {
    Page { status: 200, content_type: Some(HTML.into()), body: body.as_bytes().to_vec(), ..Page::default() }
}

#[test]
fn deep_nesting_does_not_overflow() {
    // `html` and `body` take two levels.
    let n = MAX_DEPTH - 2;
    let body = format!("{}deep{}", "<div>".repeat(n), "</div>".repeat(n));
    check(HTML, body.as_bytes(), None, Ok("deep\n"));
    let (text, path) = extract_with_path(&html_page(&body), Some("div"), &ExtractOptions::default());
    assert_eq!(path, ExtractPath::Streaming);
    // Each match repeats the text of the ones nested in it: "deep" once per match.
    assert_eq!(text.map(|t| t.len()), Ok("deep\n".len() * n));
}

#[test]
fn nesting_past_the_limit_fails_on_both_paths() {
    let options = ExtractOptions::default();
    for (open, close) in [("<div>", "</div>"), ("<span>", "</span>"), ("<table><tr><td>", "</td></tr></table>")] {
        let n = MAX_DEPTH;
        let body = format!("<html><body>{}x{}", open.repeat(n), close.repeat(n));
        for selector in [None, Some("div"), Some("td")] {
            let (fast, path) = extract_with_path(&html_page(&body), selector, &options);
            assert_eq!(fast, Err(ExtractError::TooDeep(MAX_DEPTH)), "{open} {selector:?}");
            assert_eq!(path, ExtractPath::Fallback("nesting deeper than the limit"));
            assert_eq!(extract_with_dom(&html_page(&body), selector, &options), fast);
        }
    }
}

#[test]
fn chunked_parsing_keeps_a_bom_at_a_chunk_boundary() {
    // html5ever drops a BOM at the start of any chunk; `parse_bounded` feeds 8 KiB chunks.
    let body = format!("<p>{}\u{feff}b</p>", "a".repeat(8 * 1024 - 3));
    let page = html_page(&body);
    let options = ExtractOptions::default();
    assert!(extract_with_dom(&page, None, &options).unwrap().contains("a\u{feff}b"));
    assert_eq!(extract_with_dom(&page, None, &options), extract_with_path(&page, None, &options).0);
}

#[test]
fn selected_text_is_bounded() {
    // 1,000 nested matches over 200 KB of text would select 200 MB: stopped at the limit.
    let body = format!("<html><body>{}{}", "<div>".repeat(1_000), "word ".repeat(40_000));
    let options = ExtractOptions::default();
    let limit = text_limit(body.len());
    let (fast, path) = extract_with_path(&html_page(&body), Some("div"), &options);
    assert_eq!(fast, Err(ExtractError::TooMuchText(limit)));
    assert_eq!(path, ExtractPath::Fallback("selected text over the limit"));
    assert_eq!(extract_with_dom(&html_page(&body), Some("div"), &options), fast);
    // The whole page, or a few nested matches, stay well under it.
    assert!(extract_with(&html_page(&body), None, &options).is_ok());
    let shallow = format!("<div><div><div>{}</div></div></div>", "word ".repeat(40_000));
    assert!(extract_with(&html_page(&shallow), Some("div"), &options).is_ok());
}

#[test]
fn extra_selectors_read_in_the_same_pass_give_what_each_gives_alone() {
    let page = |body: &str, content_type: &str| Page {
        status: 200,
        content_type: Some(content_type.to_owned()),
        body: body.as_bytes().to_vec(),
        ..Page::default()
    };
    let shop = page(
        "<nav class=ad>Sale <b class=price>1 EUR</b></nav><main><p class=price>12,50 €</p>\
         <p id=stock>In stock</p><a href=/x>more</a></main><p class=price>13 €</p>",
        HTML,
    );
    let options =
        ExtractOptions { remove_selectors: vec![".ad".into()], keep_links: true, ..ExtractOptions::default() };
    // Streamable reads; a selector that needs siblings (each read falls back on its own); one
    // that matches nothing; one that does not parse.
    for also in [&[".price", "#stock", "#gone", "p[[", "p:first-child"][..], &[".price", "#stock", "#gone", "p[["]] {
        let read = extract_also(&shop, Some("main"), &options, Also::selectors(also));
        assert_eq!(read.text, extract_with(&shop, Some("main"), &options));
        assert_eq!(read.text.as_deref(), Ok("12,50 €\nIn stock\nmore (/x)\n"), "removes and links on the text");
        assert_eq!(read.also.len(), also.len());
        for (selector, text) in also.iter().zip(&read.also) {
            assert_eq!(text, &extract_with(&shop, Some(selector), &ExtractOptions::default()), "{selector}");
        }
        assert_eq!(read.also[0].as_deref(), Ok("1 EUR\n12,50 €\n13 €\n"), "the watch's removes do not apply");
        assert_eq!(read.also[2], Err(ExtractError::SelectorMissing("#gone".into())));
        assert!(matches!(read.also[3], Err(ExtractError::InvalidSelector { .. })));
        assert_eq!(read.body, decoded_body(&shop));
    }
    let only = extract_also(&shop, None, &ExtractOptions::default(), Also::selectors(&["#stock"]));
    assert_eq!(only.scripts, None, "not asked for");
    assert_eq!(only.text, extract(&shop, None));
    assert_eq!(only.also[0].as_deref(), Ok("In stock\n"));
    let json =
        extract_also(&page(r#"{"b":1,"a":2}"#, "application/json"), None, &options, Also::selectors(&[".price"]));
    assert_eq!(json.text.as_deref(), Ok("{\n  \"a\": 2,\n  \"b\": 1\n}\n"));
    assert!(json.also.is_empty(), "a JSON page has no elements to select");
}

//! The streaming extractor against the DOM path: both must give the same result (text or
//! error) for every document, selector and option set below. Documents come from the Rust
//! documentation and Debian's HTML docs on this machine (when present), the hand-written hard
//! cases in `tests/corpus/`, and a seeded generator of well-formed pages and tag soup.
#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use driftwatch_core::ExtractOptions;
use driftwatch_html::scripts::Scripts;
use driftwatch_scrape::{Also, ExtractPath, Page, decoded_body, extract_also, extract_with_dom, extract_with_path};

/// Selectors every document is read through (besides none), covering each kind the streaming
/// path accepts and some it must refuse.
const SELECTORS: &[&str] = &[
    "#main",
    ".price",
    "p",
    "div p",
    "ul > li",
    "[href]",
    "a[href^='/'], h2",
    "td",
    "table tr > td",
    ":not(div) > span",
    "body *",
    "li:first-child",
    "[CLASS=Up]",
    "head title",
];

const REMOVE: &[&str] = &[".ad, nav", "script", "div div", ".price"];

/// Results per corpus: documents, and how many of the extractions took each path.
#[derive(Default)]
struct Tally {
    documents: usize,
    streaming: usize,
    fallback: usize,
    reasons: BTreeMap<&'static str, usize>,
    /// Documents whose plain whole-page extraction streamed.
    documents_streamed: usize,
    mismatches: Vec<String>,
}

impl Tally {
    fn check(&mut self, name: &str, page: &Page, selector: Option<&str>, options: &ExtractOptions) -> ExtractPath {
        let (fast, path) = extract_with_path(page, selector, options);
        let dom = extract_with_dom(page, selector, options);
        match path {
            ExtractPath::Streaming => self.streaming += 1,
            ExtractPath::Fallback(reason) => {
                self.fallback += 1;
                *self.reasons.entry(reason).or_default() += 1;
            }
            ExtractPath::NotHtml => {}
        }
        if fast != dom && self.mismatches.len() < 20 {
            let clip = |r: &Result<String, _>| format!("{:.400}", format!("{r:?}"));
            self.mismatches.push(format!(
                "{name} selector={selector:?} remove={:?} links={}\n  stream: {}\n  dom:    {}",
                options.remove_selectors,
                options.keep_links,
                clip(&fast),
                clip(&dom)
            ));
        }
        path
    }

    /// Every selector and option set on one document; `thorough` adds the remove and link
    /// variants to each selector.
    fn document(&mut self, name: &str, page: &Page, thorough: bool) {
        self.documents += 1;
        let plain = ExtractOptions::default();
        if self.check(name, page, None, &plain) == ExtractPath::Streaming {
            self.documents_streamed += 1;
        }
        let links = ExtractOptions { keep_links: true, ..ExtractOptions::default() };
        self.check(name, page, None, &links);
        for remove in REMOVE {
            let options = ExtractOptions { remove_selectors: vec![(*remove).to_owned()], ..ExtractOptions::default() };
            self.check(name, page, None, &options);
        }
        let both = ExtractOptions {
            remove_selectors: vec!["nav".into(), ".ad".into(), "div div".into()],
            keep_links: true,
            ..ExtractOptions::default()
        };
        self.check(name, page, None, &both);
        // A watch's value selectors, read in the page text's pass, give what each gives alone
        // (all streamable here; with `li:first-child` each read falls back on its own).
        for also in [&SELECTORS[..11], &SELECTORS[9..13]] {
            let read = extract_also(page, None, &both, Also { selectors: also, scripts: true });
            // The structured data's scripts, when the shared pass streamed, as the DOM has them.
            if let Some(scripts) = &read.scripts
                && let Ok(dom) = driftwatch_html::parse(&decoded_body(page))
            {
                assert_eq!(*scripts, Scripts::of(&dom), "{name}: scripts");
            }
            // Against each read alone (which `check` holds to the DOM path).
            let mut pairs = vec![(None, read.text, extract_with_path(page, None, &both).0)];
            for (selector, text) in also.iter().zip(read.also) {
                pairs.push((Some(*selector), text, extract_with_path(page, Some(selector), &plain).0));
            }
            for (selector, fast, dom) in pairs {
                if fast != dom && self.mismatches.len() < 20 {
                    self.mismatches.push(format!(
                        "{name} read in one pass with {also:?}: selector={selector:?}\n  one pass: {:.400}\n  alone:    {:.400}",
                        format!("{fast:?}"),
                        format!("{dom:?}")
                    ));
                }
            }
        }
        for selector in SELECTORS {
            self.check(name, page, Some(selector), &plain);
            if thorough {
                self.check(name, page, Some(selector), &links);
                self.check(name, page, Some(selector), &both);
            }
        }
    }

    fn report(&self, corpus: &str) {
        println!(
            "{corpus}: {} documents, {} whole-page reads streamed; {} extractions: {} streaming, {} fallback",
            self.documents,
            self.documents_streamed,
            self.streaming + self.fallback,
            self.streaming,
            self.fallback
        );
        for (reason, count) in &self.reasons {
            println!("    fallback {count:>6}  {reason}");
        }
        assert!(self.mismatches.is_empty(), "{corpus}: the paths differ:\n{}", self.mismatches.join("\n"));
    }
}

fn html_page(body: Vec<u8>, content_type: &str) -> Page {
    Page { status: 200, content_type: Some(content_type.to_owned()), body, ..Page::default() }
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            html_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
}

/// Every `step`-th file of the sorted list, up to `limit`, skipping files over `max_bytes`
/// (the DOM path is slow in a debug build).
fn sample(mut files: Vec<PathBuf>, limit: usize, max_bytes: u64) -> Vec<PathBuf> {
    files.sort();
    files.retain(|f| f.metadata().is_ok_and(|m| m.len() <= max_bytes));
    let step = (files.len() / limit).max(1);
    files.into_iter().step_by(step).take(limit).collect()
}

fn rust_docs_dir() -> Option<PathBuf> {
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))?;
    let mut toolchains: Vec<_> = std::fs::read_dir(home.join("toolchains")).ok()?.flatten().map(|e| e.path()).collect();
    toolchains.sort();
    toolchains.into_iter().map(|t| t.join("share/doc/rust/html")).find(|d| d.is_dir())
}

#[test]
fn rust_documentation() {
    let Some(dir) = rust_docs_dir() else {
        println!("no Rust documentation under ~/.rustup/toolchains/*/share/doc/rust/html: skipped");
        return;
    };
    let mut files = Vec::new();
    html_files(&dir, &mut files);
    let mut tally = Tally::default();
    for file in sample(files, 300, 256 * 1024) {
        let body = std::fs::read(&file).expect("read a documentation page");
        let name = file.strip_prefix(&dir).unwrap_or(&file).display().to_string();
        tally.document(&name, &html_page(body, "text/html; charset=utf-8"), false);
    }
    tally.report(&format!("Rust documentation ({})", dir.display()));
    // Documentation pages are well-formed: most must stream, or the fast path is not working.
    assert!(tally.documents_streamed * 10 >= tally.documents * 8, "too few documentation pages streamed");
}

#[test]
fn debian_documentation() {
    let mut files = Vec::new();
    html_files(Path::new("/usr/share/doc"), &mut files);
    if files.is_empty() {
        println!("no HTML under /usr/share/doc: skipped");
        return;
    }
    let mut tally = Tally::default();
    for file in sample(files, 150, 128 * 1024) {
        let body = std::fs::read(&file).expect("read a documentation page");
        tally.document(&file.display().to_string(), &html_page(body, "text/html"), false);
    }
    tally.report("Debian documentation (/usr/share/doc)");
}

#[test]
fn hand_written_hard_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files = Vec::new();
    html_files(&dir, &mut files);
    files.sort();
    assert!(files.len() > 50, "the corpus is missing");
    let mut tally = Tally::default();
    for file in files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // `name.charset-LABEL.html` is served with that charset in its Content-Type.
        let content_type = match name.split_once(".charset-") {
            Some((_, rest)) => format!("text/html; charset={}", rest.trim_end_matches(".html")),
            None => "text/html".to_owned(),
        };
        let body = std::fs::read(&file).expect("read a corpus file");
        tally.document(&name, &html_page(body, &content_type), true);
    }
    tally.report("hand-written cases (tests/corpus)");
}

/// The benchmark's product page must stream for the selectors the benchmark measures.
#[test]
fn benchmark_page_streams() {
    let mut html =
        String::from("<html><head><title>Shop</title><style>.x{color:red}</style></head><body><nav>Home</nav>");
    for i in 0..200 {
        html.push_str(&format!(
            "<div class=\"item\"><h3>Item {i}</h3><p>Some <b>descriptive</b> text for item {i}.</p><span class=\"price\">{i}.99 EUR</span></div>"
        ));
    }
    html.push_str("<div id=\"main-price\">Price: 10 EUR</div><script>var tracking = 1;</script></body></html>");
    let page = html_page(html.into_bytes(), "text/html; charset=utf-8");
    let mut tally = Tally::default();
    for selector in [None, Some("#main-price"), Some(".price")] {
        let path = tally.check("bench page", &page, selector, &ExtractOptions::default());
        assert_eq!(path, ExtractPath::Streaming, "{selector:?}");
    }
    tally.report("benchmark page");
}

/// A small seeded generator (xorshift) of pages: well-formed ones, built from a stack so every
/// element is closed in order, and tag soup with random tags, end tags and text.
struct Generator(u64);

const TAGS: &[&str] = &[
    "div",
    "p",
    "span",
    "b",
    "i",
    "a",
    "ul",
    "li",
    "ol",
    "table",
    "tr",
    "td",
    "th",
    "tbody",
    "thead",
    "pre",
    "h1",
    "h2",
    "section",
    "nav",
    "em",
    "strong",
    "code",
    "blockquote",
    "dl",
    "dt",
    "dd",
    "form",
    "button",
    "label",
];
const VOIDS: &[&str] = &["br", "img", "hr", "input", "meta", "wbr"];
const SOUP_EXTRA: &[&str] = &[
    "script",
    "style",
    "title",
    "textarea",
    "select",
    "option",
    "template",
    "svg",
    "math",
    "noscript",
    "html",
    "head",
    "body",
    "caption",
    "colgroup",
    "col",
    "iframe",
    "plaintext",
    "xmp",
    "frameset",
    "nobr",
];
const TEXTS: &[&str] = &[
    "hello",
    "price 10 EUR",
    "a &amp; b",
    "&lt;tag&gt;",
    "caf\u{e9}",
    "x&nbsp;y",
    "AT&T",
    "&copy 2024",
    "line\nbreak",
    "  spaced   out  ",
    "\r\n",
    "&#169;",
    "&#x0;",
    "tab\there",
    "<",
    "a < b",
    "\u{0}",
    " ",
    "\n",
    "q?a=1&b=2",
];

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn attrs(&mut self, out: &mut String) {
        for _ in 0..self.below(3) {
            match self.below(6) {
                0 => out.push_str(&format!(" class=\"{}\"", self.pick(&["price", "ad", "item price", "x", "Up"]))),
                1 => out.push_str(&format!(" id={}", self.pick(&["main", "n", "main-price"]))),
                2 => out.push_str(&format!(" href='{}'", self.pick(&["/docs", "http://x/?a=1&amp;b=2", "", "/a&b"]))),
                3 => out.push_str(" data-x=\"1 &gt; 0\""),
                4 => out.push_str(" hidden"),
                _ => out.push_str(" CLASS=Up"),
            }
        }
    }

    fn text(&mut self, out: &mut String, soup: bool) {
        let text = self.pick(TEXTS);
        if soup || !matches!(text, "<" | "\u{0}" | "&copy 2024" | "&#x0;" | "a < b") {
            out.push_str(text);
        }
    }

    fn well_formed(&mut self) -> String {
        let mut out = String::from("<!DOCTYPE html><html><head><title>t</title></head><body>");
        let mut stack: Vec<&str> = Vec::new();
        for _ in 0..self.below(80) + 5 {
            match self.below(10) {
                0..=3 if stack.len() < 12 => {
                    let tag = self.pick(&["div", "span", "b", "i", "a", "ul", "section", "nav", "pre", "em", "table"]);
                    // Keep to content models that need no implied tags.
                    let tag = match (tag, stack.last()) {
                        ("a", _) if stack.contains(&"a") => "span",
                        (_, Some(&"ul")) => "li",
                        (_, Some(&"table")) => "tbody",
                        (_, Some(&"tbody")) => "tr",
                        (_, Some(&"tr")) => "td",
                        (_, Some(&"span" | &"b" | &"i" | &"a" | &"em")) => "span",
                        _ => tag,
                    };
                    out.push('<');
                    out.push_str(tag);
                    self.attrs(&mut out);
                    out.push('>');
                    stack.push(tag);
                }
                4..=5 if !stack.is_empty() => {
                    let tag = stack.pop().unwrap_or_default();
                    out.push_str(&format!("</{tag}>"));
                }
                6 if !matches!(stack.last(), Some(&"ul" | &"table" | &"tbody" | &"tr")) => {
                    out.push_str(&format!("<{}>", self.pick(&["br", "img src=x", "wbr"])));
                }
                7 => out.push_str("<!-- comment -->"),
                _ if !matches!(stack.last(), Some(&"ul" | &"table" | &"tbody" | &"tr")) => self.text(&mut out, false),
                _ => {}
            }
        }
        while let Some(tag) = stack.pop() {
            out.push_str(&format!("</{tag}>"));
        }
        out.push_str("</body></html>");
        out
    }

    /// A well-formed page with one random edit at a tag boundary: an end tag dropped, or a
    /// tag inserted. Near misses like these are where a fallback detector goes wrong.
    fn mutated(&mut self) -> String {
        let page = self.well_formed();
        let boundaries: Vec<usize> = page.match_indices('<').map(|(i, _)| i).collect();
        let at = boundaries[self.below(boundaries.len())];
        let tag = if self.below(4) == 0 { self.pick(SOUP_EXTRA) } else { self.pick(TAGS) };
        match self.below(3) {
            0 if page[at..].starts_with("</") => {
                let end = page[at..].find('>').map_or(page.len(), |i| at + i + 1);
                format!("{}{}", &page[..at], &page[end..])
            }
            1 => format!("{}</{tag}>{}", &page[..at], &page[at..]),
            _ => format!("{}<{tag}>{}", &page[..at], &page[at..]),
        }
    }

    /// Tag soup; a third of it hostile (raw text, foreign content, odd markup, NULs, irregular
    /// references), the rest made of ordinary tags in any order, so that the stack model
    /// rather than the tokenizer decides.
    fn soup(&mut self) -> String {
        let hostile = self.below(3) == 0;
        let mut out = String::new();
        if self.below(2) == 0 {
            out.push_str("<!DOCTYPE html>");
        }
        for _ in 0..self.below(60) + 1 {
            let extra = hostile && self.below(4) == 0;
            match self.below(12) {
                0..=3 => {
                    let tag = if extra { self.pick(SOUP_EXTRA) } else { self.pick(TAGS) };
                    out.push('<');
                    out.push_str(tag);
                    self.attrs(&mut out);
                    out.push_str(if self.below(10) == 0 { "/>" } else { ">" });
                }
                4..=5 => {
                    let tag = if extra { self.pick(SOUP_EXTRA) } else { self.pick(TAGS) };
                    out.push_str(&format!("</{tag}>"));
                }
                6 => out.push_str(&format!("<{}>", self.pick(VOIDS))),
                7 if hostile => {
                    out.push_str(self.pick(&["<!-->", "<?pi?>", "</br>", "<![CDATA[x]]>", "<!-- x --!>", "</ x>"]))
                }
                7 => out.push_str("<!-- c -->"),
                _ => self.text(&mut out, hostile),
            }
        }
        out
    }
}

#[test]
fn generated_pages() {
    let mut generator = Generator(0x9e37_79b9_7f4a_7c15);
    let mut well_formed = Tally::default();
    let mut mutated = Tally::default();
    let mut soup = Tally::default();
    for n in 0..4_500 {
        let (tally, body) = match n % 3 {
            0 => (&mut well_formed, generator.well_formed()),
            1 => (&mut mutated, generator.mutated()),
            _ => (&mut soup, generator.soup()),
        };
        let page = html_page(body.clone().into_bytes(), "text/html");
        // Keep the failing document in the report: it is generated, so nowhere else to see.
        let before = tally.mismatches.len();
        tally.document(&format!("generated #{n}"), &page, false);
        if tally.mismatches.len() > before {
            tally.mismatches.push(format!("  document #{n}: {body:?}"));
        }
    }
    well_formed.report("generated well-formed pages");
    mutated.report("generated pages with one edit");
    soup.report("generated tag soup");
    assert!(well_formed.documents_streamed * 10 >= well_formed.documents * 9, "too few well-formed pages streamed");
    assert!(mutated.documents_streamed > 0 && mutated.fallback > 0, "one edit should sometimes matter, sometimes not");
    assert!(soup.fallback > 0, "the tag soup never fell back: the generator is too tame");
}

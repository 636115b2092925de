//! The pages `bench browser` renders and the loopback server that serves them.
//!
//! - `static`: an article of 20 paragraphs, no scripts.
//! - `js`: a product list and its total, built by an inline script.
//! - `fetch`: a product page of about 8 KB (description, specification table, reviews, a
//!   stylesheet and an image) whose `#price` is empty in the HTML until a script has fetched
//!   `/api/price.json` from the same server, as a shop's page does; the watch's selector is
//!   `#price` and the price is written nowhere but in the JSON.

use std::time::Duration;

/// The page rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// An article of 20 paragraphs, no scripts.
    Static,
    /// A product list and total built by a script, with a small stylesheet.
    Script,
    /// A product page whose price a script writes after a `fetch()` of JSON.
    Fetch,
}

/// The price `/api/price.json` holds, as the fetch page's script writes it.
const PRICE: &str = "Price: 1,249.90 EUR";

impl PageKind {
    /// Every page, in the order rendered.
    pub const ALL: [PageKind; 3] = [PageKind::Static, PageKind::Script, PageKind::Fetch];

    /// Its name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            PageKind::Static => "static",
            PageKind::Script => "js",
            PageKind::Fetch => "fetch",
        }
    }

    /// The page named `name`, if any.
    pub fn from_name(name: &str) -> Option<PageKind> {
        PageKind::ALL.into_iter().find(|p| p.name() == name)
    }

    pub(super) fn path(self) -> &'static str {
        match self {
            PageKind::Static => "/static",
            PageKind::Script => "/js",
            PageKind::Fetch => "/shop",
        }
    }

    /// The watch's selector rendering the page (the render's default wait reads it).
    pub(super) fn selector(self) -> Option<&'static str> {
        match self {
            PageKind::Fetch => Some("#price"),
            PageKind::Static | PageKind::Script => None,
        }
    }

    /// What the rendered document must hold: for the script pages, what only the script writes.
    pub(super) fn marker(self) -> &'static str {
        match self {
            PageKind::Static => "<p id=\"end\">",
            PageKind::Script => "<div id=\"total\">Total: ",
            PageKind::Fetch => "<div id=\"price\">Price: 1,249.90 EUR</div>",
        }
    }
}

/// The static page: an article of 20 paragraphs, no scripts.
pub(super) fn static_page() -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Release notes</title></head><body><article><h1>Release notes</h1>",
    );
    for i in 1..=20 {
        let id = if i == 20 { " id=\"end\"" } else { "" };
        html.push_str(&format!(
            "<p{id}>Paragraph {i}. The service now checks pages on a schedule of their own and keeps every version it \
             has seen, so that a change can be shown next to the text it replaced. Watches that fail are retried \
             with a growing delay, and the people who follow them are told once, not on every failed check. This \
             paragraph is here to give the page the length of an ordinary article.</p>"
        ));
    }
    html.push_str("</article></body></html>");
    html
}

/// The script page: the body is empty until a script fills in 50 products and their total.
pub(super) fn script_page() -> String {
    concat!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Shop</title><style>",
        "body{font-family:sans-serif;margin:2em;color:#222}h1{font-size:1.6em}",
        "ul{list-style:none;padding:0;columns:2}.item{display:flex;justify-content:space-between;",
        "border-bottom:1px solid #ddd;padding:4px 8px}.price{font-weight:bold;color:#063}",
        "#total{font-size:1.4em;margin-top:1em;padding:8px;background:#eef}",
        "</style></head><body><h1>Products</h1><ul id=\"list\"></ul><div id=\"total\"></div><script>",
        "const list = document.getElementById('list'); let total = 0;",
        "for (let i = 1; i <= 50; i++) {",
        " const price = Math.round(((i * 7.31) % 50 + 5) * 100) / 100; total += price;",
        " const li = document.createElement('li'); li.className = 'item';",
        " li.innerHTML = '<span>Product ' + i + '</span><span class=\"price\">' + price.toFixed(2) + ' EUR</span>';",
        " list.appendChild(li); }",
        "document.getElementById('total').textContent = 'Total: ' + total.toFixed(2) + ' EUR';",
        "</script></body></html>"
    )
    .to_owned()
}

/// The fetch page: about 8 KB of product page whose `#price` a script writes once
/// `/api/price.json` has answered.
pub(super) fn fetch_page() -> String {
    let mut html = String::from(concat!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Espresso machine E-200</title><style>",
        "body{font-family:sans-serif;margin:0;color:#222;line-height:1.4}header,footer{background:#123;color:#fff;padding:1em 2em}",
        "main{display:grid;grid-template-columns:320px 1fr;gap:2em;padding:2em}img{width:320px;height:240px}",
        "#price{font-size:1.8em;font-weight:bold;color:#063;min-height:1.2em}table{border-collapse:collapse;width:100%}",
        "td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left}.review{border-left:3px solid #ccd;",
        "padding:0 1em;margin:1em 0}nav a{color:#fff;margin-right:1em}",
        "</style></head><body><header><nav><a href=\"/\">Home</a><a href=\"/kitchen\">Kitchen</a>",
        "<a href=\"/coffee\">Coffee</a><a href=\"/account\">Account</a></nav></header><main>",
        "<img src=\"/img/e200.svg\" alt=\"E-200\"><section><h1>Espresso machine E-200</h1>",
        "<div id=\"price\"></div><p id=\"stock\">In stock, shipped within two days.</p><h2>Description</h2>",
    ));
    for i in 1..=6 {
        html.push_str(&format!(
            "<p>Part {i} of the description. A dual boiler keeps the water for the coffee and the steam apart, so \
             milk can be frothed while a shot is drawn; the group head is heated by the brew boiler and holds its \
             temperature to within half a degree over a morning of use. The drip tray takes a litre.</p>"
        ));
    }
    html.push_str("<h2>Specifications</h2><table>");
    for i in 1..=40 {
        html.push_str(&format!(
            "<tr><th>Property {i}</th><td>Value {i}: {} mm, {} W, {} g</td></tr>",
            100 + i * 7,
            900 + i * 11,
            250 + i * 13
        ));
    }
    html.push_str("</table><h2>Reviews</h2>");
    for i in 1..=12 {
        html.push_str(&format!(
            "<div class=\"review\"><h3>Reviewer {i}: four stars</h3><p>Review {i}. Heats up in a quarter of an hour \
             and makes a steady shot once the grind is right; the steam wand is strong. Cleaning is easy.</p></div>"
        ));
    }
    html.push_str(concat!(
        "</section></main><footer>Shipping, returns and warranty: see the conditions.</footer><script>",
        "fetch('/api/price.json').then(r => r.json()).then(d => {",
        " document.getElementById('price').textContent = 'Price: ' + d.amount + ' ' + d.currency;",
        " document.getElementById('stock').textContent = d.stock; });",
        "</script></body></html>"
    ));
    html
}

/// What `/api/price.json` answers.
fn price_json() -> String {
    let amount = PRICE.trim_start_matches("Price: ").trim_end_matches(" EUR");
    format!(r#"{{"amount": "{amount}", "currency": "EUR", "stock": "In stock, shipped within two days."}}"#)
}

/// The fetch page's image: a small SVG.
const IMAGE: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"320\" height=\"240\"><rect width=\"320\" \
    height=\"240\" fill=\"#ccd\"/><circle cx=\"160\" cy=\"120\" r=\"80\" fill=\"#345\"/></svg>";

/// The bodies of the pages as served: static, script, fetch.
pub(super) struct Bodies {
    pub(super) pages: [String; 3],
}

impl Bodies {
    pub(super) fn new() -> Bodies {
        Bodies { pages: [static_page(), script_page(), fetch_page()] }
    }
}

/// Serves every page on loopback from a thread of its own (so its CPU can be told apart), the
/// JSON after `api_delay`; returns the base URL and the thread's `stat` path.
pub(super) fn page_server(bodies: &Bodies, api_delay: Duration) -> anyhow::Result<(String, String)> {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let (tx, rx) = std::sync::mpsc::channel();
    let [s, j, f] = bodies.pages.clone().map(axum::body::Bytes::from);
    let json = axum::body::Bytes::from(price_json());
    std::thread::Builder::new().name("bench-pages".into()).spawn(move || {
        let _ = tx.send(super::thread_stat());
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        runtime.block_on(async move {
            let html = [("content-type", "text/html; charset=utf-8")];
            let svg = [("content-type", "image/svg+xml")];
            let app = axum::Router::new()
                .route("/static", axum::routing::get(move || std::future::ready((html, s.clone()))))
                .route("/js", axum::routing::get(move || std::future::ready((html, j.clone()))))
                .route("/shop", axum::routing::get(move || std::future::ready((html, f.clone()))))
                .route("/img/e200.svg", axum::routing::get(move || std::future::ready((svg, IMAGE))))
                .route(
                    "/api/price.json",
                    axum::routing::get(move || {
                        let json = json.clone();
                        async move {
                            tokio::time::sleep(api_delay).await;
                            ([("content-type", "application/json")], json)
                        }
                    }),
                );
            if let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) {
                let _ = axum::serve(listener, app).await;
            }
        });
    })?;
    Ok((format!("http://{addr}"), rx.recv()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fetch_page_is_about_8_kb_and_holds_its_price_only_in_the_json() {
        let page = fetch_page();
        assert!((7_000..=10_000).contains(&page.len()), "{} bytes", page.len());
        assert!(!page.contains("1,249.90"));
        assert!(price_json().contains("1,249.90"));
        assert!(PageKind::Fetch.marker().contains(PRICE));
    }
}

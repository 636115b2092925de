//! schema.org `Product`/`Offer` from JSON-LD and microdata.
//!
//! [`offers`] reads every product offer a page states: first the JSON-LD scripts
//! (`<script type="application/ld+json">`), then the microdata items (`itemscope` with a
//! schema.org `itemtype`), each in document order. [`first_offer`] picks the one a
//! `structured: price|availability|name` watch reads.
//!
//! Both syntaxes feed the same rules (`product`, `offer`) through the `Item` trait, so they
//! mean the same thing:
//!
//! - A product (`Product`, `ProductGroup`, `ProductModel`, `IndividualProduct`, `SomeProducts`,
//!   `Vehicle` and its subtypes) gives one [`Offer`] per item of its `offers`, each with the
//!   product's `name`, then the offers of its `hasVariant` products (a variant without a name
//!   takes the product's). A product with no offer at all gives one [`Offer`] with its name only.
//! - An `Offer`'s price is `price` (else `lowPrice`); an `AggregateOffer`'s is `lowPrice` (else
//!   `price`); without either, the best `priceSpecification` (a sale price before a list or
//!   strikethrough price, a whole price before a unit price) gives it. `priceCurrency` comes from
//!   the offer, else from that specification. An `AggregateOffer` is listed, then the offers it
//!   nests (which take its currency and availability when they state none); one without a price
//!   whose nested offers exist is left out in favour of them.
//! - An offer outside any product counts, without a name (JSON-LD: with its `itemOffered`
//!   product's name, when it has one).
//! - Products are looked for anywhere (`@graph`, `mainEntity`, an `ItemList`, …), but not inside
//!   a product or an offer: a product's `isRelatedTo` products are not its offers.
//!
//! The page is read through `driftwatch_html`: its JSON-LD scripts and whether it has microdata
//! come from [`Scripts`] (a streaming pass, which may ride the page text's own), and microdata
//! from its bounded DOM, built only when the page has an `itemscope` attribute.
//!
//! Everything is bounded: 100 offers, 32 levels of nesting (JSON values, products in products,
//! offers in offers), a budget of steps, JSON nested at most 128 deep (deeper scripts are skipped
//! before they are parsed), and the DOM's nesting within `driftwatch_html::MAX_DEPTH` (a deeper
//! page has its microdata left unread). No input panics.

use driftwatch_html::scripts::Scripts;
use scraper::Html;

mod jsonld;
mod microdata;
#[cfg(test)]
mod tests;

/// One offer of a product, as the page states it (raw strings; callers parse them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offer {
    /// The product's name.
    pub name: Option<String>,
    /// The price as written: `"1299.00"` or `"1.299,00"`; a JSON number becomes its decimal text
    /// (`1299`, `12.5`).
    pub price: Option<String>,
    /// The currency as written, usually an ISO 4217 code (`"EUR"`).
    pub currency: Option<String>,
    /// The availability as written, e.g. `"https://schema.org/InStock"`.
    pub availability: Option<String>,
}

/// At most this many offers are read from a page.
const MAX_OFFERS: usize = 100;

/// Products, offers and JSON values nested deeper than this are not read.
const MAX_DEPTH: usize = 32;

/// The work one page may take: JSON values walked, products and offers read.
const MAX_STEPS: usize = 1_000_000;

/// Every product offer on the page, JSON-LD first then microdata, in document order; a Product
/// with several offers gives one Offer per offer (each with the product's name).
pub fn offers(html: &str) -> Vec<Offer> {
    let dom = std::cell::OnceCell::new();
    offers_in(&Scripts::read(html), || dom.get_or_init(|| driftwatch_html::parse(html)).as_ref().ok())
}

/// [`offers`] from the page's `scripts` as a reader found them, and its bounded DOM, asked for
/// only when the page has microdata (`None`: too deep to read).
pub fn offers_in<'d>(scripts: &Scripts, dom: impl FnOnce() -> Option<&'d Html>) -> Vec<Offer> {
    let mut sink = Sink::default();
    for script in &scripts.jsonld {
        if sink.done() {
            break;
        }
        jsonld::read(script, &mut sink);
    }
    // Only pages with microdata cost a DOM here: most pay for the scripts alone.
    if scripts.itemscope
        && !sink.done()
        && let Some(document) = dom()
    {
        microdata::read(document, &mut sink);
    }
    sink.offers
}

/// The first offer with a price (else the first offer), for watches that read
/// `structured: price|availability|name`.
pub fn first_offer(html: &str) -> Option<Offer> {
    pick(offers(html))
}

/// [`first_offer`] of what [`offers_in`] gives.
pub fn first_offer_in<'d>(scripts: &Scripts, dom: impl FnOnce() -> Option<&'d Html>) -> Option<Offer> {
    pick(offers_in(scripts, dom))
}

fn pick(mut all: Vec<Offer>) -> Option<Offer> {
    let at = all.iter().position(|offer| offer.price.is_some()).unwrap_or(0);
    (at < all.len()).then(|| all.swap_remove(at))
}

/// The offers read so far, and the work spent.
#[derive(Default)]
struct Sink {
    offers: Vec<Offer>,
    steps: usize,
}

impl Sink {
    /// Whether reading should stop: enough offers, or the budget spent.
    fn done(&self) -> bool {
        self.offers.len() >= MAX_OFFERS || self.steps >= MAX_STEPS
    }

    /// Spends one step; false when reading should stop.
    fn step(&mut self) -> bool {
        self.steps = self.steps.saturating_add(1);
        !self.done()
    }

    fn push(&mut self, offer: Offer) {
        if self.offers.len() < MAX_OFFERS {
            self.offers.push(offer);
        }
    }
}

/// One value of a property: text, or a nested item.
enum Val<I> {
    Text(String),
    Item(I),
}

/// A schema.org item as either syntax states it.
trait Item: Sized {
    /// Its types' local names, in ASCII lowercase (`product`, `aggregateoffer`).
    fn types(&self) -> Vec<String>;
    /// The values of a property (by local name, ASCII case-insensitive for microdata), in order.
    fn values(&self, prop: &str) -> Vec<Val<Self>>;
    /// Its identifier (`@id`, `itemid`), if any.
    fn id(&self) -> Option<String>;
}

/// What an item is, for these rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Product,
    Offer,
    Other,
}

/// The kind of an item with these types (lowercase local names).
fn kind(types: &[String]) -> Kind {
    const PRODUCTS: &[&str] = &[
        "product",
        "productgroup",
        "productmodel",
        "individualproduct",
        "someproducts",
        "vehicle",
        "car",
        "motorcycle",
        "busorcoach",
        "motorizedbicycle",
    ];
    const OFFERS: &[&str] = &["offer", "aggregateoffer", "offerforlease", "offerforpurchase"];
    if types.iter().any(|t| PRODUCTS.contains(&t.as_str())) {
        Kind::Product
    } else if types.iter().any(|t| OFFERS.contains(&t.as_str())) {
        Kind::Offer
    } else {
        Kind::Other
    }
}

/// The local name of a type or property: what follows the last `/`, `#` or `:`
/// (`http://schema.org/Product/` → `Product`, `schema:price` → `price`).
fn local_name(name: &str) -> &str {
    let name = name.trim().trim_end_matches('/');
    name.rsplit(['/', '#', ':']).next().unwrap_or(name)
}

/// The first non-blank text value of a property, trimmed.
fn text<I: Item>(item: &I, prop: &str) -> Option<String> {
    item.values(prop).into_iter().find_map(|value| match value {
        Val::Text(text) => non_blank(&text),
        Val::Item(_) => None,
    })
}

/// Like [`text`], but a nested item stands for its identifier (`{"@id": ".../InStock"}`).
fn text_or_id<I: Item>(item: &I, prop: &str) -> Option<String> {
    item.values(prop).into_iter().find_map(|value| match value {
        Val::Text(text) => non_blank(&text),
        Val::Item(item) => item.id().as_deref().and_then(non_blank),
    })
}

/// The nested items of a property, in order.
fn items<I: Item>(item: &I, prop: &str) -> Vec<I> {
    item.values(prop)
        .into_iter()
        .filter_map(|value| match value {
            Val::Item(item) => Some(item),
            Val::Text(_) => None,
        })
        .collect()
}

fn non_blank(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// A product's offers, then its variants' (each with `name` when it states none); its name alone
/// when that gives nothing.
fn product<I: Item>(product: &I, inherited: Option<&str>, depth: usize, sink: &mut Sink) {
    if depth > MAX_DEPTH || !sink.step() {
        return;
    }
    let name = text(product, "name").or_else(|| inherited.map(str::to_owned));
    let before = sink.offers.len();
    for one in items(product, "offers") {
        if sink.done() {
            return;
        }
        offer(&one, name.as_deref(), None, depth + 1, sink);
    }
    for variant in items(product, "hasVariant") {
        if sink.done() {
            return;
        }
        self::product(&variant, name.as_deref(), depth + 1, sink);
    }
    if sink.offers.len() == before {
        sink.push(Offer { name, ..Offer::default() });
    }
}

/// An offer outside any product: named after its `itemOffered`, when that has a name.
fn lone_offer<I: Item>(one: &I, depth: usize, sink: &mut Sink) {
    let name = items(one, "itemOffered").iter().find_map(|item| text(item, "name"));
    offer(one, name.as_deref(), None, depth, sink);
}

/// One offer (an `AggregateOffer`, then the offers it nests), named `name`; `parent` is the
/// `AggregateOffer` this one is nested in.
fn offer<I: Item>(one: &I, name: Option<&str>, parent: Option<&Offer>, depth: usize, sink: &mut Sink) {
    if depth > MAX_DEPTH || !sink.step() {
        return;
    }
    let aggregate = one.types().iter().any(|t| t == "aggregateoffer");
    let mut price = if aggregate {
        text(one, "lowPrice").or_else(|| text(one, "price"))
    } else {
        text(one, "price").or_else(|| text(one, "lowPrice"))
    };
    let mut currency = text(one, "priceCurrency");
    if price.is_none() || currency.is_none() {
        let (spec_price, spec_currency) = specification(one);
        price = price.or(spec_price);
        currency = currency.or(spec_currency);
    }
    let this = Offer {
        name: name.map(str::to_owned),
        price,
        currency: currency.or_else(|| parent.and_then(|p| p.currency.clone())),
        availability: text_or_id(one, "availability").or_else(|| parent.and_then(|p| p.availability.clone())),
    };
    let nested = if aggregate { items(one, "offers") } else { Vec::new() };
    if this.price.is_some() || nested.is_empty() {
        sink.push(this.clone());
    }
    for inner in nested {
        if sink.done() {
            return;
        }
        offer(&inner, name, Some(&this), depth + 1, sink);
    }
}

/// The price and currency of an offer's best `priceSpecification`: one with a price, a sale price
/// before a list (`ListPrice`, `StrikethroughPrice`, `SRP`, `MSRP`) price, a whole price before a
/// unit price (`referenceQuantity`), first first. Without a price, the first currency stated.
fn specification<I: Item>(one: &I) -> (Option<String>, Option<String>) {
    const LIST_PRICES: &[&str] = &["listprice", "strikethroughprice", "srp", "msrp"];
    let mut best: Option<(u8, String, Option<String>)> = None;
    let mut first_currency = None;
    for spec in items(one, "priceSpecification") {
        let currency = text(&spec, "priceCurrency");
        if first_currency.is_none() {
            first_currency.clone_from(&currency);
        }
        let Some(price) = text(&spec, "price").or_else(|| text(&spec, "minPrice")) else { continue };
        let list = text_or_id(&spec, "priceType")
            .is_some_and(|t| LIST_PRICES.contains(&local_name(&t).to_ascii_lowercase().as_str()));
        let unit = !spec.values("referenceQuantity").is_empty();
        let rank = u8::from(list) * 2 + u8::from(unit);
        if best.as_ref().is_none_or(|(r, _, _)| rank < *r) {
            best = Some((rank, price, currency));
        }
    }
    match best {
        Some((_, price, currency)) => (Some(price), currency),
        None => (None, first_currency),
    }
}

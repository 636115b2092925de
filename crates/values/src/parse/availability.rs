//! Whether a product can be bought, from a schema.org value or the words a shop shows.
//!
//! The text is folded first: lower case, accents dropped (`épuisé` is `epuise`, `verfügbar` is
//! `verfugbar`), dashes and apostrophes made ASCII, whitespace runs made one space. Words and
//! phrases match whole (`available` is not found in `unavailable`). Then, first match wins:
//!
//! 1. the watch's `out_of_stock_words`: [`Availability::OutOfStock`];
//! 2. the watch's `in_stock_words`: [`Availability::InStock`], unless negated (below);
//! 3. a schema.org value as the whole text, in any form (`https://schema.org/InStock`,
//!    `http://schema.org/OutOfStock`, `schema:PreOrder`, `InStock`, `in stock`) or one of the
//!    names [`Availability::as_str`] gives. `SoldOut` and `Reserved` are out of stock,
//!    `LimitedAvailability` limited, `PreSale` pre-order, `MadeToOrder` back-order,
//!    `InStoreOnly` and `OnlineOnly` in stock;
//! 4. built-in phrases in English, German, French, Spanish, Italian and Dutch, in this order:
//!    discontinued (`discontinued`, `no longer available`, `fuori produzione`), pre-order
//!    (`pre-order`, `vorbestellen`, `précommande`), back-order (`backorder`, `made to order`,
//!    `sur commande`), limited (`only 3 left`, `nur noch 2`, `low stock`, `almost sold out`;
//!    a count of 0, as in `only 0 left`, is out of stock), out of stock (`sold out`,
//!    `currently unavailable`, `not available`, `ausverkauft`, `épuisé`, `agotado`,
//!    `esaurito`, `uitverkocht`), in stock (`in stock`, `available`, `add to cart`,
//!    `auf Lager`, `lieferbar`, `en stock`, `disponible`, `disponibile`, `op voorraad`).
//!    Out-of-stock phrases come before in-stock ones, since `not in stock` holds `in stock`.
//!
//! An in-stock word or phrase is negated, and the text out of stock, when one of the two words
//! before it (in the same clause: not across `,` `.` `;` `:` `!` `?` `|` `(` `)`) is a
//! negation: `not`, `no`, `nicht`, `kein`, `pas`, `plus`, `non`, `niet`, `geen` and the like.
//! So `nicht lieferbar` with `lieferbar` configured as an in-stock word is out of stock, and
//! `not currently available` is out of stock. When an in-stock word occurs both negated and not,
//! the plain occurrence counts (`nicht lieferbar in Berlin, lieferbar in Hamburg` with
//! `lieferbar` configured is in stock); an out-of-stock phrase anywhere still wins over in-stock
//! ones (`not in stock in store, in stock online` is out of stock).
//!
//! Anything else is refused with a message naming the text and the two settings.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::{ParseError, quote};

/// Whether a product can be bought, after schema.org's `ItemAvailability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    /// In stock (also in store only, online only).
    InStock,
    /// In stock, but few left.
    Limited,
    /// Can be ordered before its release.
    PreOrder,
    /// Can be ordered, delivered when restocked or made.
    BackOrder,
    /// Cannot be bought now.
    OutOfStock,
    /// No longer sold.
    Discontinued,
}

impl Availability {
    /// Every value, in declaration order.
    const ALL: [Availability; 6] = [
        Availability::InStock,
        Availability::Limited,
        Availability::PreOrder,
        Availability::BackOrder,
        Availability::OutOfStock,
        Availability::Discontinued,
    ];

    /// The snake_case name, as serialised: `in_stock`, `limited`, `pre_order`, `back_order`,
    /// `out_of_stock`, `discontinued`.
    pub fn as_str(self) -> &'static str {
        match self {
            Availability::InStock => "in_stock",
            Availability::Limited => "limited",
            Availability::PreOrder => "pre_order",
            Availability::BackOrder => "back_order",
            Availability::OutOfStock => "out_of_stock",
            Availability::Discontinued => "discontinued",
        }
    }

    /// Whether it can be bought now: in stock or limited.
    pub fn is_available(self) -> bool {
        matches!(self, Availability::InStock | Availability::Limited)
    }

    /// The value named exactly `s`, as [`Availability::as_str`] writes it.
    pub fn from_name(s: &str) -> Option<Availability> {
        Availability::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// Reads the availability `text` states; the watch's own words come first. See the module
/// documentation for the rules.
///
/// ```
/// use driftwatch_values::parse::{Availability, availability};
/// assert_eq!(availability("https://schema.org/InStock", &[], &[]), Ok(Availability::InStock));
/// assert_eq!(availability("Nicht verfügbar", &[], &[]), Ok(Availability::OutOfStock));
/// assert_eq!(availability("Only 3 left!", &[], &[]), Ok(Availability::Limited));
/// ```
pub fn availability(
    text: &str,
    in_stock_words: &[String],
    out_of_stock_words: &[String],
) -> Result<Availability, ParseError> {
    let folded = fold(text);
    configured(&folded, in_stock_words, out_of_stock_words)
        .or_else(|| schema_org(&folded))
        .or_else(|| built_in(&folded))
        .ok_or_else(|| {
            ParseError::new(format!(
                "cannot tell the availability from {}; add a word of it to in_stock_words or out_of_stock_words",
                quote(text)
            ))
        })
}

/// The watch's words: out-of-stock ones first.
fn configured(text: &str, in_words: &[String], out_words: &[String]) -> Option<Availability> {
    let phrases = |words: &[String]| words.iter().map(|w| fold(w)).filter(|w| !w.is_empty()).collect::<Vec<_>>();
    if phrases(out_words).iter().any(|w| find(text, w).next().is_some()) {
        return Some(Availability::OutOfStock);
    }
    in_stock(text, phrases(in_words).iter().map(String::as_str))
}

/// `InStock` when a phrase occurs not negated, `OutOfStock` when the phrases occur only negated.
fn in_stock<'a>(text: &str, phrases: impl IntoIterator<Item = &'a str>) -> Option<Availability> {
    let mut negated = false;
    for phrase in phrases {
        for at in find(text, phrase) {
            if is_negated(&text[..at]) {
                negated = true;
            } else {
                return Some(Availability::InStock);
            }
        }
    }
    negated.then_some(Availability::OutOfStock)
}

/// Lower case, accents dropped, dashes and apostrophes made ASCII, whitespace collapsed.
fn fold(text: &str) -> String {
    let folded: String = text.chars().flat_map(char::to_lowercase).map(fold_char).collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn fold_char(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
        'ç' => 'c',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ñ' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'ý' | 'ÿ' => 'y',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2212}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{02BC}' | '`' | '´' => '\'',
        other => other,
    }
}

/// Byte offsets where `phrase` occurs in `text` as whole words.
fn find<'a>(text: &'a str, phrase: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(phrase).map(|(at, _)| at).filter(move |&at| {
        let before = text[..at].chars().next_back();
        let after = text[at + phrase.len()..].chars().next();
        let word_edge = |c: Option<char>, edge: Option<char>| {
            // Only a letter or digit against a letter or digit of the phrase joins two words.
            !(c.is_some_and(char::is_alphanumeric) && edge.is_some_and(char::is_alphanumeric))
        };
        word_edge(before, phrase.chars().next()) && word_edge(after, phrase.chars().next_back())
    })
}

/// Words that negate the in-stock phrase after them.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "isn't", "nicht", "kein", "keine", "nie", "pas", "plus", "non", "ne", "n'est", "sin", "niet",
    "geen",
];

/// Whether one of the last two words of `before`, within its clause, is a negation.
fn is_negated(before: &str) -> bool {
    let clause = before.rsplit(|c| ",.;:!?|()".contains(c)).next().unwrap_or(before);
    clause.split_whitespace().rev().take(2).any(|w| NEGATIONS.contains(&w))
}

/// The whole text as a schema.org value (any prefix) or an [`Availability::as_str`] name.
fn schema_org(text: &str) -> Option<Availability> {
    let prefixes = ["https://schema.org/", "http://schema.org/", "https://www.schema.org/", "schema.org/", "schema:"];
    let bare = prefixes.iter().find_map(|p| text.strip_prefix(p)).unwrap_or(text);
    let name: String = bare.trim_end_matches('/').chars().filter(|c| !matches!(c, ' ' | '_' | '-')).collect();
    Some(match name.as_str() {
        "instock" | "instoreonly" | "onlineonly" => Availability::InStock,
        "limited" | "limitedavailability" => Availability::Limited,
        "preorder" | "presale" => Availability::PreOrder,
        "backorder" | "madetoorder" => Availability::BackOrder,
        "outofstock" | "soldout" | "reserved" => Availability::OutOfStock,
        "discontinued" => Availability::Discontinued,
        _ => return None,
    })
}

const DISCONTINUED: &[&str] = &[
    "discontinued",
    "no longer available",
    "no longer sold",
    "no longer produced",
    "nicht mehr erhaltlich",
    "nicht mehr lieferbar",
    "nicht mehr verfugbar",
    "ausgelaufen",
    "fin de serie",
    "n'est plus disponible",
    "plus fabrique",
    "descatalogado",
    "fuera de catalogo",
    "ya no esta disponible",
    "fuori produzione",
    "non piu disponibile",
    "uit assortiment",
    "niet meer leverbaar",
    "niet meer verkrijgbaar",
];

const PRE_ORDER: &[&str] = &[
    "pre-order",
    "preorder",
    "pre order",
    "pre-sale",
    "presale",
    "vorbestellen",
    "vorbestellung",
    "vorbestellbar",
    "precommande",
    "pre-commande",
    "precommander",
    "preventa",
    "pre-venta",
    "preordine",
    "pre-ordine",
    "prenotabile",
    "in prenotazione",
    "voorbestellen",
    "voorbestelling",
];

const BACK_ORDER: &[&str] = &[
    "backorder",
    "back-order",
    "back order",
    "backordered",
    "made to order",
    "built to order",
    "im zulauf",
    "auf bestellung",
    "sur commande",
    "en reapprovisionnement",
    "bajo pedido",
    "por encargo",
    "su ordinazione",
    "in riordino",
    "op bestelling",
    "in nabestelling",
];

const LIMITED: &[&str] = &[
    "limited stock",
    "low stock",
    "limited availability",
    "few left",
    "few in stock",
    "almost gone",
    "almost sold out",
    "nearly sold out",
    "last one",
    "last few",
    "last items",
    "nur noch wenige",
    "geringer bestand",
    "begrenzt verfugbar",
    "fast ausverkauft",
    "stock limite",
    "derniers articles",
    "presque epuise",
    "stock limitado",
    "ultimas unidades",
    "pocas unidades",
    "casi agotado",
    "disponibilita limitata",
    "ultimi pezzi",
    "quasi esaurito",
    "beperkte voorraad",
    "laatste stuks",
    "bijna uitverkocht",
];

/// "Only 3 left" in the six languages; the first group that matched holds the count.
static COUNT_LEFT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:only|just) ([0-9]+) (?:left|in stock|available|remaining)\b",
        r"|\b([0-9]+) left\b",
        r"|\bnur noch ([0-9]+)\b",
        r"|\bnoch ([0-9]+) (?:stuck|auf lager|verfugbar|vorratig)\b",
        r"|\bplus que ([0-9]+)\b",
        r"|\bil (?:ne )?reste (?:que )?([0-9]+)\b",
        r"|\b(?:solo|quedan|ultimas|ultime|ultimi) ([0-9]+)\b",
        r"|\brimangono (?:solo )?([0-9]+)\b",
        r"|\bnog (?:maar )?([0-9]+)\b",
    ))
    .ok()
});

const OUT_OF_STOCK: &[&str] = &[
    "out of stock",
    "out-of-stock",
    "not in stock",
    "no stock",
    "no longer in stock",
    "sold out",
    "sold-out",
    "soldout",
    "unavailable",
    "not available",
    "currently unavailable",
    "temporarily unavailable",
    "back soon",
    "nicht auf lager",
    "nicht vorratig",
    "nicht verfugbar",
    "nicht lieferbar",
    "nicht bestellbar",
    "ausverkauft",
    "vergriffen",
    "bald wieder verfugbar",
    "bald verfugbar",
    "bald wieder lieferbar",
    "epuise",
    "epuisee",
    "rupture de stock",
    "en rupture",
    "indisponible",
    "non disponible",
    "pas disponible",
    "plus en stock",
    "pas en stock",
    "hors stock",
    "bientot disponible",
    "agotado",
    "agotada",
    "sin stock",
    "sin existencias",
    "no disponible",
    "fuera de stock",
    "no hay existencias",
    "esaurito",
    "esaurita",
    "non disponibile",
    "non disponibili",
    "uitverkocht",
    "niet op voorraad",
    "niet beschikbaar",
    "niet leverbaar",
    "niet voorradig",
];

const IN_STOCK: &[&str] = &[
    "in stock",
    "instock",
    "available",
    "available now",
    "add to cart",
    "add to basket",
    "add to bag",
    "add to trolley",
    "buy now",
    "ready to ship",
    "auf lager",
    "lagernd",
    "lieferbar",
    "sofort lieferbar",
    "verfugbar",
    "vorratig",
    "in den warenkorb",
    "en stock",
    "disponible",
    "disponibles",
    "ajouter au panier",
    "en existencia",
    "hay existencias",
    "anadir al carrito",
    "disponibile",
    "disponibili",
    "aggiungi al carrello",
    "in magazzino",
    "op voorraad",
    "leverbaar",
    "beschikbaar",
    "in winkelwagen",
    "in de winkelwagen",
];

/// The built-in phrases, in the order of the module documentation.
fn built_in(text: &str) -> Option<Availability> {
    let any = |phrases: &[&str]| phrases.iter().any(|p| find(text, p).next().is_some());
    if any(DISCONTINUED) {
        Some(Availability::Discontinued)
    } else if any(PRE_ORDER) {
        Some(Availability::PreOrder)
    } else if any(BACK_ORDER) {
        Some(Availability::BackOrder)
    } else if let Some(limited) = count_left(text).or_else(|| any(LIMITED).then_some(Availability::Limited)) {
        Some(limited)
    } else if any(OUT_OF_STOCK) {
        Some(Availability::OutOfStock)
    } else {
        in_stock(text, IN_STOCK.iter().copied())
    }
}

/// "Only N left": limited, or out of stock when N is 0.
fn count_left(text: &str) -> Option<Availability> {
    let found = COUNT_LEFT.as_ref()?.captures(text)?;
    let count = found.iter().skip(1).flatten().next()?.as_str();
    Some(if count.trim_start_matches('0').is_empty() { Availability::OutOfStock } else { Availability::Limited })
}

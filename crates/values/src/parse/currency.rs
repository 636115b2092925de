//! Currency markers in a price text, and the ISO 4217 code each one names.
//!
//! Three kinds of marker are found (in the folded text of `number.rs`, so `￥` is `¥`):
//! - ISO 4217 codes in capitals, as whole words: `EUR`, `CHF`, `USD` (`eur` and `Eur` are not
//!   codes). Codes that are also common capitalised words or brands are left out, since a
//!   product title may hold them: ALL, AMD, CUP, GEL, MAD, MOP, PEN, SOS, TOP. Pass them as the
//!   default currency instead (`₾` still names GEL).
//! - Symbols naming one currency: `€`, `₹`, `₽`, `₩`, `₺`, `zł`, `Kč`, `R$` (BRL), `US$`,
//!   `CA$`/`C$` (CAD, not the Nicaraguan córdoba), `A$`/`AU$`, `NZ$`, `HK$`, `S$`/`SG$`, `NT$`,
//!   `MX$`/`Mex$`, `CN¥`/`RMB`/`元` (CNY), `JP¥`/`円` (JPY), `Fr.`/`fr.`/`SFr.` (CHF), and more.
//! - Symbols several currencies write. Each names the default currency when that is one of its
//!   currencies, else the first of them:
//!   - `$`: USD, CAD, AUD, NZD, HKD, SGD, MXN, TWD, CLP, COP, ARS, UYU;
//!   - `¥`: JPY, CNY (the same sign is the yuan's; `CN¥`, `RMB`, `元` or a CNY default say yuan);
//!   - `kr`/`kr.`/`Kr`: SEK, NOK, DKK, ISK (`kronor` is SEK; `kroner`: NOK, DKK);
//!   - `£`: GBP, EGP, GIP, FKP, SHP;
//!   - `Rs`/`Rs.`: INR, PKR, LKR, NPR, MUR.
//!
//! Markers made of letters must stand as words (`kr` is not found in `Skrivbord`); only ASCII
//! letters are checked, so `zł` is found in `złotych` and `руб` in `рублей`.

/// What a marker names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Names {
    /// One currency.
    One(&'static str),
    /// One of several: the default when it is among them, else the first.
    OneOf(&'static [&'static str]),
}

impl Names {
    /// The ISO code, given the caller's default currency (upper case).
    pub(super) fn resolve(self, default: Option<&str>) -> String {
        match self {
            Names::One(code) => code.to_owned(),
            Names::OneOf(codes) => {
                let chosen = default.and_then(|d| codes.iter().find(|&&c| c == d)).or(codes.first());
                chosen.map_or_else(String::new, |&c| c.to_owned())
            }
        }
    }
}

/// A marker found in a text, by character positions.
#[derive(Debug, Clone, Copy)]
pub(super) struct Marker {
    /// The first character.
    pub(super) start: usize,
    /// One past the last character.
    pub(super) end: usize,
    /// What it names.
    pub(super) names: Names,
}

const DOLLARS: &[&str] = &["USD", "CAD", "AUD", "NZD", "HKD", "SGD", "MXN", "TWD", "CLP", "COP", "ARS", "UYU"];
const YEN: &[&str] = &["JPY", "CNY"];
const KRONA: &[&str] = &["SEK", "NOK", "DKK", "ISK"];
const POUND: &[&str] = &["GBP", "EGP", "GIP", "FKP", "SHP"];
const RUPEE: &[&str] = &["INR", "PKR", "LKR", "NPR", "MUR"];

/// Symbols and abbreviations, with what they name.
const SYMBOLS: &[(&str, Names)] = &[
    ("$", Names::OneOf(DOLLARS)),
    ("US$", Names::One("USD")),
    ("CA$", Names::One("CAD")),
    ("C$", Names::One("CAD")),
    ("A$", Names::One("AUD")),
    ("AU$", Names::One("AUD")),
    ("NZ$", Names::One("NZD")),
    ("HK$", Names::One("HKD")),
    ("S$", Names::One("SGD")),
    ("SG$", Names::One("SGD")),
    ("NT$", Names::One("TWD")),
    ("MX$", Names::One("MXN")),
    ("Mex$", Names::One("MXN")),
    ("R$", Names::One("BRL")),
    ("€", Names::One("EUR")),
    ("euro", Names::One("EUR")),
    ("euros", Names::One("EUR")),
    ("Euro", Names::One("EUR")),
    ("Euros", Names::One("EUR")),
    ("EURO", Names::One("EUR")),
    ("EUROS", Names::One("EUR")),
    ("£", Names::OneOf(POUND)),
    ("¥", Names::OneOf(YEN)),
    ("JP¥", Names::One("JPY")),
    ("円", Names::One("JPY")),
    ("CN¥", Names::One("CNY")),
    ("RMB", Names::One("CNY")),
    ("元", Names::One("CNY")),
    ("₹", Names::One("INR")),
    ("Rs", Names::OneOf(RUPEE)),
    ("Rs.", Names::OneOf(RUPEE)),
    ("Fr.", Names::One("CHF")),
    ("fr.", Names::One("CHF")),
    ("SFr.", Names::One("CHF")),
    ("sFr.", Names::One("CHF")),
    ("kr", Names::OneOf(KRONA)),
    ("kr.", Names::OneOf(KRONA)),
    ("Kr", Names::OneOf(KRONA)),
    ("Kr.", Names::OneOf(KRONA)),
    ("kronor", Names::One("SEK")),
    ("kroner", Names::OneOf(&["NOK", "DKK"])),
    ("zł", Names::One("PLN")),
    ("Kč", Names::One("CZK")),
    ("₽", Names::One("RUB")),
    ("руб", Names::One("RUB")),
    ("₩", Names::One("KRW")),
    ("원", Names::One("KRW")),
    ("₺", Names::One("TRY")),
    ("TL", Names::One("TRY")),
    ("₪", Names::One("ILS")),
    ("฿", Names::One("THB")),
    ("₫", Names::One("VND")),
    ("₴", Names::One("UAH")),
    ("₱", Names::One("PHP")),
    ("₦", Names::One("NGN")),
    ("₸", Names::One("KZT")),
    ("₼", Names::One("AZN")),
    ("₾", Names::One("GEL")),
    ("Ft", Names::One("HUF")),
    ("lei", Names::One("RON")),
    ("Rp", Names::One("IDR")),
    ("RM", Names::One("MYR")),
];

/// Active ISO 4217 codes recognised in text (funds, metals and the codes named in the module
/// documentation left out).
const ISO_CODES: &[&str] = &[
    "AED", "AFN", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN", "BHD", "BIF", "BMD", "BND",
    "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHF", "CLP", "CNY", "COP", "CRC", "CVE", "CZK",
    "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GHS", "GIP", "GMD", "GNF", "GTQ",
    "GYD", "HKD", "HNL", "HRK", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD", "JOD", "JPY", "KES",
    "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MDL", "MGA",
    "MKD", "MMK", "MNT", "MRU", "MUR", "MVR", "MWK", "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD",
    "OMR", "PAB", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG",
    "SEK", "SGD", "SHP", "SLE", "SLL", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND", "TRY",
    "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS", "VES", "VND", "VUV", "WST", "XAF", "XCD", "XOF", "XPF",
    "YER", "ZAR", "ZMW", "ZWL",
];

/// ISO 4217 codes left out of [`ISO_CODES`] because they are also common capitalised words or
/// brands (see the module documentation): currencies all the same, when a watch names one.
const CODES_LIKE_WORDS: &[&str] = &["ALL", "AMD", "CUP", "GEL", "MAD", "MOP", "PEN", "SOS", "TOP"];

/// Whether `code` is an active ISO 4217 currency code (`EUR`, `GEL`; not `ZZZ`, not `eur`).
/// One table serves both reading prices and checking a watch's `currency`, so a code the
/// watch may name is one a page may write.
pub fn is_iso_4217(code: &str) -> bool {
    ISO_CODES.contains(&code) || CODES_LIKE_WORDS.contains(&code)
}

/// Currencies with three minor digits, whose amounts are quoted in thousandths (see
/// `number.rs`, rule 4).
const THREE_MINOR_DIGITS: &[&str] = &["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"];

/// Whether amounts in `code` are quoted in thousandths.
pub(super) fn has_three_minor_digits(code: &str) -> bool {
    THREE_MINOR_DIGITS.contains(&code)
}

/// Every marker in the folded text, in order, not overlapping (the longest wins where two
/// start at the same character).
pub(super) fn markers(chars: &[char]) -> Vec<Marker> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        match marker_at(chars, at) {
            Some(marker) => {
                at = marker.end;
                found.push(marker);
            }
            None => at += 1,
        }
    }
    found
}

/// The longest marker starting at `at`.
fn marker_at(chars: &[char], at: usize) -> Option<Marker> {
    let first = *chars.get(at)?;
    // No marker starts with a digit, a space or ASCII punctuation other than `$`.
    if first.is_ascii_digit() || first.is_whitespace() || (first.is_ascii_punctuation() && first != '$') {
        return None;
    }
    let symbol = SYMBOLS
        .iter()
        .filter(|(text, _)| text.starts_with(first))
        .filter_map(|&(text, names)| matches_at(chars, at, text).map(|end| Marker { start: at, end, names }))
        .max_by_key(|m| m.end);
    symbol.or_else(|| iso_code_at(chars, at))
}

/// One past the end of `text` if it stands at `at` (as a word where it begins or ends with an
/// ASCII letter).
fn matches_at(chars: &[char], at: usize, text: &str) -> Option<usize> {
    let mut end = at;
    for expected in text.chars() {
        if chars.get(end) != Some(&expected) {
            return None;
        }
        end += 1;
    }
    let starts_word = text.starts_with(|c: char| c.is_ascii_alphabetic());
    let ends_word = text.ends_with(|c: char| c.is_ascii_alphabetic());
    let letter_before = at > 0 && chars[at - 1].is_alphabetic();
    let letter_after = chars.get(end).is_some_and(|c| c.is_alphabetic());
    let joined = (starts_word && letter_before) || (ends_word && letter_after);
    (!joined).then_some(end)
}

/// An ISO code standing as a word at `at`.
fn iso_code_at(chars: &[char], at: usize) -> Option<Marker> {
    let word = chars.get(at..at + 3)?;
    let letter_before = at > 0 && chars[at - 1].is_alphabetic();
    let letter_after = chars.get(at + 3).is_some_and(|c| c.is_alphabetic());
    if letter_before || letter_after || !word.iter().all(char::is_ascii_uppercase) {
        return None;
    }
    let code: String = word.iter().collect();
    let known = ISO_CODES.iter().find(|&&c| c == code)?;
    Some(Marker { start: at, end: at + 3, names: Names::One(known) })
}

//! The tokenizer: the HTML tokenizer's common states (data,
//! tags with attributes, comments, doctypes, raw text and RCDATA, character references), each
//! refusing ([`Bail`]) whatever it cannot reproduce exactly instead of guessing.

use std::borrow::Cow;

use html5ever::data::NAMED_ENTITIES;
use memchr::{memchr, memmem};

/// Why the streaming reader gave up (what it cannot reproduce exactly); the caller then reads
/// the page through the bounded DOM ([`crate::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail(pub &'static str);

/// Attribute names (lowercased) and values (references decoded), first of duplicates only.
pub type Attrs<'s> = Vec<(Cow<'s, str>, Cow<'s, str>)>;

pub(crate) enum Token<'s> {
    Text(Cow<'s, str>),
    Start {
        name: Cow<'s, str>,
        attrs: Attrs<'s>,
    },
    End(Cow<'s, str>),
    /// A comment, bogus comment or doctype: no element, no text.
    Ignored,
    Eof,
}

/// How the content of a raw element is read up to its end tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawKind {
    /// `<style>`, `<noscript>`, `<iframe>`, `<noframes>`: text as is.
    RawText,
    /// `<title>`, `<textarea>`: character references decoded.
    Rcdata,
    /// `<script>`: as raw text, refusing `<!--` (the script escape states).
    Script,
}

pub(crate) struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    raw: Option<(RawKind, &'static str)>,
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0C | b'\r' | b' ')
}

fn lowercase(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) { Cow::Owned(s.to_ascii_lowercase()) } else { Cow::Borrowed(s) }
}

impl<'s> Lexer<'s> {
    /// `src` must already be free of NUL and CR (the caller's preprocessing).
    pub(crate) fn new(src: &'s str) -> Self {
        Self { src, pos: 0, raw: None }
    }

    /// The next token is the text of the raw element `name` just opened, then its end tag.
    pub(crate) fn enter_raw(&mut self, kind: RawKind, name: &'static str) {
        self.raw = Some((kind, name));
    }

    pub(crate) fn next_token(&mut self) -> Result<Token<'s>, Bail> {
        if let Some((kind, name)) = self.raw.take() {
            return self.raw_text(kind, name);
        }
        let bytes = self.src.as_bytes();
        loop {
            let rest = &bytes[self.pos..];
            let Some(&first) = rest.first() else { return Ok(Token::Eof) };
            if first != b'<' {
                return self.text(0);
            }
            return match rest.get(1) {
                Some(b'!') => self.markup_declaration(),
                Some(b'?') => self.bogus_comment(),
                Some(b'/') => match rest.get(2) {
                    Some(c) if c.is_ascii_alphabetic() => self.tag(true),
                    Some(b'>') => {
                        self.pos += 3;
                        continue;
                    }
                    _ => Err(Bail("end tag not starting with a letter")),
                },
                Some(c) if c.is_ascii_alphabetic() => self.tag(false),
                // A `<` that starts no tag is text.
                _ => self.text(1),
            };
        }
    }

    /// Text from here to the next `<` after `skip` bytes.
    fn text(&mut self, skip: usize) -> Result<Token<'s>, Bail> {
        let start = self.pos;
        let end = memchr(b'<', &self.src.as_bytes()[start + skip..]).map_or(self.src.len(), |i| start + skip + i);
        self.pos = end;
        Ok(Token::Text(decode(&self.src[start..end])?))
    }

    fn markup_declaration(&mut self) -> Result<Token<'s>, Bail> {
        let rest = &self.src[self.pos..];
        if let Some(body) = rest.strip_prefix("<!--") {
            if body.starts_with('>') || body.starts_with("->") {
                return Err(Bail("abruptly closed comment"));
            }
            let end = memmem::find(body.as_bytes(), b"-->").ok_or(Bail("unterminated comment"))?;
            if memmem::find(&body.as_bytes()[..end], b"--!>").is_some() {
                return Err(Bail("comment closed by --!>"));
            }
            self.pos += 4 + end + 3;
            Ok(Token::Ignored)
        } else {
            // A doctype, `<![CDATA[` outside foreign content and any other `<!` all end at the
            // first `>`.
            self.bogus_comment()
        }
    }

    fn bogus_comment(&mut self) -> Result<Token<'s>, Bail> {
        let end = memchr(b'>', &self.src.as_bytes()[self.pos..]).ok_or(Bail("unterminated declaration"))?;
        self.pos += end + 1;
        Ok(Token::Ignored)
    }

    fn tag(&mut self, end_tag: bool) -> Result<Token<'s>, Bail> {
        let src = self.src;
        let b = src.as_bytes();
        let eof = Bail("end of file inside a tag");
        let mut i = self.pos + if end_tag { 2 } else { 1 };
        let start = i;
        while i < b.len() && !matches!(b[i], b'\t' | b'\n' | 0x0C | b' ' | b'/' | b'>') {
            i += 1;
        }
        let name = lowercase(&src[start..i]);
        let mut attrs: Attrs<'s> = Vec::new();
        loop {
            while i < b.len() && is_space(b[i]) {
                i += 1;
            }
            match b.get(i) {
                None => return Err(eof),
                Some(b'>') => {
                    i += 1;
                    break;
                }
                // `/>` is ignored on HTML elements; a stray `/` is skipped.
                Some(b'/') => {
                    i += 1;
                    continue;
                }
                Some(b'=') => return Err(Bail("`=` before an attribute name")),
                Some(_) => {}
            }
            let name_start = i;
            while i < b.len() && !matches!(b[i], b'\t' | b'\n' | 0x0C | b' ' | b'/' | b'>' | b'=') {
                i += 1;
            }
            let attr_name = lowercase(&src[name_start..i]);
            while i < b.len() && is_space(b[i]) {
                i += 1;
            }
            let mut value = Cow::Borrowed("");
            if b.get(i) == Some(&b'=') {
                i += 1;
                while i < b.len() && is_space(b[i]) {
                    i += 1;
                }
                match b.get(i) {
                    None => return Err(eof),
                    Some(&quote @ (b'"' | b'\'')) => {
                        let len = memchr(quote, &b[i + 1..]).ok_or(eof)?;
                        value = decode(&src[i + 1..i + 1 + len])?;
                        i += len + 2;
                    }
                    // A missing value: the `>` ends the tag.
                    Some(b'>') => {}
                    Some(_) => {
                        let value_start = i;
                        while i < b.len() && !matches!(b[i], b'\t' | b'\n' | 0x0C | b' ' | b'>') {
                            i += 1;
                        }
                        value = decode(&src[value_start..i])?;
                    }
                }
            }
            if !attrs.iter().any(|(n, _)| *n == attr_name) {
                attrs.push((attr_name, value));
            }
        }
        self.pos = i;
        Ok(if end_tag { Token::End(name) } else { Token::Start { name, attrs } })
    }

    /// The content of a raw element, up to (not including) its end tag.
    fn raw_text(&mut self, kind: RawKind, name: &'static str) -> Result<Token<'s>, Bail> {
        let b = self.src.as_bytes();
        let start = self.pos;
        let mut from = start;
        let end = loop {
            let at = from + memmem::find(&b[from..], b"</").ok_or(Bail("unterminated raw text element"))?;
            let after = at + 2 + name.len();
            if after < b.len()
                && b[at + 2..after].eq_ignore_ascii_case(name.as_bytes())
                && matches!(b[after], b'\t' | b'\n' | 0x0C | b' ' | b'/' | b'>')
            {
                break at;
            }
            from = at + 2;
        };
        let content = &self.src[start..end];
        self.pos = end;
        match kind {
            RawKind::Script if memmem::find(content.as_bytes(), b"<!--").is_some() => Err(Bail("<!-- inside a script")),
            RawKind::Rcdata => Ok(Token::Text(decode(content)?)),
            _ => Ok(Token::Text(Cow::Borrowed(content))),
        }
    }
}

/// Decodes character references as the tokenizer does, refusing the irregular ones (legacy
/// references without `;`, numeric references without `;` or to odd code points).
pub(crate) fn decode(s: &str) -> Result<Cow<'_, str>, Bail> {
    let b = s.as_bytes();
    let Some(mut amp) = memchr(b'&', b) else { return Ok(Cow::Borrowed(s)) };
    let mut out = String::with_capacity(s.len());
    let mut done = 0;
    loop {
        out.push_str(&s[done..amp]);
        done = amp + 1;
        match reference(&s[amp + 1..])? {
            Some((len, chars)) => {
                out.extend(chars.into_iter().flatten());
                done += len;
            }
            None => out.push('&'),
        }
        match memchr(b'&', &b[done..]) {
            Some(i) => amp = done + i,
            None => {
                out.push_str(&s[done..]);
                return Ok(Cow::Owned(out));
            }
        }
    }
}

/// A decoded reference: bytes consumed after the `&`, and its one or two characters.
type Reference = (usize, [Option<char>; 2]);

/// The reference after an `&`, or `None` for a literal `&`.
fn reference(rest: &str) -> Result<Option<Reference>, Bail> {
    let b = rest.as_bytes();
    if b.first() == Some(&b'#') {
        return numeric(b).map(Some);
    }
    let name_len = b.iter().take_while(|c| c.is_ascii_alphanumeric()).count();
    if name_len == 0 {
        return Ok(None);
    }
    if b.get(name_len) == Some(&b';')
        && let Some(&(first, second)) = NAMED_ENTITIES.get(&rest[..=name_len])
        && first != 0
    {
        return Ok(Some((name_len + 1, [char::from_u32(first), char::from_u32(second).filter(|_| second != 0)])));
    }
    // The table holds every prefix of every name, with (0, 0) for mere prefixes. A full name
    // among the prefixes of this run is a legacy reference without `;`, whose handling
    // depends on context: refuse it. Otherwise the `&` is literal.
    for len in 1..=name_len {
        match NAMED_ENTITIES.get(&rest[..len]) {
            None => break,
            Some(&(first, _)) if first != 0 => return Err(Bail("character reference without ;")),
            Some(_) => {}
        }
    }
    Ok(None)
}

fn numeric(b: &[u8]) -> Result<Reference, Bail> {
    let hex = matches!(b.get(1), Some(b'x' | b'X'));
    let digits_start = if hex { 2 } else { 1 };
    let digits =
        b[digits_start..].iter().take_while(|c| if hex { c.is_ascii_hexdigit() } else { c.is_ascii_digit() }).count();
    if digits == 0 || digits > 7 || b.get(digits_start + digits) != Some(&b';') {
        return Err(Bail("irregular numeric character reference"));
    }
    let text = std::str::from_utf8(&b[digits_start..digits_start + digits]).map_err(|_| Bail("numeric reference"))?;
    let value = u32::from_str_radix(text, if hex { 16 } else { 10 }).map_err(|_| Bail("numeric reference"))?;
    let plain = matches!(value, 0x09 | 0x0A | 0x0C | 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFDCF | 0xFDF0..=0x10FFFF)
        && value & 0xFFFE != 0xFFFE;
    match char::from_u32(value).filter(|_| plain) {
        Some(c) => Ok((digits_start + digits + 1, [Some(c), None])),
        None => Err(Bail("numeric reference to a replaced code point")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        assert_eq!(decode("a &amp; b &lt;&#65;&#x42;&nbsp;").as_deref(), Ok("a & b <AB\u{a0}"));
        assert_eq!(decode("?a=1&b=2&lang=en & &; &#").ok(), None);
        assert_eq!(decode("?a=1&b=2&lang=en & &;").as_deref(), Ok("?a=1&b=2&lang=en & &;"));
        assert_eq!(decode("&copy 2024"), Err(Bail("character reference without ;")));
        assert_eq!(decode("&region=eu"), Err(Bail("character reference without ;")));
        assert_eq!(decode("&#0;"), Err(Bail("numeric reference to a replaced code point")));
        assert_eq!(decode("&NotNestedGreaterGreater;").as_deref(), Ok("\u{2aa2}\u{338}"));
    }
}

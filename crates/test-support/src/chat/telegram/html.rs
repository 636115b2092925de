//! Telegram's HTML parse mode: only the tags and entities its Bot API documents, properly
//! nested, every `<`, `>` and `&` outside a tag escaped.

/// What a tag is, for the nesting rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Bold, italic, underline, strikethrough, spoiler: may hold anything but `pre` and `code`.
    Style,
    Link,
    Code,
    Pre,
    Quote,
    Emoji,
    Time,
}

/// An open tag.
struct Open {
    name: String,
    kind: Kind,
}

/// The text a Telegram user sees for `html`, or why Telegram refuses it (the words of its
/// `can't parse entities` errors).
pub(crate) fn visible_text(html: &str) -> Result<String, String> {
    let mut text = String::with_capacity(html.len());
    let mut open: Vec<Open> = Vec::new();
    let mut i = 0;
    while i < html.len() {
        let rest = &html[i..];
        let Some(c) = rest.chars().next() else { break };
        match c {
            '<' => {
                let end = tag_end(rest).ok_or_else(|| format!("Can't find end of the tag at byte offset {i}"))?;
                tag(&rest[1..end], i, &mut open)?;
                i += end + 1;
            }
            '&' => {
                let (decoded, len) = entity(rest)
                    .ok_or_else(|| format!("Character '&' at byte offset {i} is not an entity: escape it as &amp;"))?;
                text.push(decoded);
                i += len;
            }
            '>' => return Err(format!("Character '>' at byte offset {i} must be escaped as &gt;")),
            c => {
                text.push(c);
                i += c.len_utf8();
            }
        }
    }
    if let Some(last) = open.last() {
        return Err(format!("Can't find end tag corresponding to start tag \"{}\"", last.name));
    }
    Ok(text)
}

/// The byte offset of the `>` closing the tag that `s` starts with, quotes respected.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            (None, '<') => return None,
            _ => {}
        }
    }
    None
}

/// A character entity at the start of `s`: what it stands for and its length.
fn entity(s: &str) -> Option<(char, usize)> {
    let semi = s.find(';').filter(|&n| n <= 12)?;
    let name = &s[1..semi];
    let c = match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((c, semi + 1))
}

/// Handles the tag whose inside (between `<` and `>`) is `inner`.
fn tag(inner: &str, at: usize, open: &mut Vec<Open>) -> Result<(), String> {
    if let Some(name) = inner.strip_prefix('/') {
        let name = name.trim().to_ascii_lowercase();
        return match open.pop() {
            Some(top) if top.name == name => Ok(()),
            Some(top) => {
                Err(format!("Unmatched end tag at byte offset {at}, expected \"</{}>\", found \"</{name}>\"", top.name))
            }
            None => Err(format!("Unexpected end tag at byte offset {at}")),
        };
    }
    let name_len = inner.find(|c: char| c.is_whitespace() || c == '/').unwrap_or(inner.len());
    let name = inner[..name_len].to_ascii_lowercase();
    const KNOWN: &[&str] = &[
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "tg-spoiler",
        "span",
        "a",
        "code",
        "pre",
        "blockquote",
        "tg-emoji",
        "tg-time",
    ];
    if !KNOWN.contains(&name.as_str()) {
        return Err(format!("Unsupported start tag \"{name}\" at byte offset {at}"));
    }
    let attrs = attributes(&inner[name_len..]).ok_or_else(|| format!("Bad attributes in tag at byte offset {at}"))?;
    let attr = |key: &str| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let only = |allowed: &[&str]| -> Result<(), String> {
        match attrs.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            Some((k, _)) => Err(format!("Unsupported attribute \"{k}\" of tag \"{name}\" at byte offset {at}")),
            None => Ok(()),
        }
    };
    let parent = open.last().map(|o| o.kind);
    let inside = |kind: Kind| open.iter().any(|o| o.kind == kind);
    let kind = match name.as_str() {
        "b" | "strong" | "i" | "em" | "u" | "ins" | "s" | "strike" | "del" | "tg-spoiler" => {
            only(&[])?;
            Kind::Style
        }
        "span" => {
            only(&["class"])?;
            if attr("class") != Some("tg-spoiler") {
                return Err(format!("Tag \"span\" at byte offset {at} must have class=\"tg-spoiler\""));
            }
            Kind::Style
        }
        "a" => {
            only(&["href"])?;
            if attr("href").is_none_or(str::is_empty) {
                return Err(format!("Tag \"a\" at byte offset {at} must have an href"));
            }
            Kind::Link
        }
        "code" => {
            only(&["class"])?;
            if let Some(class) = attr("class")
                && (parent != Some(Kind::Pre) || !class.starts_with("language-"))
            {
                return Err(format!(
                    "class=\"{class}\" at byte offset {at}: a language is given only as \
                     <pre><code class=\"language-…\">"
                ));
            }
            Kind::Code
        }
        "pre" => {
            only(&[])?;
            Kind::Pre
        }
        "blockquote" => {
            only(&["expandable"])?;
            if attr("expandable").is_some_and(|v| !v.is_empty()) {
                return Err(format!("Attribute \"expandable\" at byte offset {at} takes no value"));
            }
            Kind::Quote
        }
        "tg-emoji" => {
            only(&["emoji-id"])?;
            if !attr("emoji-id").is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())) {
                return Err(format!("Tag \"tg-emoji\" at byte offset {at} must have a numeric emoji-id"));
            }
            Kind::Emoji
        }
        "tg-time" => {
            only(&["unix", "format"])?;
            if !attr("unix").is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())) {
                return Err(format!("Tag \"tg-time\" at byte offset {at} must have a numeric unix"));
            }
            if let Some(format) = attr("format")
                && !time_format(format)
            {
                return Err(format!("Tag \"tg-time\" at byte offset {at}: bad format \"{format}\""));
            }
            Kind::Time
        }
        _ => return Err(format!("Unsupported start tag \"{name}\" at byte offset {at}")),
    };
    let refused = if inside(Kind::Code) {
        Some("code can't contain other entities")
    } else if inside(Kind::Pre) && !(kind == Kind::Code && parent == Some(Kind::Pre)) {
        Some("pre can only contain one code tag")
    } else if kind == Kind::Quote && inside(Kind::Quote) {
        Some("blockquotes can't be nested")
    } else if kind == Kind::Link && inside(Kind::Link) {
        Some("links can't be nested")
    } else if matches!(kind, Kind::Pre | Kind::Code) && open.iter().any(|o| !matches!(o.kind, Kind::Quote | Kind::Pre))
    {
        Some("pre and code can't be inside other entities")
    } else {
        None
    };
    if let Some(why) = refused {
        return Err(format!("Tag \"{name}\" at byte offset {at}: {why}"));
    }
    open.push(Open { name, kind });
    Ok(())
}

/// The attributes of a start tag (what follows its name), values unquoted; `None` when they
/// do not parse or the tag closes itself.
fn attributes(mut s: &str) -> Option<Vec<(String, String)>> {
    let mut attrs = Vec::new();
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Some(attrs);
        }
        let key_len = s.find(|c: char| c.is_whitespace() || c == '=').unwrap_or(s.len());
        let key = s[..key_len].to_ascii_lowercase();
        if key.is_empty() || key.contains(['/', '"', '\'']) {
            return None;
        }
        s = s[key_len..].trim_start();
        let value = if let Some(after) = s.strip_prefix('=') {
            let after = after.trim_start();
            let (value, rest) = match after.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let end = after[1..].find(q)? + 1;
                    (&after[1..end], &after[end + 1..])
                }
                _ => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            s = rest;
            value.to_owned()
        } else {
            String::new()
        };
        attrs.push((key, value));
    }
}

/// Whether `format` matches `r|w?[dD]?[tT]?`.
fn time_format(format: &str) -> bool {
    if format == "r" {
        return true;
    }
    let mut rest = format;
    for set in ["w", "dD", "tT"] {
        if rest.starts_with(|c: char| set.contains(c)) {
            rest = &rest[1..];
        }
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::visible_text;

    #[test]
    fn documented_markup_passes_and_counts_only_what_shows() {
        let html = "<b>bold <i>it <s>st <span class=\"tg-spoiler\">sp</span></s> <u>u</u></i></b> \
                    <a href=\"https://example.com/?a=1&amp;b=2\">link</a> &lt;&gt;&amp;&quot;&#65;&#x42; \
                    <pre><code class=\"language-rust\">fn x() {}</code></pre><code>c</code>\
                    <blockquote expandable>q <tg-spoiler>s</tg-spoiler></blockquote>\
                    <tg-emoji emoji-id=\"5368324170671202286\">👍</tg-emoji>\
                    <tg-time unix=\"1647531900\" format=\"wDT\">t</tg-time><STRONG>S</STRONG>";
        assert_eq!(visible_text(html).expect("valid"), "bold it st sp u link <>&\"AB fn x() {}cq s👍tS");
    }

    #[test]
    fn what_telegram_refuses_is_refused() {
        for (html, why) in [
            ("<div>x</div>", "Unsupported start tag \"div\""),
            ("<b>x", "Can't find end tag corresponding to start tag \"b\""),
            ("<b><i>x</b></i>", "Unmatched end tag"),
            ("x</b>", "Unexpected end tag"),
            ("a < b", "end of the tag"),
            ("a > b", "'>'"),
            ("fish & chips", "'&'"),
            ("&nbsp;", "'&'"),
            ("<br/>", "Unsupported start tag \"br\""),
            ("<a>x</a>", "href"),
            ("<a href=\"x\" target=\"_blank\">x</a>", "Unsupported attribute \"target\""),
            ("<b class=\"x\">x</b>", "Unsupported attribute"),
            ("<span>x</span>", "tg-spoiler"),
            ("<code class=\"language-rust\">x</code>", "language"),
            ("<pre><b>x</b></pre>", "pre can only contain"),
            ("<code><b>x</b></code>", "code can't contain"),
            ("<b><code>x</code></b>", "pre and code"),
            ("<blockquote><blockquote>x</blockquote></blockquote>", "nested"),
            ("<a href=\"x\"><a href=\"y\">x</a></a>", "nested"),
            ("<tg-time unix=\"1\" format=\"x\">t</tg-time>", "format"),
        ] {
            let err = visible_text(html).expect_err(html);
            assert!(err.contains(why), "{html}: {err}");
        }
    }
}

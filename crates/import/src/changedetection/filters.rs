//! cd's filters in driftwatch's terms: an include filter (CSS, XPath or a JSONPath) as a CSS
//! selector or a JSON Pointer, and a line of text (`/regex/flags` or plain text, which cd
//! matches case-insensitively) as a regex.
//!
//! XPath becomes CSS where it says the same thing: child and descendant steps, names and `*`,
//! and predicates on attributes (`[@a]`, `[@a='v']`, `contains(@a,'v')`, `starts-with`),
//! positions (`[n]`, `last()`) joined by `and`, unions with `|`, a trailing `/text()`. Anything
//! else (axes, text tests, functions) has no CSS equivalent and is said.

/// What an include filter becomes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Include {
    /// A CSS selector (as written, or translated from XPath).
    Css(String),
    /// A JSON Pointer, from a simple JSONPath.
    JsonPointer(String),
    /// Why it cannot be carried.
    Unmapped(String),
}

/// Reads one of cd's include (or removed-element) filters.
pub(crate) fn include(filter: &str) -> Include {
    let filter = filter.trim();
    if let Some(path) = filter.strip_prefix("json:") {
        return match json_pointer(path.trim()) {
            Some(pointer) => Include::JsonPointer(pointer),
            None => Include::Unmapped("only simple JSONPaths ($.a.b[0]) become a JSON Pointer".into()),
        };
    }
    if filter.starts_with("jq:") || filter.starts_with("jqraw:") {
        return Include::Unmapped("jq filters select JSON: add a value read with jq instead".into());
    }
    let xpath = filter.strip_prefix("xpath:").or_else(|| filter.strip_prefix("xpath1:"));
    match xpath {
        Some(xpath) => xpath_to_css(xpath.trim()),
        None if filter.starts_with('/') || filter.starts_with("./") => xpath_to_css(filter),
        None => Include::Css(filter.to_owned()),
    }
}

/// A line of cd's ignore or extract text as a regex: `/re/flags` as written (`i` kept), plain
/// text as a case-insensitive literal; `None` when the regex is not valid.
pub(crate) fn line_regex(text: &str) -> Option<String> {
    let text = text.trim();
    let regex = match text.strip_prefix('/').and_then(|rest| rest.rsplit_once('/')) {
        Some((body, flags)) if !body.is_empty() && flags.chars().all(|c| c.is_ascii_alphabetic()) => {
            if flags.contains('i') { format!("(?i){body}") } else { body.to_owned() }
        }
        _ => format!("(?i){}", regex::escape(text)),
    };
    regex::Regex::new(&regex).is_ok().then_some(regex)
}

/// `$.a.b[0]['c d']` as `/a/b/0/c d`; `None` for wildcards, filters and recursive descent.
fn json_pointer(path: &str) -> Option<String> {
    let mut rest = path.strip_prefix('$')?;
    let mut pointer = String::new();
    while !rest.is_empty() {
        let token = if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let (name, tail) = after.split_at(end);
            rest = tail;
            name.to_owned()
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let (inner, tail) = after.split_at(end);
            rest = &tail[1..];
            let inner = inner.trim();
            match inner.strip_prefix(['\'', '"']).and_then(|s| s.strip_suffix(['\'', '"'])) {
                Some(quoted) => quoted.to_owned(),
                None if inner.chars().all(|c| c.is_ascii_digit()) && !inner.is_empty() => inner.to_owned(),
                None => return None,
            }
        } else {
            return None;
        };
        if token.is_empty() || token == "*" || token.starts_with('?') {
            return None;
        }
        pointer.push('/');
        pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
    }
    Some(pointer)
}

/// An XPath as CSS, where CSS can say it.
fn xpath_to_css(xpath: &str) -> Include {
    let mut selectors = Vec::new();
    for branch in split_outside_brackets(xpath, '|') {
        match branch_to_css(branch.trim()) {
            Ok(css) => selectors.push(css),
            Err(why) => return Include::Unmapped(format!("XPath with {why} has no CSS equivalent")),
        }
    }
    Include::Css(selectors.join(", "))
}

fn branch_to_css(xpath: &str) -> Result<String, String> {
    let path = xpath.strip_prefix('.').unwrap_or(xpath);
    let path = path.strip_suffix("/text()").unwrap_or(path);
    if path.is_empty() || !path.starts_with('/') {
        return Err("a relative path".into());
    }
    let mut css = String::new();
    let mut rest = path;
    let mut first = true;
    while !rest.is_empty() {
        let descendant = rest.starts_with("//");
        rest = rest.trim_start_matches('/');
        let end = step_end(rest);
        let (step, tail) = rest.split_at(end);
        rest = tail;
        if !first {
            css.push_str(if descendant { " " } else { " > " });
        }
        first = false;
        css.push_str(&step_to_css(step)?);
    }
    Ok(css)
}

/// Where the step at the start of `rest` ends: the next `/` outside brackets and quotes.
fn step_end(rest: &str) -> usize {
    let (mut depth, mut quote) = (0usize, None);
    for (i, c) in rest.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => depth = depth.saturating_sub(1),
            (None, '/') if depth == 0 => return i,
            _ => {}
        }
    }
    rest.len()
}

fn step_to_css(step: &str) -> Result<String, String> {
    let name_end = step.find('[').unwrap_or(step.len());
    let (name, mut predicates) = step.split_at(name_end);
    if name.contains("::") || name.contains('(') || name == "." || name == ".." || name.starts_with('@') {
        return Err(format!("the step `{step}`"));
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '*') {
        return Err(format!("the step `{step}`"));
    }
    let mut css = name.to_ascii_lowercase();
    while let Some(inner) = predicates.strip_prefix('[') {
        let end = step_end_bracket(inner).ok_or_else(|| format!("the step `{step}`"))?;
        for part in inner[..end].split(" and ") {
            css.push_str(&predicate(part.trim(), name == "*")?);
        }
        predicates = &inner[end + 1..];
    }
    if !predicates.is_empty() {
        return Err(format!("the step `{step}`"));
    }
    Ok(css)
}

/// The index of the `]` closing a predicate that starts at `inner`.
fn step_end_bracket(inner: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in inner.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn predicate(part: &str, any_element: bool) -> Result<String, String> {
    if let Ok(n) = part.parse::<u32>() {
        return Ok(if any_element { format!(":nth-child({n})") } else { format!(":nth-of-type({n})") });
    }
    if part == "last()" {
        return Ok(if any_element { ":last-child".into() } else { ":last-of-type".into() });
    }
    if let Some(attribute) = part.strip_prefix('@') {
        return match attribute.split_once('=') {
            None if is_name(attribute) => Ok(format!("[{attribute}]")),
            Some((name, value)) if is_name(name.trim()) => {
                Ok(format!("[{}=\"{}\"]", name.trim(), quoted(value.trim()).ok_or_else(|| format!("`{part}`"))?))
            }
            _ => Err(format!("the predicate `{part}`")),
        };
    }
    for (function, operator) in [("contains", "*="), ("starts-with", "^=")] {
        if let Some(args) = part.strip_prefix(function).and_then(|a| a.trim().strip_prefix('(')?.strip_suffix(')'))
            && let Some((attribute, value)) = args.split_once(',')
            && let Some(name) = attribute.trim().strip_prefix('@').filter(|n| is_name(n))
            && let Some(value) = quoted(value.trim())
        {
            return Ok(format!("[{name}{operator}\"{value}\"]"));
        }
    }
    Err(format!("the predicate `{part}`"))
}

fn is_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
}

/// The text of `'v'` or `"v"`, escaped for a CSS string.
fn quoted(value: &str) -> Option<String> {
    let inner = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\''));
    let inner = inner.or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))?;
    Some(inner.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `text` split at `separator` where it is outside brackets and quotes.
fn split_outside_brackets(text: &str, separator: char) -> Vec<&str> {
    let (mut parts, mut start, mut depth, mut quote) = (Vec::new(), 0, 0usize, None);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']' | ')') => depth = depth.saturating_sub(1),
            (None, c) if c == separator && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn css(filter: &str) -> String {
        match include(filter) {
            Include::Css(css) => css,
            other => panic!("{filter}: {other:?}"),
        }
    }

    #[test]
    fn xpath_becomes_the_css_that_selects_the_same() {
        assert_eq!(css("xpath://div[@id='price']"), "div[id=\"price\"]");
        assert_eq!(css("/html/body/div[2]/span"), "html > body > div:nth-of-type(2) > span");
        assert_eq!(css("xpath://*[contains(@class,'stock')]//p/text()"), "*[class*=\"stock\"] p");
        assert_eq!(
            css("xpath1://ul[@class=\"a\" and @data-x]/li[last()]"),
            "ul[class=\"a\"][data-x] > li:last-of-type"
        );
        assert_eq!(css("xpath://h1 | //h2[starts-with(@id, 'x')]"), "h1, h2[id^=\"x\"]");
        assert_eq!(css("#price .now"), "#price .now");
        for unmapped in [
            "xpath://div[contains(text(),'x')]",
            "xpath://a/@href",
            "xpath://div/following-sibling::p",
            "xpath:count(//a)",
        ] {
            assert!(matches!(include(unmapped), Include::Unmapped(_)), "{unmapped}");
        }
    }

    #[test]
    fn simple_jsonpaths_become_pointers() {
        assert_eq!(include("json:$.data.items[0].price"), Include::JsonPointer("/data/items/0/price".into()));
        assert_eq!(include("json:$['a/b']"), Include::JsonPointer("/a~1b".into()));
        assert!(matches!(include("json:$..price"), Include::Unmapped(_)));
        assert!(matches!(include("json:$.items[?(@.x)]"), Include::Unmapped(_)));
        assert!(matches!(include("jq:.price"), Include::Unmapped(_)));
    }

    #[test]
    fn text_lines_become_regexes_as_cd_matches_them() {
        assert_eq!(line_regex("Sold out (today)").as_deref(), Some(r"(?i)Sold out \(today\)"));
        assert_eq!(line_regex("/\\d+ views/").as_deref(), Some(r"\d+ views"));
        assert_eq!(line_regex("/visitors/i").as_deref(), Some("(?i)visitors"));
        assert_eq!(line_regex("/([/"), None);
    }
}

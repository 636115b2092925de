//! The text form of a watch's browser settings in the watch form: the steps textarea, one step
//! a line (`click #accept`, `type #q "running shoes"`), read into steps and written back as
//! lines; the ignored regions, one `x,y,width,height` a line. Errors name the line.

use driftwatch_core::{Region, Step, StepText};

/// The regions of the ignored-regions textarea, one `x,y,width,height` a line in whole pixels
/// (blank lines skipped). The error names the line.
pub(crate) fn parse_regions(text: &str) -> Result<Vec<Region>, String> {
    let mut regions = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let numbers: Vec<Option<u32>> = line.split(',').map(|p| p.trim().parse().ok()).collect();
        match numbers[..] {
            [Some(x), Some(y), Some(width), Some(height)] => regions.push(Region { x, y, width, height }),
            _ => {
                return Err(format!("line {}: write x,y,width,height in whole pixels, like 0,0,1280,90", n + 1));
            }
        }
    }
    Ok(regions)
}

/// The steps of the steps textarea, one a line: `click #accept`, `type #q running shoes`,
/// `type_secret #password shop` (one of the account's secrets), `press Enter`, `select #size M`, `scroll` or `scroll #footer`, `wait_for .price` or
/// `wait_for 1500`. The last argument is the rest of the line; a selector followed by more
/// (`type`, `select`) ends at the first space. Any argument may be written in double quotes
/// (`\"`, `\\` and `\n` inside), which [`step_line`] does when it would not read back as it
/// is (a selector with spaces, a text with spaces at its ends). The error names the line.
pub(crate) fn parse_steps(text: &str) -> Result<Vec<Step>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| parse_step(line.trim()).map_err(|why| format!("line {}: {why}", n + 1)))
        .collect()
}

/// One step of [`parse_steps`], its line trimmed; the error without the line number.
fn parse_step(line: &str) -> Result<Step, String> {
    let (action, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let missing = |usage: &str| format!("{action} needs {usage}");
    match action.to_ascii_lowercase().as_str() {
        "click" => {
            let selector = last(rest)?.ok_or_else(|| missing("a CSS selector, like click #accept"))?;
            Ok(Step::Click { selector })
        }
        "type" => {
            let usage = "a CSS selector and the text, like type #q running shoes";
            let (selector, rest) = word(rest)?.ok_or_else(|| missing(usage))?;
            let text = last(rest)?.ok_or_else(|| missing(usage))?;
            Ok(Step::Type { selector, text: StepText::Text(text) })
        }
        "type_secret" => {
            let usage = "a CSS selector and the name of one of your secrets, like type_secret #password shop";
            let (selector, rest) = word(rest)?.ok_or_else(|| missing(usage))?;
            let secret = last(rest)?.ok_or_else(|| missing(usage))?;
            Ok(Step::Type { selector, text: StepText::Secret { secret } })
        }
        "press" => Ok(Step::Press { key: last(rest)?.ok_or_else(|| missing("a key, like press Enter"))? }),
        "select" => {
            let usage = "a CSS selector and the option's value, like select #size M";
            let (selector, rest) = word(rest)?.ok_or_else(|| missing(usage))?;
            let value = last(rest)?.ok_or_else(|| missing(usage))?;
            Ok(Step::Select { selector, value })
        }
        "scroll" => Ok(Step::Scroll { selector: last(rest)? }),
        "wait_for" => {
            let quoted = rest.trim_start().starts_with('"');
            match last(rest)? {
                Some(ms) if !quoted && ms.bytes().all(|b| b.is_ascii_digit()) => match ms.parse() {
                    Ok(ms) => Ok(Step::WaitFor { selector: None, ms: Some(ms) }),
                    Err(_) => Err("wait_for waits at most 60000 milliseconds".to_owned()),
                },
                Some(selector) => Ok(Step::WaitFor { selector: Some(selector), ms: None }),
                None => Err(missing("a CSS selector or milliseconds, like wait_for .price or wait_for 1500")),
            }
        }
        _ => Err(format!("“{action}” is not a step: use click, type, type_secret, press, select, scroll or wait_for")),
    }
}

/// The first argument of `rest` (a quoted string, or up to the next space) and what follows;
/// `None` when there is none.
fn word(rest: &str) -> Result<Option<(String, &str)>, String> {
    let rest = rest.trim_start();
    if rest.is_empty() {
        return Ok(None);
    }
    if rest.starts_with('"') {
        return unquote(rest).map(Some);
    }
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    Ok(Some((rest[..end].to_owned(), &rest[end..])))
}

/// The last argument: the rest of the line, trimmed, or a quoted string; `None` when empty.
fn last(rest: &str) -> Result<Option<String>, String> {
    let rest = rest.trim();
    if rest.is_empty() {
        return Ok(None);
    }
    if !rest.starts_with('"') {
        return Ok(Some(rest.to_owned()));
    }
    match unquote(rest)? {
        (text, after) if after.trim().is_empty() => Ok(Some(text)),
        _ => Err("nothing may follow a closing quote; put the whole text in quotes".to_owned()),
    }
}

/// The quoted string `text` starts with, and what follows its closing quote.
fn unquote(text: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &text[i + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, c)) => out.push(c),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("a closing \" is missing".to_owned())
}

/// A step as a line of the textarea: [`parse_steps`] reads it back as the same step.
pub(crate) fn step_line(step: &Step) -> String {
    let quote = |s: &str| {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n").replace('\r', "\\r"))
    };
    let risky = |s: &str| s.is_empty() || s.starts_with('"') || s.contains(['\n', '\r']);
    let first = |s: &str| if risky(s) || s.contains(char::is_whitespace) { quote(s) } else { s.to_owned() };
    let rest = |s: &str| if risky(s) || s.trim() != s { quote(s) } else { s.to_owned() };
    match step {
        Step::Click { selector } => format!("click {}", rest(selector)),
        Step::Type { selector, text: StepText::Text(text) } => format!("type {} {}", first(selector), rest(text)),
        Step::Type { selector, text: StepText::Secret { secret } } => {
            format!("type_secret {} {}", first(selector), rest(secret))
        }
        Step::Press { key } => format!("press {}", rest(key)),
        Step::Select { selector, value } => format!("select {} {}", first(selector), rest(value)),
        Step::Scroll { selector: None } => "scroll".to_owned(),
        Step::Scroll { selector: Some(selector) } => format!("scroll {}", rest(selector)),
        Step::WaitFor { selector: Some(selector), .. } if selector.bytes().all(|b| b.is_ascii_digit()) => {
            format!("wait_for {}", quote(selector))
        }
        Step::WaitFor { selector: Some(selector), .. } => format!("wait_for {}", rest(selector)),
        Step::WaitFor { selector: None, ms: Some(ms) } => format!("wait_for {ms}"),
        Step::WaitFor { selector: None, ms: None } => "wait_for".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_read_as_typed_and_name_the_line() {
        let steps = parse_steps("click #accept\n\n  type #q running shoes\npress Enter\nselect #size M\nscroll\nscroll #footer\nwait_for .price\nwait_for 1500").expect("steps");
        assert_eq!(
            steps,
            [
                Step::Click { selector: "#accept".into() },
                Step::Type { selector: "#q".into(), text: "running shoes".into() },
                Step::Press { key: "Enter".into() },
                Step::Select { selector: "#size".into(), value: "M".into() },
                Step::Scroll { selector: None },
                Step::Scroll { selector: Some("#footer".into()) },
                Step::WaitFor { selector: Some(".price".into()), ms: None },
                Step::WaitFor { selector: None, ms: Some(1500) },
            ]
        );
        assert_eq!(
            parse_steps("click #a\ndance #x").unwrap_err(),
            "line 2: “dance” is not a step: use click, type, type_secret, press, select, scroll or wait_for"
        );
        assert!(parse_steps("\ntype #q").unwrap_err().starts_with("line 2: type needs a CSS selector and the text"));
        assert!(parse_steps("click").unwrap_err().starts_with("line 1: click needs a CSS selector"));
        assert!(parse_steps("type \"#q x").unwrap_err().contains("closing \" is missing"));
    }
}

//! Telegram's MarkdownV2 parse mode: reserved characters escaped, entities closed.

/// Characters that must be escaped with `\` outside entities' own syntax.
const RESERVED: &str = "_*[]()~`>#+-=|{}.!";

/// The text a Telegram user sees for `text` in MarkdownV2, or why Telegram refuses it.
pub(crate) fn visible_text(text: &str) -> Result<String, String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = String::with_capacity(text.len());
    // Open style markers (`*`, `_`, `__`, `~`, `||`, `[`) with where they opened.
    let mut open: Vec<(&'static str, usize)> = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let is = |i: usize, c: char| chars.get(i).is_some_and(|&(_, x)| x == c);
    let mut line_start = true;
    while let Some(&(byte, c)) = chars.get(i) {
        let was_line_start = line_start;
        line_start = c == '\n';
        match c {
            '\\' => {
                let Some(&(_, next)) = chars.get(i + 1) else {
                    return Err(format!("Character '\\' at byte offset {byte} escapes nothing"));
                };
                if !(1..=126).contains(&(next as u32)) {
                    return Err(format!("Character '\\' at byte offset {byte} escapes a character above 126"));
                }
                out.push(next);
                i += 2;
            }
            '`' => {
                let fence = is(i + 1, '`') && is(i + 2, '`');
                let mut j = if fence { i + 3 } else { i + 1 };
                if fence {
                    // The language, if any, runs to the end of the first line and is not shown.
                    while chars.get(j).is_some_and(|&(_, c)| c != '\n' && c != '`') {
                        j += 1;
                    }
                    if is(j, '\n') {
                        j += 1;
                    }
                }
                loop {
                    let Some(&(_, c)) = chars.get(j) else {
                        let what = if fence { "Pre" } else { "Code" };
                        return Err(format!("Can't find end of {what} entity at byte offset {byte}"));
                    };
                    if c == '\\' {
                        let Some(&(_, next)) = chars.get(j + 1) else {
                            return Err(format!("Character '\\' at byte offset {} escapes nothing", at(j)));
                        };
                        out.push(next);
                        j += 2;
                    } else if c == '`' {
                        if !fence {
                            j += 1;
                            break;
                        }
                        if is(j + 1, '`') && is(j + 2, '`') {
                            j += 3;
                            break;
                        }
                        return Err(format!("Character '`' at byte offset {} must be escaped in pre", at(j)));
                    } else {
                        out.push(c);
                        j += 1;
                    }
                }
                i = j;
            }
            '>' if was_line_start => i += 1,
            '*' if was_line_start && is(i + 1, '*') && is(i + 2, '>') => i += 3,
            '|' if is(i + 1, '|') => {
                let ends_line = chars.get(i + 2).is_none_or(|&(_, c)| c == '\n');
                let quoted = text[..byte].rsplit('\n').next().is_some_and(|line| line.starts_with('>'));
                if open.last().is_some_and(|(m, _)| *m == "||") {
                    open.pop();
                } else if !(ends_line && quoted) {
                    open.push(("||", byte));
                }
                i += 2;
            }
            '_' if is(i + 1, '_') => {
                toggle(&mut open, "__", byte);
                i += 2;
            }
            '*' | '_' | '~' => {
                toggle(&mut open, marker(c), byte);
                i += 1;
            }
            '[' => {
                open.push(("[", byte));
                i += 1;
            }
            '!' if is(i + 1, '[') => {
                open.push(("[", byte));
                i += 2;
            }
            ']' if open.last().is_some_and(|(m, _)| *m == "[") => {
                open.pop();
                if !is(i + 1, '(') {
                    return Err(format!("Link at byte offset {byte} has no (URL)"));
                }
                let mut j = i + 2;
                loop {
                    match chars.get(j) {
                        None => return Err(format!("Can't find end of the URL at byte offset {}", at(i + 1))),
                        Some((_, '\\')) => j += 2,
                        Some((_, ')')) => break,
                        Some(_) => j += 1,
                    }
                }
                i = j + 1;
            }
            c if RESERVED.contains(c) => {
                return Err(format!(
                    "Character '{c}' is reserved and must be escaped with the preceding '\\' (byte offset {byte})"
                ));
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    if let Some((marker, byte)) = open.last() {
        return Err(format!("Can't find end of the entity \"{marker}\" starting at byte offset {byte}"));
    }
    Ok(out)
}

/// The marker string of a one-character style.
fn marker(c: char) -> &'static str {
    match c {
        '*' => "*",
        '_' => "_",
        _ => "~",
    }
}

/// Closes `marker` if it is the innermost open one, opens it otherwise.
fn toggle(open: &mut Vec<(&'static str, usize)>, marker: &'static str, byte: usize) {
    if open.last().is_some_and(|(m, _)| *m == marker) {
        open.pop();
    } else {
        open.push((marker, byte));
    }
}

#[cfg(test)]
mod tests {
    use super::visible_text;

    #[test]
    fn documented_markup_passes() {
        let text = "*bold \\*text*\n_italic_ __underline__ ~strike~ ||spoiler||\n\
                    *bold _italic bold ~ib strike ||ibs spoiler||~ __underline italic bold___ bold*\n\
                    [inline URL](http://www.example.com/) ![👍](tg://emoji?id=5368324170671202286)\n\
                    `inline code` \n```python\nprint(1)\n```\n>quote\n**>expandable\n>last line||\nend\\.";
        let shown = visible_text(text).expect("valid");
        assert!(shown.starts_with("bold *text\nitalic underline strike spoiler"), "{shown}");
        assert!(shown.contains("inline URL 👍") && shown.contains("print(1)\n") && shown.ends_with("end."), "{shown}");
    }

    #[test]
    fn unescaped_and_unclosed_are_refused() {
        for (text, why) in [
            ("Version 1.2", "'.'"),
            ("a-b", "'-'"),
            ("wow!", "'!'"),
            ("*bold", "entity \"*\""),
            ("`code", "Code entity"),
            ("[link](http://x", "URL"),
            ("a > b", "'>'"),
            ("(x)", "'('"),
        ] {
            let err = visible_text(text).expect_err(text);
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}

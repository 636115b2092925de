//! The streaming tree builder: the open-element stack that html5ever
//! would build, kept only for the insertion modes and tags whose effect is a plain push or pop
//! of the current node. Anything that would close elements implicitly (beyond the few exact
//! cases below), reparent, reconstruct formatting elements or leave HTML is a [`Bail`].

use std::borrow::Cow;

use crate::MAX_DEPTH;
use crate::lexer::{Attrs, Bail, Lexer, RawKind, Token};
use crate::tags::Kind;

/// An open element as selectors and text collection see it.
pub struct Element<'s> {
    /// The tag name, in ASCII lowercase.
    pub name: Cow<'s, str>,
    /// The attributes, first of duplicates only.
    pub attrs: Attrs<'s>,
    /// A sink's mark: scrape's text extraction sets it to the index of the first remove
    /// selector that detached this element, so that later selectors and sinks see it.
    pub removed_by: Option<usize>,
    /// The element's categories.
    pub kind: Kind,
    mode: Mode,
    /// A `p` is open in button scope here (kept per element: scanning the stack for each
    /// block start tag would be quadratic in the depth).
    p_in_scope: bool,
}

impl Element<'_> {
    /// The value of the attribute `name` (lowercase), if the element has it.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| &**v)
    }
}

impl std::fmt::Debug for Element<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// What receives the tree as it is built.
pub trait Sink<'s> {
    /// The last element of `stack` has just been inserted.
    fn open(&mut self, stack: &mut [Element<'s>]) -> Result<(), Bail>;
    /// Text inserted into the last element of the stack.
    fn text(&mut self, text: &str);
    /// The last element of `stack` is about to be popped.
    fn close(&mut self, stack: &[Element<'s>]);
}

/// The insertion mode that applies while an element is the current node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Body,
    Table,
    TableBody,
    Row,
    Cell,
    Caption,
    ColumnGroup,
}

/// Where the document stands before its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    BeforeHtml,
    BeforeHead,
    InHead,
    AfterHead,
    InBody,
}

fn is_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

/// Elements that end the default scope (and `button` the button scope).
fn is_scope_boundary(name: &str, button: bool) -> bool {
    matches!(name, "applet" | "caption" | "html" | "table" | "td" | "th" | "marquee" | "object" | "template")
        || (button && name == "button")
}

fn raw_kind(name: &str) -> Option<(RawKind, &'static str)> {
    Some(match name {
        "title" => (RawKind::Rcdata, "title"),
        "textarea" => (RawKind::Rcdata, "textarea"),
        "style" => (RawKind::RawText, "style"),
        "noscript" => (RawKind::RawText, "noscript"),
        "noframes" => (RawKind::RawText, "noframes"),
        "iframe" => (RawKind::RawText, "iframe"),
        "script" => (RawKind::Script, "script"),
        _ => return None,
    })
}

/// Tokenizes and builds `src` (prepared by [`crate::prepare`] and free of NUL), reporting every
/// insertion and pop to `sink`. Fails with a [`Bail`] on whatever it cannot build exactly as
/// html5ever would, and past [`MAX_DEPTH`].
pub fn build<'s>(src: &'s str, sink: &mut impl Sink<'s>) -> Result<(), Bail> {
    let mut builder = Builder {
        lexer: Lexer::new(src),
        stack: Vec::with_capacity(32),
        phase: Phase::BeforeHtml,
        form_open: false,
        in_raw: false,
        skip_lf: false,
        sink,
    };
    loop {
        match builder.lexer.next_token()? {
            Token::Eof => return builder.eof(),
            token => builder.token(token)?,
        }
    }
}

struct Builder<'s, 'k, S> {
    lexer: Lexer<'s>,
    stack: Vec<Element<'s>>,
    phase: Phase,
    form_open: bool,
    /// The current node is a raw text element whose text and end tag come next.
    in_raw: bool,
    /// A line feed right after `<pre>`, `<listing>` or `<textarea>` is dropped.
    skip_lf: bool,
    sink: &'k mut S,
}

impl<'s, S: Sink<'s>> Builder<'s, '_, S> {
    fn token(&mut self, token: Token<'s>) -> Result<(), Bail> {
        let skip_lf = std::mem::take(&mut self.skip_lf);
        match token {
            Token::Text(text) => {
                let text: &str = &text;
                self.text(if skip_lf { text.strip_prefix('\n').unwrap_or(text) } else { text })
            }
            Token::Start { name, attrs } => self.start(name, attrs),
            Token::End(name) => self.end(&name),
            Token::Ignored | Token::Eof => Ok(()),
        }
    }

    fn mode(&self) -> Mode {
        self.stack.last().map_or(Mode::Body, |e| e.mode)
    }

    fn current(&self) -> &str {
        self.stack.last().map_or("", |e| &e.name)
    }

    fn push(&mut self, name: Cow<'s, str>, attrs: Attrs<'s>) -> Result<(), Bail> {
        let mode = match &*name {
            "td" | "th" => Mode::Cell,
            "tr" => Mode::Row,
            "tbody" | "thead" | "tfoot" => Mode::TableBody,
            "table" => Mode::Table,
            "caption" => Mode::Caption,
            "colgroup" => Mode::ColumnGroup,
            _ => self.mode(),
        };
        if self.stack.len() >= MAX_DEPTH {
            return Err(Bail("nesting deeper than the limit"));
        }
        let p_in_scope = match &*name {
            "p" => true,
            n if is_scope_boundary(n, true) => false,
            _ => self.stack.last().is_some_and(|e| e.p_in_scope),
        };
        let kind = Kind::of(&name);
        self.stack.push(Element { name, attrs, removed_by: None, kind, mode, p_in_scope });
        self.sink.open(&mut self.stack)
    }

    fn implied(&mut self, name: &'static str) -> Result<(), Bail> {
        self.push(Cow::Borrowed(name), Vec::new())
    }

    fn pop(&mut self) {
        self.sink.close(&self.stack);
        self.stack.pop();
    }

    fn void(&mut self, name: Cow<'s, str>, attrs: Attrs<'s>) -> Result<(), Bail> {
        self.push(name, attrs)?;
        self.pop();
        Ok(())
    }

    fn raw(&mut self, name: Cow<'s, str>, attrs: Attrs<'s>) -> Result<(), Bail> {
        let (kind, static_name) = raw_kind(&name).ok_or(Bail("not a raw text element"))?;
        self.push(name, attrs)?;
        self.lexer.enter_raw(kind, static_name);
        self.in_raw = true;
        self.skip_lf = static_name == "textarea";
        Ok(())
    }

    /// Whether an element named `target` is in scope (button scope adds `button`).
    fn in_scope(&self, target: &str, button: bool) -> bool {
        for element in self.stack.iter().rev() {
            let name = &*element.name;
            if name == target {
                return true;
            }
            if is_scope_boundary(name, button) {
                return false;
            }
        }
        false
    }

    fn refuse_open_p(&self) -> Result<(), Bail> {
        if self.stack.last().is_some_and(|e| e.p_in_scope) { Err(Bail("implicit </p>")) } else { Ok(()) }
    }

    fn text(&mut self, mut text: &str) -> Result<(), Bail> {
        while !text.is_empty() {
            if self.in_raw {
                self.sink.text(text);
                return Ok(());
            }
            let rest = text.trim_start_matches(is_space);
            match self.phase {
                Phase::BeforeHtml | Phase::BeforeHead => {
                    if rest.is_empty() {
                        return Ok(());
                    }
                    self.implied_next()?;
                }
                Phase::InHead | Phase::AfterHead => {
                    let space = &text[..text.len() - rest.len()];
                    if !space.is_empty() {
                        self.sink.text(space);
                    }
                    if rest.is_empty() {
                        return Ok(());
                    }
                    self.implied_next()?;
                }
                Phase::InBody => {
                    return match self.mode() {
                        Mode::Body | Mode::Cell | Mode::Caption => {
                            self.sink.text(text);
                            Ok(())
                        }
                        _ if rest.is_empty() => {
                            self.sink.text(text);
                            Ok(())
                        }
                        _ => Err(Bail("text in a table (foster parenting)")),
                    };
                }
            }
            text = rest;
        }
        Ok(())
    }

    /// Leaves the current phase the way "anything else" does.
    fn implied_next(&mut self) -> Result<(), Bail> {
        match self.phase {
            Phase::BeforeHtml => {
                self.implied("html")?;
                self.phase = Phase::BeforeHead;
            }
            Phase::BeforeHead => {
                self.implied("head")?;
                self.phase = Phase::InHead;
            }
            Phase::InHead => {
                self.pop();
                self.phase = Phase::AfterHead;
            }
            Phase::AfterHead => {
                self.implied("body")?;
                self.phase = Phase::InBody;
            }
            Phase::InBody => {}
        }
        Ok(())
    }

    fn start(&mut self, name: Cow<'s, str>, attrs: Attrs<'s>) -> Result<(), Bail> {
        loop {
            match (self.phase, &*name) {
                (Phase::BeforeHtml, "html") => {
                    self.push(name, attrs)?;
                    self.phase = Phase::BeforeHead;
                    return Ok(());
                }
                (Phase::BeforeHead, "head") => {
                    self.push(name, attrs)?;
                    self.phase = Phase::InHead;
                    return Ok(());
                }
                (Phase::AfterHead, "body") => {
                    self.push(name, attrs)?;
                    self.phase = Phase::InBody;
                    return Ok(());
                }
                (Phase::BeforeHead | Phase::InHead | Phase::AfterHead, "html" | "head" | "template" | "frameset") => {
                    return Err(Bail("html, head, template or frameset start tag before the body"));
                }
                (Phase::InHead, "base" | "basefont" | "bgsound" | "link" | "meta") => return self.void(name, attrs),
                (Phase::InHead, n) if raw_kind(n).is_some() && !matches!(n, "textarea" | "iframe") => {
                    return self.raw(name, attrs);
                }
                (
                    Phase::AfterHead,
                    "base" | "basefont" | "bgsound" | "link" | "meta" | "noframes" | "script" | "style" | "title",
                ) => return Err(Bail("head element between head and body")),
                (Phase::InBody, _) => return self.start_in_body(name, attrs),
                _ => self.implied_next()?,
            }
        }
    }

    fn start_in_body(&mut self, name: Cow<'s, str>, attrs: Attrs<'s>) -> Result<(), Bail> {
        let table_part = Kind::of(&name).has(Kind::TABLE_PART);
        loop {
            let current = self.current();
            match (self.mode(), &*name) {
                (Mode::Body | Mode::Cell | Mode::Caption, _) if !table_part => {
                    return self.start_body_rules(name, attrs);
                }
                (Mode::Cell, _) if matches!(current, "td" | "th") => self.pop(),
                (Mode::Table, "caption" | "colgroup" | "tbody" | "thead" | "tfoot") => return self.push(name, attrs),
                (Mode::Table, "tr" | "td" | "th") => self.implied("tbody")?,
                (Mode::TableBody, "tr") | (Mode::Row, "td" | "th") => return self.push(name, attrs),
                (Mode::TableBody, "td" | "th") => self.implied("tr")?,
                (Mode::TableBody, "caption" | "col" | "colgroup" | "tbody" | "tfoot" | "thead")
                | (Mode::Row, "caption" | "col" | "colgroup" | "tbody" | "tfoot" | "thead" | "tr") => self.pop(),
                (Mode::ColumnGroup, "col") => return self.void(name, attrs),
                _ => return Err(Bail("start tag out of place in a table")),
            }
        }
    }

    fn start_body_rules(&mut self, name: Cow<'s, str>, attrs: Attrs<'s>) -> Result<(), Bail> {
        let n = &*name;
        let kind = Kind::of(n);
        if kind.has(Kind::REFUSED_IN_BODY) {
            return Err(Bail("start tag with its own insertion mode or ignored in the body"));
        }
        if kind.has(Kind::VOID) {
            return self.void(name, attrs);
        }
        if raw_kind(n).is_some() {
            return self.raw(name, attrs);
        }
        if kind.has(Kind::CLOSES_P) || matches!(n, "table" | "hr" | "pre" | "listing" | "form") {
            self.refuse_open_p()?;
        }
        match n {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
                if matches!(self.current(), "h1" | "h2" | "h3" | "h4" | "h5" | "h6") =>
            {
                return Err(Bail("heading inside a heading"));
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => self.refuse_open_p()?,
            "hr" => return self.void(name, attrs),
            "pre" | "listing" => self.skip_lf = true,
            "form" if self.form_open => return Err(Bail("nested form")),
            "form" => self.form_open = true,
            "li" | "dd" | "dt" => {
                let closes = |e: &str| if n == "li" { e == "li" } else { matches!(e, "dd" | "dt") };
                for element in self.stack.iter().rev() {
                    if closes(&element.name) {
                        return Err(Bail("implicit end of a list item"));
                    }
                    if element.kind.has(Kind::SPECIAL) && !matches!(&*element.name, "address" | "div" | "p") {
                        break;
                    }
                }
                self.refuse_open_p()?;
            }
            "button" if self.in_scope("button", false) => return Err(Bail("nested button")),
            "a" | "nobr" if self.stack.iter().any(|e| e.name == n) => return Err(Bail("nested a or nobr")),
            "option" | "optgroup" if matches!(self.current(), "option" | "optgroup") => {
                return Err(Bail("implicit end of an option"));
            }
            _ => {}
        }
        self.push(name, attrs)
    }

    fn end(&mut self, name: &str) -> Result<(), Bail> {
        if self.in_raw {
            self.in_raw = false;
            self.pop();
            return Ok(());
        }
        loop {
            let is_document = matches!(name, "head" | "body" | "html" | "br");
            match self.phase {
                Phase::BeforeHtml | Phase::BeforeHead if is_document => self.implied_next()?,
                // html5ever ignores `</head>` after the head.
                Phase::AfterHead if is_document && name != "head" => self.implied_next()?,
                Phase::InHead if name == "head" => {
                    self.implied_next()?;
                    return Ok(());
                }
                Phase::InHead if is_document => self.implied_next()?,
                Phase::InBody => return self.end_in_body(name),
                // Any other end tag before the body is ignored, except template's.
                _ if name == "template" => return Err(Bail("template end tag")),
                _ => return Ok(()),
            }
        }
    }

    fn end_in_body(&mut self, name: &str) -> Result<(), Bail> {
        let table_part = Kind::of(name).has(Kind::TABLE_PART);
        loop {
            let current = self.current();
            let below = self.stack.len().checked_sub(2).map_or("", |i| &*self.stack[i].name);
            match (self.mode(), name) {
                // After the body, content still goes to the current node: nothing to do.
                (
                    Mode::Body | Mode::Cell | Mode::Caption | Mode::Table | Mode::TableBody | Mode::Row,
                    "body" | "html",
                ) => {
                    return Ok(());
                }
                (Mode::Body, _) => return self.end_body_rules(name),
                (Mode::Cell, "td" | "th") if current == name => {
                    self.pop();
                    return Ok(());
                }
                (Mode::Cell, "table" | "tbody" | "tfoot" | "thead" | "tr") if matches!(current, "td" | "th") => {
                    self.pop()
                }
                (Mode::Caption, "caption") if current == "caption" => {
                    self.pop();
                    return Ok(());
                }
                (Mode::Cell | Mode::Caption, n) if !table_part && n != "table" => {
                    return self.end_body_rules(name);
                }
                (Mode::Table, "table") | (Mode::ColumnGroup, "colgroup") | (Mode::Row, "tr") => {
                    self.pop();
                    return Ok(());
                }
                (Mode::TableBody, "tbody" | "thead" | "tfoot") if current == name => {
                    self.pop();
                    return Ok(());
                }
                (Mode::TableBody, "table") | (Mode::Row, "table") => self.pop(),
                (Mode::Row, "tbody" | "thead" | "tfoot") if below == name => self.pop(),
                _ => return Err(Bail("end tag out of place in a table")),
            }
        }
    }

    fn end_body_rules(&mut self, name: &str) -> Result<(), Bail> {
        if matches!(name, "br" | "template") {
            return Err(Bail("</br> or </template>"));
        }
        if Kind::of(name).has(Kind::CLOSES_CURRENT) {
            if self.current() != name {
                return Err(Bail("end tag closing more than the current node"));
            }
            if name == "form" {
                self.form_open = false;
            }
            self.pop();
            return Ok(());
        }
        // Any other end tag: pops up to an element of that name unless a special element
        // comes first, in which case it is ignored.
        for (depth, element) in self.stack.iter().enumerate().rev() {
            if element.name == name {
                if depth + 1 != self.stack.len() {
                    return Err(Bail("end tag closing more than the current node"));
                }
                self.pop();
                return Ok(());
            }
            if element.kind.has(Kind::SPECIAL) {
                return Ok(());
            }
        }
        Ok(())
    }

    fn eof(&mut self) -> Result<(), Bail> {
        while self.phase != Phase::InBody {
            self.implied_next()?;
        }
        while !self.stack.is_empty() {
            self.pop();
        }
        Ok(())
    }
}

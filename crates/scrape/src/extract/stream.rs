//! The streaming path: text collected while the page is tokenized, with the DOM path's rules
//! (see `push_text`) applied to each selector match as its elements open and close.

use scraper::selector::Simple;
use selectors::parser::SelectorList;

use driftwatch_html::scripts::Scripts;
use driftwatch_html::{Bail, Element, Kind, Sink};

use super::matching::{self, Matcher};
use super::{ExtractError, normalise, parse_selector, text_limit};

/// What one collector reads: the whole page or a selector's matches, with remove selectors
/// applied first and links kept or not.
pub(super) struct Read<'a> {
    pub(super) selector: Option<&'a str>,
    pub(super) remove: &'a [String],
    pub(super) links: bool,
}

/// The page's text as the DOM path would give it, `Err(Bail)` where the streaming path cannot
/// be sure of that, `Ok(Err(_))` for the DOM path's own errors other than `Empty`.
pub(super) fn html_text(
    body: &str,
    selector: Option<&str>,
    remove: &[String],
    links: bool,
) -> Result<Result<String, ExtractError>, Bail> {
    let mut texts = html_texts(body, &[Read { selector, remove, links }], None)?;
    Ok(texts.pop().unwrap_or(Err(ExtractError::Empty)))
}

/// [`html_text`] for several reads in one pass over the page: one tokenizer and tree builder
/// feed a collector per read. Only the first read may have remove selectors (a removed element
/// is marked on the shared stack, where the others must not see it). `scripts`, when given,
/// rides the same pass. Bails when any read would (the caller then reads each on its own, and
/// `scripts` holds only part of the page).
pub(super) fn html_texts(
    body: &str,
    reads: &[Read<'_>],
    scripts: Option<&mut Scripts>,
) -> Result<Vec<Result<String, ExtractError>>, Bail> {
    debug_assert!(reads.iter().skip(1).all(|r| r.remove.is_empty()), "removes on the first read only");
    if body.contains('\0') {
        return Err(Bail("NUL character"));
    }
    let (parsed, failures) = parse_reads(reads)?;
    let limit = text_limit(body.len());
    let body = driftwatch_html::prepare(body);
    let body = &*body;

    let mut collectors = collectors(reads, &parsed, &failures, limit, body.len());
    // The first read (the one with removes) is fed last, so that the others open each element
    // before it is marked removed.
    if !collectors.is_empty() || scripts.is_some() {
        collectors.rotate_left(1);
        driftwatch_html::build(body, &mut Fan { collectors: &mut collectors, scripts })?;
        collectors.rotate_right(1);
    }
    if collectors.iter().any(|c| c.over) {
        return Err(OVER);
    }
    Ok(results(reads, failures, collectors))
}

/// A read's parsed remove selectors and selector.
type Parsed = (Vec<SelectorList<Simple>>, Option<SelectorList<Simple>>);

/// Parses each read's selectors, and the error of each read whose selectors do not parse.
fn parse_reads(reads: &[Read<'_>]) -> Result<(Vec<Parsed>, Vec<Option<ExtractError>>), Bail> {
    let mut parsed = Vec::with_capacity(reads.len());
    let mut failures = Vec::with_capacity(reads.len());
    for read in reads {
        // Same order of checks as the DOM path: remove selectors first, then the selector.
        let mut removes = Vec::with_capacity(read.remove.len());
        let mut failed = None;
        for text in read.remove {
            match parse(text)? {
                Ok(list) => removes.push(list),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let main = match (failed.is_none()).then(|| read.selector.map(parse).transpose()).transpose()? {
            Some(Some(Err(e))) => {
                failed = Some(e);
                None
            }
            Some(Some(Ok(list))) => Some(list),
            _ => None,
        };
        parsed.push((removes, main));
        failures.push(failed);
    }
    Ok((parsed, failures))
}

/// A collector for each read whose selectors parsed, in order; `body_len` is the prepared
/// page's length.
fn collectors<'a>(
    reads: &[Read<'_>],
    parsed: &'a [Parsed],
    failures: &[Option<ExtractError>],
    limit: usize,
    body_len: usize,
) -> Vec<Collector<'a>> {
    reads
        .iter()
        .zip(parsed)
        .zip(failures)
        .filter(|(_, failed)| failed.is_none())
        .map(|((read, (removes, main)), _)| Collector {
            main: main.as_ref(),
            removes,
            links: read.links,
            matcher: Matcher::default(),
            out: String::with_capacity(if read.selector.is_some() { 256 } else { body_len / 2 }),
            nested: Vec::new(),
            captures: Vec::new(),
            matched: false,
            spent: 0,
            limit,
            over: false,
        })
        .collect()
}

/// Each read's text, or the error that its selectors did not parse or its selector matched
/// nothing.
fn results(
    reads: &[Read<'_>],
    failures: Vec<Option<ExtractError>>,
    collectors: Vec<Collector<'_>>,
) -> Vec<Result<String, ExtractError>> {
    let mut collected = collectors.into_iter();
    reads
        .iter()
        .zip(failures)
        .map(|(read, failed)| match failed {
            Some(e) => Err(e),
            None => {
                let collector = collected.next().expect("one collector per read that parsed");
                match read.selector {
                    Some(selector) if !collector.matched => Err(ExtractError::SelectorMissing(selector.to_owned())),
                    _ => Ok(normalise(&collector.out)),
                }
            }
        })
        .collect()
}

/// Several collectors fed by one pass, in order, and the structured data's scripts (which
/// ignore the removes' marks).
struct Fan<'c, 'a> {
    collectors: &'c mut [Collector<'a>],
    scripts: Option<&'c mut Scripts>,
}

impl<'s> Sink<'s> for Fan<'_, '_> {
    fn open(&mut self, stack: &mut [Element<'s>]) -> Result<(), Bail> {
        if let Some(scripts) = self.scripts.as_deref_mut() {
            scripts.open(stack)?;
        }
        self.collectors.iter_mut().try_for_each(|c| c.open(stack))
    }

    fn text(&mut self, text: &str) {
        if let Some(scripts) = self.scripts.as_deref_mut() {
            scripts.text(text);
        }
        self.collectors.iter_mut().for_each(|c| c.text(text));
    }

    fn close(&mut self, stack: &[Element<'s>]) {
        if let Some(scripts) = self.scripts.as_deref_mut() {
            scripts.close(stack);
        }
        self.collectors.iter_mut().for_each(|c| c.close(stack));
    }
}

fn parse(selector: &str) -> Result<Result<SelectorList<Simple>, ExtractError>, Bail> {
    match matching::parse(selector) {
        Some(list) if matching::streamable(&list) => Ok(Ok(list)),
        Some(_) => Err(Bail("selector needs siblings, children or pseudo-classes")),
        // Both parsers are the same: this words the same failure as the DOM path does.
        None => match parse_selector(selector) {
            Err(e) => Ok(Err(e)),
            Ok(_) => Err(Bail("selector parsers disagree")),
        },
    }
}

/// The text of one match (or of the whole document) being collected.
struct Capture {
    /// Stack depth of the matched element.
    depth: usize,
    /// Where its text goes: `None` for the output itself (the outermost match), else an index
    /// into `nested`, whose texts follow the outermost match's in order of their start.
    slot: Option<usize>,
    /// Depth of the skipped or removed element being passed over.
    skip_from: Option<usize>,
    preformatted: usize,
    hrefs: Vec<Option<String>>,
}

struct Collector<'a> {
    main: Option<&'a SelectorList<Simple>>,
    removes: &'a [SelectorList<Simple>],
    links: bool,
    matcher: Matcher,
    out: String,
    nested: Vec<String>,
    captures: Vec<Capture>,
    matched: bool,
    /// Bytes collected plus elements visited, over all captures: the DOM path's budget.
    spent: usize,
    limit: usize,
    /// `spent` went over `limit`: the DOM path words the error.
    over: bool,
}

const OVER: Bail = Bail("selected text over the limit");

/// Adds `n` to `spent`; false (and `over` set) past `limit`.
fn charge(spent: &mut usize, limit: usize, over: &mut bool, n: usize) -> bool {
    *spent += n;
    if *spent > limit {
        *over = true;
    }
    !*over
}

impl<'s> Sink<'s> for Collector<'_> {
    fn open(&mut self, stack: &mut [Element<'s>]) -> Result<(), Bail> {
        if self.over {
            return Err(OVER);
        }
        let depth = stack.len() - 1;
        // The DOM path detaches each remove selector's matches in turn; an element already
        // detached has no parent, so later selectors do not see it.
        for (k, remove) in self.removes.iter().enumerate() {
            if self.matcher.matches(remove, stack, depth, k) {
                stack[depth].removed_by = Some(k);
                break;
            }
        }
        let element = &stack[depth];
        let starts = match self.main {
            None if depth == 0 && element.removed_by.is_some() => return Err(Bail("the root element is removed")),
            None => depth == 0,
            // Elements inside a detached subtree still have a parent and still match.
            Some(main) => element.removed_by.is_none() && self.matcher.matches(main, stack, depth, self.removes.len()),
        };
        if starts {
            self.matched = true;
            let slot = if self.captures.is_empty() {
                None
            } else {
                self.nested.push(String::new());
                Some(self.nested.len() - 1)
            };
            self.captures.push(Capture { depth, slot, skip_from: None, preformatted: 0, hrefs: Vec::new() });
        }
        let name = &*element.name;
        let skipped = element.removed_by.is_some() || element.kind.has(Kind::SKIPPED);
        for capture in &mut self.captures {
            if capture.skip_from.is_some() {
                continue;
            }
            if skipped {
                capture.skip_from = Some(depth);
                continue;
            }
            let block = name == "br" || element.kind.has(Kind::BLOCK);
            if !charge(&mut self.spent, self.limit, &mut self.over, 1 + usize::from(block)) {
                return Err(OVER);
            }
            if name == "pre" {
                capture.preformatted += 1;
            }
            if self.links && name == "a" {
                capture.hrefs.push(element.attr("href").map(str::to_owned));
            }
            if block {
                target(&mut self.out, &mut self.nested, capture.slot).push('\n');
            }
        }
        Ok(())
    }

    fn text(&mut self, text: &str) {
        for capture in &self.captures {
            if capture.skip_from.is_some() {
                continue;
            }
            if !charge(&mut self.spent, self.limit, &mut self.over, text.len()) {
                return;
            }
            let out = target(&mut self.out, &mut self.nested, capture.slot);
            // Source line breaks are plain whitespace in HTML, except inside <pre>.
            if capture.preformatted > 0 {
                out.push_str(text);
            } else {
                out.extend(text.chars().map(|c| if c == '\n' { ' ' } else { c }));
            }
        }
    }

    fn close(&mut self, stack: &[Element<'s>]) {
        let depth = stack.len() - 1;
        let name = &*stack[depth].name;
        let kind = stack[depth].kind;
        for capture in &mut self.captures {
            match capture.skip_from {
                Some(from) if from == depth => capture.skip_from = None,
                Some(_) => {}
                None if self.over => {}
                None => {
                    let out = target(&mut self.out, &mut self.nested, capture.slot);
                    if name == "pre" {
                        capture.preformatted = capture.preformatted.saturating_sub(1);
                    }
                    if self.links
                        && name == "a"
                        && let Some(Some(href)) = capture.hrefs.pop()
                    {
                        charge(&mut self.spent, self.limit, &mut self.over, href.len() + 3);
                        out.push_str(" (");
                        out.push_str(&href);
                        out.push(')');
                    }
                    if kind.has(Kind::BLOCK) {
                        out.push('\n');
                        charge(&mut self.spent, self.limit, &mut self.over, 1);
                    } else if matches!(name, "td" | "th") {
                        out.push(' ');
                        charge(&mut self.spent, self.limit, &mut self.over, 1);
                    }
                }
            }
        }
        if self.captures.last().is_some_and(|c| c.depth == depth)
            && let Some(capture) = self.captures.pop()
        {
            if self.main.is_some() {
                target(&mut self.out, &mut self.nested, capture.slot).push('\n');
                charge(&mut self.spent, self.limit, &mut self.over, 1);
            }
            if capture.slot.is_none() {
                for text in self.nested.drain(..) {
                    self.out.push_str(&text);
                }
            }
        }
    }
}

fn target<'o>(out: &'o mut String, nested: &'o mut [String], slot: Option<usize>) -> &'o mut String {
    match slot {
        None => out,
        Some(i) => &mut nested[i],
    }
}

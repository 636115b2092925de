//! The native filters a program runs with: jaq's, less those that read outside the value or act
//! on the process, with the ones whose cost a value can blow up wrapped in checks, and the
//! checked operators `rewrite` calls.

use jaq_core::box_iter::box_once;
use jaq_core::load::parse::{Def, Term};
use jaq_core::native::{Fun, bome, v};
use jaq_core::ops::Math;
use jaq_core::{Bind, Cv, Error, Exn, Native, ValR, ValX, ValXs};
use jaq_json::{Num, Val};
use num_bigint::Sign;

use super::names::{CHILD, GUARD, PAIR, REGEX, SHORT, TOSTRING, TRY, TRY_OPT, call0, math_name, pipe};
use super::value::{
    MAX_ELEMENTS, MAX_INT_BITS, MAX_STRING, MAX_WALK, brief, error_value, from_json, json_text, measure,
};
use super::{Budget, Dw};

/// jaq natives left out: they read the environment or the system's time zone (files).
const DROPPED: &[&str] = &["env", "localtime", "strflocaltime"];
/// jaq natives replaced by ours below.
const REPLACED: &[&str] = &["range", "tojson", "fromjson", "halt", "debug_empty", "stderr_empty"];

/// A jaq native called through a definition of the same name that checks, before the call,
/// what its cost depends on, and after it, what it nests.
struct Wrap {
    name: &'static str,
    inner: &'static str,
    /// The input and the arguments are compared, hashed or walked: [`GUARD`] them.
    guard_input: bool,
    guard_args: bool,
    /// The output has up to an element per element or character of the input, or sorting it
    /// costs n log n comparisons: the input is at most [`MAX_ELEMENTS`] long ([`SHORT`]).
    short_input: bool,
    /// The cost is the product of the input's and the first argument's sizes ([`PAIR`]), or
    /// of the input's length and the first argument's size as a regular expression ([`REGEX`]).
    pair: Option<&'static str>,
    /// The output nests the input one level deeper: [`CHILD`] it.
    child: bool,
}

const NONE: Wrap =
    Wrap { name: "", inner: "", guard_input: false, guard_args: false, short_input: false, pair: None, child: false };

const WRAPPED: &[Wrap] = &[
    Wrap { name: "sort", inner: "dw sort", guard_input: true, short_input: true, ..NONE },
    Wrap { name: "sort_by", inner: "dw sort_by", guard_input: true, guard_args: true, short_input: true, ..NONE },
    Wrap {
        name: "group_by",
        inner: "dw group_by",
        guard_input: true,
        guard_args: true,
        short_input: true,
        child: true,
        ..NONE
    },
    Wrap { name: "min_by_or_empty", inner: "dw min_by_or_empty", guard_input: true, guard_args: true, ..NONE },
    Wrap { name: "max_by_or_empty", inner: "dw max_by_or_empty", guard_input: true, guard_args: true, ..NONE },
    Wrap { name: "contains", inner: "dw contains", guard_input: true, guard_args: true, pair: Some(PAIR), ..NONE },
    Wrap {
        name: "indices",
        inner: "dw indices",
        guard_input: true,
        guard_args: true,
        short_input: true,
        pair: Some(PAIR),
        ..NONE
    },
    Wrap { name: "has", inner: "dw has", guard_args: true, ..NONE },
    Wrap { name: "bsearch", inner: "dw bsearch", guard_input: true, guard_args: true, ..NONE },
    Wrap { name: "tobytes", inner: "dw tobytes", guard_input: true, ..NONE },
    Wrap { name: "key_values", inner: "dw key_values", child: true, ..NONE },
    Wrap { name: "path_value", inner: "dw path_value", child: true, ..NONE },
    Wrap { name: "explode", inner: "dw explode", short_input: true, ..NONE },
    Wrap { name: "matches", inner: "dw matches", short_input: true, pair: Some(REGEX), ..NONE },
    Wrap { name: "split_matches", inner: "dw split_matches", short_input: true, pair: Some(REGEX), ..NONE },
    Wrap { name: "split_", inner: "dw split_", short_input: true, pair: Some(REGEX), ..NONE },
];

const VAR_ARGS: [&str; 3] = ["$dw a0", "$dw a1", "$dw a2"];
const FUN_ARGS: [&str; 3] = ["dw f0", "dw f1", "dw f2"];

/// The natives, and the definitions that wrap some of them (to come first in the prelude).
pub fn all() -> (Vec<Fun<Dw>>, Vec<Def<&'static str>>) {
    let mut funs = Vec::new();
    let mut wrappers = Vec::new();
    let theirs = jaq_core::funs::<Dw>().chain(jaq_std::funs::<Dw>()).chain(jaq_json::funs::<Dw>());
    for (name, args, f) in theirs {
        if DROPPED.contains(&name) || REPLACED.contains(&name) {
            continue;
        }
        match WRAPPED.iter().find(|w| w.name == name) {
            Some(w) => {
                wrappers.push(wrapper(w, &args));
                funs.push((w.inner, args, f));
            }
            None => funs.push((name, args, f)),
        }
    }
    funs.extend(ours());
    (funs, wrappers)
}

fn wrapper(w: &Wrap, args: &[Bind]) -> Def<&'static str> {
    let guard = |t: Term<&'static str>| if w.guard_args { pipe(t, call0(GUARD)) } else { t };
    let (names, call_args): (Vec<_>, Vec<_>) = args
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Bind::Var(()) => (VAR_ARGS[i], guard(Term::Var(VAR_ARGS[i]))),
            Bind::Fun(()) => (FUN_ARGS[i], guard(call0(FUN_ARGS[i]))),
        })
        .unzip();
    let mut body = Term::Call(w.inner, call_args);
    if w.guard_input {
        body = pipe(call0(GUARD), body);
    }
    if let Some(check) = w.pair {
        body = pipe(Term::Call(check, vec![Term::Var(VAR_ARGS[0])]), body);
    }
    if w.short_input {
        body = pipe(call0(SHORT), body);
    }
    if w.child {
        body = pipe(body, call0(CHILD));
    }
    Def { name: w.name, args: names, body }
}

fn fail<'a>(message: impl ToString) -> ValXs<'a, Val> {
    box_once(Err(Exn::from(Error::str(message))))
}

fn ours() -> Vec<Fun<Dw>> {
    let guard = Native::<Dw>::new(|cv| match measure(&cv.1, MAX_WALK) {
        Ok(_) => box_once(Ok(cv.1)),
        Err(e) => fail(e.message()),
    })
    .with_paths(|cv| match measure(&cv.1.0, MAX_WALK) {
        Ok(_) => box_once(Ok(cv.1)),
        Err(e) => box_once(Err(Exn::from(Error::str(e.message())))),
    })
    .with_update(|cv, f| match measure(&cv.1, MAX_WALK) {
        Ok(_) => f(cv.1),
        Err(e) => fail(e.message()),
    });
    let child = Native::<Dw>::new(|cv| match measure(&cv.1, u64::MAX) {
        Ok(_) => {
            cv.0.data().budget.charge(shallow_bytes(&cv.1));
            box_once(Ok(cv.1))
        }
        Err(e) => fail(e.message()),
    });
    let try_catch = Native::<Dw>::new(|cv| try_run(cv)).with_paths(|mut cv| {
        let (c, cc) = cv.0.pop_fun();
        let (f, fc) = cv.0.pop_fun();
        let mut ys = f.paths((fc, cv.1));
        let mut end = None;
        Box::new(core::iter::from_fn(move || {
            loop {
                if let Some(end) = &mut end {
                    return Iterator::next(end);
                }
                match ys.next()? {
                    Err(exn) => match exn.get_err() {
                        Ok(e) => {
                            let outs = c.run((cc.clone(), error_value(e)));
                            end = Some(outs.map(|r| {
                                Err(match r {
                                    Ok(v) => Exn::from(Error::path_expr(v)),
                                    Err(e) => e,
                                })
                            }));
                        }
                        Err(exn) => return Some(Err(exn)),
                    },
                    y => return Some(y),
                }
            }
        }))
    });
    let try_opt = Native::<Dw>::new(|cv| try_opt_run(cv)).with_paths(|mut cv| {
        let (f, fc) = cv.0.pop_fun();
        let mut ys = f.paths((fc, cv.1));
        let mut done = false;
        Box::new(core::iter::from_fn(move || {
            if done {
                return None;
            }
            match ys.next()? {
                Err(exn) => match exn.get_err() {
                    Ok(_) => {
                        done = true;
                        None
                    }
                    Err(exn) => Some(Err(exn)),
                },
                y => Some(y),
            }
        }))
    });
    let short = Native::<Dw>::new(|cv| {
        let len = match &cv.1 {
            Val::TStr(s) | Val::BStr(s) => s.len(),
            Val::Arr(a) => a.len(),
            _ => 0,
        };
        if len > MAX_ELEMENTS {
            return fail(format!(
                "the input is longer than {MAX_ELEMENTS} here (the output would have an element per character)"
            ));
        }
        box_once(Ok(cv.1))
    });
    let pair = Native::<Dw>::new(|mut cv| {
        let arg = cv.0.pop_var();
        let product = match (measure(&cv.1, MAX_WALK), measure(&arg, MAX_WALK)) {
            (Ok((a, _)), Ok((b, _))) => a.saturating_mul(b),
            _ => u64::MAX,
        };
        if product > MAX_WALK {
            return fail("the value and the argument are too large to search one in the other");
        }
        box_once(Ok(cv.1))
    });
    let regex = Native::<Dw>::new(|mut cv| {
        let pattern = cv.0.pop_var();
        let len = match &cv.1 {
            Val::TStr(s) | Val::BStr(s) => s.len() as u64,
            _ => 0,
        };
        let size = match &pattern {
            Val::TStr(p) => regex_size(&String::from_utf8_lossy(p)),
            _ => 0,
        };
        if len.saturating_mul(size) > MAX_WALK {
            return fail("the string is too long for this regular expression (their sizes multiply)");
        }
        box_once(Ok(cv.1))
    });
    let f1 = || [Bind::Fun(())].into();
    let f2 = || [Bind::Fun(()), Bind::Fun(())].into();
    vec![
        (GUARD, v(0), guard),
        (CHILD, v(0), child),
        (SHORT, v(0), short),
        (PAIR, v(1), pair),
        (REGEX, v(1), regex),
        (TOSTRING, v(0), Native::<Dw>::new(|cv| tostring_run(cv))),
        (TRY, f2(), try_catch),
        (TRY_OPT, f1(), try_opt),
        (math_name(Math::Add), v(2), Native::<Dw>::new(|cv| math_run(Math::Add, cv))),
        (math_name(Math::Sub), v(2), Native::<Dw>::new(|cv| math_run(Math::Sub, cv))),
        (math_name(Math::Mul), v(2), Native::<Dw>::new(|cv| math_run(Math::Mul, cv))),
        (math_name(Math::Div), v(2), Native::<Dw>::new(|cv| math_run(Math::Div, cv))),
        (math_name(Math::Rem), v(2), Native::<Dw>::new(|cv| math_run(Math::Rem, cv))),
        ("range", v(3), Native::<Dw>::new(|cv| range_run(cv))),
        ("tojson", v(0), Native::<Dw>::new(|cv| tojson_run(cv))),
        ("fromjson", v(0), Native::<Dw>::new(|cv| fromjson_run(cv))),
        ("halt", v(1), Native::<Dw>::new(|_| fail("halt is not available in a watch's jq program"))),
        ("debug_empty", v(0), Native::<Dw>::new(|_| Box::new(core::iter::empty()))),
        ("stderr_empty", v(0), Native::<Dw>::new(|_| Box::new(core::iter::empty()))),
    ]
}

/// About the number of states of `pattern` compiled: its length times its counted repetitions
/// (`{n}`, `{n,m}`), which copy what they repeat.
fn regex_size(pattern: &str) -> u64 {
    let mut size = pattern.len() as u64 + 1;
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let counts = &rest[..close];
        if !counts.is_empty() && counts.chars().all(|c| c.is_ascii_digit() || c == ',') {
            let most = counts.split(',').filter_map(|n| n.parse::<u64>().ok()).max().unwrap_or(1);
            size = size.saturating_mul(most.max(1));
        }
        rest = &rest[close + 1..];
    }
    size
}

/// About what a value adds to memory where it is put: its slot, and its bytes if a string.
fn shallow_bytes(v: &Val) -> usize {
    16 + match v {
        Val::TStr(s) | Val::BStr(s) => s.len(),
        _ => 0,
    }
}

fn try_run(mut cv: Cv<'_, Dw>) -> ValXs<'_, Val> {
    let (c, cc) = cv.0.pop_fun();
    let (f, fc) = cv.0.pop_fun();
    let mut ys = f.run((fc, cv.1));
    let mut end: Option<ValXs<'_, Val>> = None;
    Box::new(core::iter::from_fn(move || {
        loop {
            if let Some(end) = &mut end {
                return end.next();
            }
            match ys.next()? {
                Err(exn) => match exn.get_err() {
                    Ok(e) => end = Some(c.run((cc.clone(), error_value(e)))),
                    Err(exn) => return Some(Err(exn)),
                },
                y => return Some(y),
            }
        }
    }))
}

fn try_opt_run(mut cv: Cv<'_, Dw>) -> ValXs<'_, Val> {
    let (f, fc) = cv.0.pop_fun();
    let mut ys = f.run((fc, cv.1));
    let mut done = false;
    Box::new(core::iter::from_fn(move || {
        if done {
            return None;
        }
        match ys.next()? {
            Err(exn) => match exn.get_err() {
                Ok(_) => {
                    done = true;
                    None
                }
                Err(exn) => Some(Err(exn)),
            },
            y => Some(y),
        }
    }))
}

fn tostring_run(cv: Cv<'_, Dw>) -> ValXs<'_, Val> {
    match cv.1 {
        Val::TStr(s) | Val::BStr(s) => box_once(Ok(Val::TStr(s))),
        v => text_value(cv.0.data().budget, &v, "tostring"),
    }
}

fn tojson_run(cv: Cv<'_, Dw>) -> ValXs<'_, Val> {
    text_value(cv.0.data().budget, &cv.1, "tojson")
}

fn text_value<'a>(budget: &Budget, v: &Val, what: &str) -> ValXs<'a, Val> {
    match json_text(v) {
        Some(text) => {
            budget.charge(text.len());
            box_once(Ok(Val::utf8_str(text)))
        }
        None => fail(format!("{what}: the text would be longer than {MAX_STRING} bytes")),
    }
}

fn fromjson_run(cv: Cv<'_, Dw>) -> ValXs<'_, Val> {
    let Val::TStr(text) = &cv.1 else {
        return box_once(Err(Exn::from(Error::typ(cv.1, "string"))));
    };
    if text.len() > MAX_ELEMENTS {
        return fail(format!("fromjson reads at most {MAX_ELEMENTS} bytes"));
    }
    // what it builds is at most a slot of 16 bytes per byte read, more often a few per node
    cv.0.data().budget.charge(4 * text.len());
    let mut out: Vec<ValX<'_, Val>> = Vec::new();
    for parsed in serde_json::Deserializer::from_slice(text).into_iter::<serde_json::Value>() {
        let value = match parsed {
            Ok(json) => from_json(&json).map_err(Error::str),
            Err(e) => Err(Error::str(format!("cannot parse {} as JSON: {e}", brief(&cv.1)))),
        };
        let failed = value.is_err();
        out.push(value.map_err(Exn::from));
        if failed {
            break;
        }
    }
    Box::new(out.into_iter())
}

/// jaq's `range/3` (same outputs), counting each output as a step.
fn range_run(mut cv: Cv<'_, Dw>) -> ValXs<'_, Val> {
    use core::cmp::Ordering::{Equal, Greater, Less};
    let by = cv.0.pop_var();
    let to = cv.0.pop_var();
    let from = cv.0.pop_var();
    let budget = cv.0.data().budget;
    let cmp = by.partial_cmp(&Val::from(0isize)).unwrap_or(Equal);
    let mut next: ValX<'_, Val> = Ok(from);
    Box::new(core::iter::from_fn(move || {
        budget.tick();
        match next.clone() {
            Ok(x) => {
                let more = match cmp {
                    Greater => x < to,
                    Less => x > to,
                    Equal => x != to,
                };
                more.then(|| core::mem::replace(&mut next, (x + by.clone()).map_err(Exn::from)))
            }
            e @ Err(_) => {
                next = Ok(to.clone());
                Some(e)
            }
        }
    }))
}

fn math_run(op: Math, cv: Cv<'_, Dw>) -> ValXs<'_, Val> {
    // The input is `l` when the left side is `.` (as in `. + $x` in a `reduce`): let it go, so
    // that `l` is not shared and jaq can append to it in place instead of copying it.
    let (mut ctx, input) = cv;
    drop(input);
    let r = ctx.pop_var();
    let l = ctx.pop_var();
    bome(checked_math(ctx.data().budget, op, l, r))
}

fn int_bits(n: &Num) -> u64 {
    match n {
        Num::Int(_) => 64,
        Num::BigInt(b) => b.bits(),
        _ => 0,
    }
}

/// How many times `n` repeats a string (0 for none, as jaq gives null), saturated.
fn repeats(n: &Num) -> u128 {
    match n {
        Num::Int(i) => u128::try_from(*i).unwrap_or(0),
        Num::BigInt(b) if b.sign() == Sign::Plus => u128::MAX,
        _ => 0,
    }
}

/// `l op r`, after checking that the result stays within the bounds of `value`.
fn checked_math(budget: &Budget, op: Math, l: Val, r: Val) -> ValR<Val> {
    use Val::{Arr, BStr, Obj, TStr};
    let too_long = || Err(Error::str(format!("the string would be longer than {MAX_STRING} bytes")));
    let too_many = || Err(Error::str(format!("the result would have more than {MAX_ELEMENTS} elements")));
    match (op, &l, &r) {
        (Math::Add, TStr(a) | BStr(a), TStr(b) | BStr(b)) => {
            if a.len() + b.len() > MAX_STRING {
                return too_long();
            }
            budget.charge(b.len());
        }
        (Math::Add, Arr(a), Arr(b)) => {
            if a.len() + b.len() > MAX_ELEMENTS {
                return too_many();
            }
            budget.charge(16 * b.len());
        }
        (Math::Add, Obj(a), Obj(b)) => {
            if a.len() + b.len() > MAX_ELEMENTS {
                return too_many();
            }
            budget.charge(48 * b.len());
        }
        (Math::Mul, TStr(s) | BStr(s), Val::Num(n)) | (Math::Mul, Val::Num(n), TStr(s) | BStr(s)) => {
            let len = (s.len() as u128).saturating_mul(repeats(n));
            if len > MAX_STRING as u128 {
                return too_long();
            }
            budget.charge(len as usize);
        }
        // a split: one piece per separator (per character for "")
        (Math::Div, TStr(a) | BStr(a), TStr(b) | BStr(b)) if a.len() / b.len().max(1) >= MAX_ELEMENTS => {
            return too_many();
        }
        (Math::Mul, Obj(_), Obj(_)) | (Math::Sub, Arr(_), Arr(_)) => {
            // a deep merge walks the right side; a difference compares elements
            for side in [&l, &r] {
                measure(side, MAX_WALK).map_err(|e| Error::str(e.message()))?;
            }
        }
        (_, Val::Num(a), Val::Num(b)) => {
            let bits = match op {
                Math::Add | Math::Sub => int_bits(a).max(int_bits(b)) + 1,
                Math::Mul => int_bits(a) + int_bits(b),
                Math::Div | Math::Rem => 0,
            };
            if bits > MAX_INT_BITS {
                return Err(Error::str(format!("the integer would have more than {MAX_INT_BITS} bits")));
            }
        }
        _ => {}
    }
    op.run(l, r)
}

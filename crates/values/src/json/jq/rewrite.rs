//! The jq syntax tree, rewritten before compiling so that what can grow or walk a value goes
//! through a checked native filter (see `natives`). Internal names contain a space, which no jq
//! identifier can, so a program can neither call nor shadow them.
//!
//! - `l + r` (and `-`, `*`, `/`, `%`) become `"dw +"(l; r)`: the size of the result is checked
//!   before it is built. `l += r` becomes `r as $v | l |= "dw +"(.; $v)`, which is what it means.
//! - Comparisons check both sides with `"dw guard"` (unless one side is a literal, which bounds
//!   the comparison); so do `..`, computed object keys and computed indices.
//! - What becomes an element or member of a container (`[f]`, `{k: f}`, the right side of `=`,
//!   `|=`, `//=`) goes through `"dw child"`, which bounds nesting and counts what is built.
//! - String interpolation goes through `"dw tostring"`, whose output is bounded.
//! - `try f catch g` and `f?` become `"dw try"(f; g)` and `"dw try?"(f)`, which give `catch` a
//!   bounded message instead of jaq writing every value of the error in full.

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::ops::Math;
use jaq_core::path::{Part, Path};

use super::names::{CHILD, GUARD, T, TOSTRING, TRY, TRY_OPT, call0, math_name, pipe};

/// The variable `l op= r` binds `r` to.
const UPDATE_VAR: &str = "$dw update";

/// A definition with its body rewritten. `trusted` is for jaq's own definitions, where `true`,
/// `false` and `null` are known to be the literals.
pub fn def(d: Def<&str>, trusted: bool) -> Def<&str> {
    Def { name: d.name, args: d.args, body: term(d.body, trusted) }
}

/// A term rewritten (see the module docs).
pub fn term<'s>(t: T<'s>, trusted: bool) -> T<'s> {
    let go = |t: T<'s>| term(t, trusted);
    let bx = |t: T<'s>| Box::new(term(t, trusted));
    match t {
        Term::Id | Term::Num(_) | Term::Var(_) | Term::Break(_) => t,
        Term::Recurse => pipe(call0(GUARD), Term::Recurse),
        Term::Str(fmt, parts) => {
            let parts = parts
                .into_iter()
                .map(|part| match part {
                    StrPart::Term(f) if fmt.is_none() => StrPart::Term(pipe(go(f), call0(TOSTRING))),
                    StrPart::Term(f) => StrPart::Term(go(f)),
                    StrPart::Str(s) => StrPart::Str(s),
                    StrPart::Char(c) => StrPart::Char(c),
                })
                .collect();
            Term::Str(fmt, parts)
        }
        Term::Arr(None) => Term::Arr(None),
        Term::Arr(Some(f)) => Term::Arr(Some(Box::new(child(go(*f))))),
        Term::Obj(entries) => Term::Obj(
            entries
                .into_iter()
                .map(|(k, v)| match (k, v) {
                    // `{$x}` is `{"x": $x}`
                    (Term::Var(x), None) => {
                        let key = Term::Str(None, vec![StrPart::Str(x.get(1..).unwrap_or(x))]);
                        (key, Some(child(Term::Var(x))))
                    }
                    // `{a}` is `{a: .a}`, no deeper than the input
                    (k, None) => (go(k), None),
                    (k, Some(v)) => (guarded(go(k), trusted), Some(child(go(v)))),
                })
                .collect(),
        ),
        Term::Neg(f) => Term::Neg(bx(*f)),
        Term::BinOp(l, op, r) => binop(*l, op, *r, trusted),
        Term::Label(x, f) => Term::Label(x, bx(*f)),
        Term::Fold(name, xs, pat, args) => {
            Term::Fold(name, bx(*xs), pattern(pat, trusted), args.into_iter().map(go).collect())
        }
        Term::TryCatch(f, None) => Term::Call(TRY_OPT, vec![go(*f)]),
        Term::TryCatch(f, Some(c)) => Term::Call(TRY, vec![go(*f), go(*c)]),
        Term::IfThenElse(branches, otherwise) => {
            Term::IfThenElse(branches.into_iter().map(|(i, t)| (go(i), go(t))).collect(), otherwise.map(|e| bx(*e)))
        }
        Term::Def(defs, body) => Term::Def(defs.into_iter().map(|d| def(d, trusted)).collect(), bx(*body)),
        Term::Call(name, args) => Term::Call(name, args.into_iter().map(go).collect()),
        Term::Path(f, path) => {
            let parts = path
                .0
                .into_iter()
                .map(|(part, opt)| {
                    let part = match part {
                        Part::Index(i) => Part::Index(guarded(go(i), trusted)),
                        Part::Range(from, to) => Part::Range(from.map(go), to.map(go)),
                    };
                    (part, opt)
                })
                .collect();
            Term::Path(bx(*f), Path(parts))
        }
    }
}

fn binop<'s>(l: T<'s>, op: BinaryOp<&'s str>, r: T<'s>, trusted: bool) -> T<'s> {
    let (l, r) = (term(l, trusted), term(r, trusted));
    match op {
        BinaryOp::Math(m) => Term::Call(math_name(m), vec![l, r]),
        BinaryOp::Cmp(c) => {
            if literal(&l, trusted) || literal(&r, trusted) {
                Term::BinOp(Box::new(l), BinaryOp::Cmp(c), Box::new(r))
            } else {
                let (l, r) = (pipe(l, call0(GUARD)), pipe(r, call0(GUARD)));
                Term::BinOp(Box::new(l), BinaryOp::Cmp(c), Box::new(r))
            }
        }
        BinaryOp::UpdateMath(m) => update_math(l, m, r),
        BinaryOp::Assign | BinaryOp::Update | BinaryOp::UpdateAlt => Term::BinOp(Box::new(l), op, Box::new(child(r))),
        op => Term::BinOp(Box::new(l), op, Box::new(r)),
    }
}

/// `l op= r` as `r as $v | l |= "dw op"(.; $v)`, with `$v` checked as a child (it may end up
/// inside `l`, as in `.a *= .`).
fn update_math<'s>(l: T<'s>, m: Math, r: T<'s>) -> T<'s> {
    let op = Term::Call(math_name(m), vec![Term::Id, Term::Var(UPDATE_VAR)]);
    let update = Term::BinOp(Box::new(l), BinaryOp::Update, Box::new(op));
    Term::BinOp(Box::new(child(r)), BinaryOp::Pipe(Some(Pattern::Var(UPDATE_VAR))), Box::new(update))
}

fn pattern(p: Pattern<&str>, trusted: bool) -> Pattern<&str> {
    match p {
        Pattern::Var(x) => Pattern::Var(x),
        Pattern::Arr(ps) => Pattern::Arr(ps.into_iter().map(|p| pattern(p, trusted)).collect()),
        Pattern::Obj(entries) => Pattern::Obj(
            entries.into_iter().map(|(k, p)| (guarded(term(k, trusted), trusted), pattern(p, trusted))).collect(),
        ),
    }
}

/// A literal: comparing with it, or hashing it, costs no more than its own size.
fn literal(t: &T<'_>, trusted: bool) -> bool {
    match t {
        Term::Num(_) | Term::Arr(None) => true,
        Term::Obj(entries) => entries.is_empty(),
        Term::Str(None, parts) => parts.iter().all(|p| !matches!(p, StrPart::Term(_))),
        Term::Call(name, args) => trusted && args.is_empty() && matches!(*name, "true" | "false" | "null"),
        _ => false,
    }
}

/// `t | "dw guard"` unless `t` is a literal.
fn guarded<'s>(t: T<'s>, trusted: bool) -> T<'s> {
    if literal(&t, trusted) { t } else { pipe(t, call0(GUARD)) }
}

/// `t | "dw child"` unless `t` is a literal or a path into the input (`.a`, `.[0].b`, `.[]`),
/// which is no deeper than the input.
fn child(t: T<'_>) -> T<'_> {
    let shallow = match &t {
        Term::Path(f, path) => matches!(**f, Term::Id) && !path.0.is_empty(),
        t => literal(t, false),
    };
    if shallow { t } else { pipe(t, call0(CHILD)) }
}

//! The internal names of the checked natives, which `natives` defines and `rewrite` calls, and
//! the two terms both build. Each name contains a space, which no jq identifier can, so a
//! program can neither call nor shadow them.

use jaq_core::load::parse::{BinaryOp, Term};
use jaq_core::ops::Math;

/// Checks that a value is light enough to walk as a tree (run, paths and updates: identity).
pub const GUARD: &str = "dw guard";
/// Checks that a value may become a child (nesting), and counts what is built.
pub const CHILD: &str = "dw child";
/// Checks that a string or array is at most [`MAX_ELEMENTS`](super::value::MAX_ELEMENTS) long.
pub const SHORT: &str = "dw short";
/// Checks that the input's weight times its argument's is at most
/// [`MAX_WALK`](super::value::MAX_WALK).
pub const PAIR: &str = "dw pair";
/// Checks that the input's length times its argument's size as a regular expression is at most
/// [`MAX_WALK`](super::value::MAX_WALK).
pub const REGEX: &str = "dw regex";
/// `tostring`, bounded.
pub const TOSTRING: &str = "dw tostring";
/// `try f catch g` with a bounded error value.
pub const TRY: &str = "dw try";
/// `f?`.
pub const TRY_OPT: &str = "dw try?";

/// The checked native for an arithmetic operator.
pub fn math_name(op: Math) -> &'static str {
    match op {
        Math::Add => "dw +",
        Math::Sub => "dw -",
        Math::Mul => "dw *",
        Math::Div => "dw /",
        Math::Rem => "dw %",
    }
}

/// A jq term over borrowed names.
pub type T<'s> = Term<&'s str>;

/// `f | g`.
pub fn pipe<'s>(f: T<'s>, g: T<'s>) -> T<'s> {
    Term::BinOp(Box::new(f), BinaryOp::Pipe(None), Box::new(g))
}

/// A call without arguments.
pub fn call0<'s>(name: &'s str) -> T<'s> {
    Term::Call(name, Vec::new())
}

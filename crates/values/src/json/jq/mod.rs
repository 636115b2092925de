//! jq programs through jaq (a pure-Rust jq), bounded in time, stack and memory.
//!
//! # How a run is bounded
//!
//! jaq evaluates lazily, with iterators, and offers no fuel or interrupt of its own. But every
//! step of an evaluation (each call of a definition, each element of a loop, `reduce`,
//! `foreach`, each binding) clones the evaluation context, and the context carries data of the
//! embedder's type ([`jaq_core::DataT`]). Ours counts in its `clone`:
//!
//! - **Steps**: each clone is a step, and a run stops past [`JqLimits::max_steps`]: a bound
//!   that counts the same on any machine. `range` (native in jaq) counts each output as a step.
//! - **Time**, the safety net behind the steps: every 32 steps it compares the clock with the
//!   deadline ([`JqLimits::time`], counted from when the page has been converted to jaq's
//!   values, which is linear in its size).
//! - **Stack**: every step it compares the address of a local with the base of the thread,
//!   which runs with [`EVAL_STACK`] bytes of stack and stops using them past [`STACK_BUDGET`]
//!   (the rest is left for dropping and walking what was built). `def f: [f]; f` ends there.
//! - **Memory**: the checked operators and the `"dw child"` check count the bytes of the strings
//!   and slots they build; past [`MAX_BUILT`] the run stops.
//!
//! A run that passes a bound is stopped by unwinding out of jaq (`resume_unwind`, which prints
//! nothing), caught at the top of the thread: a program cannot `try`/`catch` it, the thread
//! ends, everything it built is dropped. This needs `panic = "unwind"` (checked at compile time).
//!
//! A single step must then be cheap, which jaq's own operators are not: `"x" * 1e12` allocates
//! a terabyte at once (and aborts the process when that fails), squaring an integer doubles its
//! digits, and Rc-shared values (`[., .]` repeated) are tiny in memory yet exponentially large
//! to compare, print or walk. So the program is rewritten before it is compiled (see
//! `rewrite`): operators check the size of their result first ([`MAX_STRING`],
//! [`MAX_ELEMENTS`], [`MAX_INT_BITS`]), whatever compares, hashes, sorts, searches
//! or walks a value (`==`, `<`, `..`, keys, `sort`, `group_by`, `contains`, ...) first checks its
//! weight as a tree ([`MAX_WALK`], measured visiting shared parts once), what costs the product
//! of two sizes (`contains`, `indices`, regular expressions) checks that product, what outputs an
//! element per character or sorts (`explode`, `split`, `match`, `sort`, ...) takes at most
//! [`MAX_ELEMENTS`], what is put in a container is at most [`MAX_DEPTH`] deep, string
//! conversion and `tojson` write at most [`MAX_STRING`] bytes, and `catch` gets a bounded
//! message. `range`, `tojson`, `fromjson` (through serde_json, at most [`MAX_ELEMENTS`] bytes)
//! are ours.
//!
//! # What is not bounded
//!
//! - Memory that is not a value: jaq's iterators and contexts grow with the steps taken, so
//!   within the time limit only (a few hundred bytes a step).
//! - Memory held by values that are not counted (numbers, shared parts, jaq's own `Vec`s while
//!   collecting): within the time limit and [`MAX_BUILT`]'s slots.
//! - A step between two checks may take longer than the time left: the worst single operation
//!   is bounded by the constants above (sorting a million values, walking [`MAX_WALK`] nodes:
//!   up to a few hundred milliseconds), so a run ends within about the limit plus that.
//! - Nesting built by path updates (`setpath` with a path of a million keys) is bounded by the
//!   stack check while it is built, not by [`MAX_DEPTH`].
//! - Compiling: the program is at most [`MAX_PROGRAM_BYTES`] bytes and [`MAX_NESTING`] brackets
//!   deep, parsed on a thread with [`COMPILE_STACK`] bytes of stack.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

use jaq_core::load::parse::Def;
use jaq_core::load::{Arena, File, Lexer, Loader, Parser};
use jaq_core::{Ctx, DataT, Vars, compile::Undefined, data::HasLut};
use jaq_json::Val;
use serde_json::Value;

use super::{JqLimits, QueryError};

mod names;
mod natives;
mod rewrite;
mod value;

pub use value::{MAX_DEPTH, MAX_ELEMENTS, MAX_INT_BITS, MAX_STRING, MAX_WALK};

#[cfg(panic = "abort")]
compile_error!("driftwatch-values stops runaway jq programs by unwinding: build with panic = \"unwind\"");

/// Longest jq program, in bytes.
pub const MAX_PROGRAM_BYTES: usize = 16 << 10;
/// Deepest nesting of parentheses, brackets, braces and interpolations in a jq program.
pub const MAX_NESTING: usize = 256;
/// Stack a run may use before it is stopped: 16 MiB, some 3 000 to 10 000 levels of jq
/// recursion (4 times as much in debug builds, whose frames are about that much larger).
/// Unwinding out of a full budget takes time too: some tens of milliseconds.
pub const STACK_BUDGET: usize = if cfg!(debug_assertions) { 64 << 20 } else { 16 << 20 };
/// Stack of the thread that runs a jq program (reserved, touched as used): the part past
/// [`STACK_BUDGET`] is for dropping and walking what the run built.
pub const EVAL_STACK: usize = 4 * STACK_BUDGET;
/// Stack of the thread that compiles a jq program (jaq's parser and compiler recurse).
pub const COMPILE_STACK: usize = 256 << 20;
/// Bytes of strings and container slots a run may build, all told.
pub const MAX_BUILT: usize = 256 << 20;

/// The name of the definition that holds the program, called by the main module.
const MAIN: &str = "dw_main";

/// Our kind of jaq data: jaq's JSON values, and an [`Env`] in the context.
pub(crate) struct Dw;

impl DataT for Dw {
    type V<'a> = Val;
    type Data<'a> = Env<'a>;
}

/// What every step of a run carries: the program, and the budget its clones count against.
pub(crate) struct Env<'a> {
    lut: &'a jaq_core::Lut<Dw>,
    budget: &'a Budget,
}

impl Clone for Env<'_> {
    fn clone(&self) -> Self {
        self.budget.tick();
        Env { lut: self.lut, budget: self.budget }
    }
}

impl<'a> HasLut<'a, Dw> for Env<'a> {
    fn lut(&self) -> &'a jaq_core::Lut<Dw> {
        self.lut
    }
}

/// Why a run was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Steps,
    Time,
    Stack,
    Memory,
}

/// The bounds of one run, counted on its thread.
pub(crate) struct Budget {
    deadline: Option<Instant>,
    max_steps: u64,
    steps: Cell<u64>,
    built: Cell<usize>,
    stack_base: usize,
}

impl Budget {
    /// One step: checks the stack and the steps, and every 32 steps the clock.
    pub(crate) fn tick(&self) {
        if std::thread::panicking() {
            return;
        }
        let here = 0u8;
        if stack_address(&here).abs_diff(self.stack_base) > STACK_BUDGET {
            stop(Stop::Stack);
        }
        let n = self.steps.get().saturating_add(1);
        self.steps.set(n);
        if n > self.max_steps {
            stop(Stop::Steps);
        }
        if n.is_multiple_of(32)
            && let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            stop(Stop::Time);
        }
    }

    /// `bytes` more built.
    pub(crate) fn charge(&self, bytes: usize) {
        let built = self.built.get().saturating_add(bytes);
        self.built.set(built);
        if built > MAX_BUILT && !std::thread::panicking() {
            stop(Stop::Memory);
        }
    }
}

fn stack_address(local: &u8) -> usize {
    std::hint::black_box(local as *const u8) as usize
}

fn stop(why: Stop) -> ! {
    std::panic::resume_unwind(Box::new(why))
}

/// A compiled jq program. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct JqProgram(Arc<Compiled>);

struct Compiled {
    source: String,
    filter: jaq_core::Filter<Dw>,
}

impl std::fmt::Debug for JqProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("JqProgram").field(&self.0.source).finish()
    }
}

impl JqProgram {
    /// The program as written.
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// Compiles `program` (on a thread of its own: jaq's parser recurses).
    pub(crate) fn compile(program: &str) -> Result<JqProgram, QueryError> {
        if program.len() > MAX_PROGRAM_BYTES {
            return Err(QueryError::new(format!("a jq program is at most {MAX_PROGRAM_BYTES} bytes"), None));
        }
        check_nesting(program)?;
        let filter = on_big_stack(COMPILE_STACK, || compile_here(program))
            .unwrap_or_else(|| Err(QueryError::new("the jq program could not be compiled", None)))?;
        Ok(JqProgram(Arc::new(Compiled { source: program.to_owned(), filter })))
    }

    /// The first output on `value`.
    pub(crate) fn first(&self, value: &Value, limits: &JqLimits) -> Result<Option<Value>, String> {
        let run = || {
            // converting the page is linear in its size, and not counted
            let input = value::from_json(value)?;
            let base = 0u8;
            let budget = Budget {
                deadline: Instant::now().checked_add(limits.time),
                max_steps: limits.max_steps,
                steps: Cell::new(0),
                built: Cell::new(0),
                stack_base: stack_address(&base),
            };
            Ok(catch_unwind(AssertUnwindSafe(|| self.run(input, limits, &budget))))
        };
        match on_big_stack(EVAL_STACK, run) {
            None => Err("the jq program could not be started".into()),
            Some(Err(e)) => Err(e),
            Some(Ok(Ok(result))) => result,
            Some(Ok(Err(payload))) => Err(match payload.downcast_ref::<Stop>() {
                Some(Stop::Steps) => format!("the jq program took more than {} steps", limits.max_steps),
                Some(Stop::Time) => format!("the jq program ran out of time ({} ms)", limits.time.as_millis()),
                Some(Stop::Stack) => "the jq program recursed too deeply".into(),
                Some(Stop::Memory) => format!("the jq program built more than {} MiB of values", MAX_BUILT >> 20),
                None => "the jq program failed (internal error)".into(),
            }),
        }
    }

    fn run(&self, input: Val, limits: &JqLimits, budget: &Budget) -> Result<Option<Value>, String> {
        let filter = &self.0.filter;
        let ctx = Ctx::<Dw>::new(Env { lut: &filter.lut, budget }, Vars::new([]));
        let mut outputs = filter.id.run((ctx, input));
        match outputs.next() {
            None => Ok(None),
            Some(Ok(v)) => value::to_json(&v, limits.max_output_bytes).map(Some),
            Some(Err(exn)) => Err(match exn.get_err() {
                Ok(e) => format!("the jq program failed: {}", value::error_message(&e)),
                Err(_) => "the jq program stopped".into(),
            }),
        }
    }
}

/// Runs `f` on a thread with `stack` bytes of stack; None when it cannot start or panicked.
fn on_big_stack<T: Send>(stack: usize, f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|s| {
        let thread = std::thread::Builder::new().name("jq".into()).stack_size(stack).spawn_scoped(s, f);
        thread.ok()?.join().ok()
    })
}

fn compile_here(code: &str) -> Result<jaq_core::Filter<Dw>, QueryError> {
    let tokens = Lexer::new(code).lex().map_err(|errs| match errs.first() {
        Some((expect, at)) => syntax_error(code, format!("expected {}", expect.as_str()), at),
        None => QueryError::new("jq syntax error", None),
    })?;
    let term = Parser::new(&tokens).parse(|p| p.term()).map_err(|errs| match errs.first() {
        Some((expect, found)) => {
            let at = jaq_core::load::lex::Token::opt_as_str(*found, code);
            let found = if at.is_empty() { "the end".to_owned() } else { format!("{:?}", short(at)) };
            syntax_error(code, format!("expected {}, found {found}", expect.as_str()), at)
        }
        None => QueryError::new("jq syntax error", None),
    })?;
    let (funs, wrappers) = natives::all();
    let mut prelude: Vec<Def<&str>> = wrappers;
    let theirs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
    prelude.extend(theirs.map(|d| rewrite::def(d, true)));
    prelude.push(Def { name: MAIN, args: Vec::new(), body: rewrite::term(term, false) });
    let arena = Arena::default();
    let modules = Loader::new(prelude)
        .load(&arena, File { code: MAIN, path: () })
        .map_err(|_| QueryError::new("the jq program could not be loaded", None))?;
    jaq_core::Compiler::default().with_funs(funs).compile(modules).map_err(|errs| {
        let undefined = errs.into_iter().flat_map(|(_, e)| e).next();
        match undefined {
            Some((name, what)) => {
                let (kind, shown) = match what {
                    Undefined::Filter(arity) => ("function", format!("{name}/{arity}")),
                    Undefined::Var => ("variable", name.to_owned()),
                    Undefined::Label => ("label", name.to_owned()),
                    _ => ("module", name.to_owned()),
                };
                let why = if OUTSIDE.contains(&name) {
                    " (a watch's jq program only reads the page: no input, environment or files)"
                } else {
                    ""
                };
                let message = format!("unknown jq {kind} {shown}{why}");
                match offset_in(code, name) {
                    Some(at) => QueryError::at(message, code, at),
                    None => QueryError::new(message, None),
                }
            }
            None => QueryError::new("the jq program does not compile", None),
        }
    })
}

/// Names jq has that read outside the value given.
const OUTSIDE: &[&str] = &[
    "input",
    "inputs",
    "env",
    "$ENV",
    "input_filename",
    "input_line_number",
    "get_search_list",
    "$__prog_args",
    "localtime",
    "strflocaltime",
    "import",
    "include",
];

fn short(text: &str) -> String {
    text.chars().take(20).collect()
}

fn syntax_error(code: &str, what: String, at: &str) -> QueryError {
    let message = format!("jq syntax error: {what}");
    match offset_in(code, at) {
        Some(offset) => QueryError::at(message, code, offset),
        None => QueryError::new(message, None),
    }
}

/// Where `part` (a slice of `whole`, or not) starts in `whole`.
fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let (start, base) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    (start >= base && start <= base + whole.len()).then(|| start - base)
}

/// Refuses programs nested deeper than [`MAX_NESTING`] (in code, and inside string
/// interpolation), before the recursive parser sees them.
fn check_nesting(code: &str) -> Result<(), QueryError> {
    #[derive(PartialEq)]
    enum Mode {
        Code,
        Str,
        Interp,
    }
    let mut stack = vec![Mode::Code];
    let mut chars = code.char_indices();
    while let Some((i, c)) = chars.next() {
        let in_str = stack.last() == Some(&Mode::Str);
        match c {
            '\\' if in_str => {
                if let Some((_, '(')) = chars.next() {
                    stack.push(Mode::Interp);
                }
            }
            '"' if in_str => {
                stack.pop();
            }
            _ if in_str => {}
            '"' => stack.push(Mode::Str),
            '#' => {
                for (_, d) in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => stack.push(Mode::Code),
            ')' | ']' | '}' if stack.len() > 1 => {
                stack.pop();
            }
            _ => {}
        }
        if stack.len() > MAX_NESTING {
            return Err(QueryError::at(format!("a jq program nests at most {MAX_NESTING} levels deep"), code, i));
        }
    }
    Ok(())
}

//! jaq's values: to and from serde_json, measured, and written within a bound.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io;

use jaq_json::{Num, Rc, Val};
use serde_json::{Map, Number, Value};

/// Deepest nesting of arrays and objects a program may build or read (serde_json reads at most
/// 128 levels).
pub const MAX_DEPTH: usize = 256;
/// Largest logical weight (one per node plus the bytes of each string, counting a shared value
/// once per place it appears) of a value that is compared, hashed as a key, sorted, searched or
/// walked with `..`: those walk the value as if it were a tree, however much of it is shared.
pub const MAX_WALK: u64 = 1 << 26;
/// Longest string an operator, `tostring` or `tojson` may build, in bytes.
pub const MAX_STRING: usize = 16 << 20;
/// Most elements (or keys) an operator may put in one array (or object).
pub const MAX_ELEMENTS: usize = 1 << 20;
/// Most bits of an integer built by arithmetic.
pub const MAX_INT_BITS: u64 = 1 << 16;
/// Longest error message kept, in bytes.
pub const MAX_MESSAGE: usize = 300;

/// serde_json to jaq, refusing values nested [`MAX_DEPTH`] levels or deeper.
pub fn from_json(v: &Value) -> Result<Val, String> {
    from_json_in(v, 0, &mut HashMap::new())
}

/// `keys` shares the object keys already seen (an API response repeats the same few).
fn from_json_in<'v>(v: &'v Value, depth: usize, keys: &mut HashMap<&'v str, Val>) -> Result<Val, String> {
    if depth >= MAX_DEPTH {
        return Err(format!("the JSON nests deeper than {MAX_DEPTH} levels"));
    }
    Ok(match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => Val::Num(if let Some(i) = n.as_i64() {
            Num::from_integral(i)
        } else if let Some(u) = n.as_u64() {
            Num::from_integral(u)
        } else {
            Num::Float(n.as_f64().unwrap_or(f64::NAN))
        }),
        Value::String(s) => Val::utf8_str(s.clone()),
        Value::Array(a) => a.iter().map(|x| from_json_in(x, depth + 1, keys)).collect::<Result<Val, _>>()?,
        Value::Object(o) => {
            let mut map = jaq_json::Map::with_capacity_and_hasher(o.len(), Default::default());
            for (k, x) in o {
                let key = keys.entry(k.as_str()).or_insert_with(|| Val::utf8_str(k.clone())).clone();
                map.insert(key, from_json_in(x, depth + 1, keys)?);
            }
            Val::obj(map)
        }
    })
}

/// jaq to serde_json, within `max_bytes` of compact JSON text and [`MAX_DEPTH`] levels.
/// Numbers that JSON cannot hold (NaN, infinities) become null, as jq prints them; byte strings
/// and non-string keys are refused.
pub fn to_json(v: &Val, max_bytes: usize) -> Result<Value, String> {
    let mut left = max_bytes;
    to_json_in(v, 0, &mut left)
}

fn spend(left: &mut usize, n: usize) -> Result<(), String> {
    *left = left.checked_sub(n).ok_or("the output is larger than the limit for one output")?;
    Ok(())
}

fn to_json_in(v: &Val, depth: usize, left: &mut usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("the output nests deeper than {MAX_DEPTH} levels"));
    }
    Ok(match v {
        Val::Null => {
            spend(left, 4)?;
            Value::Null
        }
        Val::Bool(b) => {
            spend(left, 5)?;
            Value::Bool(*b)
        }
        Val::Num(n) => {
            let text = capped(MAX_MESSAGE, |w| write!(w, "{n}")).0;
            spend(left, text.len())?;
            number(n, &text)
        }
        Val::TStr(s) => {
            spend(left, s.len() + 2)?;
            Value::String(String::from_utf8_lossy(s).into_owned())
        }
        Val::BStr(_) => return Err("the output holds a byte string, which JSON cannot".into()),
        Val::Arr(a) => {
            spend(left, 2)?;
            let mut out = Vec::with_capacity(a.len().min(*left));
            for x in a.iter() {
                spend(left, 1)?;
                out.push(to_json_in(x, depth + 1, left)?);
            }
            Value::Array(out)
        }
        Val::Obj(o) => {
            spend(left, 2)?;
            let mut out = Map::new();
            for (k, x) in o.iter() {
                let Val::TStr(k) = k else {
                    return Err("the output has an object key that is not a string".into());
                };
                spend(left, k.len() + 4)?;
                out.insert(String::from_utf8_lossy(k).into_owned(), to_json_in(x, depth + 1, left)?);
            }
            Value::Object(out)
        }
    })
}

fn number(n: &Num, text: &str) -> Value {
    match n {
        Num::Int(i) => Value::Number(Number::from(*i as i64)),
        _ => {
            if let Ok(i) = text.parse::<i64>() {
                return Value::Number(i.into());
            }
            if let Ok(u) = text.parse::<u64>() {
                return Value::Number(u.into());
            }
            text.parse::<f64>().ok().and_then(Number::from_f64).map_or(Value::Null, Value::Number)
        }
    }
}

/// Text written by `f` into at most `cap` bytes; `true` when it was cut there.
pub fn capped(cap: usize, f: impl FnOnce(&mut Capped) -> fmt::Result) -> (String, bool) {
    let mut w = Capped { text: String::new(), cap, cut: false };
    let _ = f(&mut w);
    (w.text, w.cut)
}

/// A `fmt::Write` that stops (with an error, which ends any `Display`) past its capacity.
pub struct Capped {
    text: String,
    cap: usize,
    cut: bool,
}

impl fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.cap - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.cut = true;
        Err(fmt::Error)
    }
}

/// An `io::Write` into bytes that fails past its capacity.
struct CappedBytes {
    bytes: Vec<u8>,
    cap: usize,
}

impl io::Write for CappedBytes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len() + buf.len() > self.cap {
            return Err(io::Error::other("too long"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `v` as jaq writes it (compact JSON, strings quoted), or None past [`MAX_STRING`] bytes.
pub fn json_text(v: &Val) -> Option<Vec<u8>> {
    let mut w = CappedBytes { bytes: Vec::new(), cap: MAX_STRING };
    jaq_json::write::write(&mut w, &jaq_json::write::Pp::default(), 0, v).ok()?;
    Some(w.bytes)
}

/// A short rendering of `v` for a message.
pub fn brief(v: &Val) -> String {
    cut(|w| write!(w, "{v}"))
}

/// A jq error as a sentence: a plain string error as is, anything else as jaq prints it, cut.
pub fn error_message(e: &jaq_core::Error<Val>) -> String {
    if is_plain(e) {
        let v = e.clone().into_val();
        if let Val::TStr(s) = &v {
            return cut(|w| w.write_str(&String::from_utf8_lossy(s)));
        }
        return format!("{} (not a string)", brief(&v));
    }
    cut(|w| write!(w, "{e}"))
}

fn cut(f: impl FnOnce(&mut Capped) -> fmt::Result) -> String {
    let (mut text, cut) = capped(MAX_MESSAGE, f);
    if cut {
        text.push('…');
    }
    text
}

/// The value a `catch` sees: the value given to `error` as is, else jaq's message, cut (jaq
/// would write every value in the message in full, however large or shared).
pub fn error_value(e: jaq_core::Error<Val>) -> Val {
    if is_plain(&e) { e.into_val() } else { Val::from(error_message(&e)) }
}

/// Whether `e` was raised by `error(v)` (rather than being a message jaq built around values):
/// jaq's `Error` only shows that through its derived `Debug`, of which a few bytes are written.
fn is_plain(e: &jaq_core::Error<Val>) -> bool {
    capped(12, |w| write!(w, "{e:?}")).0.starts_with("Error(Val(")
}

/// Why a value may not be used where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TooBig {
    /// Nested deeper than [`MAX_DEPTH`].
    Deep,
    /// Weighs more than [`MAX_WALK`].
    Heavy,
}

impl TooBig {
    /// The limit, in words.
    pub fn message(self) -> String {
        match self {
            TooBig::Deep => format!("values may nest at most {MAX_DEPTH} levels deep"),
            TooBig::Heavy => format!(
                "the value is too large to compare, sort, search or walk (over {MAX_WALK} nodes and string bytes, counting shared parts each time)"
            ),
        }
    }
}

/// The logical weight of `v` and its depth, each checked against its bound. Shared parts are
/// visited once (so this costs the value's size in memory, not its size as a tree).
pub fn measure(v: &Val, max_weight: u64) -> Result<(u64, usize), TooBig> {
    match v {
        Val::Arr(_) | Val::Obj(_) => {
            // most values are small: walk them without remembering what was seen
            let mut nodes = 4096;
            if let Some(known) = measure_small(v, 0, &mut nodes) {
                return match known {
                    (_, d) if d >= MAX_DEPTH => Err(TooBig::Deep),
                    (w, _) if w > max_weight => Err(TooBig::Heavy),
                    known => Ok(known),
                };
            }
            let mut seen = HashMap::new();
            measure_in(v, max_weight, 0, &mut seen)
        }
        _ => {
            let w = scalar_weight(v);
            if w > max_weight { Err(TooBig::Heavy) } else { Ok((w, 0)) }
        }
    }
}

/// The weight and depth of `v` if it has at most `nodes` nodes (and is not too deep to say).
fn measure_small(v: &Val, depth: usize, nodes: &mut usize) -> Option<(u64, usize)> {
    *nodes = nodes.checked_sub(1)?;
    if depth >= MAX_DEPTH {
        return None;
    }
    let (mut weight, mut below) = (1u64, 0usize);
    let mut add = |x: &Val, nodes: &mut usize| -> Option<()> {
        let (w, d) = measure_small(x, depth + 1, nodes)?;
        weight += w;
        below = below.max(d + 1);
        Some(())
    };
    match v {
        Val::Arr(a) => a.iter().try_for_each(|x| add(x, nodes))?,
        Val::Obj(o) => o.iter().try_for_each(|(k, x)| {
            add(k, nodes)?;
            add(x, nodes)
        })?,
        _ => return Some((scalar_weight(v), 0)),
    }
    Some((weight, below))
}

fn scalar_weight(v: &Val) -> u64 {
    match v {
        Val::TStr(s) | Val::BStr(s) => 1 + s.len() as u64,
        _ => 1,
    }
}

fn measure_in(
    v: &Val,
    max_weight: u64,
    depth: usize,
    seen: &mut HashMap<usize, (u64, usize)>,
) -> Result<(u64, usize), TooBig> {
    if depth >= MAX_DEPTH {
        return Err(TooBig::Deep);
    }
    let key = match v {
        Val::Arr(a) => Rc::as_ptr(a) as *const () as usize,
        Val::Obj(o) => Rc::as_ptr(o) as *const () as usize,
        _ => return Ok((scalar_weight(v), 0)),
    };
    if let Some(known) = seen.get(&key) {
        return Ok(*known);
    }
    let (mut weight, mut below) = (1u64, 0usize);
    let mut add = |x: &Val, seen: &mut HashMap<usize, (u64, usize)>| -> Result<(), TooBig> {
        let (w, d) = measure_in(x, max_weight, depth + 1, seen)?;
        weight = weight.saturating_add(w);
        below = below.max(d + 1);
        if weight > max_weight { Err(TooBig::Heavy) } else { Ok(()) }
    };
    match v {
        Val::Arr(a) => a.iter().try_for_each(|x| add(x, seen))?,
        Val::Obj(o) => o.iter().try_for_each(|(k, x)| {
            add(k, seen)?;
            add(x, seen)
        })?,
        _ => {}
    }
    seen.insert(key, (weight, below));
    Ok((weight, below))
}

//! The schedule runner: finds due watches, checks them, and records what it found.
//!
//! A check is scrape -> extract -> diff -> alert. Its result (the run; on a change also the
//! snapshot, the event and one delivery per enabled endpoint) is written in one transaction
//! under the watch's lease, then the delivery worker is woken.

mod access;
pub mod backtest;
pub mod backtest_expect;
mod check;
mod fair;
mod hosts;
mod reader;
mod runner;

pub use access::{Access, ProxyTested};
pub use check::{CheckError, Preview, PreviewError};
pub use reader::PageReader;
pub use runner::{Runner, RunnerConfig};

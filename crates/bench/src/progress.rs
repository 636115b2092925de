//! What a benchmark shows while it runs: a line per phase on standard error and, on a terminal,
//! a counter updated in place. The figures come at the end, on standard output.

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use tokio::sync::watch;

/// Progress of one benchmark run.
pub(crate) struct Progress {
    label: &'static str,
    terminal: bool,
}

impl Progress {
    /// Progress of the benchmark `label`.
    pub(crate) fn start(label: &'static str) -> Progress {
        Progress { label, terminal: std::io::stderr().is_terminal() }
    }

    /// Says which phase the run is in.
    pub(crate) fn say(&self, phase: &str) {
        let mut err = std::io::stderr().lock();
        let clear = if self.terminal { "\r\x1b[K" } else { "" };
        let _ = writeln!(err, "{clear}{}: {phase}", self.label);
    }

    /// On a terminal, shows `count - base` of `total` every quarter second until aborted.
    pub(crate) fn count(
        &self,
        count: watch::Receiver<usize>,
        base: usize,
        total: usize,
    ) -> tokio::task::JoinHandle<()> {
        let (label, terminal) = (self.label, self.terminal);
        tokio::spawn(async move {
            if !terminal {
                return;
            }
            loop {
                let done = count.borrow().saturating_sub(base);
                eprint!("\r\x1b[K{label}: {done} of {total} delivered");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    }

    /// Clears the counter's line.
    pub(crate) fn done(&self) {
        if self.terminal {
            eprint!("\r\x1b[K");
        }
    }
}

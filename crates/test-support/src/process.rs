//! Child processes that cannot outlive their test.

use std::ops::{Deref, DerefMut};
use std::process::Child;

/// A child process killed and reaped when dropped, as `tempfile` removes its directory: a test
/// that fails (panics) half-way leaves no `driftwatch serve` running behind it.
#[derive(Debug)]
pub struct KillOnDrop(Child);

impl KillOnDrop {
    /// Takes charge of `child`.
    pub fn new(child: Child) -> KillOnDrop {
        KillOnDrop(child)
    }
}

impl Deref for KillOnDrop {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Both fail harmlessly when the process has already exited and been reaped.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::KillOnDrop;

    #[test]
    fn a_test_that_panics_leaves_no_child_running() {
        let mut pid = 0;
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let child = KillOnDrop::new(std::process::Command::new("sleep").arg("600").spawn().expect("sleep"));
            pid = child.id();
            panic!("the test fails half-way");
        }));
        assert!(panicked.is_err());
        assert_ne!(pid, 0);
        // Killed and reaped: no process, not even a zombie, has the pid.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "sleep {pid} outlived its test");
    }
}

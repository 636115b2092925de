//! The code map checks itself: tests that read every member's `Cargo.toml`, its `.rs` files
//! and ARCHITECTURE.md's "## Code map", in the manner of rust-analyzer's `xtask/src/tidy.rs`.
//! `cargo test --workspace` runs them; `cargo test -p driftwatch-tidy` runs only them, in
//! seconds, since this crate needs no driftwatch crate.
//!
//! The rules, one test each (`rules.rs` says the details and the exceptions):
//! - every member is on the code map, and every edge between members points down it;
//! - only `store` and the test crates name diesel;
//! - a crate the map marks `*Pure*` depends on no crate that does IO;
//! - only `cli` (and a binary's own `main`) reads the process environment;
//! - every declared dependency is named in the code that may use it.
//!
//! The reading is textual, as tidy's is: comments are skipped, a dependency counts as named
//! when it starts a path (`name::`), is `use`d or is an `extern crate`.

#[cfg(test)]
mod rules;
#[cfg(test)]
mod workspace;

//! The event payload: the one serialised contract between driftwatch and its receivers. Each
//! version is a module of typed structs (today [`v1`]); bodies are built from them, stored once
//! and re-sent byte for byte, and read back (by the UI, by the Slack renderer) through the same
//! types rather than by string keys.

pub mod v1;

#[cfg(test)]
mod tests;

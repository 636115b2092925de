//! Pages rendered in a real Chromium over the DevTools protocol.
//!
//! [`Browsers`] starts one Chromium per node the first time a page needs it (or connects to a
//! remote one, `DRIFTWATCH_BROWSER_WS`), renders each page in a fresh browser context that is
//! disposed afterwards, and restarts the browser when it crashes, hangs, has rendered
//! `recycle_after` pages or grows past its memory cap.
//!
//! Invariants:
//! - **Guard**: every request of every context goes through [`GuardProxy`], an in-process HTTP
//!   proxy that resolves names itself and refuses non-public addresses exactly as the HTTP
//!   fetcher does; loopback is proxied too (`<-loopback>`), WebRTC may not use UDP outside it,
//!   and a page whose document ends on anything but `http(s)` (`file:`, `chrome:`, `data:`...)
//!   is refused.
//! - **Isolation**: no cookie, storage or cache is shared between two renders.
//! - **Bounds**: renders in flight are capped ([`BrowserConfig::concurrency`]); a render is
//!   bounded by its timeout; a browser that fails is killed as a whole process group.

mod config;
mod instance;
mod pool;
mod process;
mod proxy;
mod render;

pub use config::BrowserConfig;
pub use pool::{BrowserStats, Browsers};
pub use process::{find_chromium, group_cpu_ticks, group_members, tree_memory};
pub use proxy::GuardProxy;
pub use render::{RenderError, RenderRequest, Rendered, Screenshot};

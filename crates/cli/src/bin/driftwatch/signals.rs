//! Running until a signal: SIGTERM or SIGINT drains within the grace period, a second exits.

use driftwatch::{App, Roles, Settings};

use crate::print_out;

pub(crate) async fn run_until_signal(settings: &Settings, roles: Roles) -> anyhow::Result<()> {
    let mut signals = Signals::new();
    let app = App::start(settings, roles).await?;
    if let Some(addr) = app.addr {
        // `print_out`, not `println!`: a supervisor that closed our stdout must not panic the server.
        print_out(&format!("driftwatch listening on http://{addr}"));
    }
    if let Some(url) = &app.setup_url {
        print_out(&format!("No user yet. Open this one-time setup link to create the first account:\n  {url}"));
    }
    signals.next().await;
    let grace: std::time::Duration = settings.shutdown_grace.into();
    tracing::info!(grace = ?grace, "shutting down: finishing work in flight (a second signal exits at once)");
    tokio::spawn(async move {
        signals.next().await;
        tracing::warn!("second signal: exiting now; work in flight is retried after its leases expire");
        std::process::exit(130);
    });
    if app.shutdown_within(Some(grace)).await {
        tracing::info!("shut down cleanly");
        Ok(())
    } else {
        anyhow::bail!("DRIFTWATCH_SHUTDOWN_GRACE ({grace:?}) ran out before the work in flight finished")
    }
}

/// SIGTERM and SIGINT (Ctrl-C), listened for from start-up to exit so that none is missed.
struct Signals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals { terminate: signal(SignalKind::terminate()).ok(), interrupt: signal(SignalKind::interrupt()).ok() }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves at the next SIGTERM or SIGINT.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            async fn recv(signal: Option<&mut tokio::signal::unix::Signal>) {
                match signal {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                () = recv(self.terminate.as_mut()) => {}
                () = recv(self.interrupt.as_mut()) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

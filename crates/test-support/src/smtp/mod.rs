//! A real SMTP server on loopback that keeps what it receives. The protocol is mailin's
//! (the engine of mailin-embedded) driven on tokio, so that AUTH can be offered over plain text
//! on loopback, which mailin-embedded's server does not allow, and so that dropping the server
//! closes its port and sessions.

mod mail;
#[cfg(test)]
mod tests;
mod tls;

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mailin::{Action, AuthMechanism, Handler, Response, Session, SessionBuilder, response};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::watch;

pub use mail::{ParsedMail, ReceivedMail};

/// What the sessions and the test share.
struct Mailbox {
    /// Username and password AUTH must give, if it is required.
    auth: Option<(String, String)>,
    /// Messages accepted, in order.
    messages: Mutex<Vec<ReceivedMail>>,
    /// Messages refused on cue, with the code they got.
    refused: Mutex<Vec<(u16, ReceivedMail)>>,
    /// The codes to answer the next messages with.
    failures: Mutex<VecDeque<u16>>,
    /// How many messages were accepted.
    accepted: watch::Sender<usize>,
    /// Set when the server is dropped.
    stop: watch::Sender<bool>,
}

/// What a session's handler and its line loop share.
#[derive(Default)]
struct Flags {
    /// Whether STARTTLS is in force on this connection.
    tls: AtomicBool,
    /// Set when a message was refused at the end of DATA: mailin then stays in its DATA state
    /// (against RFC 5321, which ends the transaction with the reply), so the loop feeds it one
    /// more end of data, which the handler answers OK unseen, to bring it back to the state
    /// after a transaction.
    refused: AtomicBool,
}

/// One SMTP session's handler: takes the message in and decides its answer.
struct Conn {
    mailbox: Arc<Mailbox>,
    flags: Arc<Flags>,
    user: Option<String>,
    mechanism: Option<SmtpLogin>,
    from: String,
    to: Vec<String>,
    data: Vec<u8>,
}

impl Conn {
    /// Whether these credentials are the ones required.
    fn login(&mut self, mechanism: SmtpLogin, user: &str, password: &str) -> Response {
        match &self.mailbox.auth {
            Some((u, p)) if u == user && p == password => {
                self.user = Some(user.to_owned());
                self.mechanism = Some(mechanism);
                response::AUTH_OK
            }
            _ => response::INVALID_CREDENTIALS,
        }
    }
}

impl Handler for Conn {
    fn data_start(&mut self, _domain: &str, from: &str, _is8bit: bool, to: &[String]) -> Response {
        self.from = from.to_owned();
        self.to = to.to_vec();
        self.data.clear();
        response::OK
    }

    fn data(&mut self, buf: &[u8]) -> io::Result<()> {
        self.data.extend_from_slice(buf);
        Ok(())
    }

    fn data_end(&mut self) -> Response {
        if self.flags.refused.swap(false, Ordering::SeqCst) {
            return response::OK;
        }
        let mail = ReceivedMail {
            from: std::mem::take(&mut self.from),
            to: std::mem::take(&mut self.to),
            raw: std::mem::take(&mut self.data),
            user: self.user.clone(),
            mechanism: self.mechanism,
            tls: self.flags.tls.load(Ordering::SeqCst),
        };
        let failure = self.mailbox.failures.lock().expect("lock").pop_front();
        if let Some(code) = failure {
            self.mailbox.refused.lock().expect("lock").push((code, mail));
            self.flags.refused.store(true, Ordering::SeqCst);
            let text = match code {
                400..=499 => "4.3.0 Requested action aborted: try again later (steered by the test)",
                _ => "5.7.1 Message rejected (steered by the test)",
            };
            return Response::custom(code, text.to_owned());
        }
        let n = {
            let mut messages = self.mailbox.messages.lock().expect("lock");
            messages.push(mail);
            messages.len()
        };
        self.mailbox.accepted.send_replace(n);
        response::OK
    }

    fn auth_plain(&mut self, _authorization_id: &str, authentication_id: &str, password: &str) -> Response {
        self.login(SmtpLogin::Plain, authentication_id, password)
    }

    fn auth_login(&mut self, username: &str, password: &str) -> Response {
        self.login(SmtpLogin::Login, username, password)
    }
}

/// A real SMTP server on `127.0.0.1` that keeps the mail it receives, answers the next messages
/// with a failure on cue ([`SmtpServer::fail_next`]), and can require AUTH and offer STARTTLS.
/// Dropping it closes its port and every session.
pub struct SmtpServer {
    addr: SocketAddr,
    mailbox: Arc<Mailbox>,
    certificate: Option<String>,
}

impl SmtpServer {
    /// Starts one that takes mail from anyone, without AUTH or STARTTLS.
    pub async fn start() -> SmtpServer {
        SmtpServer::launch(None, SmtpTls::Plain, &[]).await
    }

    /// Starts one that requires AUTH with these credentials before MAIL (`530` otherwise, `535`
    /// for wrong ones), offering exactly `mechanisms`, over `tls` (with STARTTLS, AUTH is
    /// offered only once TLS is in force). [`SmtpServer::start`] is one that offers no AUTH.
    pub async fn requiring_login(credentials: (&str, &str), mechanisms: &[SmtpLogin], tls: SmtpTls) -> SmtpServer {
        let (user, password) = credentials;
        SmtpServer::launch(Some((user.to_owned(), password.to_owned())), tls, mechanisms).await
    }

    /// Starts one that requires AUTH (PLAIN or LOGIN) with these credentials before MAIL
    /// (`530` otherwise, `535` for wrong ones), offered over plain text: fine on loopback, and
    /// what a client configured without TLS does.
    pub async fn with_auth(user: &str, password: &str) -> SmtpServer {
        SmtpServer::launch(Some((user.to_owned(), password.to_owned())), SmtpTls::Plain, BOTH).await
    }

    /// Starts one that offers STARTTLS with a self-signed certificate for `localhost` and
    /// `127.0.0.1` ([`SmtpServer::certificate_pem`], for the client to trust). With `auth`, AUTH
    /// is required and offered only once TLS is in force, as real submission servers do.
    pub async fn with_starttls(auth: Option<(&str, &str)>) -> SmtpServer {
        SmtpServer::launch(auth.map(|(u, p)| (u.to_owned(), p.to_owned())), SmtpTls::StartTls, BOTH).await
    }

    /// Starts one that speaks TLS from the first byte (as on port 465), with a self-signed
    /// certificate as [`SmtpServer::with_starttls`] has; with `auth`, AUTH is required.
    pub async fn with_implicit_tls(auth: Option<(&str, &str)>) -> SmtpServer {
        SmtpServer::launch(auth.map(|(u, p)| (u.to_owned(), p.to_owned())), SmtpTls::ImplicitTls, BOTH).await
    }

    async fn launch(auth: Option<(String, String)>, mode: SmtpTls, mechanisms: &[SmtpLogin]) -> SmtpServer {
        let starttls = mode == SmtpTls::StartTls;
        let mailbox = Arc::new(Mailbox {
            auth,
            messages: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
            failures: Mutex::new(VecDeque::new()),
            accepted: watch::channel(0).0,
            stop: watch::channel(false).0,
        });
        let (acceptor, certificate) = if mode != SmtpTls::Plain {
            let (acceptor, pem) = tls::acceptor();
            (Some(acceptor), Some(pem))
        } else {
            (None, None)
        };
        let mut builder = SessionBuilder::new("driftwatch.test");
        if mailbox.auth.is_some() {
            for mechanism in mechanisms {
                builder.enable_auth(match mechanism {
                    SmtpLogin::Plain => AuthMechanism::Plain,
                    SmtpLogin::Login => AuthMechanism::Login,
                });
            }
            if mode == SmtpTls::Plain {
                builder.insecure_enable_plaintext_auth();
            }
        }
        if starttls {
            builder.enable_start_tls();
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::clone(&mailbox);
        tokio::spawn(async move {
            let builder = Arc::new(builder);
            let mut stop = shared.stop.subscribe();
            loop {
                let (stream, peer) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(_) => continue,
                    },
                    _ = stop.wait_for(|stop| *stop) => break,
                };
                let (builder, mailbox, acceptor) = (Arc::clone(&builder), Arc::clone(&shared), acceptor.clone());
                let mut stop = shared.stop.subscribe();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = serve(stream, peer.ip(), &builder, mailbox, acceptor, mode) => {}
                        _ = stop.wait_for(|stop| *stop) => {}
                    }
                });
            }
        });
        SmtpServer { addr, mailbox, certificate }
    }

    /// Its address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The self-signed certificate its TLS presents (PEM), if it speaks TLS.
    pub fn certificate_pem(&self) -> Option<&str> {
        self.certificate.as_deref()
    }

    /// Answers the next `n` messages, at the end of DATA, with `code`: a 4xx is a temporary
    /// failure the client should retry, a 5xx a permanent one. Calls add up. (`421` also closes
    /// the connection.)
    pub fn fail_next(&self, n: usize, code: u16) {
        assert!((400..=599).contains(&code), "fail_next takes a 4xx or 5xx code, not {code}");
        self.mailbox.failures.lock().expect("lock").extend(std::iter::repeat_n(code, n));
    }

    /// Every message accepted so far, in order.
    pub fn messages(&self) -> Vec<ReceivedMail> {
        self.mailbox.messages.lock().expect("lock").clone()
    }

    /// Every message refused on cue so far, with the code it got, in order.
    pub fn refused(&self) -> Vec<(u16, ReceivedMail)> {
        self.mailbox.refused.lock().expect("lock").clone()
    }

    /// Waits until at least `n` messages were accepted and returns them all; panics after
    /// `timeout`.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<ReceivedMail> {
        let mut accepted = self.mailbox.accepted.subscribe();
        if tokio::time::timeout(timeout, accepted.wait_for(|got| *got >= n)).await.is_err() {
            panic!(
                "SmtpServer: timed out after {timeout:?} waiting for {n} messages; {} accepted, {} refused on cue",
                self.messages().len(),
                self.refused().len()
            );
        }
        self.messages()
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.mailbox.stop.send_replace(true);
    }
}

/// How a server speaks TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// No TLS at all (AUTH, when required, is offered over plain text: fine on loopback).
    Plain,
    /// STARTTLS offered; AUTH, when required, only once TLS is in force.
    StartTls,
    /// TLS from the first byte, as on port 465.
    ImplicitTls,
}

/// An AUTH mechanism a server may offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpLogin {
    /// `AUTH PLAIN` (RFC 4616).
    Plain,
    /// `AUTH LOGIN`.
    Login,
}

/// What the servers that require AUTH offer unless told otherwise.
const BOTH: &[SmtpLogin] = &[SmtpLogin::Plain, SmtpLogin::Login];

/// What a run of the session ended in.
enum Ended {
    Closed,
    StartTls,
}

/// One SMTP session on `stream`: TLS from the first byte in implicit mode, otherwise plain and
/// upgraded to TLS when the client says STARTTLS.
async fn serve(
    stream: tokio::net::TcpStream,
    peer: IpAddr,
    builder: &SessionBuilder,
    mailbox: Arc<Mailbox>,
    acceptor: Option<tokio_native_tls::TlsAcceptor>,
    mode: SmtpTls,
) -> io::Result<()> {
    let flags = Arc::new(Flags::default());
    let conn = Conn {
        mailbox,
        flags: Arc::clone(&flags),
        user: None,
        mechanism: None,
        from: String::new(),
        to: Vec::new(),
        data: Vec::new(),
    };
    let mut session = builder.build(peer, conn);
    if let (SmtpTls::ImplicitTls, Some(acceptor)) = (mode, &acceptor) {
        let stream = acceptor.accept(stream).await.map_err(io::Error::other)?;
        flags.tls.store(true, Ordering::SeqCst);
        session.tls_active();
        let mut stream = BufReader::new(stream);
        reply(&mut stream, &session.greeting()).await?;
        run(&mut session, &mut stream, &flags).await?;
        return Ok(());
    }
    let mut plain = BufReader::new(stream);
    reply(&mut plain, &session.greeting()).await?;
    if let Ended::StartTls = run(&mut session, &mut plain, &flags).await? {
        let Some(acceptor) = acceptor else { return Ok(()) };
        let stream = acceptor.accept(plain.into_inner()).await.map_err(io::Error::other)?;
        flags.tls.store(true, Ordering::SeqCst);
        session.tls_active();
        run(&mut session, &mut BufReader::new(stream), &flags).await?;
    }
    Ok(())
}

/// Feeds the client's lines to the session and writes its answers, until the session ends.
async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    session: &mut Session<Conn>,
    stream: &mut BufReader<S>,
    flags: &Flags,
) -> io::Result<Ended> {
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if stream.read_until(b'\n', &mut line).await? == 0 {
            return Ok(Ended::Closed);
        }
        let answer = session.process(&line);
        match answer.action {
            Action::NoReply => {}
            Action::Reply => {
                reply(stream, &answer).await?;
                if flags.refused.load(Ordering::SeqCst) {
                    session.process(b".\r\n");
                }
            }
            Action::Close => {
                reply(stream, &answer).await?;
                return Ok(Ended::Closed);
            }
            Action::UpgradeTls => {
                reply(stream, &answer).await?;
                return Ok(Ended::StartTls);
            }
        }
    }
}

/// Writes one answer.
async fn reply<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut BufReader<S>, answer: &Response) -> io::Result<()> {
    let bytes = answer.buffer()?;
    let stream = stream.get_mut();
    stream.write_all(&bytes).await?;
    stream.flush().await
}

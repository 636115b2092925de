//! The server as lettre, the product's SMTP client, meets it.

use std::time::Duration;

use lettre::message::MultiPart;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor};

use super::SmtpServer;

const WAIT: Duration = Duration::from_secs(5);

fn message(subject: &str) -> Message {
    Message::builder()
        .from("Driftwatch <alerts@driftwatch.test>".parse().expect("from"))
        .to("Ops <ops@example.org>".parse().expect("to"))
        .cc("second@example.org".parse().expect("cc"))
        .subject(subject)
        .multipart(MultiPart::alternative_plain_html(
            "The page changed ✓\n.a line that starts with a dot\n".to_owned(),
            "<p>The page <b>changed</b> ✓</p>".to_owned(),
        ))
        .expect("message")
}

fn client(server: &SmtpServer, credentials: Option<(&str, &str)>) -> AsyncSmtpTransport<Tokio1Executor> {
    let mut builder =
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1").port(server.port()).timeout(Some(WAIT));
    if let Some((user, password)) = credentials {
        builder = builder.credentials(Credentials::new(user.to_owned(), password.to_owned()));
    }
    builder.build()
}

#[tokio::test]
async fn a_multipart_message_arrives_and_parses() {
    let server = SmtpServer::start().await;
    client(&server, None).send(message("Änderung: example.org")).await.expect("sent");
    let mail = server.wait_for(1, WAIT).await.remove(0);
    assert_eq!(mail.from, "alerts@driftwatch.test");
    assert_eq!(mail.to, ["ops@example.org", "second@example.org"]);
    assert_eq!((mail.user.as_deref(), mail.tls), (None, false));
    let parsed = mail.parsed();
    assert_eq!(parsed.subject, "Änderung: example.org");
    assert_eq!(parsed.from, "alerts@driftwatch.test");
    assert_eq!(parsed.to, ["ops@example.org"]);
    assert_eq!(parsed.text.as_deref(), Some("The page changed ✓\n.a line that starts with a dot\n"));
    assert_eq!(parsed.html.as_deref(), Some("<p>The page <b>changed</b> ✓</p>"));
    assert!(parsed.header("content-type").expect("header").starts_with("multipart/alternative"));
}

#[tokio::test]
async fn steered_failures_reach_the_client_as_transient_or_permanent() {
    let server = SmtpServer::start().await;
    let client = client(&server, None);
    server.fail_next(1, 451);
    server.fail_next(1, 550);
    let temporary = client.send(message("one")).await.expect_err("451");
    assert!(temporary.is_transient(), "{temporary}");
    let permanent = client.send(message("two")).await.expect_err("550");
    assert!(permanent.is_permanent(), "{permanent}");
    client.send(message("three")).await.expect("delivered");
    let messages = server.wait_for(1, WAIT).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].parsed().subject, "three");
    let codes: Vec<u16> = server.refused().iter().map(|(code, _)| *code).collect();
    assert_eq!(codes, [451, 550]);
}

#[tokio::test]
async fn auth_is_required_and_checked() {
    let server = SmtpServer::with_auth("mailer", "s3cret").await;
    let anonymous = client(&server, None).send(message("anon")).await.expect_err("530");
    assert!(anonymous.is_permanent(), "{anonymous}");
    let wrong = client(&server, Some(("mailer", "nope"))).send(message("wrong")).await.expect_err("535");
    assert!(wrong.to_string().contains("535") || wrong.is_permanent(), "{wrong}");
    client(&server, Some(("mailer", "s3cret"))).send(message("right")).await.expect("sent");
    let mail = server.wait_for(1, WAIT).await.remove(0);
    assert_eq!(mail.user.as_deref(), Some("mailer"));
    assert_eq!(server.messages().len(), 1);
}

/// A client that trusts the server's certificate, names it `domain` and logs in as `mailer`;
/// TLS from the first byte when `wrapped`, else STARTTLS (required).
fn tls_client(server: &SmtpServer, domain: &str, wrapped: bool) -> AsyncSmtpTransport<Tokio1Executor> {
    let pem = server.certificate_pem().expect("certificate");
    let tls = TlsParameters::builder(domain.to_owned())
        .add_root_certificate(Certificate::from_pem(pem.as_bytes()).expect("pem"))
        .build_native()
        .expect("tls");
    AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(server.port())
        .timeout(Some(WAIT))
        .tls(if wrapped { Tls::Wrapper(tls) } else { Tls::Required(tls) })
        .credentials(Credentials::new("mailer".to_owned(), "s3cret".to_owned()))
        .build()
}

#[tokio::test]
async fn starttls_with_auth_after_it() {
    let server = SmtpServer::with_starttls(Some(("mailer", "s3cret"))).await;
    tls_client(&server, "localhost", false).send(message("over tls")).await.expect("sent");
    let mail = server.wait_for(1, WAIT).await.remove(0);
    assert_eq!((mail.tls, mail.user.as_deref()), (true, Some("mailer")));
    // Without TLS the server offers no AUTH, so a client with credentials cannot log in.
    let plain = client(&server, Some(("mailer", "s3cret"))).send(message("plain")).await;
    assert!(plain.is_err());
}

#[tokio::test]
async fn implicit_tls_from_the_first_byte() {
    let server = SmtpServer::with_implicit_tls(Some(("mailer", "s3cret"))).await;
    tls_client(&server, "127.0.0.1", true).send(message("wrapped")).await.expect("sent");
    let mail = server.wait_for(1, WAIT).await.remove(0);
    assert_eq!((mail.tls, mail.user.as_deref()), (true, Some("mailer")));
}

#[tokio::test]
async fn smtp_roots_read_every_certificate_of_a_bundle_and_name_a_bad_one() {
    use driftwatch_delivery::SmtpRoots;

    let one = SmtpServer::with_starttls(None).await.certificate_pem().expect("pem").to_owned();
    let two = SmtpServer::with_implicit_tls(None).await.certificate_pem().expect("pem").to_owned();
    let bundle = format!("# internal CA\n{one}\n{two}");
    assert_eq!(SmtpRoots::from_pem(bundle.as_bytes()).map(|r| r.len()), Ok(2));
    assert!(SmtpRoots::from_pem(b"hello").is_err_and(|e| e.contains("no certificate")));
    let broken = format!("{one}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert!(SmtpRoots::from_pem(broken.as_bytes()).is_err_and(|e| e.starts_with("certificate 2 ")));
    let cut = one.replace("-----END CERTIFICATE-----", "");
    assert!(SmtpRoots::from_pem(cut.as_bytes()).is_err_and(|e| e.contains("no END line")));
}

#[tokio::test]
#[should_panic(expected = "timed out after")]
async fn wait_for_panics_when_nothing_comes() {
    let server = SmtpServer::start().await;
    server.wait_for(1, Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_refused_message_leaves_the_session_usable() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

    let server = SmtpServer::start().await;
    server.fail_next(1, 451);
    let stream = tokio::net::TcpStream::connect(server.addr()).await.expect("connect");
    let mut stream = BufReader::new(stream);
    let mut codes = Vec::new();
    let transaction = "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@x.test>\r\nDATA\r\nSubject: s\r\n\r\nbody\r\n.\r\n";
    let script = format!("EHLO client.test\r\n{transaction}{transaction}QUIT\r\n");
    stream.get_mut().write_all(script.as_bytes()).await.expect("write");
    let mut line = String::new();
    loop {
        line.clear();
        if stream.read_line(&mut line).await.expect("read") == 0 {
            break;
        }
        // The last line of each reply: a space after the code.
        if line.as_bytes().get(3) == Some(&b' ') {
            codes.push(line[..3].to_owned());
        }
    }
    assert_eq!(codes, ["220", "250", "250", "250", "354", "451", "250", "250", "354", "250", "221"]);
    assert_eq!(server.messages().len(), 1);
    assert_eq!(server.refused().len(), 1);
}

//! A message as received, and as a MIME parser reads it.

use mail_parser::MessageParser;

/// One message the server accepted (or refused on cue).
#[derive(Debug, Clone)]
pub struct ReceivedMail {
    /// The envelope sender (`MAIL FROM`), without angle brackets.
    pub from: String,
    /// The envelope recipients (`RCPT TO`), in order.
    pub to: Vec<String>,
    /// The message as sent after DATA, dot-stuffing undone, lines ending in CRLF.
    pub raw: Vec<u8>,
    /// The user that authenticated on its session, if any did.
    pub user: Option<String>,
    /// The AUTH mechanism that user authenticated with.
    pub mechanism: Option<super::SmtpLogin>,
    /// Whether it came over TLS (STARTTLS or implicit).
    pub tls: bool,
}

/// What a MIME parser (Stalwart's mail-parser) reads in a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedMail {
    /// The decoded `Subject` (`""` if none).
    pub subject: String,
    /// The address of the `From` header (`""` if none).
    pub from: String,
    /// The addresses of the `To` header.
    pub to: Vec<String>,
    /// The first `text/plain` body part, decoded (not made from the HTML), lines ending in `\n`.
    pub text: Option<String>,
    /// The first `text/html` body part, decoded, lines ending in `\n`.
    pub html: Option<String>,
    /// Every top-level header, name as sent and raw value trimmed, in order.
    pub headers: Vec<(String, String)>,
}

impl ParsedMail {
    /// The raw value of the first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

impl ReceivedMail {
    /// The message as a MIME parser reads it; panics if it does not parse at all.
    pub fn parsed(&self) -> ParsedMail {
        let message = MessageParser::default().parse(&self.raw).expect("the message parses as MIME");
        let addresses = |address: Option<&mail_parser::Address<'_>>| -> Vec<String> {
            address.map_or_else(Vec::new, |a| a.iter().filter_map(|addr| addr.address()).map(str::to_owned).collect())
        };
        let text = message
            .text_bodies()
            .find(|part| part.is_text() && !part.is_text_html())
            .and_then(|part| part.text_contents())
            .map(lf);
        let html = message.html_bodies().find(|part| part.is_text_html()).and_then(|part| part.text_contents());
        let headers = message
            .headers()
            .iter()
            .map(|header| {
                let raw =
                    self.raw.get(header.offset_start() as usize..header.offset_end() as usize).unwrap_or_default();
                (header.name().to_owned(), String::from_utf8_lossy(raw).trim().to_owned())
            })
            .collect();
        ParsedMail {
            subject: message.subject().unwrap_or("").to_owned(),
            from: addresses(message.from()).into_iter().next().unwrap_or_default(),
            to: addresses(message.to()),
            text,
            html: html.map(lf),
            headers,
        }
    }
}

/// `text` with CRLF line ends made LF.
fn lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

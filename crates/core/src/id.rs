/// The kinds of object that get ids; each has a short readable prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// An account (owner of everything else).
    Account,
    /// An API token.
    Token,
    /// A watch.
    Watch,
    /// A stored snapshot of extracted content.
    Snapshot,
    /// One check of a watch.
    Run,
    /// An event (alert).
    Event,
    /// A delivery target.
    Endpoint,
    /// One event bound for one endpoint (the outbox row).
    Delivery,
    /// One HTTP attempt of a delivery.
    Attempt,
    /// A bulk re-queue of an endpoint's deliveries.
    Recovery,
    /// An HTTP request (the `x-request-id` made when a client sends none).
    Request,
    /// A person who signs in to the browser UI (one of an account's users).
    User,
}

impl IdKind {
    /// The prefix that starts every id of this kind.
    pub const fn prefix(self) -> &'static str {
        match self {
            IdKind::Account => "acc",
            IdKind::Token => "tok",
            IdKind::Watch => "wat",
            IdKind::Snapshot => "snp",
            IdKind::Run => "run",
            IdKind::Event => "evt",
            IdKind::Endpoint => "end",
            IdKind::Delivery => "dlv",
            IdKind::Attempt => "att",
            IdKind::Recovery => "rec",
            IdKind::Request => "req",
            IdKind::User => "usr",
        }
    }
}

/// A new opaque id: `<prefix>_<ulid in lower case>`.
///
/// ULIDs start with the creation time, so ids of one kind sort by creation; lists page on them
/// with a stable order and no offset scans. Ids are opaque to clients all the same.
pub fn new_id(kind: IdKind) -> String {
    format!("{}_{}", kind.prefix(), ulid::Ulid::new().to_string().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_prefix_and_sort_by_creation() {
        let a = new_id(IdKind::Watch);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id(IdKind::Watch);
        assert!(a.starts_with("wat_"));
        assert_eq!(a.len(), 4 + 26);
        assert!(a < b, "{a} should sort before {b}");
    }
}

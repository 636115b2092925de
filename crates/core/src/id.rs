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
    /// One of an account's named proxies.
    Proxy,
    /// A named secret of an account (a password that login steps type).
    Secret,
    /// A database pool of one process (the origin its outbox notifications carry).
    Pool,
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
            IdKind::Proxy => "prx",
            IdKind::Secret => "sec",
            IdKind::Pool => "pool",
        }
    }
}

/// A new opaque id: `<prefix>_<ulid in lower case>`.
///
/// ULIDs start with the creation time, so ids of one kind sort by creation; lists page on them
/// with a stable order and no offset scans. Ids are opaque to clients all the same.
pub fn new_id(kind: IdKind) -> String {
    // Monotonic within the process: ids made in the same millisecond still sort in the order
    // they were made (a plain ULID's random part would order them by chance), so "sorted by
    // creation" holds for a batch (an import's watches come back in the file's order).
    static GENERATOR: std::sync::Mutex<ulid::Generator> = std::sync::Mutex::new(ulid::Generator::new());
    let made = GENERATOR.lock().unwrap_or_else(std::sync::PoisonError::into_inner).generate();
    // Only 2^80 ids in one millisecond overflow the generator; a random one is still unique.
    let id = made.unwrap_or_else(|_| ulid::Ulid::new());
    format!("{}_{}", kind.prefix(), id.to_string().to_ascii_lowercase())
}

/// A new id of `kind` as if made at `at`: for rows brought in with their own time (an imported
/// history), so that they sort among the others by that time.
pub fn id_at(kind: IdKind, at: chrono::DateTime<chrono::Utc>) -> String {
    let millis = u64::try_from(at.timestamp_millis()).unwrap_or(0);
    let id = ulid::Ulid::from_parts(millis, ulid::Ulid::new().random());
    format!("{}_{}", kind.prefix(), id.to_string().to_ascii_lowercase())
}

/// The smallest id of `kind` that can have been made at `at` or later: every id made before
/// `at` sorts below it, so "made before" is an index range on the primary key.
pub fn id_floor(kind: IdKind, at: chrono::DateTime<chrono::Utc>) -> String {
    let millis = u64::try_from(at.timestamp_millis()).unwrap_or(0);
    format!("{}_{}", kind.prefix(), ulid::Ulid::from_parts(millis, 0).to_string().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_made_in_one_burst_sort_in_the_order_they_were_made() {
        let ids: Vec<String> = (0..10_000).map(|_| new_id(IdKind::Watch)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids made in the same millisecond keep their order");
    }

    #[test]
    fn the_floor_of_a_time_sorts_between_ids_made_before_and_after() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-04T10:00:00.250Z").expect("time").to_utc();
        let millis = at.timestamp_millis() as u64;
        let id = |ms: u64, random: u128| {
            format!("run_{}", ulid::Ulid::from_parts(ms, random).to_string().to_ascii_lowercase())
        };
        let floor = id_floor(IdKind::Run, at);
        let (latest_before, first_at) = (id(millis - 1, (1 << 80) - 1), id(millis, 0));
        assert!(latest_before < floor, "{latest_before} < {floor}");
        assert!(floor <= first_at && first_at < id(millis, 1), "{floor} <= {first_at}");
        assert!(id_floor(IdKind::Run, chrono::DateTime::UNIX_EPOCH).starts_with("run_0000000000"));
    }

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

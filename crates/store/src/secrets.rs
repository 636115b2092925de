//! Endpoint secrets at rest: sealing afresh, under the current key, what was written in the
//! clear before encryption or sealed under a key since rotated out.
//!
//! The columns of `endpoints` that hold secrets are listed once, in [`SECRET_COLUMNS`]; every
//! function here works through that list. A value is sealed with a [`Keyring`] from
//! `driftwatch_core` (`dwenc:v1:<key id>:...`); `NULL` and the empty string mean "no secret"
//! and are left as they are.
//!
//! Resealing reads a batch of rows, seals in memory, then writes in one transaction per batch,
//! each value with a compare-and-set on the value it read: a secret that a user rotated in the
//! meantime keeps the user's value (which the next pass seals if it needs it).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use driftwatch_core::{Keyring, SEALED_PREFIX};

use crate::schema::endpoints;
use crate::{DbConn, StoreError, StoreResult};

/// Lists the secret columns once: their names come from the schema, so a column that does not
/// exist does not compile.
macro_rules! secret_columns {
    ($($column:ident),+ $(,)?) => {
        /// The columns of `endpoints` that hold secrets, sealed at rest: the signing secret, the
        /// one it replaced (still signing during a rotation's overlap), the kind's other
        /// secrets (a JSON object: a bot token, a password...) and a URL that is a credential.
        /// A new secret column is one more name in this list.
        pub const SECRET_COLUMNS: &[&str] = &[$(<endpoints::$column as diesel::Column>::NAME),+];
    };
}

secret_columns!(secret, previous_secret, secrets, url_secret);

/// What one [`reseal_batch`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResealProgress {
    /// Endpoints read (at most the batch's limit; fewer means the table is done).
    pub scanned: usize,
    /// Endpoints with at least one secret column sealed afresh.
    pub resealed: usize,
    /// The last endpoint id read: where the next batch starts. `None` when none was read.
    pub last_id: Option<String>,
}

/// One value to replace: in `column` of endpoint `id`, `old` (as read) by `new`.
#[derive(Debug)]
struct Reseal {
    column: &'static str,
    id: String,
    old: String,
    new: String,
}

/// The batch read and sealed in memory, not yet written.
#[derive(Debug, Default)]
struct Plan {
    scanned: usize,
    last_id: Option<String>,
    reseals: Vec<Reseal>,
}

/// Seals afresh, under `keyring`'s current key, every secret of up to `limit` endpoints (in id
/// order, after `after_id`) that is plaintext or sealed under another key.
///
/// The batch is written in one transaction, each value only if it still holds what was read
/// (a concurrent change wins). A value that cannot be opened (sealed under a key the keyring
/// lacks, or altered) fails the batch before anything is written, with a
/// [`StoreError::Batch`] naming the endpoint, the column and the key id (never the value).
pub fn reseal_batch(
    conn: &mut DbConn,
    keyring: &Keyring,
    after_id: Option<&str>,
    limit: i64,
) -> StoreResult<ResealProgress> {
    let plan = plan(conn, keyring, after_id, limit)?;
    let resealed = apply(conn, &plan.reseals)?;
    Ok(ResealProgress { scanned: plan.scanned, resealed, last_id: plan.last_id })
}

/// [`reseal_batch`] over the whole table, `batch` endpoints at a time; returns how many
/// endpoints had a secret sealed afresh. Run at startup (to seal what was written before
/// encryption) and after a key rotation (with the old key as a previous key of `keyring`).
pub fn reseal_all(conn: &mut DbConn, keyring: &Keyring, batch: i64) -> StoreResult<usize> {
    let batch = batch.max(1);
    let mut after: Option<String> = None;
    let mut resealed = 0;
    loop {
        let progress = reseal_batch(conn, keyring, after.as_deref(), batch)?;
        resealed += progress.resealed;
        if progress.last_id.is_none() || i64::try_from(progress.scanned).unwrap_or(i64::MAX) < batch {
            return Ok(resealed);
        }
        after = progress.last_id;
    }
}

/// Moves the URL of every endpoint of one of `kinds` (those whose URL is a credential) that
/// still holds it whole in `url` into `url_secret`, leaving `url` as `mask` shows it; returns
/// how many moved. Run at start before [`reseal_all`], which then seals the moved URLs. The
/// caller scrubs the old copies ([`crate::Store::scrub_replaced_secrets`]).
pub fn move_credential_urls(conn: &mut DbConn, kinds: &[String], mask: &dyn Fn(&str) -> String) -> StoreResult<usize> {
    conn.transaction(|conn| {
        let found: Vec<(String, String)> = endpoints::table
            .filter(endpoints::kind.eq_any(kinds))
            .filter(endpoints::url_secret.is_null())
            .select((endpoints::id, endpoints::url))
            .load(conn)?;
        for (id, url) in &found {
            diesel::update(endpoints::table.find(id).filter(endpoints::url_secret.is_null()))
                .set((endpoints::url_secret.eq(url), endpoints::url.eq(mask(url))))
                .execute(conn)?;
        }
        Ok(found.len())
    })
}

/// How many endpoints hold a secret in the clear: a secret column neither `NULL`, empty, nor
/// starting with `dwenc:`. Values sealed under a previous key do not count.
pub fn plaintext_count(conn: &mut DbConn) -> StoreResult<i64> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let prefix_len = SEALED_PREFIX.len();
    let any_plaintext = SECRET_COLUMNS
        .iter()
        .map(|c| format!("({c} <> '' AND substr({c}, 1, {prefix_len}) <> '{SEALED_PREFIX}')"))
        .collect::<Vec<_>>()
        .join(" OR ");
    let sql = format!("SELECT COUNT(*) AS n FROM endpoints WHERE {any_plaintext}");
    let count: Count = match conn {
        DbConn::Pg(pg) => diesel::sql_query(sql).get_result(pg)?,
        DbConn::Sqlite(sqlite) => diesel::sql_query(sql).get_result(sqlite)?,
    };
    Ok(count.n)
}

impl crate::Store {
    /// [`reseal_all`] on the pool, each batch a write of its own (so other writers take turns
    /// between batches on SQLite); returns how many endpoints had a secret sealed afresh.
    pub async fn reseal_secrets(&self, keyring: &Keyring, batch: i64) -> StoreResult<usize> {
        self.reseal_secrets_with(keyring, batch, 0).await
    }

    /// [`move_credential_urls`] then [`crate::Store::reseal_secrets`]: what start-up runs. Returns how
    /// many endpoints had a secret sealed afresh.
    pub async fn seal_credential_urls_and_reseal(
        &self,
        keyring: &Keyring,
        batch: i64,
        credential_kinds: Vec<String>,
        mask: fn(&str) -> String,
    ) -> StoreResult<usize> {
        let moved = self.write(move |conn| move_credential_urls(conn, &credential_kinds, &mask)).await?;
        if moved > 0 {
            tracing::info!(endpoints = moved, "credential URLs moved to be sealed");
        }
        self.reseal_secrets_with(keyring, batch, moved).await
    }

    async fn reseal_secrets_with(&self, keyring: &Keyring, batch: i64, moved: usize) -> StoreResult<usize> {
        let keyring = std::sync::Arc::new(keyring.clone());
        let batch = batch.max(1);
        let mut after: Option<String> = None;
        let mut resealed = 0;
        loop {
            let ring = std::sync::Arc::clone(&keyring);
            let from = after.clone();
            let progress = self.write(move |conn| reseal_batch(conn, &ring, from.as_deref(), batch)).await?;
            resealed += progress.resealed;
            if progress.last_id.is_none() || i64::try_from(progress.scanned).unwrap_or(i64::MAX) < batch {
                return Ok(resealed.max(moved));
            }
            after = progress.last_id;
        }
    }

    /// Leaves no old copy of a replaced secret in the database's files: the plaintext a
    /// reseal replaced survives in freed pages and the WAL (SQLite) or in dead row versions
    /// (PostgreSQL) until they are rewritten. SQLite is vacuumed and its WAL truncated;
    /// PostgreSQL's `endpoints` is vacuumed (its WAL and backups are the operator's).
    pub async fn scrub_replaced_secrets(&self) -> StoreResult<()> {
        self.write(|conn| {
            match conn {
                DbConn::Sqlite(sqlite) => {
                    checkpoint(sqlite)?;
                    diesel::sql_query("VACUUM").execute(sqlite)?;
                    checkpoint(sqlite)?;
                }
                DbConn::Pg(pg) => {
                    diesel::sql_query("VACUUM endpoints").execute(pg)?;
                }
            }
            Ok(())
        })
        .await
    }
}

/// Copies the WAL into the database and empties it; an error when another connection's read
/// kept it from finishing.
fn checkpoint(conn: &mut diesel::SqliteConnection) -> StoreResult<()> {
    #[derive(QueryableByName)]
    struct Checkpoint {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        busy: i32,
    }
    let result: Checkpoint = diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)").get_result(conn)?;
    if result.busy != 0 {
        return Err(StoreError::Batch("the WAL could not be emptied: another connection is reading".into()));
    }
    Ok(())
}

/// Reads the batch and seals what needs it, in memory.
fn plan(conn: &mut DbConn, keyring: &Keyring, after_id: Option<&str>, limit: i64) -> StoreResult<Plan> {
    let mut query = endpoints::table.select(endpoints::id).order(endpoints::id.asc()).limit(limit).into_boxed();
    if let Some(after) = after_id {
        query = query.filter(endpoints::id.gt(after));
    }
    let ids: Vec<String> = query.load(conn)?;
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
        return Ok(Plan::default());
    };
    // Values already sealed under the current key are left in the database.
    let current = format!("dwenc:v1:{}:", keyring.current_id());
    let mut reseals = Vec::new();
    for &column in SECRET_COLUMNS {
        for row in read_column(conn, column, (first, last), &current)? {
            if !keyring.needs_reseal(&row.value) {
                continue;
            }
            let new = keyring
                .reseal(&row.value)
                .map_err(|e| StoreError::Batch(format!("cannot reseal the {column} of endpoint {}: {e}", row.id)))?;
            if let Some(new) = new {
                reseals.push(Reseal { column, id: row.id, old: row.value, new });
            }
        }
    }
    Ok(Plan { scanned: ids.len(), last_id: Some(last.clone()), reseals })
}

/// A secret as read.
#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    value: String,
}

/// The non-empty values of `column` of the endpoints with ids in `first..=last` that do not
/// start with `current` (the current key's prefix).
fn read_column(
    conn: &mut DbConn,
    column: &str,
    (first, last): (&str, &str),
    current: &str,
) -> StoreResult<Vec<Stored>> {
    let sql = format!(
        "SELECT id, {column} AS value FROM endpoints WHERE id >= $1 AND id <= $2 \
         AND {column} <> '' AND substr({column}, 1, {}) <> $3 ORDER BY id",
        current.len()
    );
    macro_rules! load {
        ($sql:expr, $conn:expr) => {
            diesel::sql_query($sql).bind::<Text, _>(first).bind::<Text, _>(last).bind::<Text, _>(current).load($conn)?
        };
    }
    Ok(match conn {
        DbConn::Pg(pg) => load!(sql, pg),
        // SQLite's numbered parameters are `?N`.
        DbConn::Sqlite(sqlite) => load!(sql.replace('$', "?"), sqlite),
    })
}

/// Writes the batch in one transaction, each value only if it is still the one read; returns
/// how many endpoints changed.
fn apply(conn: &mut DbConn, reseals: &[Reseal]) -> StoreResult<usize> {
    if reseals.is_empty() {
        return Ok(0);
    }
    conn.transaction(|conn| {
        let mut changed: Vec<&str> = Vec::new();
        for reseal in reseals {
            if compare_and_set(conn, reseal)? == 1 {
                changed.push(&reseal.id);
            }
        }
        changed.sort_unstable();
        changed.dedup();
        Ok(changed.len())
    })
}

/// `UPDATE ... SET column = new WHERE id = ... AND column = old`; returns the rows changed.
fn compare_and_set(conn: &mut DbConn, reseal: &Reseal) -> StoreResult<usize> {
    let column = reseal.column;
    let sql = format!("UPDATE endpoints SET {column} = $1 WHERE id = $2 AND {column} = $3");
    macro_rules! execute {
        ($sql:expr, $conn:expr) => {
            diesel::sql_query($sql)
                .bind::<Text, _>(&reseal.new)
                .bind::<Text, _>(&reseal.id)
                .bind::<Text, _>(&reseal.old)
                .execute($conn)?
        };
    }
    Ok(match conn {
        DbConn::Pg(pg) => execute!(sql, pg),
        DbConn::Sqlite(sqlite) => execute!(sql.replace('$', "?"), sqlite),
    })
}

#[cfg(test)]
pub(crate) mod tests;

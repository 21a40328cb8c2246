//! The layout of the board in PostgreSQL and its migrations.
//!
//! Every [`Table`] of the store is a table of the same name in the board's
//! schema (`taskboard` unless the URL says otherwise):
//!
//! ```sql
//! key     bytea PRIMARY KEY  -- the store's key, compared byte by byte
//! version smallint           -- format version of a record, NULL for raw bytes
//! record  json               -- the record, as written (json keeps the text)
//! raw     bytea              -- a value that is not a record (ids, counters, ())
//! ```
//!
//! A value is `version || record` when it is a record (a version byte
//! followed by JSON), `raw` otherwise, so the bytes read back are exactly
//! the bytes written, and `psql` shows each record as JSON beside its key.
//!
//! The events table (`seq_event`) has one more column, `xid xid8`: the id
//! of the transaction that stored the event (`pg_current_xact_id()`, the
//! column's default, kept when the row is rewritten). Snapshot reads of
//! the events see only those whose transaction is below the snapshot's
//! `xmin`, the mark under which every transaction has ended (see
//! `read` and docs/storage.md).
//!
//! Migrations are numbered and recorded in `taskboard_migrations`; they
//! run when a store opens, under an advisory lock, so several processes
//! starting at once apply each exactly once. A table added by a later
//! build needs no migration: every table of [`tables::ALL`] is created if
//! missing at each start, under the same lock, before the migrations.
//! Migrations are for changes to tables that exist.

use serde::de::IgnoredAny;

use super::conn::{Conn, pg_err};
use crate::codec::FORMAT_VERSION;
use crate::tables::{self, Table};
use taskboard_wire::error::{Error, ErrorKind};

/// The first key of the board's advisory locks (`pg_advisory_xact_lock(int, int)`);
/// the second is [`lock_id`] of the schema.
pub const LOCK_CLASS_WRITE: i32 = 0x7462_0001;
pub const LOCK_CLASS_MIGRATE: i32 = 0x7462_0002;

/// A numbered change to the schema, in SQL; `{s}` stands for the quoted
/// schema name.
struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, in order. Never edit one that has shipped: append.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "one table per store table: key, version, record json, raw bytes",
        // The tables themselves are created from `tables::ALL` just before.
        sql: "",
    },
    Migration {
        version: 2,
        name: "each event row keeps the id of the transaction that stored it",
        // The events stored before take the migration's id: committed with
        // it, so below every later reader's mark.
        sql: "ALTER TABLE {s}.seq_event ADD COLUMN IF NOT EXISTS xid xid8 NOT NULL DEFAULT pg_current_xact_id();",
    },
];

/// The newest migration this build knows.
pub fn latest_migration() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The second key of the board's advisory locks: a stable hash of the
/// schema name, so boards in different schemas of one database do not
/// wait for each other.
pub fn lock_id(schema: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in schema.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    i32::from_ne_bytes(h.to_ne_bytes())
}

/// A schema or table name quoted as an identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The qualified, quoted name of a table.
pub fn qualified(schema: &str, table: Table) -> String {
    format!("{}.{}", ident(schema), ident(table.name))
}

/// A stored value split into its columns.
pub struct Columns {
    pub version: Option<i16>,
    pub record: Option<String>,
    pub raw: Option<Vec<u8>>,
}

/// Splits a value into the columns it is stored in: a record (version
/// byte, then JSON) goes to `version` and `record`, anything else to `raw`.
pub fn split(value: &[u8]) -> Columns {
    if let Some((&v, body)) = value.split_first()
        && v == FORMAT_VERSION
        && let Ok(text) = std::str::from_utf8(body)
        && serde_json::from_str::<IgnoredAny>(text).is_ok()
    {
        return Columns { version: Some(i16::from(v)), record: Some(text.to_string()), raw: None };
    }
    Columns { version: None, record: None, raw: Some(value.to_vec()) }
}

/// Joins the columns of a row back into the value that was stored.
pub fn join(version: Option<i16>, record: Option<String>, raw: Option<Vec<u8>>) -> Result<Vec<u8>, Error> {
    match (version, record, raw) {
        (Some(v), Some(text), None) => {
            let v =
                u8::try_from(v).map_err(|_| Error::internal(format!("record version {v} out of range")))?;
            let mut out = Vec::with_capacity(text.len() + 1);
            out.push(v);
            out.extend_from_slice(text.as_bytes());
            Ok(out)
        }
        (None, None, Some(raw)) => Ok(raw),
        _ => Err(Error::internal("a stored row has neither a record nor raw bytes")),
    }
}

fn create_table(schema: &str, table: Table) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (key bytea PRIMARY KEY, version smallint, record json, raw bytea, \
         CHECK ((record IS NULL) = (raw IS NOT NULL)));\n",
        qualified(schema, table)
    )
}

/// Creates the schema, applies the migrations it lacks and creates any
/// missing table, in one transaction under the migration lock.
pub(super) fn migrate(conn: &Conn, schema: &str) -> Result<(), Error> {
    conn.wait(async {
        let encoding = conn.query("SELECT current_setting('server_encoding')", &[]).await?;
        let encoding: String = encoding.first().map(|r| r.get(0)).unwrap_or_default();
        if encoding != "UTF8" {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("the PostgreSQL database must use the UTF8 encoding (it uses {encoding})"),
            ));
        }
        let s = ident(schema);
        conn.batch(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({LOCK_CLASS_MIGRATE}, {id}); \
             CREATE SCHEMA IF NOT EXISTS {s}; \
             CREATE TABLE IF NOT EXISTS {s}.taskboard_migrations \
               (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());",
            id = lock_id(schema),
        ))
        .await?;
        let outcome = apply(conn, schema).await;
        let end = if outcome.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = conn.client.batch_execute(end).await.map_err(pg_err);
        outcome.and(ended)
    })
}

async fn apply(conn: &Conn, schema: &str) -> Result<(), Error> {
    let s = ident(schema);
    let rows = conn
        .client
        .query(&format!("SELECT coalesce(max(version), 0) FROM {s}.taskboard_migrations"), &[])
        .await
        .map_err(pg_err)?;
    let applied: i32 = rows.first().map_or(0, |r| r.get(0));
    if applied > latest_migration() {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "the database schema {schema} was migrated by a newer Taskboard (migration {applied}, this build knows {})",
                latest_migration()
            ),
        ));
    }
    // Missing tables first, so a migration may change any of them.
    let ddl: String = tables::ALL.iter().map(|&t| create_table(schema, t)).collect();
    conn.client.batch_execute(&ddl).await.map_err(pg_err)?;
    for m in MIGRATIONS.iter().filter(|m| m.version > applied) {
        if !m.sql.is_empty() {
            conn.client.batch_execute(&m.sql.replace("{s}", &s)).await.map_err(pg_err)?;
        }
        conn.client
            .execute(
                &format!("INSERT INTO {s}.taskboard_migrations (version, name) VALUES ($1, $2)"),
                &[&m.version, &m.name],
            )
            .await
            .map_err(pg_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_into_columns_and_join_back_exactly() {
        let record = crate::codec::encode(&serde_json::json!({"title": "a \"b\" é", "n": 1.5}));
        let not_json = vec![FORMAT_VERSION, b'{'];
        let other_version = vec![2, b'[', b']'];
        for value in [record.clone(), not_json, other_version, vec![], 7u64.to_be_bytes().to_vec()] {
            let c = split(&value);
            assert_eq!(join(c.version, c.record, c.raw).unwrap(), value);
        }
        assert!(split(&record).record.is_some());
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_ne!(lock_id("taskboard"), lock_id("taskboard2"));
    }
}

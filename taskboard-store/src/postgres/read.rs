//! Reads against PostgreSQL: point lookups and scans in key order, paged
//! so a scan that stops early fetches little and a long one never holds
//! a whole table in memory.
//!
//! A snapshot reads the events table only up to the mark: the events of
//! transactions whose id is below the snapshot's `xmin`, so every
//! transaction that could still add an event below the newest one read
//! has ended (docs/storage.md, "the event mark"). The writer reads it
//! whole.

use std::cell::Cell;
use std::ops::Bound;

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::conn::Conn;
use super::schema::{join, qualified};
use crate::tables::EVENTS;
use crate::{Direction, KeyRange, Scan, Table, Visitor};
use taskboard_wire::error::Error;

/// Rows fetched by the first page of a scan; each next page doubles, up
/// to [`MAX_PAGE`].
const FIRST_PAGE: i64 = 16;
const MAX_PAGE: i64 = 1024;

/// Rows of a scan: key and value.
pub(super) type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// Where reads go: a connection inside a transaction, and the statement
/// that must precede the first read (`BEGIN …` of a snapshot, `SAVEPOINT`
/// of a write operation), sent in the same round trip as that read.
pub(super) struct Reads<'c> {
    pub conn: &'c Conn,
    pub schema: &'c str,
    pub first: Cell<Option<&'static str>>,
    /// Reads of the events table stop at the snapshot's mark.
    pub marked: bool,
}

/// The condition that keeps the events of the transactions below the
/// snapshot's `xmin`: each of those has committed or aborted. A subquery,
/// so it is evaluated once per statement.
const BELOW_MARK: &str = "xid < (SELECT pg_snapshot_xmin(pg_current_snapshot()))";

/// The condition of the mark for reads of `table`, when marked.
fn mark(table: Table, marked: bool) -> Option<&'static str> {
    (marked && table == EVENTS).then_some(BELOW_MARK)
}

impl Reads<'_> {
    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
        self.conn.wait(async {
            match self.first.take() {
                Some(opening) => {
                    let (opened, rows) = tokio::join!(self.conn.batch(opening), self.conn.query(sql, params));
                    opened?;
                    rows
                }
                None => self.conn.query(sql, params).await,
            }
        })
    }

    pub fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let below = mark(table, self.marked).map(|m| format!(" AND {m}")).unwrap_or_default();
        let sql = format!(
            "SELECT version, record::text, raw FROM {} WHERE key = $1{below}",
            qualified(self.schema, table)
        );
        let rows = self.query(&sql, &[&key])?;
        match rows.first() {
            Some(row) => Ok(Some(join(row.get(0), row.get(1), row.get(2))?)),
            None => Ok(None),
        }
    }

    /// The first page of a forward scan of `range` and, in the same round
    /// trip, the first key after the range (`None`: nothing follows it).
    /// The flag says whether the page is full, so more rows may follow.
    pub fn first_page(&self, table: Table, range: &KeyRange) -> Result<(Rows, bool, Option<Vec<u8>>), Error> {
        let (sql, bounds) =
            scan_sql(self.schema, table, &range.start, &range.end, Direction::Forward, self.marked);
        let page = FIRST_PAGE;
        let mut params: Vec<&(dyn ToSql + Sync)> = bounds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
        params.push(&page);
        let name = qualified(self.schema, table);
        let probe = match &range.end {
            Bound::Unbounded => None,
            Bound::Excluded(end) => {
                Some((format!("SELECT key FROM {name} WHERE key >= $1 ORDER BY key LIMIT 1"), end))
            }
            Bound::Included(end) => {
                Some((format!("SELECT key FROM {name} WHERE key > $1 ORDER BY key LIMIT 1"), end))
            }
        };
        let (rows, next) = self.conn.wait(async {
            match &probe {
                None => (self.conn.query(&sql, &params).await, Ok(Vec::new())),
                Some((probe, end)) => {
                    let after: [&(dyn ToSql + Sync); 1] = [end];
                    tokio::join!(self.conn.query(&sql, &params), self.conn.query(probe, &after))
                }
            }
        });
        let (rows, next) = (rows?, next?);
        let full = rows.len() as i64 == page;
        let rows = rows
            .into_iter()
            .map(|row| Ok((row.get::<_, Vec<u8>>(0), join(row.get(1), row.get(2), row.get(3))?)))
            .collect::<Result<Rows, Error>>()?;
        Ok((rows, full, next.first().map(|row| row.get(0))))
    }

    pub fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        let KeyRange { mut start, mut end } = range;
        let mut page = FIRST_PAGE;
        loop {
            let (sql, bounds) = scan_sql(self.schema, table, &start, &end, direction, self.marked);
            let mut params: Vec<&(dyn ToSql + Sync)> =
                bounds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            params.push(&page);
            let rows = self.query(&sql, &params)?;
            let full = rows.len() as i64 == page;
            let mut last: Option<Vec<u8>> = None;
            for row in rows {
                let key: Vec<u8> = row.get(0);
                let value = join(row.get(1), row.get(2), row.get(3))?;
                if visit(&key, &value)? == Scan::Stop {
                    return Ok(());
                }
                last = Some(key);
            }
            match (full, last) {
                (true, Some(last)) => match direction {
                    Direction::Forward => start = Bound::Excluded(last),
                    Direction::Reverse => end = Bound::Excluded(last),
                },
                _ => return Ok(()),
            }
            page = (page * 2).min(MAX_PAGE);
        }
    }
}

/// The SQL of one page of a scan, and the bounds it takes as `$1`, `$2`;
/// the page size is the parameter after them.
fn scan_sql(
    schema: &str,
    table: Table,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
    direction: Direction,
    marked: bool,
) -> (String, Vec<Vec<u8>>) {
    let mut conditions: Vec<String> = mark(table, marked).map(String::from).into_iter().collect();
    let mut bounds = Vec::new();
    for (bound, included, excluded) in [(start, ">=", ">"), (end, "<=", "<")] {
        let op = match bound {
            Bound::Included(k) => {
                bounds.push(k.clone());
                included
            }
            Bound::Excluded(k) => {
                bounds.push(k.clone());
                excluded
            }
            Bound::Unbounded => continue,
        };
        conditions.push(format!("key {op} ${}", bounds.len()));
    }
    let filter =
        if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
    let order = match direction {
        Direction::Forward => "ASC",
        Direction::Reverse => "DESC",
    };
    let sql = format!(
        "SELECT key, version, record::text, raw FROM {}{filter} ORDER BY key {order} LIMIT ${}",
        qualified(schema, table),
        bounds.len() + 1
    );
    (sql, bounds)
}

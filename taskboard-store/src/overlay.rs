//! A write transaction over another: writes are buffered and reads see
//! them merged over the base, so a backend can run several operations in
//! one real transaction and still apply each one all-or-nothing — the
//! buffered writes of an operation that fails are simply dropped.

use std::collections::BTreeMap;

use super::tables::{self, Table};
use super::{Direction, KeyRange, ReadTxn, Scan, Visitor, WriteTxn};
use taskboard_wire::error::Error;

/// Buffered writes of one table: `None` is a deletion.
pub type TableWrites = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// The writes of one operation, to apply to the real transaction.
#[derive(Debug, Default, Clone)]
pub struct Writes(BTreeMap<usize, TableWrites>);

impl Writes {
    /// Whether the operation wrote nothing.
    pub fn is_empty(&self) -> bool {
        self.0.values().all(|t| t.is_empty())
    }

    /// The writes of one table, if any.
    pub fn table(&self, table: Table) -> Option<&TableWrites> {
        self.0.get(&table.index)
    }

    /// Adds `later`'s writes over these (a key both wrote takes `later`'s).
    pub fn merge(&mut self, later: Writes) {
        for (index, writes) in later.0 {
            self.0.entry(index).or_default().extend(writes);
        }
    }

    /// The writes table by table, each in key order.
    pub fn into_tables(self) -> impl Iterator<Item = (Table, TableWrites)> {
        self.0.into_iter().map(|(index, writes)| (tables::ALL[index], writes))
    }

    /// Applies the writes to `w`, table by table in key order.
    pub fn apply(self, w: &mut dyn WriteTxn) -> Result<(), Error> {
        for (index, writes) in self.0 {
            let table = tables::ALL[index];
            for (key, value) in writes {
                match value {
                    Some(v) => w.put(table, &key, &v)?,
                    None => w.remove(table, &key)?,
                }
            }
        }
        Ok(())
    }
}

/// Buffered writes over a base snapshot or transaction.
pub struct Overlay<'a> {
    base: &'a dyn ReadTxn,
    writes: Writes,
}

impl<'a> Overlay<'a> {
    pub fn new(base: &'a dyn ReadTxn) -> Overlay<'a> {
        Overlay { base, writes: Writes::default() }
    }

    /// The buffered writes, ending the overlay's borrow of the base.
    pub fn into_writes(self) -> Writes {
        self.writes
    }

    /// Buffers `writes` as if they were made here, without reading the
    /// base (the writes of an operation that ran over this overlay).
    pub fn absorb(&mut self, writes: Writes) {
        self.writes.merge(writes);
    }
}

impl ReadTxn for Overlay<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self.writes.0.get(&table.index).and_then(|t| t.get(key)) {
            Some(buffered) => Ok(buffered.clone()),
            None => self.base.get(table, key),
        }
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange,
        direction: Direction,
        visit: &mut Visitor<'_>,
    ) -> Result<(), Error> {
        let mut pending: Vec<(&[u8], Option<&[u8]>)> = match self.writes.0.get(&table.index) {
            Some(t) => {
                t.range::<[u8], _>(range.bounds()).map(|(k, v)| (k.as_slice(), v.as_deref())).collect()
            }
            None => Vec::new(),
        };
        if direction == Direction::Reverse {
            pending.reverse();
        }
        if pending.is_empty() {
            return self.base.scan(table, range, direction, visit);
        }
        let comes_before = |a: &[u8], b: &[u8]| match direction {
            Direction::Forward => a < b,
            Direction::Reverse => a > b,
        };
        let mut next = 0;
        let mut stopped = false;
        self.base.scan(table, range, direction, &mut |k, v| {
            while next < pending.len() && comes_before(pending[next].0, k) {
                let (pk, pv) = pending[next];
                next += 1;
                if let Some(pv) = pv
                    && visit(pk, pv)? == Scan::Stop
                {
                    stopped = true;
                    return Ok(Scan::Stop);
                }
            }
            let outcome = if next < pending.len() && pending[next].0 == k {
                let pv = pending[next].1;
                next += 1;
                match pv {
                    Some(pv) => visit(k, pv)?,
                    None => Scan::Continue,
                }
            } else {
                visit(k, v)?
            };
            stopped = outcome == Scan::Stop;
            Ok(outcome)
        })?;
        if !stopped {
            for &(pk, pv) in &pending[next..] {
                if let Some(pv) = pv
                    && visit(pk, pv)? == Scan::Stop
                {
                    break;
                }
            }
        }
        Ok(())
    }
}

impl WriteTxn for Overlay<'_> {
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), Error> {
        self.writes.0.entry(table.index).or_default().insert(key.to_vec(), Some(value.to_vec()));
        Ok(())
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<bool, Error> {
        let existed = self.get(table, key)?.is_some();
        self.writes.0.entry(table.index).or_default().insert(key.to_vec(), None);
        Ok(existed)
    }

    fn remove(&mut self, table: Table, key: &[u8]) -> Result<(), Error> {
        self.writes.0.entry(table.index).or_default().insert(key.to_vec(), None);
        Ok(())
    }
}

//! The storage conformance suite: every backend of the `Storage` trait must
//! pass it unchanged. Today that is the redb file and redb's in-memory
//! backend, and PostgreSQL (a throwaway cluster started by the test
//! process, one schema per test).
//!
//! The suite talks only to the trait: snapshots from `read`, write
//! operations through `submit`, so it checks what the board relies on.

use std::ops::Bound;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};

use taskboard_pg_scratch::Scratch;
use taskboard_store::postgres::PgStore;
use taskboard_store::redb::RedbStore;
use taskboard_store::tables::{EVENTS, LABELS, META};
use taskboard_store::{Direction, KeyRange, Output, ReadTxn, Scan, Storage, WriteOp, WriteTxn};
use taskboard_wire::{Error, ErrorKind};

/// A backend under test: how to open it, and how to open it again over
/// the same data (None for a backend that keeps nothing).
trait Backend {
    fn open(&self) -> Arc<dyn Storage>;
    fn reopen(&self, store: Arc<dyn Storage>) -> Option<Arc<dyn Storage>>;
}

struct FileBackend {
    dir: tempfile::TempDir,
}

impl FileBackend {
    fn new() -> FileBackend {
        FileBackend { dir: tempfile::tempdir().unwrap() }
    }
}

impl Backend for FileBackend {
    fn open(&self) -> Arc<dyn Storage> {
        Arc::new(RedbStore::open(&self.dir.path().join("store.redb")).unwrap())
    }
    fn reopen(&self, store: Arc<dyn Storage>) -> Option<Arc<dyn Storage>> {
        // The only handle: dropping it stops the writer and closes the file.
        assert_eq!(Arc::strong_count(&store), 1);
        drop(store);
        Some(self.open())
    }
}

struct MemoryBackend;

impl Backend for MemoryBackend {
    fn open(&self) -> Arc<dyn Storage> {
        Arc::new(RedbStore::in_memory().unwrap())
    }
    fn reopen(&self, _: Arc<dyn Storage>) -> Option<Arc<dyn Storage>> {
        None
    }
}

/// A board schema of its own in the process's throwaway PostgreSQL.
struct PostgresBackend {
    url: String,
}

impl PostgresBackend {
    fn new() -> PostgresBackend {
        PostgresBackend { url: Scratch::shared().fresh_url() }
    }
}

impl Backend for PostgresBackend {
    fn open(&self) -> Arc<dyn Storage> {
        Arc::new(PgStore::open(&self.url).unwrap())
    }
    fn reopen(&self, store: Arc<dyn Storage>) -> Option<Arc<dyn Storage>> {
        assert_eq!(Arc::strong_count(&store), 1);
        drop(store);
        Some(self.open())
    }
}

/// Submits one operation and waits until it is durable (or failed).
fn write<T: Send + 'static>(
    store: &dyn Storage,
    run: impl FnOnce(&mut dyn WriteTxn) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let rx = submit(store, run);
    rx.recv().unwrap()
}

/// Submits one operation without waiting; the receiver yields its outcome.
fn submit<T: Send + 'static>(
    store: &dyn Storage,
    run: impl FnOnce(&mut dyn WriteTxn) -> Result<T, Error> + Send + 'static,
) -> mpsc::Receiver<Result<T, Error>> {
    let (tx, rx) = mpsc::channel();
    store.submit(WriteOp {
        run: Box::new(move |w| run(w).map(|v| Box::new(v) as Output)),
        done: Box::new(move |r| {
            let _ = tx.send(r.map(|out| *out.downcast::<T>().expect("the operation's output type")));
        }),
    });
    rx
}

fn get(store: &dyn Storage, key: &[u8]) -> Option<Vec<u8>> {
    store.read().unwrap().get(LABELS, key).unwrap()
}

fn scan(r: &dyn ReadTxn, range: KeyRange, direction: Direction) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    r.scan(LABELS, range, direction, &mut |k, _| {
        keys.push(k.to_vec());
        Ok(Scan::Continue)
    })
    .unwrap();
    keys
}

fn put_all(store: &dyn Storage, keys: &[&[u8]]) {
    let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    write(store, move |w| {
        for k in &keys {
            w.put(LABELS, k, k)?;
        }
        Ok(())
    })
    .unwrap();
}

fn k(keys: &[&[u8]]) -> Vec<Vec<u8>> {
    keys.iter().map(|k| k.to_vec()).collect()
}

mod suite {
    use super::*;

    pub fn get_put_delete(b: &dyn Backend) {
        let store = b.open();
        assert_eq!(get(&*store, b"a"), None);
        write(&*store, |w| w.put(LABELS, b"a", b"1")).unwrap();
        assert_eq!(get(&*store, b"a").as_deref(), Some(&b"1"[..]));
        write(&*store, |w| w.put(LABELS, b"a", b"2")).unwrap();
        assert_eq!(get(&*store, b"a").as_deref(), Some(&b"2"[..]), "put replaces");
        assert!(write(&*store, |w| w.delete(LABELS, b"a")).unwrap(), "delete reports an existing key");
        assert!(!write(&*store, |w| w.delete(LABELS, b"a")).unwrap(), "and a missing one");
        assert_eq!(get(&*store, b"a"), None);
        // Empty values are values (index markers are stored that way).
        write(&*store, |w| w.put(LABELS, b"marker", b"")).unwrap();
        assert_eq!(get(&*store, b"marker"), Some(Vec::new()));
    }

    pub fn tables_are_separate(b: &dyn Backend) {
        let store = b.open();
        write(&*store, |w| {
            w.put(LABELS, b"k", b"labels")?;
            w.put(META, b"k", b"meta")
        })
        .unwrap();
        let r = store.read().unwrap();
        assert_eq!(r.get(LABELS, b"k").unwrap().as_deref(), Some(&b"labels"[..]));
        assert_eq!(r.get(META, b"k").unwrap().as_deref(), Some(&b"meta"[..]));
        assert_eq!(r.get(EVENTS, b"k").unwrap(), None);
    }

    pub fn scans_go_forward_and_reverse_in_byte_order(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"b", b"a", b"c\x00", b"c", b"\xff"]);
        let r = store.read().unwrap();
        let forward = scan(&*r, KeyRange::all(), Direction::Forward);
        assert_eq!(forward, k(&[b"a", b"b", b"c", b"c\x00", b"\xff"]));
        let mut reverse = scan(&*r, KeyRange::all(), Direction::Reverse);
        reverse.reverse();
        assert_eq!(reverse, forward);
    }

    pub fn scans_stop_when_asked(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"1", b"2", b"3", b"4"]);
        let r = store.read().unwrap();
        let mut seen = Vec::new();
        r.scan(LABELS, KeyRange::all(), Direction::Reverse, &mut |k, _| {
            seen.push(k.to_vec());
            Ok(if seen.len() == 2 { Scan::Stop } else { Scan::Continue })
        })
        .unwrap();
        assert_eq!(seen, k(&[b"4", b"3"]));
        // A visitor's error ends the scan and is returned as it is.
        let err = r
            .scan(LABELS, KeyRange::all(), Direction::Forward, &mut |_, _| Err(Error::conflict("stop")))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
    }

    pub fn prefix_ranges_hold_exactly_the_prefixed_keys(b: &dyn Backend) {
        let store = b.open();
        put_all(
            &*store,
            &[
                b"a",
                b"ab",
                b"ab\x00",
                b"ab\xff",
                b"ab\xff\xff",
                b"ac",
                b"b",
                b"\x01\xff",
                b"\x02",
                b"\xff\xff",
            ],
        );
        let r = store.read().unwrap();
        assert_eq!(
            scan(&*r, KeyRange::prefix(b"ab"), Direction::Forward),
            k(&[b"ab", b"ab\x00", b"ab\xff", b"ab\xff\xff"])
        );
        assert_eq!(
            scan(&*r, KeyRange::prefix(b"ab"), Direction::Reverse),
            k(&[b"ab\xff\xff", b"ab\xff", b"ab\x00", b"ab"])
        );
        // Trailing 0xff bytes in the prefix itself.
        assert_eq!(scan(&*r, KeyRange::prefix(b"\x01\xff"), Direction::Forward), k(&[b"\x01\xff"]));
        assert_eq!(scan(&*r, KeyRange::prefix(b"\xff"), Direction::Forward), k(&[b"\xff\xff"]));
        assert_eq!(scan(&*r, KeyRange::prefix(b"zz"), Direction::Forward), Vec::<Vec<u8>>::new());
        // The empty prefix is the whole table.
        assert_eq!(scan(&*r, KeyRange::prefix(b""), Direction::Forward).len(), 10);
    }

    pub fn explicit_bounds_are_honoured(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"1", b"2", b"3", b"4", b"5"]);
        let r = store.read().unwrap();
        let range = |s: Bound<&[u8]>, e: Bound<&[u8]>| KeyRange {
            start: s.map(|x| x.to_vec()),
            end: e.map(|x| x.to_vec()),
        };
        assert_eq!(
            scan(&*r, range(Bound::Included(b"2"), Bound::Excluded(b"4")), Direction::Forward),
            k(&[b"2", b"3"])
        );
        assert_eq!(
            scan(&*r, range(Bound::Excluded(b"2"), Bound::Included(b"4")), Direction::Reverse),
            k(&[b"4", b"3"])
        );
        assert_eq!(
            scan(&*r, range(Bound::Unbounded, Bound::Excluded(b"3")), Direction::Forward),
            k(&[b"1", b"2"])
        );
    }

    pub fn snapshots_do_not_see_later_writes(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"old"]);
        let snapshot = store.read().unwrap();
        write(&*store, |w| {
            w.put(LABELS, b"new", b"x")?;
            w.delete(LABELS, b"old").map(|_| ())
        })
        .unwrap();
        assert_eq!(scan(&*snapshot, KeyRange::all(), Direction::Forward), k(&[b"old"]));
        assert_eq!(snapshot.get(LABELS, b"new").unwrap(), None);
        let fresh = store.read().unwrap();
        assert_eq!(scan(&*fresh, KeyRange::all(), Direction::Forward), k(&[b"new"]));
    }

    pub fn a_transaction_reads_its_own_writes(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"a", b"c"]);
        let seen = write(&*store, |w| {
            w.put(LABELS, b"b", b"mine")?;
            w.delete(LABELS, b"a")?;
            let got = w.get(LABELS, b"b")?;
            let mut keys = Vec::new();
            w.scan(LABELS, KeyRange::all(), Direction::Forward, &mut |k, _| {
                keys.push(k.to_vec());
                Ok(Scan::Continue)
            })?;
            Ok((got, keys))
        })
        .unwrap();
        assert_eq!(seen.0.as_deref(), Some(&b"mine"[..]));
        assert_eq!(seen.1, k(&[b"b", b"c"]));
    }

    /// A scan's callback may read the store again (list_messages looks up
    /// each message an index yields), in snapshots and in transactions.
    pub fn a_scan_callback_may_read(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"a", b"b"]);
        write(&*store, |w| w.put(META, b"a", b"meta of a")).unwrap();
        let nested = |r: &dyn ReadTxn| {
            let mut seen = Vec::new();
            r.scan(LABELS, KeyRange::all(), Direction::Forward, &mut |k, _| {
                seen.push((r.get(LABELS, k)?.is_some(), r.get(META, k)?));
                let mut inner = 0;
                r.scan(LABELS, KeyRange::all(), Direction::Reverse, &mut |_, _| {
                    inner += 1;
                    Ok(Scan::Continue)
                })?;
                assert_eq!(inner, 2);
                Ok(Scan::Continue)
            })
            .unwrap();
            seen
        };
        let expected = vec![(true, Some(b"meta of a".to_vec())), (true, None)];
        assert_eq!(nested(&*store.read().unwrap()), expected);
        let in_txn = write(&*store, move |w| Ok(nested(&*w))).unwrap();
        assert_eq!(in_txn, expected);
    }

    pub fn a_failing_operation_leaves_nothing_behind(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"keep"]);
        let err = write(&*store, |w| {
            w.put(LABELS, b"partial", b"x")?;
            w.put(META, b"partial", b"x")?;
            w.delete(LABELS, b"keep")?;
            Err::<(), _>(Error::conflict("refused"))
        })
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "the operation's own error comes back");
        let r = store.read().unwrap();
        assert_eq!(scan(&*r, KeyRange::all(), Direction::Forward), k(&[b"keep"]));
        assert_eq!(r.get(META, b"partial").unwrap(), None);
    }

    pub fn a_panicking_operation_leaves_nothing_behind(b: &dyn Backend) {
        let store = b.open();
        let err = write(&*store, |w| {
            w.put(LABELS, b"partial", b"x")?;
            if w.get(LABELS, b"partial")?.is_some() {
                panic!("a bug in an operation");
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal);
        assert_eq!(get(&*store, b"partial"), None);
        // The writer survives and takes the next operation.
        write(&*store, |w| w.put(LABELS, b"after", b"x")).unwrap();
        assert!(get(&*store, b"after").is_some());
    }

    /// Operations queued together are committed in one batch, yet each is
    /// its own transaction: one failing takes nothing else with it, and
    /// they are acknowledged in submission order.
    pub fn operations_of_one_batch_are_independent(b: &dyn Backend) {
        let store = b.open();
        // Hold the writer inside a first operation until every other
        // operation is queued, so they form one batch.
        let gate = Arc::new(Barrier::new(2));
        let held = {
            let gate = gate.clone();
            submit(&*store, move |w| {
                gate.wait();
                gate.wait();
                w.put(LABELS, b"first", b"x")
            })
        };
        gate.wait();
        let (order_tx, order_rx) = mpsc::channel();
        let mut outcomes = Vec::new();
        for i in 0u8..6 {
            let order_tx = order_tx.clone();
            let (tx, rx) = mpsc::channel();
            store.submit(WriteOp {
                run: Box::new(move |w| {
                    w.put(LABELS, &[b'k', i], &[i])?;
                    if i % 3 == 1 {
                        return Err(Error::conflict(format!("op {i} refused")));
                    }
                    // Each operation sees the earlier ones of its batch.
                    let earlier = (0..i)
                        .filter(|j| j % 3 != 1)
                        .all(|j| w.get(LABELS, &[b'k', j]).map(|v| v.is_some()).unwrap_or(false));
                    Ok(Box::new(earlier) as Output)
                }),
                done: Box::new(move |r| {
                    order_tx.send(i).unwrap();
                    tx.send(r.map(|o| *o.downcast::<bool>().unwrap())).unwrap();
                }),
            });
            outcomes.push(rx);
        }
        gate.wait();
        held.recv().unwrap().unwrap();
        for (i, rx) in outcomes.into_iter().enumerate() {
            match rx.recv().unwrap() {
                Ok(saw_earlier) => {
                    assert!(i % 3 != 1, "op {i} should have failed");
                    assert!(saw_earlier, "op {i} did not see the earlier operations of its batch");
                }
                Err(e) => {
                    assert_eq!(i % 3, 1, "op {i} failed: {e}");
                    assert_eq!(e.kind(), ErrorKind::Conflict);
                }
            }
        }
        drop(order_tx);
        assert_eq!(order_rx.iter().collect::<Vec<_>>(), (0..6).collect::<Vec<_>>(), "acknowledged in order");
        let r = store.read().unwrap();
        let keys = scan(&*r, KeyRange::prefix(b"k"), Direction::Forward);
        assert_eq!(keys, k(&[b"k\x00", b"k\x02", b"k\x03", b"k\x05"]));
    }

    /// Operations queued faster than they commit each see all the ones
    /// before them, whichever batch they fall in: none of these
    /// read-modify-writes of one counter is lost.
    pub fn queued_read_modify_writes_lose_nothing(b: &dyn Backend) {
        let store = b.open();
        let pending: Vec<_> = (0..300)
            .map(|_| {
                submit(&*store, |w| {
                    let n = w.get(META, b"counter")?.map_or(0, |v| u32::from_be_bytes(v.try_into().unwrap()));
                    let mut last = None;
                    w.scan(LABELS, KeyRange::prefix(b"n"), Direction::Reverse, &mut |k, _| {
                        last = Some(k.to_vec());
                        Ok(Scan::Stop)
                    })?;
                    assert_eq!(last, n.checked_sub(1).map(|p| [&b"n"[..], &p.to_be_bytes()].concat()));
                    w.put(META, b"counter", &(n + 1).to_be_bytes())?;
                    w.put(LABELS, &[&b"n"[..], &n.to_be_bytes()].concat(), b"")?;
                    Ok(n)
                })
            })
            .collect();
        let seen: Vec<u32> = pending.into_iter().map(|rx| rx.recv().unwrap().unwrap()).collect();
        assert_eq!(seen, (0..300).collect::<Vec<_>>(), "each saw the operations submitted before it");
        let r = store.read().unwrap();
        assert_eq!(r.get(META, b"counter").unwrap(), Some(300u32.to_be_bytes().to_vec()));
        assert_eq!(scan(&*r, KeyRange::prefix(b"n"), Direction::Forward).len(), 300);
    }

    /// Whatever is acknowledged survives closing and reopening.
    pub fn acknowledged_writes_survive_a_reopen(b: &dyn Backend) {
        let store = b.open();
        let pending: Vec<_> =
            (0u32..200).map(|i| submit(&*store, move |w| w.put(LABELS, &i.to_be_bytes(), b"v"))).collect();
        for rx in pending {
            rx.recv().unwrap().unwrap();
        }
        write(&*store, |w| w.delete(LABELS, &7u32.to_be_bytes()).map(|_| ())).unwrap();
        let Some(store) = b.reopen(store) else { return };
        let r = store.read().unwrap();
        let keys = scan(&*r, KeyRange::all(), Direction::Forward);
        assert_eq!(keys.len(), 199);
        assert_eq!(r.get(LABELS, &7u32.to_be_bytes()).unwrap(), None);
        assert!(r.get(LABELS, &199u32.to_be_bytes()).unwrap().is_some());
    }

    pub fn backup_copies_a_consistent_snapshot(b: &dyn Backend) {
        let store = b.open();
        put_all(&*store, &[b"x", b"y"]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("backup.redb");
        store.backup_to(&path).unwrap();
        let copy = RedbStore::open(&path).unwrap();
        assert_eq!(scan(&*copy.read().unwrap(), KeyRange::all(), Direction::Forward), k(&[b"x", b"y"]));
    }
}

macro_rules! conformance {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            fn backend() -> Box<dyn Backend> {
                Box::new($make)
            }

            #[test]
            fn get_put_delete() {
                suite::get_put_delete(&*backend());
            }
            #[test]
            fn tables_are_separate() {
                suite::tables_are_separate(&*backend());
            }
            #[test]
            fn scans_go_forward_and_reverse_in_byte_order() {
                suite::scans_go_forward_and_reverse_in_byte_order(&*backend());
            }
            #[test]
            fn scans_stop_when_asked() {
                suite::scans_stop_when_asked(&*backend());
            }
            #[test]
            fn prefix_ranges_hold_exactly_the_prefixed_keys() {
                suite::prefix_ranges_hold_exactly_the_prefixed_keys(&*backend());
            }
            #[test]
            fn explicit_bounds_are_honoured() {
                suite::explicit_bounds_are_honoured(&*backend());
            }
            #[test]
            fn snapshots_do_not_see_later_writes() {
                suite::snapshots_do_not_see_later_writes(&*backend());
            }
            #[test]
            fn a_transaction_reads_its_own_writes() {
                suite::a_transaction_reads_its_own_writes(&*backend());
            }
            #[test]
            fn a_scan_callback_may_read() {
                suite::a_scan_callback_may_read(&*backend());
            }
            #[test]
            fn a_failing_operation_leaves_nothing_behind() {
                suite::a_failing_operation_leaves_nothing_behind(&*backend());
            }
            #[test]
            fn a_panicking_operation_leaves_nothing_behind() {
                suite::a_panicking_operation_leaves_nothing_behind(&*backend());
            }
            #[test]
            fn operations_of_one_batch_are_independent() {
                suite::operations_of_one_batch_are_independent(&*backend());
            }
            #[test]
            fn queued_read_modify_writes_lose_nothing() {
                suite::queued_read_modify_writes_lose_nothing(&*backend());
            }
            #[test]
            fn acknowledged_writes_survive_a_reopen() {
                suite::acknowledged_writes_survive_a_reopen(&*backend());
            }
            #[test]
            fn backup_copies_a_consistent_snapshot() {
                suite::backup_copies_a_consistent_snapshot(&*backend());
            }
        }
    };
}

conformance!(redb_file, FileBackend::new());
conformance!(redb_in_memory, MemoryBackend);
conformance!(postgres, PostgresBackend::new());

//! What the PostgreSQL backend adds to the storage conformance suite: the
//! tables operators read, migrations run by several stores at once, a
//! write the database refuses inside a batch, and two stores (as two
//! processes would have) writing the same keys.

use std::sync::{Arc, Barrier, mpsc};

use taskboard_pg_scratch::Scratch;
use taskboard_store::postgres::PgStore;
use taskboard_store::tables::{EVENTS, LABELS, META};
use taskboard_store::{Direction, KeyRange, Output, Scan, Storage, WriteOp, WriteTxn, codec};
use taskboard_wire::{Error, ErrorKind};

/// Runs SQL against the scratch cluster directly, as an operator would.
fn sql(query: &str) -> Vec<tokio_postgres::Row> {
    operator(query, false)
}

/// Runs several statements, answers unread.
fn sql_batch(statements: &str) {
    operator(statements, true);
}

fn operator(query: &str, batch: bool) -> Vec<tokio_postgres::Row> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let url =
            format!("postgres://postgres@localhost/postgres?host={}", Scratch::shared().dir().display());
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        if batch {
            client.batch_execute(query).await.unwrap();
            return Vec::new();
        }
        client.query(query, &[]).await.unwrap()
    })
}

fn schema_of(url: &str) -> String {
    url.rsplit_once("schema=").unwrap().1.to_string()
}

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

fn write<T: Send + 'static>(
    store: &dyn Storage,
    run: impl FnOnce(&mut dyn WriteTxn) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    submit(store, run).recv().unwrap()
}

#[test]
fn records_are_json_beside_their_key_and_other_values_raw() {
    let url = Scratch::shared().fresh_url();
    let schema = schema_of(&url);
    let store = PgStore::open(&url).unwrap();
    let record = codec::encode(&serde_json::json!({"name": "urgent", "colour": "#ff0000"}));
    write(&store, move |w| {
        w.put(LABELS, b"label-1", &record)?;
        w.put(META, b"event_seq", &7u64.to_be_bytes())
    })
    .unwrap();
    let rows = sql(&format!(
        "SELECT version, record->>'name', raw IS NULL FROM {schema}.labelid_label WHERE key = 'label-1'::bytea"
    ));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, Option<i16>>(0), Some(i16::from(codec::FORMAT_VERSION)));
    assert_eq!(rows[0].get::<_, Option<String>>(1).as_deref(), Some("urgent"));
    assert!(rows[0].get::<_, bool>(2));
    let rows = sql(&format!("SELECT version, record, raw FROM {schema}.meta WHERE key = 'event_seq'::bytea"));
    assert_eq!(rows[0].get::<_, Option<i16>>(0), None);
    assert_eq!(rows[0].get::<_, Option<Vec<u8>>>(2), Some(7u64.to_be_bytes().to_vec()));
    // What is read back is exactly what was written.
    let r = store.read().unwrap();
    assert_eq!(r.get(META, b"event_seq").unwrap(), Some(7u64.to_be_bytes().to_vec()));
    let label: serde_json::Value = codec::decode(&r.get(LABELS, b"label-1").unwrap().unwrap()).unwrap();
    assert_eq!(label["colour"], "#ff0000");
}

#[test]
fn stores_opening_at_once_migrate_the_schema_once() {
    let url = Scratch::shared().fresh_url();
    let schema = schema_of(&url);
    let gate = Arc::new(Barrier::new(4));
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let (url, gate) = (url.clone(), gate.clone());
            std::thread::spawn(move || {
                gate.wait();
                PgStore::open(&url).map(drop)
            })
        })
        .collect();
    for opener in openers {
        opener.join().unwrap().unwrap();
    }
    let rows = sql(&format!("SELECT version FROM {schema}.taskboard_migrations ORDER BY version"));
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, (1..=taskboard_store::postgres::schema::latest_migration()).collect::<Vec<_>>());
    let tables = sql(&format!(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = '{schema}' AND table_name <> 'taskboard_migrations'"
    ));
    assert_eq!(tables[0].get::<_, i64>(0), taskboard_store::tables::ALL.len() as i64);
}

/// The database refuses one operation's write (a trigger stands for any
/// refusal: a constraint, a full disk on one table): that operation fails
/// and leaves nothing, and so does a later operation of its batch that
/// read what it wrote (it decided on a write that never happened); the
/// others of the batch commit.
#[test]
fn a_write_the_database_refuses_fails_its_operation_and_those_that_read_it() {
    let url = Scratch::shared().fresh_url();
    let schema = schema_of(&url);
    let store = PgStore::open(&url).unwrap();
    sql_batch(&format!(
        "CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN IF NEW.key = 'bad'::bytea THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER refuse BEFORE INSERT ON {schema}.labelid_label FOR EACH ROW EXECUTE FUNCTION {schema}.refuse()"
    ));
    let gate = Arc::new(Barrier::new(2));
    let held = {
        let gate = gate.clone();
        submit(&store, move |w| {
            gate.wait();
            gate.wait();
            w.put(LABELS, b"first", b"x")
        })
    };
    gate.wait();
    // These three queue behind the held one, so they run in one batch.
    let bad = submit(&store, |w| {
        w.put(META, b"bad-side", b"x")?;
        w.put(LABELS, b"bad", b"x")
    });
    let reader = submit(&store, |w| {
        let seen = w.get(META, b"bad-side")?;
        w.put(LABELS, b"reader", b"x")?;
        Ok(seen)
    });
    let independent = submit(&store, |w| {
        let seen = w.get(META, b"elsewhere")?;
        w.put(LABELS, b"independent", b"x")?;
        Ok(seen)
    });
    gate.wait();
    held.recv().unwrap().unwrap();
    assert_eq!(bad.recv().unwrap().unwrap_err().kind(), ErrorKind::Internal);
    assert_eq!(reader.recv().unwrap().unwrap_err().kind(), ErrorKind::Internal, "it read the refused write");
    assert_eq!(independent.recv().unwrap().unwrap(), None);
    let r = store.read().unwrap();
    assert!(r.get(LABELS, b"first").unwrap().is_some());
    assert!(r.get(LABELS, b"independent").unwrap().is_some());
    assert_eq!(r.get(LABELS, b"reader").unwrap(), None);
    assert_eq!(r.get(LABELS, b"bad").unwrap(), None);
    assert_eq!(r.get(META, b"bad-side").unwrap(), None);
    // The next batch writes as usual.
    write(&store, |w| w.put(LABELS, b"later", b"x")).unwrap();
}

/// Reads inside one batch, which the writer answers from what the batch
/// read before where it can: each operation sees the rows of the database
/// and the writes of the operations before it in the batch, in both scan
/// directions, and nothing more.
#[test]
fn operations_of_one_batch_read_the_database_and_each_others_writes() {
    use taskboard_store::{Direction, KeyRange, Scan};
    let store = PgStore::open(&Scratch::shared().fresh_url()).unwrap();
    write(&store, |w| w.put(LABELS, b"k5", b"db")).unwrap();
    fn keys(w: &dyn WriteTxn, prefix: &[u8], direction: Direction) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        w.scan(LABELS, KeyRange::prefix(prefix), direction, &mut |k, _| {
            out.push(String::from_utf8(k.to_vec()).unwrap());
            Ok(Scan::Continue)
        })?;
        Ok(out)
    }
    let gate = Arc::new(Barrier::new(2));
    let held = {
        let gate = gate.clone();
        submit(&store, move |_| {
            gate.wait();
            gate.wait();
            Ok(())
        })
    };
    gate.wait();
    let empty = submit(&store, |w| keys(w, b"k1", Direction::Forward));
    let put = submit(&store, |w| w.put(LABELS, b"k3", b"batch"));
    let own = submit(&store, |w| keys(w, b"k3", Direction::Forward));
    let stored = submit(&store, |w| keys(w, b"k5", Direction::Forward));
    let after = submit(&store, |w| keys(w, b"k7", Direction::Forward));
    let all = submit(&store, |w| keys(w, b"k", Direction::Reverse));
    let gone = submit(&store, |w| w.delete(LABELS, b"k5"));
    let again = submit(&store, |w| Ok((keys(w, b"k", Direction::Forward)?, w.get(LABELS, b"k5")?)));
    gate.wait();
    held.recv().unwrap().unwrap();
    assert_eq!(empty.recv().unwrap().unwrap(), Vec::<String>::new());
    put.recv().unwrap().unwrap();
    assert_eq!(own.recv().unwrap().unwrap(), ["k3"]);
    assert_eq!(
        stored.recv().unwrap().unwrap(),
        ["k5"],
        "a row of the database beyond an empty range read before"
    );
    assert_eq!(after.recv().unwrap().unwrap(), Vec::<String>::new());
    assert_eq!(all.recv().unwrap().unwrap(), ["k5", "k3"]);
    assert!(gone.recv().unwrap().unwrap());
    assert_eq!(again.recv().unwrap().unwrap(), (vec!["k3".to_string()], None));
    let r = store.read().unwrap();
    assert_eq!(r.get(LABELS, b"k3").unwrap(), Some(b"batch".to_vec()));
    assert_eq!(r.get(LABELS, b"k5").unwrap(), None);
}

/// Two stores on one schema, as two server processes have: each
/// read-then-write of a counter sees the other's, so no increment is lost.
#[test]
fn two_stores_on_one_schema_lose_no_update() {
    let url = Scratch::shared().fresh_url();
    let stores: Vec<Arc<PgStore>> = (0..2).map(|_| Arc::new(PgStore::open(&url).unwrap())).collect();
    const EACH: u64 = 100;
    let pending: Vec<_> = (0..EACH)
        .flat_map(|_| stores.iter())
        .map(|store| {
            submit(&**store, |w| {
                let n = w.get(META, b"counter")?.map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap()));
                w.put(META, b"counter", &(n + 1).to_be_bytes())?;
                Ok(n + 1)
            })
        })
        .collect();
    let mut seen: Vec<u64> = pending.into_iter().map(|rx| rx.recv().unwrap().unwrap()).collect();
    seen.sort();
    assert_eq!(seen, (1..=2 * EACH).collect::<Vec<_>>(), "every increment saw every earlier one");
    let r = stores[1].read().unwrap();
    assert_eq!(r.get(META, b"counter").unwrap(), Some((2 * EACH).to_be_bytes().to_vec()));
}

/// The database ends the store's connections (a restart, a failover, an
/// operator): an operation may fail with them, never half-done, and the
/// store connects again for the next ones.
#[test]
fn a_store_connects_again_after_losing_its_connections() {
    let url = Scratch::shared().fresh_url();
    let name = schema_of(&url);
    let store = PgStore::open(&format!("{url}&application_name={name}")).unwrap();
    write(&store, |w| w.put(LABELS, b"before", b"x")).unwrap();
    drop(store.read().unwrap());
    // The listener tells when it listens.
    let mut commits = store.commits_elsewhere().expect("a store other processes share");
    wait_for_change(&mut commits);
    let ended = sql(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '{name}'"
    ));
    assert_eq!(
        ended[0].get::<_, i64>(0),
        3,
        "the writer's connection, one snapshot connection and the listener's"
    );
    // The first attempt may meet the dead connection; a failed batch
    // drops it, so the second attempt runs on a new one.
    let attempt = || write(&store, |w| w.put(LABELS, b"after", b"x"));
    if let Err(e) = attempt() {
        assert_eq!(e.kind(), ErrorKind::Internal);
        attempt().unwrap();
    }
    let read = || store.read().and_then(|r| Ok((r.get(LABELS, b"before")?, r.get(LABELS, b"after")?)));
    let (before, after) = read().or_else(|_| read()).unwrap();
    assert!(before.is_some() && after.is_some());
    // The listener listens again.
    wait_for_change(&mut commits);
}

/// Waits (a minute at most) for the listener's channel to change.
fn wait_for_change(commits: &mut tokio::sync::watch::Receiver<u64>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !commits.has_changed().unwrap() {
        assert!(std::time::Instant::now() < deadline, "the listener never listened");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    commits.borrow_and_update();
}

/// A batch that stores events notifies the board's channel with its
/// newest seq; one that stores none does not.
#[test]
fn a_batch_that_stores_events_notifies_the_listeners() {
    let url = Scratch::shared().fresh_url();
    let a = PgStore::open(&url).unwrap();
    let b = PgStore::open(&url).unwrap();
    let mut commits = b.commits_elsewhere().unwrap();
    wait_for_change(&mut commits);
    write(&a, |w| w.put(LABELS, b"no event", b"x")).unwrap();
    write(&a, |w| w.put(EVENTS, &7u64.to_be_bytes(), b"\x01{}")).unwrap();
    wait_for_change(&mut commits);
    assert_eq!(*commits.borrow(), 7, "the seq of the newest event stored");
}

/// A transaction of its own on the scratch cluster, held open across
/// statements: a writer of another process caught mid-way.
struct Held {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Held {
    fn begin() -> Held {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let client = rt.block_on(async {
            let url =
                format!("postgres://postgres@localhost/postgres?host={}", Scratch::shared().dir().display());
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client.batch_execute("BEGIN").await.unwrap();
            client
        });
        Held { rt, client }
    }

    fn run(&self, statements: &str) {
        self.rt.block_on(self.client.batch_execute(statements)).unwrap();
    }
}

/// Stores the event `seq` (its raw bytes) in the held transaction.
fn store_event(held: &Held, schema: &str, seq: u64) {
    held.run(&format!(
        "INSERT INTO {schema}.seq_event (key, raw) VALUES ('\\x{:016x}'::bytea, '\\x00'::bytea)",
        seq
    ));
}

/// The seqs of the stored events a snapshot of `store` reads.
fn seqs_read(store: &PgStore) -> Vec<u64> {
    let r = store.read().unwrap();
    let mut seqs = Vec::new();
    r.scan(EVENTS, KeyRange::all(), Direction::Forward, &mut |k, _| {
        seqs.push(u64::from_be_bytes(k.try_into().unwrap()));
        Ok(Scan::Continue)
    })
    .unwrap();
    seqs
}

/// Waits until a snapshot of `store` reads the events `expected`: a
/// writing transaction of another test on the same cluster, when tests
/// share a process, holds the mark back for a moment.
fn read_eventually(store: &PgStore, expected: &[u64]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let seqs = seqs_read(store);
        if seqs == expected || std::time::Instant::now() > deadline {
            assert_eq!(seqs, expected);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The event mark: a snapshot reads the events of transactions below its
/// `xmin` only. An event committed while an older transaction that may
/// still store a lower seq runs is not read until that one ends, and
/// what it stored is then read with it; a rolled-back one leaves its gap
/// for good. A reader that skipped the late commit would read 2 before 1.
#[test]
fn snapshots_read_no_event_above_a_transaction_still_running() {
    let url = Scratch::shared().fresh_url();
    let schema = schema_of(&url);
    let store = PgStore::open(&url).unwrap();
    // 1 is taken first (its transaction's id is the lower), 2 commits first.
    let late = Held::begin();
    store_event(&late, &schema, 1);
    let early = Held::begin();
    store_event(&early, &schema, 2);
    early.run("COMMIT");
    assert_eq!(seqs_read(&store), Vec::<u64>::new(), "2 waits for the transaction of 1");
    late.run("COMMIT");
    read_eventually(&store, &[1, 2]);

    // A transaction that rolls back leaves a gap that no later read fills.
    let aborted = Held::begin();
    store_event(&aborted, &schema, 3);
    let next = Held::begin();
    store_event(&next, &schema, 4);
    next.run("COMMIT");
    assert_eq!(seqs_read(&store), [1, 2]);
    aborted.run("ROLLBACK");
    read_eventually(&store, &[1, 2, 4]);

    // The writer and backups read the table whole: a backup holds every
    // committed event even while the mark is held back.
    let open = Held::begin();
    store_event(&open, &schema, 5);
    let committed = Held::begin();
    store_event(&committed, &schema, 6);
    committed.run("COMMIT");
    assert_eq!(seqs_read(&store), [1, 2, 4]);
    let dir = tempfile::tempdir().unwrap();
    store.backup_to(&dir.path().join("backup.redb")).unwrap();
    let copy = taskboard_store::redb::RedbStore::open(&dir.path().join("backup.redb")).unwrap();
    let r = copy.read().unwrap();
    let mut copied = Vec::new();
    r.scan(EVENTS, KeyRange::all(), Direction::Forward, &mut |k, _| {
        copied.push(u64::from_be_bytes(k.try_into().unwrap()));
        Ok(Scan::Continue)
    })
    .unwrap();
    assert_eq!(copied, [1, 2, 4, 6]);
    open.run("ROLLBACK");
}

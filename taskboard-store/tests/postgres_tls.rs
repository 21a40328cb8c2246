//! TLS to the database as the URL's `sslmode` and `sslrootcert` ask, on a
//! throwaway PostgreSQL with TLS on whose certificate (for the name
//! `localhost` only) is signed by a CA the cluster made as it started.

use std::sync::OnceLock;

use taskboard_pg_scratch::Scratch;
use taskboard_store::Storage;
use taskboard_store::postgres::PgStore;
use taskboard_store::tables::META;

fn cluster() -> &'static Scratch {
    static CLUSTER: OnceLock<Scratch> = OnceLock::new();
    CLUSTER.get_or_init(|| Scratch::start_tls().unwrap_or_else(|e| panic!("{e}")))
}

/// Whether the connections of `application` are encrypted, as the server
/// sees them (asked over the Unix socket, as an operator).
fn encrypted(application: &str) -> Vec<bool> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let url = cluster().url("public");
        let url = url.split("&schema=").next().unwrap();
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let rows = client
            .query(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
                &[&application],
            )
            .await
            .unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    })
}

/// Opens a store with `params`, writes and reads back through it.
fn open(host: &str, name: &str, params: &str) -> Result<PgStore, taskboard_wire::Error> {
    let url = cluster().tcp_url(host, name, &format!("{params}&application_name={name}"));
    let store = PgStore::open(&url)?;
    let (tx, rx) = std::sync::mpsc::channel();
    store.submit(taskboard_store::WriteOp {
        run: Box::new(|w| w.put(META, b"tls", b"yes").map(|()| Box::new(()) as _)),
        done: Box::new(move |r| tx.send(r.is_ok()).unwrap()),
    });
    assert!(rx.recv().unwrap(), "a write through the store");
    assert_eq!(store.read()?.get(META, b"tls")?, Some(b"yes".to_vec()));
    Ok(store)
}

#[test]
fn sslmode_require_encrypts_without_a_ca() {
    let _store = open("localhost", "required", "sslmode=require").unwrap();
    let seen = encrypted("required");
    assert!(!seen.is_empty() && seen.iter().all(|&ssl| ssl), "every connection encrypted: {seen:?}");
}

#[test]
fn sslmode_disable_stays_plain() {
    let _store = open("localhost", "plain", "sslmode=disable").unwrap();
    let seen = encrypted("plain");
    assert!(!seen.is_empty() && seen.iter().all(|&ssl| !ssl), "{seen:?}");
}

#[test]
fn verify_full_connects_with_the_ca_that_signed_the_server() {
    let ca = cluster().ca_cert();
    let params = format!("sslmode=verify-full&sslrootcert={}", ca.display());
    let _store = open("localhost", "full_name", &params).unwrap();
    let seen = encrypted("full_name");
    assert!(!seen.is_empty() && seen.iter().all(|&ssl| ssl), "{seen:?}");
    // The certificate does not name the address.
    let err = open("127.0.0.1", "full_address", &params).err().expect("verify-full checks the name");
    assert!(err.to_string().contains("certificate"), "{err}");
}

#[test]
fn verify_full_refuses_a_server_another_ca_signed() {
    let other = cluster().other_ca_cert();
    for mode in ["verify-full", "verify-ca", "require"] {
        let params = format!("sslmode={mode}&sslrootcert={}", other.display());
        let err = open("localhost", "wrong_ca", &params).err().unwrap_or_else(|| panic!("{mode} connected"));
        assert!(err.to_string().contains("certificate"), "{mode}: {err}");
    }
}

#[test]
fn verify_ca_accepts_a_name_the_certificate_does_not_hold() {
    // The certificate names localhost, not 127.0.0.1: the CA is checked,
    // the name is not.
    let params = format!("sslmode=verify-ca&sslrootcert={}", cluster().ca_cert().display());
    open("127.0.0.1", "ca_only", &params).unwrap();
}

#[test]
fn an_unknown_sslmode_or_a_verification_without_a_ca_is_refused_before_connecting() {
    let url = cluster().tcp_url("localhost", "bad", "sslmode=sometimes");
    let err = PgStore::open(&url).err().unwrap();
    assert!(err.to_string().contains("sslmode"), "{err}");
    let url = cluster().tcp_url("localhost", "bad", "sslmode=verify-full");
    let err = PgStore::open(&url).err().unwrap();
    assert!(err.to_string().contains("sslrootcert"), "{err}");
}

//! `--tls-cert`, `--tls-key`: HTTPS served by the server itself, and the
//! certificate read again on SIGHUP (a bad pair keeps the previous one).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{Process, server_command};

struct Pair {
    cert_pem: String,
    key_pem: String,
    der: Vec<u8>,
}

fn pair() -> Pair {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    Pair {
        cert_pem: made.cert.pem(),
        key_pem: made.signing_key.serialize_pem(),
        der: made.cert.der().to_vec(),
    }
}

/// Replaces a file whole, as an operator's renewal tool does.
fn put(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Waits until the server's log has one more line containing `what`
/// than `seen` (the SIGHUP is handled by the server in its own time).
fn await_log(server: &Process, what: &str, seen: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.log_text().matches(what).count() <= seen {
        assert!(Instant::now() < deadline, "no {what:?} in the log:\n{}", server.log_text());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The certificate a fresh TLS connection is served, through a client that
/// trusts both certificates of the test and nothing else.
async fn served(port: u16, roots: &[&Pair]) -> Vec<u8> {
    let roots = roots.iter().map(|root| reqwest::Certificate::from_pem(root.cert_pem.as_bytes()).unwrap());
    taskboard_core::tls::install_provider();
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only(roots)
        .tls_info(true)
        .pool_max_idle_per_host(0)
        .resolve("localhost", std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .build()
        .unwrap();
    let res = client.get(format!("https://localhost:{port}/ready")).send().await.expect("an HTTPS answer");
    assert_eq!(res.status(), 200);
    let info = res.extensions().get::<reqwest::tls::TlsInfo>().expect("TLS information").clone();
    info.peer_certificate().expect("a peer certificate").to_vec()
}

#[tokio::test]
async fn https_is_served_and_a_new_certificate_is_taken_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (pair(), pair());
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    put(&cert, &first.cert_pem);
    put(&key, &first.key_pem);

    let mut command = server_command();
    command.args(["--listen", "127.0.0.1:0"]).arg("--data-dir").arg(dir.path().join("data"));
    command.arg("--tls-cert").arg(&cert).arg("--tls-key").arg(&key);
    let mut server = Process::start(command, &dir.path().join("server.log"));
    let port: u16 =
        server.base.strip_prefix("https://127.0.0.1:").expect("an https address").parse().unwrap();
    let roots = [&first, &second];
    assert_eq!(served(port, &roots).await, first.der);

    // Plain HTTP on the TLS port gets no answer.
    taskboard_core::tls::install_provider();
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    assert!(plain.get(format!("http://127.0.0.1:{port}/ready")).send().await.is_err());

    // Renewed files and SIGHUP: new connections get the new certificate.
    put(&cert, &second.cert_pem);
    put(&key, &second.key_pem);
    server.signal("HUP");
    await_log(&server, "TLS certificate reloaded", 0);
    assert_eq!(served(port, &roots).await, second.der);

    // A key that does not belong to the certificate: the reload fails and
    // the certificate served stays the last good one.
    put(&cert, &first.cert_pem);
    server.signal("HUP");
    await_log(&server, "TLS reload failed", 0);
    assert!(server.log_text().contains("does not belong to the certificate"), "{}", server.log_text());
    assert_eq!(served(port, &roots).await, second.der);

    assert!(server.stop().success());
}

#[test]
fn a_key_that_does_not_fit_stops_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (pair(), pair());
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    put(&cert, &first.cert_pem);
    put(&key, &second.key_pem);
    let out = server_command()
        .args(["--listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not belong to the certificate"), "{err}");
}

//! TLS in the server itself (`--tls-cert`, `--tls-key`), for those who
//! run it without a reverse proxy; rustls with the ring provider.
//!
//! The certificate is held by a resolver that a reload swaps: on SIGHUP
//! the files are read again, and new handshakes get the new certificate
//! while connections already open keep theirs. A reload that fails
//! (a missing file, a key that does not match) keeps the previous
//! certificate and logs why.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Where the certificate chain and its private key are (PEM files).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, the server's own first.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The certificate served now.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// The server's TLS: the acceptor of new connections and the files it
/// reloads.
#[derive(Clone)]
pub(crate) struct Tls {
    files: TlsFiles,
    current: Arc<Current>,
    pub acceptor: tokio_rustls::TlsAcceptor,
}

impl Tls {
    pub fn new(files: TlsFiles) -> Result<Tls, String> {
        let current = Arc::new(Current(RwLock::new(Arc::new(load(&files)?))));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls { files, current, acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)) })
    }

    /// Reads the files again; on success new handshakes get the new
    /// certificate.
    pub fn reload(&self) -> Result<(), String> {
        let fresh = Arc::new(load(&self.files)?);
        *self.current.0.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(())
    }

    /// Reloads on every SIGHUP until `shutdown`.
    pub fn reload_on_hangup(self, shutdown: tokio_util::sync::CancellationToken) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        got = hangups.recv() => if got.is_none() { return },
                    }
                    match self.reload() {
                        Ok(()) => {
                            tracing::info!(cert = %self.files.cert.display(), "TLS certificate reloaded")
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "TLS reload failed; the previous certificate stays")
                        }
                    }
                }
            });
        }
        #[cfg(not(unix))]
        let _ = shutdown;
        Ok(())
    }
}

fn load(files: &TlsFiles) -> Result<CertifiedKey, String> {
    let shown = |p: &Path| p.display().to_string();
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| format!("TLS certificate {}: {e}", shown(&files.cert)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TLS certificate {}: {e}", shown(&files.cert)))?;
    if certs.is_empty() {
        return Err(format!("TLS certificate {}: no certificate in the file", shown(&files.cert)));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("TLS key {}: {e}", shown(&files.key)))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| format!("TLS key {}: {e}", shown(&files.key)))?;
    let certified = CertifiedKey::new(certs, signer);
    certified.keys_match().map_err(|e| {
        format!(
            "TLS key {} does not belong to the certificate {}: {e}",
            shown(&files.key),
            shown(&files.cert)
        )
    })?;
    Ok(certified)
}

//! TLS to the database, as libpq's `sslmode` and `sslrootcert` say.
//!
//! | `sslmode` | encrypted | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | when the server offers it | not checked |
//! | `require` | always | not checked, unless `sslrootcert` is given: then as `verify-ca` |
//! | `verify-ca` | always | signed by a CA of `sslrootcert` |
//! | `verify-full` | always | signed by a CA of `sslrootcert`, for the host connected to |
//!
//! As with libpq, `prefer` and `require` encrypt without authenticating
//! the server. Connections over a Unix socket are never encrypted
//! (PostgreSQL offers no TLS there). rustls does the TLS, with the ring
//! provider (the one the HTTP client of the workspace uses).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use taskboard_wire::error::{Error, ErrorKind};

/// What the URL asks of TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    pub fn parse(value: &str) -> Result<Mode, Error> {
        Ok(match value {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(Error::new(
                    ErrorKind::BadRequest,
                    format!(
                        "database URL: sslmode {other:?} is not one of disable, prefer, require, verify-ca, verify-full"
                    ),
                ));
            }
        })
    }

    /// The driver's mode: it negotiates, the verifier decides.
    pub fn driver(self) -> SslMode {
        match self {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }
}

/// The connector for `mode`; `None` for plain connections only.
pub(super) fn connector(mode: Mode, root_cert: Option<&PathBuf>) -> Result<Option<MakeRustlsConnect>, Error> {
    let bad = |why: String| Error::new(ErrorKind::BadRequest, format!("database URL: {why}"));
    if mode == Mode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match root_cert {
        Some(path) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| bad(format!("sslrootcert {}: {e}", path.display())))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(bad(format!("sslrootcert {}: no certificate in it", path.display())));
            }
            Some(Arc::new(roots))
        }
        None if matches!(mode, Mode::VerifyCa | Mode::VerifyFull) => {
            return Err(bad("sslmode=verify-ca and verify-full need sslrootcert=FILE (PEM certificates of the CAs to trust)".into()));
        }
        None => None,
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::internal(format!("TLS: {e}")))?;
    let config = match (mode, roots) {
        (Mode::VerifyFull, Some(roots)) => builder.with_root_certificates(roots),
        (_, Some(roots)) => {
            let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| bad(format!("sslrootcert: {e}")))?;
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyName(inner)))
        }
        (_, None) => builder.dangerous().with_custom_certificate_verifier(Arc::new(Unchecked(
            provider.signature_verification_algorithms,
        ))),
    }
    .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

/// `verify-ca`: the chain must lead to a trusted CA; the name may be any.
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a CA: encryption, and the handshake's
/// signatures checked against the certificate presented, which itself is
/// not checked (libpq's behaviour in these modes).
#[derive(Debug)]
struct Unchecked(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

//! Opening a connection: TLS over rustls (with ring) as the target's `sslmode` says, and a
//! failure told apart so that the user gets a hint that fits, never the password.

use std::sync::Arc;

use postgres::{Client, NoTls};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::queue::pg::error::{ConnectFailure, PgError, error_chain};
use crate::queue::pg::target::{RootCerts, SslMode, Target};

/// The longest `application_name` PostgreSQL keeps (NAMEDATALEN - 1); longer ones are cut.
const APPLICATION_NAME_MAX: usize = 63;

/// Connects to `target`, naming the connection `application_name` (cut to the 63 bytes
/// PostgreSQL keeps) unless the connection string names it.
pub fn connect(target: &Target, application_name: &str) -> Result<Client, PgError> {
    let mut config = target.config().clone();
    if config.get_application_name().is_none() {
        let mut name = application_name.to_owned();
        while name.len() > APPLICATION_NAME_MAX {
            name.pop();
        }
        config.application_name(&name);
    }
    let failed = |kind, reason| PgError::Connect {
        target: target.masked().to_owned(),
        kind,
        reason,
        code: None,
    };
    let connected = match target.ssl_mode() {
        SslMode::Disable => config.connect(NoTls),
        mode => {
            let tls = client_config(mode, target.roots())
                .map_err(|reason| failed(ConnectFailure::Tls, reason))?;
            config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
        }
    };
    connected.map_err(|e| {
        let (kind, reason) = classify(&e);
        PgError::Connect {
            target: target.masked().to_owned(),
            kind,
            reason,
            code: e.code().cloned(),
        }
    })
}

/// How long one statement of a runner's or a hub's may run before the server cancels it:
/// none of theirs takes longer on a healthy server, so one that does is waiting on something
/// that is not coming (SQLSTATE `57014`, which a hub waits out).
pub const STATEMENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// How long a runner's or hub's statement waits for a row lock another transaction holds (a
/// host's transaction left open on a task, a `queue drop`) before it gives up (`55P03`).
pub const LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The settings of the server's side of a runner's or a hub's connection to `target`: its TCP keepalives
/// (`tcp_keepalives_idle`, `_interval`, `_count`, from the connection string's `keepalives_*`
/// or hookq's defaults), so that the server ends the session of a host that vanished, and its
/// statement and lock timeouts, so that nothing waits on the server for ever. A host's own
/// connections get none of them: its transactions keep the server's settings.
pub fn session_settings(target: &Target) -> String {
    let config = target.config();
    let idle = config.get_keepalives_idle().as_secs().max(1);
    let interval = config
        .get_keepalives_interval()
        .map_or(crate::queue::pg::target::KEEPALIVES_INTERVAL, |d| d)
        .as_secs()
        .max(1);
    let count = config
        .get_keepalives_retries()
        .unwrap_or(crate::queue::pg::target::KEEPALIVES_RETRIES)
        .max(1);
    format!(
        "SET tcp_keepalives_idle = {idle}; SET tcp_keepalives_interval = {interval}; \
         SET tcp_keepalives_count = {count}; SET statement_timeout = {}; SET lock_timeout = {}",
        STATEMENT_TIMEOUT.as_millis(),
        LOCK_TIMEOUT.as_millis()
    )
}

/// Sets up the server's side of a runner's or hub's connection `client` to `target`
/// ([`session_settings`]), in one round trip.
pub fn guard_session(client: &mut Client, target: &Target) -> Result<(), PgError> {
    client.batch_execute(&session_settings(target))?;
    Ok(())
}

/// What kind of failure `e` is, and its text (the server's message, or the chain of causes).
fn classify(e: &postgres::Error) -> (ConnectFailure, String) {
    use postgres::error::SqlState;
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let kind = if code == &SqlState::INVALID_PASSWORD
            || code == &SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            ConnectFailure::Auth
        } else if code == &SqlState::INVALID_CATALOG_NAME {
            ConnectFailure::NoDatabase
        } else {
            ConnectFailure::Other
        };
        return (kind, db.message().to_owned());
    }
    let text = error_chain(e);
    // rustls's errors reach here wrapped in an I/O error: look through the whole chain.
    let mut source = std::error::Error::source(e);
    let (mut tls, mut io) = (false, false);
    while let Some(s) = source {
        tls |= s.downcast_ref::<rustls::Error>().is_some();
        io |= s.downcast_ref::<std::io::Error>().is_some();
        source = s.source();
    }
    // "error performing TLS handshake", "server does not support TLS".
    let kind = if tls || text.contains("TLS") {
        ConnectFailure::Tls
    } else if io {
        ConnectFailure::Unreachable
    } else {
        ConnectFailure::Other
    };
    (kind, text)
}

/// The rustls client config for `mode` (anything but `Disable`).
fn client_config(mode: SslMode, roots: &RootCerts) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth(),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let verifier = WebPkiServerVerifier::builder_with_provider(
                Arc::new(root_store(roots)?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| e.to_string())?;
            if mode == SslMode::VerifyFull {
                builder.with_webpki_verifier(verifier).with_no_client_auth()
            } else {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyName(verifier)))
                    .with_no_client_auth()
            }
        }
    };
    Ok(config)
}

/// The trusted CAs: the file's, or the system's.
fn root_store(roots: &RootCerts) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match roots {
        RootCerts::File(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {} holds no usable certificate",
                    path.display()
                ));
            }
        }
        RootCerts::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(
                    "no system root certificates found; name a CA file with sslrootcert".into(),
                );
            }
        }
    }
    Ok(store)
}

/// `sslmode=prefer` and `require`: encrypted, the certificate taken as it is (libpq's meaning
/// of these modes). The handshake's signatures are still checked.
#[derive(Debug)]
struct Unverified(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unverified {
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

/// `sslmode=verify-ca`: the chain must lead to a trusted CA; the name is not checked.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
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

/// Statements prepared on one connection, each once, at its first use: a statement sent for
/// every point or batch is planned once per connection rather than on every call. Keyed by the
/// SQL text, a constant of the caller's.
#[derive(Default)]
pub(crate) struct Prepared(Vec<(&'static str, postgres::Statement)>);

impl Prepared {
    /// `sql` prepared on `client`, the connection every earlier call of this cache was given.
    pub(crate) fn get(
        &mut self,
        client: &mut Client,
        sql: &'static str,
    ) -> Result<postgres::Statement, postgres::Error> {
        if let Some((_, s)) = self.0.iter().find(|(q, _)| *q == sql) {
            return Ok(s.clone());
        }
        let statement = client.prepare(sql)?;
        self.0.push((sql, statement.clone()));
        Ok(statement)
    }
}

//! The PostgreSQL back end of the results store, for many hosts writing to one
//! place: the `postgres` crate (rust-postgres, synchronous) with TLS through
//! rustls (`tokio-postgres-rustls`, ring; no system TLS library needed). It
//! only connects and runs the shared SQL of [`super::db`]; the schema version
//! is the one row of `osbench_schema`, and migrations run under an advisory
//! lock so hosts starting at once migrate once.
//!
//! The URL is libpq's (`postgresql://USER[:PASSWORD]@HOST[:PORT]/DB?...`),
//! with libpq's `sslmode` values: `disable`; `prefer` (the default) and
//! `require` encrypt without checking the server's certificate, as libpq
//! does; `verify-ca` checks it against the roots, `verify-full` the host name
//! too. Roots: `sslrootcert=FILE` (PEM), `sslrootcert=system`, else
//! `~/.postgresql/root.crt` when present, else the system's. A password not
//! in the URL comes from `PGPASSWORD`. Left out: `~/.pgpass`, client
//! certificates, `PGHOST` and the other libpq variables.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use postgres::types::{ToSql, Type};
use postgres::{Client, Statement};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::db::{Cell, Conn, Dialect, Param, Row};
use crate::error::{Error, Result};

/// How long connecting may take when the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The advisory lock key migrations hold ("osbench" in ASCII).
const MIGRATION_LOCK: i64 = 0x006f_7362_656e_6368;

/// A `postgresql://` or `postgres://` URL as given; shown without its password.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl(String);

impl PgUrl {
    /// `given` as a PostgreSQL URL, if it is one (or means to be: a
    /// misspelt `postgresql:/host` is refused when connecting, not taken for
    /// a file name).
    pub(super) fn recognise(given: &str) -> Option<Self> {
        let scheme = given.split_once(':')?.0.to_ascii_lowercase();
        matches!(scheme.as_str(), "postgresql" | "postgres").then(|| PgUrl(given.to_string()))
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redacted(&self.0))
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgUrl({self})")
    }
}

/// `url` without a password, in the user part or as a `password=` parameter.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // Not a URL the client takes; still never show what may be a password.
        return match (url.split_once(':'), url.rsplit_once('@')) {
            (Some((scheme, _)), Some((_, host))) => format!("{scheme}:…@{host}"),
            _ => url.to_string(),
        };
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{user}@{hosts}")
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|kv| !kv.to_ascii_lowercase().starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    /// Encrypted, certificate not checked (libpq's `prefer` and `require`).
    Nothing,
    /// The chain up to a trusted root (`verify-ca`).
    Chain,
    /// The chain and the host name (`verify-full`).
    Full,
}

/// The URL's TLS wishes, taken out of it (the `postgres` crate knows
/// `sslmode` only up to `require`, and no `sslrootcert`).
#[derive(Debug)]
struct TlsWish {
    verify: Verify,
    rootcert: Option<String>,
    /// The URL left for the `postgres` crate.
    url: String,
}

fn tls_wish(url: &str) -> std::result::Result<TlsWish, String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (mut verify, mut rootcert, mut kept) = (Verify::Nothing, None, Vec::new());
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        let value = percent_encoding::percent_decode_str(value)
            .decode_utf8_lossy()
            .into_owned();
        match key {
            "sslmode" => {
                let (mode, check) = match value.as_str() {
                    "disable" | "allow" | "prefer" | "require" => (value.as_str(), Verify::Nothing),
                    "verify-ca" => ("require", Verify::Chain),
                    "verify-full" => ("require", Verify::Full),
                    other => {
                        return Err(format!(
                            "sslmode={other} is not one of disable, allow, prefer, require, \
                             verify-ca, verify-full"
                        ));
                    }
                };
                verify = check;
                let mode = if mode == "allow" { "prefer" } else { mode };
                kept.push(format!("sslmode={mode}"));
            }
            "sslrootcert" => rootcert = Some(value),
            _ => kept.push(kv.to_string()),
        }
    }
    let url = match kept.is_empty() {
        true => base.to_string(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok(TlsWish {
        verify,
        rootcert,
        url,
    })
}

/// The roots a `verify-*` mode checks against.
fn roots(rootcert: Option<&str>) -> std::result::Result<RootCertStore, String> {
    let home_root = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
        .filter(|p| p.exists());
    let file = match rootcert {
        Some("system") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => home_root,
    };
    let mut store = RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> = match &file {
        Some(path) => CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect())
            .map_err(|e| format!("cannot read root certificates from {}: {e}", path.display()))?,
        None => rustls_native_certs::load_native_certs().certs,
    };
    store.add_parsable_certificates(certs);
    if store.is_empty() {
        let from = file.map_or("the system".into(), |p| p.display().to_string());
        return Err(format!(
            "no usable root certificate in {from}; give sslrootcert=FILE"
        ));
    }
    Ok(store)
}

/// The rustls configuration for `wish`.
fn tls_config(wish: &TlsWish) -> std::result::Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let verifier: Arc<dyn ServerCertVerifier> = match wish.verify {
        Verify::Nothing => Arc::new(EncryptOnly(provider)),
        Verify::Chain | Verify::Full => {
            let webpki = WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(wish.rootcert.as_deref())?),
                provider,
            )
            .build()
            .map_err(|e| e.to_string())?;
            match wish.verify {
                Verify::Chain => Arc::new(ChainOnly(webpki)),
                _ => webpki,
            }
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// libpq's `require`: any certificate is taken (the handshake's signatures
/// are still checked, so the channel is encrypted to whoever holds its key).
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// libpq's `verify-ca`: the chain must lead to a trusted root; the name in the
/// certificate need not be the host's.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
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
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// An open connection to a PostgreSQL store.
pub(super) struct PgConn {
    client: Client,
    /// Prepared statements by their shared SQL (one round trip each after the first).
    statements: HashMap<String, Statement>,
    name: String,
}

impl PgConn {
    /// Connects to `url` (see the module's notes on TLS and passwords).
    pub(super) fn connect(url: &PgUrl) -> Result<Self> {
        let name = url.to_string();
        let refuse = |message: String| Error::Store {
            path: name.clone(),
            message,
        };
        let wish = tls_wish(&url.0).map_err(&refuse)?;
        let mut config: postgres::Config = wish
            .url
            .parse()
            .map_err(|e| refuse(format!("not a usable PostgreSQL URL: {e}")))?;
        if config.get_password().is_none()
            && let Some(password) = std::env::var_os("PGPASSWORD")
        {
            config.password(password.as_encoded_bytes());
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("osbench");
        let tls = MakeRustlsConnect::new(tls_config(&wish).map_err(&refuse)?);
        let client = config.connect(tls).map_err(|e| {
            refuse(format!(
                "cannot connect: {}; check that the server is running and the user may log \
                 in (the URL, the password, pg_hba.conf), or give another --store",
                describe(&e)
            ))
        })?;
        Ok(Self {
            client,
            statements: HashMap::new(),
            name,
        })
    }

    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(st) = self.statements.get(sql) {
            return Ok(st.clone());
        }
        let st = self
            .client
            .prepare(&Dialect::Postgres.sql(sql))
            .map_err(|e| self.fail(e))?;
        self.statements.insert(sql.to_string(), st.clone());
        Ok(st)
    }

    fn fail(&self, e: postgres::Error) -> Error {
        Error::Store {
            path: self.name.clone(),
            message: describe(&e),
        }
    }
}

/// A PostgreSQL error in one line: the server's message (with its detail and
/// hint) or the client's, with its cause.
fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{}: {}", db.severity(), db.message());
        for extra in [db.detail(), db.hint()].into_iter().flatten() {
            text.push_str(&format!(" ({extra})"));
        }
        return text;
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let c_text = c.to_string();
        if !text.contains(&c_text) {
            text.push_str(&format!(": {c_text}"));
        }
        cause = c.source();
    }
    text
}

fn bind(params: &[Param]) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .iter()
        .map(|p| -> Box<dyn ToSql + Sync> {
            match p {
                Param::Int(v) => Box::new(*v),
                Param::Float(v) => Box::new(*v),
                Param::Bool(v) => Box::new(*v),
                Param::Text(v) => Box::new(v.clone()),
            }
        })
        .collect()
}

fn cells(row: &postgres::Row) -> std::result::Result<Row, postgres::Error> {
    let mut out = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let cell = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i)?.map(Cell::Int)
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(i)?
                .map(|v| Cell::Int(v.into()))
        } else if *ty == Type::FLOAT8 {
            row.try_get::<_, Option<f64>>(i)?.map(Cell::Float)
        } else if *ty == Type::BOOL {
            row.try_get::<_, Option<bool>>(i)?.map(Cell::Bool)
        } else {
            row.try_get::<_, Option<String>>(i)?.map(Cell::Text)
        };
        out.push(cell.unwrap_or(Cell::Null));
    }
    Ok(Row(out))
}

impl Conn for PgConn {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>> {
        let st = self.statement(sql)?;
        let values = bind(params);
        let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|b| b.as_ref()).collect();
        let rows = self.client.query(&st, &refs).map_err(|e| self.fail(e))?;
        rows.iter()
            .map(cells)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| self.fail(e))
    }

    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        let st = self.statement(sql)?;
        let values = bind(params);
        let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|b| b.as_ref()).collect();
        self.client.execute(&st, &refs).map_err(|e| self.fail(e))
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.client.batch_execute(sql).map_err(|e| self.fail(e))
    }

    fn begin(&mut self) -> Result<()> {
        self.batch("BEGIN")
    }

    fn lock_migrations(&mut self) -> Result<()> {
        // A session lock, taken before the migration's transaction begins: a
        // transaction begun earlier could still see the catalogue as it was
        // (PostgreSQL caches the absence of a table until then).
        self.batch(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
    }

    fn unlock_migrations(&mut self) {
        // Fails only when the connection is gone, which releases the lock too.
        let _ = self
            .client
            .batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
    }

    fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) {
        // Fails only when the connection is gone, which ends the transaction too.
        let _ = self.client.batch_execute("ROLLBACK");
    }

    fn schema_version(&mut self) -> Result<i64> {
        let exists = self.query("SELECT to_regclass('osbench_schema') IS NOT NULL", &[])?;
        if exists.first().map(|r| &r.0[..]) != Some(&[Cell::Bool(true)]) {
            return Ok(0);
        }
        let rows = self.query("SELECT max(version) FROM osbench_schema", &[])?;
        Ok(match rows.first().map(|r| &r.0[..]) {
            Some([Cell::Int(v)]) => *v,
            _ => 0,
        })
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        self.batch(
            "CREATE TABLE IF NOT EXISTS osbench_schema (version BIGINT NOT NULL);
             DELETE FROM osbench_schema;",
        )?;
        self.execute(
            "INSERT INTO osbench_schema (version) VALUES ($1)",
            &[Param::Int(version)],
        )
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        for (url, shown) in [
            ("postgresql://me:pw@h/db", "postgresql://me@h/db"),
            ("postgres://me:p@ss:w@h:5433/db", "postgres://me@h:5433/db"),
            ("postgresql://me@h/db?password=pw", "postgresql://me@h/db"),
            (
                "postgresql://h/db?sslmode=require&password=pw&x=1",
                "postgresql://h/db?sslmode=require&x=1",
            ),
            ("postgresql://h", "postgresql://h"),
            ("postgresql:me:pw@h/db", "postgresql:…@h/db"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn sslmodes_map_to_what_the_client_and_the_verifier_do() {
        let wish = |q: &str| tls_wish(&format!("postgresql://u@h/db{q}"));
        let w = wish("?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&connect_timeout=3").unwrap();
        assert_eq!(w.verify, Verify::Full);
        assert_eq!(w.rootcert.as_deref(), Some("/tmp/ca.pem"));
        assert_eq!(
            w.url,
            "postgresql://u@h/db?sslmode=require&connect_timeout=3"
        );
        assert_eq!(wish("?sslmode=verify-ca").unwrap().verify, Verify::Chain);
        let w = wish("?sslmode=allow").unwrap();
        assert_eq!(
            (w.verify, w.url.as_str()),
            (Verify::Nothing, "postgresql://u@h/db?sslmode=prefer")
        );
        assert_eq!(wish("").unwrap().url, "postgresql://u@h/db");
        let e = wish("?sslmode=always").unwrap_err();
        assert!(e.contains("sslmode=always is not one of"), "{e}");
    }

    #[test]
    fn a_missing_root_file_is_named() {
        let e = roots(Some("/nonexistent/ca.pem")).unwrap_err();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    }
}

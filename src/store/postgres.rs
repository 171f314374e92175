//! The PostgreSQL back end of the results store, for many hosts writing to one
//! place: `tokio-postgres` on a runtime of its own (one thread, the calling
//! one), with TLS through rustls (`tokio-postgres-rustls`, ring; no system TLS
//! library needed). It only connects and runs the shared SQL of
//! [`super::sql`]; the schema version is the one row of `osbench_schema`, and
//! migrations run under an advisory lock so hosts starting at once migrate once.
//!
//! The URL is libpq's (`postgresql://USER[:PASSWORD]@HOST[:PORT]/DB?...`),
//! with libpq's `sslmode` values: `disable`; `prefer` (the default) and
//! `require` encrypt without checking the server's certificate, as libpq
//! does; `verify-ca` checks it against the roots, `verify-full` the host name
//! too. Roots: `sslrootcert=FILE` (PEM, a regular file of at most
//! [`MAX_ROOT_FILE`] bytes), `sslrootcert=system`, else
//! `~/.postgresql/root.crt` when present, else the system's; a server may
//! also present one of the file's certificates itself (a self-signed one,
//! [`super::pinned`]). A password not in the URL comes from `PGPASSWORD`.
//!
//! Nothing the server does can hang osbench: the whole handshake (TCP, TLS,
//! start-up, authentication) is bounded by libpq's `connect_timeout` (default
//! [`CONNECT_TIMEOUT`]), every statement by the session's `statement_timeout`
//! (set to [`STATEMENT_TIMEOUT`] when the server has none) plus [`GRACE`],
//! and TCP keepalives and `tcp_user_timeout` notice a vanished host (the
//! URL's `keepalives*` and `tcp_user_timeout` win). A stop signal while it
//! waits ends the wait ([`crate::stop::Watch`]). A connection
//! that timed out or was interrupted is not used again. Left out:
//! `~/.pgpass`, client certificates, `PGHOST` and the other libpq variables.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::runtime::Runtime;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::pinned::Pinned;
use super::sql::{Cell, Conn, Dialect, Param, Row};
use crate::error::{Error, Result};
use crate::stop::Watch;

/// How long the handshake may take when the URL sets no `connect_timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The session's `statement_timeout` when the server sets none.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// How much longer than `statement_timeout` a statement is waited for (the
/// server's own cancellation, on its way back), before the connection is
/// given up.
pub const GRACE: Duration = Duration::from_secs(5);

/// Idle time before the first keepalive probe, the time between probes, and
/// how many go unanswered before the connection is dropped; the longest
/// transmitted data may stay unacknowledged (`tcp_user_timeout`).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 3;
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a wait looks for a stop signal.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The largest `sslrootcert` file read (a system's whole bundle is ~220 kB).
pub const MAX_ROOT_FILE: u64 = 4 << 20;

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
/// The user part ends where the client's parser ends it, at the first `@`
/// (a password may hold an unencoded `/` or `?`), or further on at the last
/// `@` before the query (a password may hold an `@` too, which the client
/// then takes for part of the host): either way no part of a password shows.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // Not a URL the client takes; still never show what may be a password.
        return match (url.split_once(':'), url.rsplit_once('@')) {
            (Some((scheme, _)), Some((_, host))) => format!("{scheme}:…@{host}"),
            _ => url.to_string(),
        };
    };
    let (user, rest) = match rest.find('@') {
        Some(first) => {
            let query = rest[first..].find('?').map_or(rest.len(), |q| first + q);
            let last = rest[..query]
                .rfind('@')
                .expect("the first @ is before the query");
            let user = rest[..first].split(':').next().unwrap_or_default();
            (format!("{user}@"), &rest[last + 1..])
        }
        None => (String::new(), rest),
    };
    let rest = match rest.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|kv| {
                    let key = kv.split('=').next().unwrap_or_default();
                    let key = percent_encoding::percent_decode_str(key).decode_utf8_lossy();
                    !key.eq_ignore_ascii_case("password")
                })
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => rest.to_string(),
    };
    format!("{scheme}://{user}{rest}")
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

/// The roots a `verify-*` mode checks against, and the certificates of the
/// roots file (none for the system's roots), which a server may present as
/// they are.
fn roots(
    rootcert: Option<&str>,
) -> std::result::Result<(RootCertStore, Vec<CertificateDer<'static>>), String> {
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
        Some(path) => CertificateDer::pem_slice_iter(&read_root_file(path)?)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| format!("cannot read root certificates from {}: {e}", path.display()))?,
        None => rustls_native_certs::load_native_certs().certs,
    };
    store.add_parsable_certificates(certs.iter().cloned());
    if store.is_empty() {
        let from = file.map_or("the system".into(), |p| p.display().to_string());
        return Err(format!(
            "no usable root certificate in {from}; give sslrootcert=FILE"
        ));
    }
    Ok((store, if file.is_some() { certs } else { Vec::new() }))
}

/// The bytes of a roots file: a regular file of at most [`MAX_ROOT_FILE`]
/// bytes (opened without blocking, so a FIFO is refused, not waited on).
fn read_root_file(path: &Path) -> std::result::Result<Vec<u8>, String> {
    let cannot = |why: String| {
        format!(
            "cannot read root certificates from {}: {why}",
            path.display()
        )
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| cannot(e.to_string()))?;
    let meta = file.metadata().map_err(|e| cannot(e.to_string()))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(cannot(format!(
            "it is {what}; sslrootcert names a PEM file of certificates"
        )));
    }
    let too_big = || {
        cannot(format!(
            "it is larger than {} MiB, which no set of root certificates is; give the PEM file of the server's CA",
            MAX_ROOT_FILE >> 20
        ))
    };
    if meta.len() > MAX_ROOT_FILE {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_ROOT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(e.to_string()))?;
    if bytes.len() as u64 > MAX_ROOT_FILE {
        return Err(too_big());
    }
    Ok(bytes)
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
            let (roots, certs) = roots(wish.rootcert.as_deref())?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| e.to_string())?;
            let inner: Arc<dyn ServerCertVerifier> = match wish.verify {
                Verify::Chain => Arc::new(ChainOnly(webpki)),
                _ => webpki,
            };
            Arc::new(Pinned {
                inner,
                certs,
                check_name: wish.verify == Verify::Full,
            })
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
    /// Drives the connection while a statement waits (and closes it when dropped).
    runtime: Runtime,
    client: Client,
    /// Prepared statements by their shared SQL (one round trip each after the first).
    statements: HashMap<String, Statement>,
    name: String,
    /// The longest a statement is waited for.
    patience: Duration,
    /// Stop signals from the moment of connecting end every wait.
    watch: Watch,
    /// Why the connection is not used any more (a wait timed out or was interrupted).
    lost: std::cell::Cell<Option<Lost>>,
}

/// Why a wait ended without the server's answer.
#[derive(Debug, Clone, Copy)]
enum Lost {
    /// No answer within this long.
    Silent(Duration, &'static str),
    Interrupted,
}

/// How a wait ended, when not with the answer.
enum Waited {
    Failed(tokio_postgres::Error),
    Lost(Lost),
}

/// Runs `work` on `runtime`, for at most `limit` (`why` says where that
/// limit comes from) and until a stop signal comes after `watch` was taken.
fn wait<T>(
    runtime: &Runtime,
    watch: &Watch,
    limit: Duration,
    why: &'static str,
    work: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> std::result::Result<T, Waited> {
    runtime.block_on(async {
        let mut work = pin!(work);
        let mut deadline = pin!(tokio::time::sleep(limit));
        let mut tick = tokio::time::interval(SIGNAL_POLL);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(done) = work.as_mut().poll(cx) {
                return Poll::Ready(done.map_err(Waited::Failed));
            }
            if watch.signalled() {
                return Poll::Ready(Err(Waited::Lost(Lost::Interrupted)));
            }
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(Waited::Lost(Lost::Silent(limit, why))));
            }
            while tick.poll_tick(cx).is_ready() {}
            Poll::Pending
        })
        .await
    })
}

/// Whether the URL's query sets `key` (then its value is the user's, not ours).
fn sets(url: &str, key: &str) -> bool {
    url.split_once('?')
        .is_some_and(|(_, query)| query.split('&').any(|kv| kv.split('=').next() == Some(key)))
}

/// "10 s", "1.5 s".
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

impl PgConn {
    /// Connects to `url` (see the module's notes on TLS, passwords and time limits).
    pub(super) fn connect(url: &PgUrl) -> Result<Self> {
        let watch = Watch::new();
        let name = url.to_string();
        let refuse = |message: String| Error::Store {
            path: name.clone(),
            message,
        };
        let wish = tls_wish(&url.0).map_err(&refuse)?;
        let mut config: tokio_postgres::Config = wish
            .url
            .parse()
            .map_err(|e| refuse(format!("not a usable PostgreSQL URL: {e}")))?;
        if config.get_password().is_none()
            && let Some(password) = std::env::var_os("PGPASSWORD")
        {
            config.password(password.as_encoded_bytes());
        }
        let connect_timeout = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
        config.connect_timeout(connect_timeout);
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        if !sets(&wish.url, "keepalives_idle") {
            config.keepalives_idle(KEEPALIVE_IDLE);
        }
        if !sets(&wish.url, "keepalives_interval") {
            config.keepalives_interval(KEEPALIVE_INTERVAL);
        }
        if !sets(&wish.url, "keepalives_retries") {
            config.keepalives_retries(KEEPALIVE_RETRIES);
        }
        config.application_name("osbench");
        let tls = MakeRustlsConnect::new(tls_config(&wish).map_err(&refuse)?);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| refuse(format!("cannot start the client: {e}")))?;
        // libpq's connect_timeout holds for each host tried.
        let handshake = connect_timeout * config.get_hosts().len().max(1) as u32;
        let cannot_connect = |waited: Waited| match waited {
            Waited::Failed(e) if describe(&e).contains("CaUsedAsEndEntity") => refuse(format!(
                "cannot connect: {}: the server's certificate is a CA's (self-signed?) and not \
                 one in sslrootcert; give that very certificate as sslrootcert, have a CA sign \
                 the server's, or use sslmode=require",
                describe(&e)
            )),
            Waited::Failed(e) => refuse(format!(
                "cannot connect: {}; check that the server is running and the user may log \
                 in (the URL, the password, pg_hba.conf), or give another --store",
                describe(&e)
            )),
            Waited::Lost(lost) => lost_error(&name, &lost),
        };
        let (client, connection) = wait(
            &runtime,
            &watch,
            handshake,
            "connect_timeout",
            config.connect(tls),
        )
        .map_err(cannot_connect)?;
        // Driven while a statement waits; ends when the client goes.
        runtime.spawn(connection);
        let mut conn = Self {
            runtime,
            client,
            statements: HashMap::new(),
            name,
            patience: handshake,
            watch,
            lost: std::cell::Cell::new(None),
        };
        conn.patience = conn.bound_statements()? + GRACE;
        Ok(conn)
    }

    /// Sets the session's `statement_timeout` when the server has none;
    /// returns the one in force.
    fn bound_statements(&mut self) -> Result<Duration> {
        let rows = self.query(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'statement_timeout'",
            &[],
        )?;
        match rows.first().map(|r| &r.0[..]) {
            Some([Cell::Int(ms)]) if *ms > 0 => Ok(Duration::from_millis(*ms as u64)),
            _ => {
                self.batch(&format!(
                    "SET statement_timeout = {}",
                    STATEMENT_TIMEOUT.as_millis()
                ))?;
                Ok(STATEMENT_TIMEOUT)
            }
        }
    }

    /// Waits for `work` (a statement on this connection) within the
    /// statement time limit; a connection given up once stays given up.
    fn wait<T>(
        &self,
        work: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> Result<T> {
        if let Some(lost) = self.lost.get() {
            return Err(lost_error(&self.name, &lost));
        }
        let why = "statement_timeout and the grace after it";
        match wait(&self.runtime, &self.watch, self.patience, why, work) {
            Ok(value) => Ok(value),
            Err(Waited::Failed(e)) => Err(self.fail(e)),
            Err(Waited::Lost(lost)) => {
                self.lost.set(Some(lost));
                Err(lost_error(&self.name, &lost))
            }
        }
    }

    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(st) = self.statements.get(sql) {
            return Ok(st.clone());
        }
        let st = self.wait(self.client.prepare(&Dialect::Postgres.sql(sql)))?;
        self.statements.insert(sql.to_string(), st.clone());
        Ok(st)
    }

    fn fail(&self, e: tokio_postgres::Error) -> Error {
        Error::Store {
            path: self.name.clone(),
            message: describe(&e),
        }
    }
}

/// The error for a wait that ended without an answer.
fn lost_error(name: &str, lost: &Lost) -> Error {
    match lost {
        Lost::Interrupted => Error::Interrupted,
        Lost::Silent(limit, why) => Error::Store {
            path: name.to_string(),
            message: format!(
                "the server did not answer within {} ({why}); check that it is running and \
                 not stopped or overloaded, or give another --store",
                seconds(*limit)
            ),
        },
    }
}

/// A PostgreSQL error in one line: the server's message (with its detail and
/// hint) or the client's, with its cause.
fn describe(e: &tokio_postgres::Error) -> String {
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

fn cells(row: &tokio_postgres::Row) -> std::result::Result<Row, tokio_postgres::Error> {
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
        let rows = self.wait(self.client.query(&st, &refs))?;
        rows.iter()
            .map(cells)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| self.fail(e))
    }

    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        let st = self.statement(sql)?;
        let values = bind(params);
        let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|b| b.as_ref()).collect();
        self.wait(self.client.execute(&st, &refs))
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.wait(self.client.batch_execute(sql))
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
        // Fails only when the connection is gone (or given up), which
        // releases the lock too.
        let _ = self.batch(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
    }

    fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) {
        // Fails only when the connection is gone (or given up), which ends
        // the transaction too.
        let _ = self.batch("ROLLBACK");
    }

    fn schema_version(&mut self) -> Result<i64> {
        // A table of that name osbench did not make is refused, never taken over.
        let columns = self.query(
            "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
             WHERE attrelid = to_regclass('osbench_schema') AND attnum > 0 AND NOT attisdropped
             ORDER BY attnum",
            &[],
        )?;
        if columns.is_empty() {
            return Ok(0);
        }
        let ours = matches!(&columns[..], [Row(c)] if c[..] == [Cell::Text("version".into()), Cell::Text("bigint".into())]);
        let rows = match ours {
            true => self.query("SELECT count(*), max(version) FROM osbench_schema", &[])?,
            false => Vec::new(),
        };
        match rows.first().map(|r| &r.0[..]) {
            Some([Cell::Int(1), Cell::Int(version)]) => Ok(*version),
            _ => {
                let shape: Vec<String> = columns
                    .iter()
                    .map(|r| match &r.0[..] {
                        [Cell::Text(name), Cell::Text(ty)] => format!("{name} {ty}"),
                        _ => "?".into(),
                    })
                    .collect();
                Err(Error::Store {
                    path: self.name.clone(),
                    message: format!(
                        "its table osbench_schema ({}) is not osbench's (one BIGINT column \
                         `version`, one row), so this database holds something else; osbench \
                         leaves it alone: give another database, or another schema \
                         (?options=-csearch_path%3DNAME)",
                        shape.join(", ")
                    ),
                })
            }
        }
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        // Updated in place: the table holds one row, osbench's own.
        self.batch("CREATE TABLE IF NOT EXISTS osbench_schema (version BIGINT NOT NULL)")?;
        let updated = self.execute(
            "UPDATE osbench_schema SET version = $1",
            &[Param::Int(version)],
        )?;
        if updated == 0 {
            self.execute(
                "INSERT INTO osbench_schema (version) VALUES ($1)",
                &[Param::Int(version)],
            )?;
        }
        Ok(())
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
            // Unencoded `/`, `?` and `@` in a password (base64 has `/` and `+`).
            (
                "postgresql://user:ab/cd+ef@127.0.0.1:5432/db",
                "postgresql://user@127.0.0.1:5432/db",
            ),
            (
                "postgresql://r:a/b?c+d@h:1/db?sslmode=require",
                "postgresql://r@h:1/db?sslmode=require",
            ),
            ("postgresql://r:a?b@c/d@h/db", "postgresql://r@h/db"),
            (
                "postgresql://u:pw@h/db?application_name=a@b",
                "postgresql://u@h/db?application_name=a@b",
            ),
            ("postgresql://h/db?pass%77ord=pw", "postgresql://h/db"),
            ("postgresql://h/db?PASSWORD=pw&x=1", "postgresql://h/db?x=1"),
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

    #[test]
    fn a_root_file_that_is_no_file_or_too_big_is_refused_at_once() {
        let e = roots(Some("/dev/zero")).unwrap_err();
        assert!(e.contains("/dev/zero: it is a device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = roots(dir.path().to_str()).unwrap_err();
        assert!(e.contains("it is a directory"), "{e}");
        // A FIFO nobody writes to: refused, not waited on.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = roots(fifo.to_str()).unwrap_err();
        assert!(e.contains("it is a FIFO"), "{e}");
        // A sparse file past the limit is refused without being read.
        let big = dir.path().join("big.pem");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_ROOT_FILE + 1)
            .unwrap();
        let e = roots(big.to_str()).unwrap_err();
        assert!(e.contains("larger than 4 MiB"), "{e}");
    }

    #[test]
    fn silence_and_signals_are_told_apart() {
        let e = lost_error(
            "pg",
            &Lost::Silent(Duration::from_millis(1500), "connect_timeout"),
        );
        assert!(
            e.to_string()
                .contains("did not answer within 1.5 s (connect_timeout)"),
            "{e}"
        );
        assert!(matches!(
            lost_error("pg", &Lost::Interrupted),
            Error::Interrupted
        ));
    }
}

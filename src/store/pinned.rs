//! A PostgreSQL server's certificate trusted because it *is* one of the
//! certificates in `sslrootcert`: a self-signed server certificate, made by
//! the PostgreSQL documentation's own recipe (`openssl req -new -x509 …
//! -subj /CN=HOST`), which libpq and `psql` accept under `verify-ca` and
//! `verify-full`. webpki refuses it (a CA certificate used as the server's,
//! `CaUsedAsEndEntity`), so [`Pinned`] wraps the usual verifier and, when it
//! refuses a certificate byte-identical to one in the file, checks what
//! still applies: the validity period and, under `verify-full`, the host
//! name (the subject alternative names, else the common name when there are
//! none, as libpq does). The handshake's signatures are checked by the inner
//! verifier as always, so the server holds the certificate's key.
//!
//! Left out: revocation (libpq checks it only with `sslcrl`). The DER reading
//! here takes only the validity and the subject's common name from the
//! to-be-signed part of an X.509 certificate (RFC 5280 §4.1).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// The usual verifier, and the certificates of `sslrootcert` that a server
/// may present as they are.
#[derive(Debug)]
pub(super) struct Pinned {
    pub(super) inner: Arc<dyn ServerCertVerifier>,
    pub(super) certs: Vec<CertificateDer<'static>>,
    /// `verify-full`: the host name must match too.
    pub(super) check_name: bool,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let refused =
            match self
                .inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Ok(verified) => return Ok(verified),
                Err(e) => e,
            };
        if !self.certs.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            return Err(refused);
        }
        let facts = Facts::read(end_entity.as_ref()).ok_or(rustls::Error::InvalidCertificate(
            CertificateError::BadEncoding,
        ))?;
        let now = now.as_secs() as i64;
        if now < facts.not_before {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet,
            ));
        }
        if now > facts.not_after {
            return Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
        }
        if self.check_name {
            let parsed = ParsedCertificate::try_from(end_entity)?;
            if let Err(e) = rustls::client::verify_server_name(&parsed, server_name) {
                let by_common_name = !facts.has_alt_names
                    && facts
                        .common_name
                        .as_deref()
                        .is_some_and(|cn| cn.eq_ignore_ascii_case(&server_name.to_str()));
                if !by_common_name {
                    return Err(e);
                }
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// What [`Pinned`] checks in a certificate.
#[derive(Debug, PartialEq)]
struct Facts {
    /// Seconds since the Unix epoch.
    not_before: i64,
    not_after: i64,
    common_name: Option<String>,
    /// Whether it has a subject alternative name extension.
    has_alt_names: bool,
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// The context tags of the to-be-signed part: [0] version, [3] extensions.
const VERSION: u8 = 0xa0;
const EXTENSIONS: u8 = 0xa3;
/// id-at-commonName (2.5.4.3) and id-ce-subjectAltName (2.5.29.17), encoded.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
const ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// One DER element: its tag, its contents and what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |len, b| (len << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The elements of a constructed element's contents, in order.
fn elements(mut der: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (tag, contents, rest) = element(der)?;
        der = rest;
        Some((tag, contents))
    })
}

impl Facts {
    fn read(cert: &[u8]) -> Option<Self> {
        let (SEQUENCE, certificate, _) = element(cert)? else {
            return None;
        };
        let (SEQUENCE, tbs, _) = element(certificate)? else {
            return None;
        };
        let mut fields = elements(tbs).peekable();
        fields.next_if(|(tag, _)| *tag == VERSION);
        let _serial = fields.next()?;
        let _signature = fields.next()?;
        let _issuer = fields.next()?;
        let (SEQUENCE, validity) = fields.next()? else {
            return None;
        };
        let (SEQUENCE, subject) = fields.next()? else {
            return None;
        };
        let mut times = elements(validity).map(|(tag, text)| time(tag, text));
        let (not_before, not_after) = (times.next()??, times.next()??);
        let common_name = elements(subject)
            .filter(|(tag, _)| *tag == SET)
            .flat_map(|(_, set)| elements(set))
            .find_map(|(_, pair)| {
                let mut parts = elements(pair);
                match (parts.next()?, parts.next()?) {
                    ((OID, COMMON_NAME), (_, value)) => {
                        Some(String::from_utf8_lossy(value).into_owned())
                    }
                    _ => None,
                }
            });
        let has_alt_names = fields
            .find(|(tag, _)| *tag == EXTENSIONS)
            .and_then(|(_, wrapped)| element(wrapped))
            .is_some_and(|(_, list, _)| {
                elements(list).any(|(_, ext)| {
                    elements(ext)
                        .next()
                        .is_some_and(|(tag, id)| tag == OID && id == ALT_NAME)
                })
            });
        Some(Facts {
            not_before,
            not_after,
            common_name,
            has_alt_names,
        })
    }
}

/// A certificate's UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or
/// GeneralizedTime (`YYYYMMDDHHMMSSZ`) as seconds since the Unix epoch.
fn time(tag: u8, text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        UTC_TIME if text.len() == 12 => {
            let yy: i64 = text[..2].parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        GENERALIZED_TIME if text.len() == 14 => (text[..4].parse().ok()?, &text[4..]),
        _ => return None,
    };
    if !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |i: usize| rest[i..i + 2].parse::<i64>().ok();
    let (month, day) = (field(0)?, field(2)?);
    let (hour, minute, second) = (field(4)?, field(6)?, field(8)?);
    Some(
        crate::document::days_from_civil(year, month, day) * 86_400
            + hour * 3600
            + minute * 60
            + second,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_times_are_read_as_seconds_since_the_epoch() {
        assert_eq!(time(UTC_TIME, b"700101000000Z"), Some(0));
        // 2026-12-01T19:30:00Z, both spellings.
        assert_eq!(time(UTC_TIME, b"261201193000Z"), Some(1_796_153_400));
        assert_eq!(
            time(GENERALIZED_TIME, b"20261201193000Z"),
            Some(1_796_153_400)
        );
        assert_eq!(time(UTC_TIME, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(time(UTC_TIME, b"261201193000"), None, "no Z");
        assert_eq!(time(OID, b"261201193000Z"), None);
    }

    #[test]
    fn a_truncated_certificate_is_not_read() {
        assert_eq!(Facts::read(&[SEQUENCE, 0x82, 0x01]), None);
        assert_eq!(Facts::read(&[]), None);
    }
}

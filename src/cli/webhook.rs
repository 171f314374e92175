//! `--webhook URL`: posts a report as `{"text": …}`, the body Slack's and
//! Mattermost's incoming webhooks take, with one HTTP/1.1 request over
//! plain TCP (`http://`) or TLS (`https://`, rustls with the system's root
//! certificates). Left out: proxies, redirects, retries, authentication other
//! than what the URL's path carries (as those webhooks do).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

/// How long the whole post may take: connecting, sending and reading the
/// answer together (a server trickling its answer a byte at a time is cut
/// off here, not after each read).
const TIMEOUT: Duration = Duration::from_secs(20);

/// The parts of a webhook URL.
struct Target {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

fn parse(url: &str) -> anyhow::Result<Target> {
    // Its path and host are written into the request's lines: a CR or LF
    // would add headers (or a request) of the URL's choosing.
    if url.contains(|c: char| c.is_control() || c.is_whitespace()) {
        bail!(
            "'{}' has a control character or a space (CR, LF, tab…), which would end the \
             request's line; percent-encode it (%0D, %20)",
            shown(url)
        );
    }
    let shown_url = shown(url);
    let url_for_errors = shown_url.as_str();
    let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        bail!("'{url_for_errors}' is not an http:// or https:// URL");
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        bail!(
            "'{url_for_errors}' names a user (user names and passwords in the URL are not \
             supported: the webhook's path carries its token)"
        );
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>().map_err(|_| {
                anyhow!("'{url_for_errors}': what follows the host's ':' is not a port")
            })?,
        ),
        None => (authority, if tls { 443 } else { 80 }),
    };
    if host.is_empty() || host.contains('@') {
        bail!("'{url_for_errors}' names no host (user names in the URL are not supported)");
    }
    Ok(Target {
        tls,
        host: host.to_string(),
        port,
        path: if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
    })
}

/// `url` as messages show it: secrets masked, control characters escaped.
fn shown(url: &str) -> String {
    osbench::text::mask_secrets(&osbench::text::printable(url)).into_owned()
}

/// `url` as the command line gives it, refused at once when it is no webhook URL.
pub fn parse_url(url: &str) -> Result<String, String> {
    parse(url)
        .map(|_| url.to_string())
        .map_err(|e| e.to_string())
}

/// Posts `{"text": text}` to `url`; an error unless the answer is 2xx.
pub fn post_text(url: &str, text: &str) -> anyhow::Result<()> {
    post_within(url, text, TIMEOUT)
}

/// [`post_text`], the whole post within `limit`.
fn post_within(url: &str, text: &str, limit: Duration) -> anyhow::Result<()> {
    let until = Instant::now() + limit;
    let target = parse(url)?;
    let body = serde_json::json!({ "text": text }).to_string();
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: osbench/{}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        target.path,
        target.host,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    let addr = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {}", target.host))?
        .next()
        .ok_or_else(|| anyhow!("{} has no address", target.host))?;
    let tcp = TcpStream::connect_timeout(&addr, limit)
        .with_context(|| format!("cannot connect to {}:{}", target.host, target.port))?;
    let tcp = Deadline { tcp, until, limit };
    let answer = if target.tls {
        exchange(tls_stream(&target.host, tcp)?, &request)?
    } else {
        exchange(tcp, &request)?
    };
    let status_line = answer.lines().next().unwrap_or_default();
    let code: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("the answer is not HTTP ('{}')", shown(status_line)))?;
    if !(200..300).contains(&code) {
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default().trim();
        let body: String = body.chars().take(200).collect();
        let body = shown(&body);
        bail!(
            "the webhook answered {}{}",
            shown(status_line),
            if body.is_empty() {
                String::new()
            } else {
                format!(": {body}")
            }
        );
    }
    Ok(())
}

/// Sends `request` and reads the whole answer (the server closes the connection).
fn exchange(mut stream: impl Read + Write, request: &str) -> anyhow::Result<String> {
    stream
        .write_all(request.as_bytes())
        .context("sending the request")?;
    stream.flush()?;
    let mut answer = Vec::new();
    // A TLS peer that closes without close_notify still sent its answer.
    match stream.take(1 << 20).read_to_end(&mut answer) {
        Ok(_) => {}
        Err(e) if !answer.is_empty() && e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(e).context("reading the answer"),
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// A connection that refuses to read or write past `until`: each read and
/// write may wait only for what is left of the post's time.
struct Deadline {
    tcp: TcpStream,
    until: Instant,
    /// The whole post's limit, for the message.
    limit: Duration,
}

impl Deadline {
    /// What is left of the post's time, or the error that it is over.
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the webhook did not take the post and answer within {} s in all",
                    self.limit.as_secs()
                ),
            ));
        }
        Ok(left)
    }
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.tcp.set_read_timeout(Some(left))?;
        match self.tcp.read(buf) {
            // A read timed out: the post's time is over.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                self.left().and(Err(e))
            }
            read => read,
        }
    }
}

impl Write for Deadline {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.tcp.set_write_timeout(Some(left))?;
        self.tcp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

fn tls_stream(
    host: &str,
    tcp: Deadline,
) -> anyhow::Result<rustls::StreamOwned<rustls::ClientConnection, Deadline>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| anyhow!("'{host}' is not a TLS server name: {e}"))?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name)?;
    Ok(rustls::StreamOwned::new(conn, tcp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn urls_that_would_inject_headers_are_refused_without_their_secrets() {
        let e = parse_url("http://127.0.0.1:9/x\r\nX-Injected: 1").unwrap_err();
        assert!(e.contains("control character") && !e.contains('\r'), "{e}");
        let e =
            parse_url("https://bob:hunter2@hooks.example.com/services/T1/B2/sekrit").unwrap_err();
        assert!(e.contains("names a user") && !e.contains("hunter2"), "{e}");
        let e = parse_url("ftp://hooks.example.com/services/T1/B2/sekrit").unwrap_err();
        assert!(
            !e.contains("sekrit") && e.contains("/services/T1/B2/***"),
            "{e}"
        );
        assert!(parse_url("https://hooks.example.com/services/T1/B2/x?a=%0D").is_ok());
    }

    /// A server that answers one byte every 200 ms, for ever (as long as
    /// the client listens): each read gets a byte well within any per-read
    /// limit, so only a deadline for the whole post ends it.
    #[test]
    fn a_trickling_server_is_cut_off_at_the_whole_posts_limit() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let _ = conn.read(&mut request);
            for byte in b"HTTP/1.1 200 OK\r\n".iter().cycle() {
                if conn.write_all(&[*byte]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let started = Instant::now();
        let url = format!("http://127.0.0.1:{port}/hook");
        let e = post_within(&url, "hello", Duration::from_millis(1500)).unwrap_err();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(4), "took {took:?}");
        assert!(format!("{e:#}").contains("within 1 s in all"), "{e:#}");
        server.join().unwrap();
    }
}

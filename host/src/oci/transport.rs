//! One HTTP exchange with a registry over the project's own stack: a TCP connection,
//! TLS by rustls with the `ring` provider and the system's roots (HTTPS by default),
//! hyper's HTTP/1.1 client, a bounded body. A registry call makes a few requests, so
//! each gets its own connection; nothing is pooled.

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;

/// How long connecting (TCP and TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may take, body included (a large component on a slow link).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransportError {
    /// Nothing answered at the address: the registry is down, or the address is wrong.
    #[error("cannot reach {address}: {reason}")]
    Unreachable {
        /// `host:port` dialled.
        address: String,
        /// What the system said.
        reason: String,
    },
    /// The answer's body is longer than the caller's bound; the rest was not read.
    #[error("the answer is longer than the {limit} bytes expected of it (the rest was not read)")]
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// A connection was made but the exchange failed (TLS, HTTP).
    #[error("{0:#}")]
    Failed(anyhow::Error),
}

impl TransportError {
    /// Whether `e` (or what it wraps) is a body over its bound.
    pub(crate) fn is_too_large(e: &anyhow::Error) -> bool {
        e.chain().any(|c| {
            matches!(
                c.downcast_ref::<TransportError>(),
                Some(TransportError::TooLarge { .. })
            )
        })
    }
}

/// Sends `request` to `scheme://authority` and reads the answer's body (at most `limit`
/// bytes). The request's URI is the path and query; the Host header is set here.
pub(crate) async fn send(
    plain_http: bool,
    authority: &str,
    mut request: Request<Full<Bytes>>,
    limit: usize,
) -> Result<Response<Bytes>, TransportError> {
    let (host, port) = split_authority(authority, if plain_http { 80 } else { 443 });
    request.headers_mut().insert(
        hyper::header::HOST,
        authority
            .parse()
            .map_err(|_| TransportError::Failed(anyhow!("{authority:?} is not a host name")))?,
    );
    let address = format!("{host}:{port}");
    let dial = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((dial.as_str(), port)))
        .await
    {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => {
            return Err(TransportError::Unreachable {
                address,
                reason: e.to_string(),
            })
        }
        Err(_) => {
            return Err(TransportError::Unreachable {
                address,
                reason: format!("no answer within {}s", CONNECT_TIMEOUT.as_secs()),
            })
        }
    };
    let exchange = async {
        if plain_http {
            exchange(tcp, request, limit).await
        } else {
            let name = rustls::pki_types::ServerName::try_from(dial.clone())
                .map_err(|_| anyhow!("{host:?} is not a name TLS can check"))?;
            let tls = tokio::time::timeout(
                CONNECT_TIMEOUT,
                tokio_rustls::TlsConnector::from(tls_config()?).connect(name, tcp),
            )
            .await
            .map_err(|_| anyhow!("the TLS handshake with {address} took over {}s", CONNECT_TIMEOUT.as_secs()))?
            .map_err(|e| {
                let why = crate::net::tls::find(&e)
                    .map_or_else(|| e.to_string(), crate::net::tls::describe);
                anyhow!(
                    "TLS with {address} failed: {why}; a registry that speaks plain HTTP needs --plain-http"
                )
            })?;
            exchange(tls, request, limit).await
        }
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
        Ok(result) => result.map_err(|e| match e.downcast::<TransportError>() {
            Ok(typed) => typed,
            Err(e) => TransportError::Failed(e),
        }),
        Err(_) => Err(TransportError::Failed(anyhow!(
            "{address} did not answer within {}s",
            REQUEST_TIMEOUT.as_secs()
        ))),
    }
}

async fn exchange<IO>(
    io: IO,
    request: Request<Full<Bytes>>,
    limit: usize,
) -> Result<Response<Bytes>>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .context("HTTP handshake")?;
    let driver = tokio::spawn(connection);
    let response = sender.send_request(request).await;
    let response = match response {
        Ok(r) => r,
        Err(e) => {
            driver.abort();
            let hint = if e.is_parse() {
                " (is it a TLS port? plain HTTP was sent)"
            } else {
                ""
            };
            return Err(anyhow!("the request failed: {e}{hint}"));
        }
    };
    let (parts, body) = response.into_parts();
    // A declared Content-Length over the bound is refused before any of the body.
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        driver.abort();
        return Err(TransportError::TooLarge { limit }.into());
    }
    let body = Limited::new(body, limit).collect().await.map_err(|e| {
        if e.is::<http_body_util::LengthLimitError>() {
            anyhow::Error::new(TransportError::TooLarge { limit })
        } else {
            anyhow!("reading the answer failed: {e}")
        }
    });
    driver.abort();
    let body = body?.to_bytes();
    driver.abort();
    Ok(Response::from_parts(parts, body))
}

/// `host:port`, with the scheme's port when there is none.
fn split_authority(authority: &str, default_port: u16) -> (String, u16) {
    let host = crate::plugin::reference::host_of(authority);
    let port = authority[host.len()..]
        .strip_prefix(':')
        .and_then(|p| p.parse().ok())
        .unwrap_or(default_port);
    (host.to_string(), port)
}

/// Why the registry client has no TLS configuration.
#[derive(Debug, Clone, thiserror::Error)]
enum TlsSetupError {
    /// The system trusts nothing.
    #[error(
        "no trusted root certificates on this machine: install ca-certificates \
         (or set SSL_CERT_FILE to a CA bundle)"
    )]
    NoRoots,
    /// rustls refused the configuration.
    #[error("{0}")]
    Rustls(rustls::Error),
}

/// One TLS client config for the process: the system's roots, rustls's safe defaults.
fn tls_config() -> Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, TlsSetupError>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(TlsSetupError::NoRoots);
            }
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(TlsSetupError::Rustls)
        })
        .clone()
        .map_err(anyhow::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split_with_default_ports() {
        assert_eq!(split_authority("ghcr.io", 443), ("ghcr.io".into(), 443));
        assert_eq!(
            split_authority("127.0.0.1:5000", 80),
            ("127.0.0.1".into(), 5000)
        );
        assert_eq!(split_authority("[::1]:5000", 80), ("[::1]".into(), 5000));
    }
}

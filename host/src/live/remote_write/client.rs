//! The remote-write endpoint's connection: one HTTP/1.1 connection kept open, plain or
//! TLS through the project's rustls (the system's roots, so `SSL_CERT_FILE` applies),
//! with the credentials and headers k6 reads from its environment:
//! `K6_PROMETHEUS_RW_USERNAME` and `_PASSWORD` (basic auth), `_BEARER_TOKEN`, and
//! `K6_PROMETHEUS_RW_HEADERS_<NAME>=VALUE` (one header each). An error answer's body is
//! read to a bound and quoted cut, so a hostile endpoint cannot grow the host.

use crate::net::allowlist::Origin;
use crate::net::tls::{Purpose, TlsClient};
use anyhow::{bail, Result};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue};

/// The environment variables' common prefix.
const ENV: &str = "K6_PROMETHEUS_RW_";

/// Bytes of an error answer's body that are read.
const ERROR_BODY_BYTES: usize = 4096;

/// Why a push failed; warned about, never fatal to the run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PushError {
    /// The request could not be made from the configured headers.
    #[error("{0}")]
    Request(http::Error),
    /// The TCP connection could not be made.
    #[error("cannot connect to {authority}: {reason}")]
    Connect {
        /// `host:port`.
        authority: String,
        /// The system's reason.
        reason: std::io::Error,
    },
    /// The TLS handshake failed.
    #[error("{0}")]
    Tls(crate::net::HttpError),
    /// HTTP/1.1 failed on the connection.
    #[error("{0}")]
    Http(hyper::Error),
    /// The endpoint answered an error status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status.
        status: hyper::StatusCode,
        /// The start of the answer's body, cut to 512 characters.
        body: String,
    },
    /// No answer within the push timeout.
    #[error("no answer within {0} s")]
    Timeout(u64),
}

/// Where pushes go and what each carries.
pub(crate) struct Endpoint {
    uri: hyper::Uri,
    origin: Origin,
    /// `Authorization` and the extra headers.
    headers: Vec<(HeaderName, HeaderValue)>,
    tls: TlsClient,
    conn: Option<SendRequest<Full<Bytes>>>,
}

impl Endpoint {
    /// The endpoint at `url`, with the credentials and headers of `vars` (the
    /// process's environment).
    pub(crate) fn new(
        url: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Endpoint> {
        let uri: hyper::Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("--out prometheus-rw={}: {e}", shown(url)))?;
        let origin = Origin::parse(url).map_err(|e| anyhow::anyhow!("--out prometheus-rw: {e}"))?;
        if !matches!(origin.scheme.as_str(), "http" | "https") {
            bail!(
                "--out prometheus-rw={}: the URL must be http:// or https://",
                shown(url)
            );
        }
        Ok(Endpoint {
            uri,
            origin,
            headers: headers_from(vars)?,
            tls: TlsClient::default(),
            conn: None,
        })
    }

    /// Pushes one compressed write request; an error says why (status and the start of
    /// the body).
    pub(crate) async fn push(&mut self, body: Bytes) -> Result<(), PushError> {
        let mut request = hyper::Request::post(self.uri.clone())
            .header(hyper::header::HOST, authority(&self.origin))
            .header("content-type", "application/x-protobuf")
            .header("content-encoding", "snappy")
            .header("x-prometheus-remote-write-version", "0.1.0")
            .header(
                "user-agent",
                concat!("loadtest-host/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(body))
            .map_err(PushError::Request)?;
        for (name, value) in &self.headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let conn = match self.conn.take() {
            Some(c) if !c.is_closed() => c,
            _ => self.connect().await?,
        };
        let mut conn = conn;
        conn.ready().await.map_err(PushError::Http)?;
        let response = conn.send_request(request).await.map_err(PushError::Http)?;
        self.conn = Some(conn);
        let status = response.status();
        if status.is_success() {
            // Drained so the connection can carry the next push.
            let _ = Limited::new(response.into_body(), ERROR_BODY_BYTES)
                .collect()
                .await;
            return Ok(());
        }
        // The first frames up to the bound; past it the rest is not read and the
        // connection is not reused.
        let mut body = response.into_body();
        let mut kept = Vec::new();
        while kept.len() < ERROR_BODY_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        kept.extend_from_slice(data);
                    }
                }
                _ => break,
            }
        }
        if kept.len() >= ERROR_BODY_BYTES {
            self.conn = None;
            kept.truncate(ERROR_BODY_BYTES);
        }
        let text = String::from_utf8_lossy(&kept).into_owned();
        Err(PushError::Status {
            status,
            body: crate::bounded::cut(text.trim(), 512).to_string(),
        })
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, PushError> {
        let tcp = tokio::net::TcpStream::connect((self.origin.host.as_str(), self.origin.port))
            .await
            .map_err(|reason| PushError::Connect {
                authority: authority(&self.origin),
                reason,
            })?;
        let _ = tcp.set_nodelay(true);
        if self.origin.scheme == "https" {
            let (tls, _) = self
                .tls
                .handshake(&self.origin, tcp, Purpose::Http1)
                .await
                .map_err(PushError::Tls)?;
            handshake(tls).await
        } else {
            handshake(tcp).await
        }
    }
}

async fn handshake<IO>(io: IO) -> Result<SendRequest<Full<Bytes>>, PushError>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(PushError::Http)?;
    tokio::spawn(conn);
    Ok(send)
}

fn authority(origin: &Origin) -> String {
    if origin.host.contains(':') {
        format!("[{}]:{}", origin.host, origin.port)
    } else {
        format!("{}:{}", origin.host, origin.port)
    }
}

/// `url` as messages show it: without a `user:password@`.
pub(crate) fn shown(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s && !url[s + 3..at].contains('/') => {
            format!("{}{}", &url[..s + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

/// The `Authorization` header and the extra headers from k6's variables.
fn headers_from(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<(HeaderName, HeaderValue)>> {
    let (mut user, mut password, mut bearer) = (None, None, None);
    let mut headers = Vec::new();
    for (key, value) in vars {
        let Some(name) = key.strip_prefix(ENV) else {
            continue;
        };
        match name {
            "USERNAME" => user = Some(value),
            "PASSWORD" => password = Some(value),
            "BEARER_TOKEN" => bearer = Some(value),
            _ => {
                let Some(header) = name.strip_prefix("HEADERS_") else {
                    continue;
                };
                let header = HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| anyhow::anyhow!("{key}: {header:?} is not a valid header name"))?;
                // Never quoted: a header may carry a key.
                let value = HeaderValue::from_str(&value)
                    .map_err(|_| anyhow::anyhow!("{key}: the value is not a valid header value"))?;
                headers.push((header, sensitive(value)));
            }
        }
    }
    let basic = match (user, password) {
        (None, None) => None,
        (Some(u), p) => Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{u}:{}", p.unwrap_or_default()))
        )),
        (None, Some(_)) => bail!("{ENV}PASSWORD is set without {ENV}USERNAME"),
    };
    let authorization = match (basic, bearer) {
        (Some(_), Some(_)) => {
            bail!("{ENV}BEARER_TOKEN and {ENV}USERNAME are both set: give one way to authenticate")
        }
        (Some(b), None) => Some(b),
        (None, Some(t)) => Some(format!("Bearer {t}")),
        (None, None) => None,
    };
    if let Some(a) = authorization {
        let value = HeaderValue::from_str(&a)
            .map_err(|_| anyhow::anyhow!("{ENV}*: the credentials are not a valid header value"))?;
        headers.push((hyper::header::AUTHORIZATION, sensitive(value)));
    }
    Ok(headers)
}

fn sensitive(mut value: HeaderValue) -> HeaderValue {
    value.set_sensitive(true);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn credentials_and_headers_come_from_k6s_variables() {
        let h = headers_from(vars(&[
            ("K6_PROMETHEUS_RW_USERNAME", "ann"),
            ("K6_PROMETHEUS_RW_PASSWORD", "pw"),
            ("K6_PROMETHEUS_RW_HEADERS_X-Scope-OrgID", "team-a"),
            ("K6_OTHER", "x"),
        ]))
        .unwrap();
        let get = |n: &str| {
            h.iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.to_str().unwrap())
        };
        assert_eq!(get("authorization"), Some("Basic YW5uOnB3"));
        assert_eq!(get("x-scope-orgid"), Some("team-a"));
        assert_eq!(h.len(), 2);
        let h = headers_from(vars(&[("K6_PROMETHEUS_RW_BEARER_TOKEN", "t0k")])).unwrap();
        assert_eq!(h[0].1.to_str().unwrap(), "Bearer t0k");
        let e = headers_from(vars(&[
            ("K6_PROMETHEUS_RW_BEARER_TOKEN", "t"),
            ("K6_PROMETHEUS_RW_USERNAME", "u"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("give one way"), "{e}");
        let e =
            headers_from(vars(&[("K6_PROMETHEUS_RW_HEADERS_X-Key", "bad\nvalue")])).unwrap_err();
        assert!(!e.to_string().contains("bad"), "{e}");
    }

    #[test]
    fn shown_urls_drop_their_credentials() {
        assert_eq!(
            shown("https://u:p@prom:9090/api/v1/write"),
            "https://prom:9090/api/v1/write"
        );
        assert_eq!(shown("http://prom:9090/a@b"), "http://prom:9090/a@b");
    }
}

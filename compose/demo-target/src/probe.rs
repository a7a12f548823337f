//! `demo-target health URL`: one GET with a timeout, for container healthchecks. A
//! `FROM scratch` image has no shell and no curl, so the binary checks itself.

use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// GETs `url`; Ok with the status line and body when the answer is 2xx, an error that
/// says what came back (or why nothing did) otherwise. Docker keeps what the check
/// prints, so `host up` can show why a service never became healthy.
pub async fn check(url: &str, timeout: Duration) -> anyhow::Result<String> {
    let uri: hyper::Uri = url
        .parse()
        .with_context(|| format!("{url:?} is not a URL like http://127.0.0.1:8080/health"))?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let response = tokio::time::timeout(timeout, client.get(uri))
        .await
        .map_err(|_| anyhow!("GET {url}: no answer within {timeout:?}"))?
        .map_err(|e| anyhow!("GET {url}: {}", chain(&e)))?;
    let status = response.status();
    let body = tokio::time::timeout(timeout, response.into_body().collect())
        .await
        .map_err(|_| anyhow!("GET {url}: body not received within {timeout:?}"))?
        .map_err(|e| anyhow!("GET {url}: {e}"))?
        .to_bytes();
    let text = String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned();
    if !status.is_success() {
        bail!("GET {url}: {status} {text}");
    }
    Ok(format!("GET {url}: {status} {text}"))
}

/// An error with its causes (hyper's own message is only "client error (Connect)").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

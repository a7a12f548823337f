//! The worker role (`demo-target worker`): claims queued commands from the API's outbox
//! (long polls), does their work off the request path, reports each result, and serves
//! its own `/health` so Compose can tell whether it still reaches the API.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// How long one claim waits for work before asking again.
const CLAIM_WAIT: Duration = Duration::from_secs(5);

/// The worker is unhealthy when its last successful call to the API is older than this.
const STALE_AFTER: Duration = Duration::from_secs(15);

/// What the worker's `/health` reports.
struct Progress {
    started: Instant,
    /// Milliseconds since `started` of the last successful claim; 0 = never.
    last_contact_ms: AtomicU64,
    done: AtomicU64,
}

/// Runs the worker until the process is stopped: claims from `api`, serves `/health`
/// and `/metrics` on `listen`.
pub async fn run(api: String, listen: SocketAddr) -> anyhow::Result<()> {
    let progress = Arc::new(Progress {
        started: Instant::now(),
        last_contact_ms: AtomicU64::new(0),
        done: AtomicU64::new(0),
    });
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    println!("demo worker: claiming from {api}, health on http://{listen}/health");
    tokio::spawn(serve_health(listener, progress.clone()));
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let api = api.trim_end_matches('/').to_string();
    loop {
        match claim_and_work(&client, &api, &progress).await {
            Ok(()) => {}
            Err(e) => {
                // The API may be starting or restarting: keep trying, health says so.
                eprintln!("demo worker: {e:#}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

async fn claim_and_work(
    client: &Client<HttpConnector, Full<Bytes>>,
    api: &str,
    progress: &Progress,
) -> anyhow::Result<()> {
    let url = format!(
        "{api}/admin/outbox/claim?max=32&wait_ms={}",
        CLAIM_WAIT.as_millis()
    );
    let jobs = post(client, &url, Bytes::new()).await?;
    progress.last_contact_ms.store(
        progress.started.elapsed().as_millis().max(1) as u64,
        Ordering::Relaxed,
    );
    for job in jobs.as_array().map(Vec::as_slice).unwrap_or_default() {
        let Some(id) = job["id"].as_u64() else {
            continue;
        };
        let result = work(job);
        post(
            client,
            &format!("{api}/admin/outbox/{id}/done"),
            Bytes::from(result.to_string()),
        )
        .await?;
        progress.done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// An `export`: counts the group's notes, words and bytes; a group without notes
/// fails (`{"error": …}`), so failed commands can be produced on purpose.
pub(crate) fn work(job: &Value) -> Value {
    let notes = job["notes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if notes.is_empty() {
        return json!({ "error": format!("group {} has no notes to export", job["group"]) });
    }
    let text = |note: &Value, field: &str| note[field].as_str().unwrap_or("").to_string();
    let words: usize = notes
        .iter()
        .map(|n| {
            text(n, "title").split_whitespace().count() + text(n, "body").split_whitespace().count()
        })
        .sum();
    let bytes: usize = notes
        .iter()
        .map(|n| text(n, "title").len() + text(n, "body").len())
        .sum();
    json!({ "notes": notes.len(), "words": words, "bytes": bytes })
}

async fn post(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    body: Bytes,
) -> anyhow::Result<Value> {
    let request = Request::builder()
        .method(Method::POST)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(body))?;
    let response = tokio::time::timeout(CLAIM_WAIT * 2, client.request(request))
        .await
        .with_context(|| format!("POST {url}: no answer"))?
        .with_context(|| format!("POST {url}"))?;
    let status = response.status();
    let bytes = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        anyhow::bail!("POST {url}: {status} {}", String::from_utf8_lossy(&bytes));
    }
    Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn serve_health(listener: TcpListener, progress: Arc<Progress>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let progress = progress.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let progress = progress.clone();
                async move { Ok::<_, std::convert::Infallible>(health(&progress, req.uri().path())) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn health(progress: &Progress, path: &str) -> Response<Full<Bytes>> {
    let last = progress.last_contact_ms.load(Ordering::Relaxed);
    let done = progress.done.load(Ordering::Relaxed);
    let (status, body) = match path {
        "/health" if last == 0 => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "starting", "error": "the API's outbox has not answered yet"}).to_string(),
        ),
        "/health" => {
            let since = progress.started.elapsed().saturating_sub(Duration::from_millis(last));
            if since > STALE_AFTER {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({"status": "stale", "error": format!("no answer from the API's outbox for {}s", since.as_secs())}).to_string(),
                )
            } else {
                (StatusCode::OK, json!({"status": "ok", "done": done}).to_string())
            }
        }
        "/metrics" => (
            StatusCode::OK,
            format!("# HELP demo_worker_commands_done_total Commands the worker completed.\n# TYPE demo_worker_commands_done_total counter\ndemo_worker_commands_done_total {done}\n"),
        ),
        _ => (StatusCode::NOT_FOUND, json!({"error": "not found"}).to_string()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}

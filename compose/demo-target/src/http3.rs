//! HTTP/3 for the demo target (`--h3-listen`): a QUIC endpoint (quinn, h3) beside the
//! TCP listeners, serving the same application.
//!
//! Each QUIC connection is bridged to the application through an in-memory HTTP/2
//! connection served by the very code that serves TCP (`server::serve`): the routes take
//! hyper's `Incoming` body, which only hyper can make, and the bridge keeps every route,
//! fault, rate limit (by the QUIC peer's address) and counter exactly as over TCP, at
//! the cost of an HTTP/2 encode and decode in memory per request. WebSockets are not
//! offered over HTTP/3 (that needs extended CONNECT).

use std::net::IpAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::server::AltSvc;
use crate::state::AppState;

/// Bytes the in-memory HTTP/2 pipe buffers each way.
const PIPE_BUFFER: usize = 256 * 1024;

type H2Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;
type H3Stream = ::h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// Accepts QUIC connections on `endpoint` until `stop`, serving each over HTTP/3.
pub(crate) async fn serve(
    endpoint: quinn::Endpoint,
    state: Arc<AppState>,
    mut stop: watch::Receiver<bool>,
) {
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    let mut conns = JoinSet::new();
    let conn_stop = stop.clone();
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => {
                    let (state, builder, stop) = (Arc::clone(&state), Arc::clone(&builder), conn_stop.clone());
                    conns.spawn(async move {
                        // A failed handshake is the client's to report.
                        if let Ok(conn) = incoming.await {
                            connection(conn, state, builder, stop).await;
                        }
                    });
                }
                None => break,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    endpoint.close(0u32.into(), b"shutting down");
    conns.shutdown().await;
    endpoint.wait_idle().await;
}

/// Serves one QUIC connection: its requests go to the application over an in-memory
/// HTTP/2 connection, each on its own stream.
async fn connection(
    conn: quinn::Connection,
    state: Arc<AppState>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    stop: watch::Receiver<bool>,
) {
    let peer = conn.remote_address().ip().to_canonical();
    state.metrics.connection_accepted();
    state.clients.connected(peer);
    let Some(app) = bridge(peer, &state, builder, stop).await else {
        return;
    };
    let Ok(mut h3) =
        ::h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn)).await
    else {
        return;
    };
    let mut requests = JoinSet::new();
    loop {
        tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    let (app, max_body) = (app.clone(), state.max_body_bytes);
                    requests.spawn(async move {
                        if let Ok((req, stream)) = resolver.resolve_request().await {
                            answer(req, stream, app, max_body).await;
                        }
                    });
                }
                // The client closed the connection, or it broke.
                _ => break,
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
        }
    }
    while requests.join_next().await.is_some() {}
}

/// The in-memory HTTP/2 connection to the application, as seen from `peer`.
async fn bridge(
    peer: IpAddr,
    state: &Arc<AppState>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    stop: watch::Receiver<bool>,
) -> Option<H2Sender> {
    let (client, server) = tokio::io::duplex(PIPE_BUFFER);
    tokio::spawn(crate::server::serve(
        server,
        peer,
        Arc::clone(state),
        builder,
        stop,
        AltSvc::default(),
    ));
    let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(client))
        .await
        .ok()?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Some(sender)
}

/// Reads one HTTP/3 request, has the application answer it, and sends the answer.
async fn answer(req: http::Request<()>, mut stream: H3Stream, mut app: H2Sender, max_body: usize) {
    let mut body = BytesMut::new();
    loop {
        match stream.recv_data().await {
            Ok(Some(mut chunk)) => {
                if body.len() + chunk.remaining() > max_body {
                    stream.stop_stream(::h3::error::Code::H3_REQUEST_REJECTED);
                    return;
                }
                body.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
            }
            Ok(None) => break,
            Err(_) => return,
        }
    }
    let (mut parts, ()) = req.into_parts();
    parts.version = http::Version::HTTP_2;
    let request = http::Request::from_parts(parts, Full::new(body.freeze()));
    let response = match app.send_request(request).await {
        Ok(r) => r,
        Err(_) => {
            stream.stop_stream(::h3::error::Code::H3_INTERNAL_ERROR);
            return;
        }
    };
    let (parts, incoming) = response.into_parts();
    let Ok(body) = incoming.collect().await.map(|c| c.to_bytes()) else {
        stream.stop_stream(::h3::error::Code::H3_INTERNAL_ERROR);
        return;
    };
    if stream
        .send_response(http::Response::from_parts(parts, ()))
        .await
        .is_err()
    {
        return;
    }
    if !body.is_empty() && stream.send_data(body).await.is_err() {
        return;
    }
    let _ = stream.finish().await;
}

//! The HTTP server: binding, accepting connections, counting and faulting requests,
//! and shutting down.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::RETRY_AFTER;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::capacity::Admission;
use crate::faults::{self, Faults};
use crate::routes::{self, Resp};
use crate::state::AppState;
use crate::DemoConfig;

/// Pending connections the kernel may queue; load tests open many at once, and the
/// usual 128 would turn a burst into SYN retries rather than measurable queueing.
const LISTEN_BACKLOG: u32 = 4096;

/// How long shutdown waits for in-flight requests before dropping their connections.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// A running demo target; dropping it stops accepting connections too.
pub struct DemoServer {
    addr: SocketAddr,
    state: Arc<AppState>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    /// Accept loops of further listeners ([`DemoServer::also_tls`]), sharing the state.
    more: Vec<JoinHandle<()>>,
    /// Whether it serves https (and h2 by ALPN).
    tls: bool,
    /// The `Alt-Svc` field of the TLS listeners' answers, once HTTP/3 is served
    /// ([`DemoServer::also_h3`]).
    alt_svc: AltSvc,
}

/// The `Alt-Svc` value TCP answers carry, set when the HTTP/3 listener starts (after
/// the TCP ones, which already serve).
pub(crate) type AltSvc = Arc<std::sync::OnceLock<hyper::header::HeaderValue>>;

impl DemoServer {
    /// Binds `addr` (port 0 picks a free port) and serves on a spawned tokio task.
    pub async fn start(addr: SocketAddr, config: DemoConfig) -> anyhow::Result<DemoServer> {
        Self::start_with(addr, config, None).await
    }

    /// The same over TLS with `tls` (see [`crate::DemoTls`]): https, and h2 when the
    /// client offers it by ALPN.
    pub async fn start_tls(
        addr: SocketAddr,
        config: DemoConfig,
        tls: Arc<rustls::ServerConfig>,
    ) -> anyhow::Result<DemoServer> {
        Self::start_with(addr, config, Some(tokio_rustls::TlsAcceptor::from(tls))).await
    }

    async fn start_with(
        addr: SocketAddr,
        config: DemoConfig,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> anyhow::Result<DemoServer> {
        // Taken before binding so stall windows never begin earlier than a caller
        // measuring from just before `start` would expect.
        let started = Instant::now();
        let listener = bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
        let addr = listener.local_addr()?;
        let state = Arc::new(AppState::new(&config, started));
        let (stop, stop_rx) = watch::channel(false);
        let is_tls = tls.is_some();
        if config.in_process_worker {
            tokio::spawn(crate::inline_worker::run(
                Arc::clone(&state),
                config.command_work,
                stop_rx.clone(),
            ));
        }
        // The outbox delivers to the receiver of this very server, as any other client
        // would, over plain HTTP; a TLS server's outbox is not delivered.
        if !is_tls {
            let mut own = addr;
            if own.ip().is_unspecified() {
                own.set_ip(match own {
                    SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
                });
            }
            tokio::spawn(crate::webhooks::deliver(
                Arc::clone(&state.outbox),
                format!("http://{own}/admin/webhooks/receive"),
                stop_rx.clone(),
            ));
        }
        let alt_svc = AltSvc::default();
        // Only answers over TLS name the HTTP/3 alternative: browsers (and the host)
        // upgrade https:// origins alone.
        let own_alt_svc = if is_tls {
            alt_svc.clone()
        } else {
            AltSvc::default()
        };
        let task = tokio::spawn(accept_loop(
            listener,
            Arc::clone(&state),
            stop_rx,
            tls,
            own_alt_svc,
        ));
        Ok(DemoServer {
            addr,
            state,
            stop,
            task,
            more: Vec::new(),
            tls: is_tls,
            alt_svc,
        })
    }

    /// Serves the same application over TLS on a second address as well, and returns
    /// the address bound. This is TLS at the edge: a Compose stack publishes only this
    /// listener, while its own services (the worker, the healthcheck) keep plain HTTP
    /// on the first one, as behind a terminating load balancer.
    pub fn also_tls(
        &mut self,
        addr: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
    ) -> anyhow::Result<SocketAddr> {
        let listener = bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
        self.more.push(tokio::spawn(accept_loop(
            listener,
            Arc::clone(&self.state),
            self.stop.subscribe(),
            Some(tokio_rustls::TlsAcceptor::from(tls)),
            self.alt_svc.clone(),
        )));
        Ok(bound)
    }

    /// Serves the same application over HTTP/3 on the UDP address `addr` as well, with
    /// `tls`'s certificate, and returns the address bound. From then on the answers of
    /// the TLS listeners carry `Alt-Svc: h3=":PORT"`, so clients that upgrade as
    /// browsers do move to it.
    pub fn also_h3(
        &mut self,
        addr: SocketAddr,
        tls: &crate::DemoTls,
    ) -> anyhow::Result<SocketAddr> {
        self.also_h3_advertised(addr, tls, None)
    }

    /// [`also_h3`](Self::also_h3), with `Alt-Svc` naming `advertised` instead of the
    /// port bound: in a container, clients reach the UDP port at the number it is
    /// published on, which the container cannot learn by itself (`host up` chooses it
    /// and passes it in, `--h3-alt-svc-port`).
    pub fn also_h3_advertised(
        &mut self,
        addr: SocketAddr,
        tls: &crate::DemoTls,
        advertised: Option<u16>,
    ) -> anyhow::Result<SocketAddr> {
        let endpoint = quinn::Endpoint::server(tls.quic_server_config()?, addr)
            .with_context(|| format!("cannot listen on UDP {addr} (--h3-listen)"))?;
        let bound = endpoint.local_addr()?;
        let port = advertised.unwrap_or(bound.port());
        let value = format!("h3=\":{port}\"; ma=3600");
        let _ = self
            .alt_svc
            .set(hyper::header::HeaderValue::from_str(&value)?);
        self.more.push(tokio::spawn(crate::http3::serve(
            endpoint,
            Arc::clone(&self.state),
            self.stop.subscribe(),
        )));
        Ok(bound)
    }

    /// Serves the gRPC face ([`crate::grpc`]: the gateway and server reflection) on
    /// `addr` as well, over plaintext HTTP/2 on the same state, and returns the address
    /// bound (port 0 picks a free one).
    pub fn also_grpc(&mut self, addr: SocketAddr) -> anyhow::Result<SocketAddr> {
        let listener =
            bind(addr).with_context(|| format!("cannot listen on {addr} (--grpc-listen)"))?;
        let bound = listener.local_addr()?;
        self.more.push(crate::grpc::serve(
            listener,
            Arc::clone(&self.state),
            self.stop.subscribe(),
        )?);
        Ok(bound)
    }

    /// What the gRPC face answered so far: calls by method, stream messages, jobs.
    pub fn grpc_counters(&self) -> &crate::grpc::GrpcCounters {
        &self.state.grpc
    }

    /// The address actually bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` (`https://` with TLS), with a wildcard bind address replaced by loopback so the
    /// URL can be connected to.
    pub fn base_url(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
            });
        }
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{addr}")
    }

    /// HTTP requests received so far, on every path, counted on arrival.
    pub fn requests_served(&self) -> u64 {
        self.state.metrics.requests()
    }

    /// Requests to /health, /metrics and /admin/* received so far (a test's setup()
    /// and teardown() call /health: this counts how often they ran).
    pub fn internal_requests(&self) -> u64 {
        self.state.metrics.internal()
    }

    /// Responses sent so far with `status` (429 for rate-limited requests, ...).
    pub fn responses(&self, status: u16) -> u64 {
        self.state.metrics.responses(status)
    }

    /// TCP connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.state.metrics.connections()
    }

    /// Live-updates WebSockets (`GET /ws`) open now.
    pub fn live_sockets(&self) -> u64 {
        self.state
            .live
            .counters
            .open
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The survey's counters: sign-ins, pages, answers accepted and refused.
    pub fn survey_counts(&self) -> crate::SurveyCounts {
        self.state.survey.counts()
    }

    /// The server's own counters of its scenario parts, in the Prometheus text format
    /// `GET /metrics` answers (without the per-request ones).
    pub fn metrics_text(&self) -> String {
        let mut text = String::new();
        crate::routes::render_parts(&self.state, &mut text);
        text
    }

    /// Distinct peer (source) addresses that connected so far.
    pub fn distinct_peers(&self) -> usize {
        self.state.clients.distinct_peers()
    }

    /// Replaces the injected faults; takes effect for requests arriving afterwards.
    pub fn set_faults(&self, faults: Faults) {
        self.state.faults.set(faults);
    }

    /// Stops accepting, lets in-flight requests finish (for up to five seconds),
    /// closes every connection and returns once all are gone.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        for task in self.more {
            let _ = task.await;
        }
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // Lets a restarted target rebind while old connections sit in TIME_WAIT.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Resolves when `stop` says so or its sender is gone (the server was dropped).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<AppState>,
    mut stop: watch::Receiver<bool>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    alt_svc: AltSvc,
) {
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    let conn_stop = stop.clone();
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            () = stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    state.metrics.connection_accepted();
                    state.clients.connected(peer.ip());
                    let (state, builder, stop, alt_svc) = (Arc::clone(&state), Arc::clone(&builder), conn_stop.clone(), alt_svc.clone());
                    // Small request/response exchanges: waiting to coalesce packets only adds latency.
                    let _ = stream.set_nodelay(true);
                    match &tls {
                        None => conns.spawn(serve(stream, peer.ip(), state, builder, stop, alt_svc)),
                        Some(acceptor) => {
                            let accept = acceptor.accept(stream);
                            conns.spawn(async move {
                                // A failed handshake is the client's to report.
                                if let Ok(stream) = accept.await {
                                    serve(stream, peer.ip(), state, builder, stop, alt_svc).await;
                                }
                            })
                        }
                    };
                }
                Err(e) => {
                    // Usually out of file descriptors: back off instead of spinning,
                    // and keep serving the connections already open.
                    eprintln!("demo target: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            // Reap finished connections so the set does not grow with every one served.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    // WebSockets outlive their HTTP connection's task: tell them to close, and wait.
    state.live.shut_down();
    let drained = async {
        while conns.join_next().await.is_some() {}
        while state
            .live
            .counters
            .open
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drained).await;
    conns.shutdown().await;
}

/// Serves one connection (TCP, or the in-memory one of an HTTP/3 connection); its
/// answers carry `alt_svc` when it is set.
pub(crate) async fn serve<S>(
    stream: S,
    peer: IpAddr,
    state: Arc<AppState>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    mut stop: watch::Receiver<bool>,
    alt_svc: AltSvc,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let state = Arc::clone(&state);
        let alt_svc = alt_svc.clone();
        async move {
            let mut resp = handle(&state, peer, req).await;
            if let Some(value) = alt_svc.get() {
                resp.headers_mut()
                    .insert(hyper::header::ALT_SVC, value.clone());
            }
            Ok::<_, Infallible>(resp)
        }
    });
    // With upgrades, so `GET /ws` can become a WebSocket.
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        // Connection errors are clients going away mid-request; nothing to do.
        _ = conn.as_mut() => return,
        () = stopped(&mut stop) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

/// Counts the request, applies rate limits, the capacity limit and faults, routes it, and counts the
/// response status and the time it took.
async fn handle(state: &AppState, peer: IpAddr, req: Request<Incoming>) -> Resp {
    let started = Instant::now();
    state.metrics.request_received();
    // Found now: the request itself is consumed by its handler.
    let timed = crate::timings::RouteTimings::slot(req.method(), req.uri().path());
    if !faults::applies_to(req.uri().path()) || req.uri().path() == "/metrics" {
        state.metrics.internal_received();
    }
    let limited = state.clients.limited()
        && faults::applies_to(req.uri().path())
        && req.uri().path() != "/metrics"
        && state
            .clients
            .admit(state.clients.client(peer, req.headers()))
            .is_err();
    // The capacity limit: a worker is held (after its service time) until the response
    // is built, so at most `workers` requests are served at once.
    let worker =
        if !limited && faults::applies_to(req.uri().path()) && req.uri().path() != "/metrics" {
            state.faults.admit().await
        } else {
            None
        };
    let path = req.uri().path();
    let admin = path == "/admin" || path.starts_with("/admin/");
    let peer_ip = peer.to_canonical();
    let admin_refused = admin
        && !state.admin_from.is_empty()
        && !state.admin_from.iter().any(|c| c.contains(peer_ip));
    let resp = if admin_refused {
        routes::error(
            StatusCode::FORBIDDEN,
            "/admin/* is not open to this address (--admin-from)",
        )
    } else if limited {
        let _ = Limited::new(req.into_body(), state.max_body_bytes)
            .collect()
            .await;
        state.clients.count_limited();
        let mut resp = routes::error(StatusCode::TOO_MANY_REQUESTS, "rate limit exceeded");
        // The window is one second; the next one starts within a second.
        resp.headers_mut()
            .insert(RETRY_AFTER, hyper::header::HeaderValue::from_static("1"));
        resp
    } else if let Some(Admission::Shed) = worker {
        let _ = Limited::new(req.into_body(), state.max_body_bytes)
            .collect()
            .await;
        let mut resp = routes::error(StatusCode::SERVICE_UNAVAILABLE, "over capacity");
        // Queued work drains at the capacity rate; a second is a fair first wait.
        resp.headers_mut()
            .insert(RETRY_AFTER, hyper::header::HeaderValue::from_static("1"));
        resp
    } else if faults::applies_to(req.uri().path()) && state.faults.inject().await {
        // Consume the body so HTTP/1.1 keep-alive survives the injected error.
        let _ = Limited::new(req.into_body(), state.max_body_bytes)
            .collect()
            .await;
        routes::error(StatusCode::INTERNAL_SERVER_ERROR, "injected fault")
    } else {
        routes::dispatch(state, req).await
    };
    drop(worker);
    state.metrics.response_sent(resp.status());
    state.timings.record(timed, started.elapsed());
    resp
}

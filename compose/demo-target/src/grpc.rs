//! The gRPC face (`--grpc-listen`): tonic serving `demo.gateway.v1.Gateway`
//! (proto/gateway.proto) beside the REST API, shaped like the gateway the Camunda
//! starter loads, plus server reflection (v1 and v1alpha) so a client needs no .proto.
//!
//! It shares the REST API's state: a process instance created here is an asynchronous
//! command there (`GET /commands/{id}` shows it, the worker completes it, and it counts
//! in `demo_commands_submitted_total`), and the same bearer tokens sign calls in. What
//! the face answered is counted apart, by method, so a load test's `grpc_reqs` can be
//! compared with the server's own count (`demo_grpc_calls_total` in `/metrics`).
//! Faults (latency, errors, the capacity limit) apply to the REST API only.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::commands::Command;
use crate::counters::Counter;
use crate::state::AppState;

/// The code tonic-prost-build generated from proto/gateway.proto.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("demo.gateway.v1");
}

use pb::gateway_server::{Gateway as GatewayApi, GatewayServer};
use pb::{
    ActivateJobsRequest, ActivateJobsResponse, ActivatedJob, CompleteJobRequest,
    CompleteJobResponse, CreateProcessInstanceRequest, GetProcessInstanceRequest, ProcessInstance,
    TopologyRequest, TopologyResponse,
};

/// The encoded FileDescriptorSet of proto/gateway.proto (written by build.rs), which
/// the reflection service answers from.
pub const DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/gateway_descriptor.bin"));

/// The gateway's full service name, as clients write it in a method path.
pub const SERVICE: &str = "demo.gateway.v1.Gateway";

/// Longest an `ActivateJobs` call waits for jobs, as the REST outbox's claim.
const MAX_ACTIVATE_WAIT: Duration = Duration::from_secs(30);

/// How long shutdown lets open calls (a long `ActivateJobs`) finish.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The gateway's methods, in the order of [`GrpcCounters`]'s per-method counts.
const METHODS: [&str; 5] = [
    "CreateProcessInstance",
    "GetProcessInstance",
    "ActivateJobs",
    "CompleteJob",
    "Topology",
];

/// What the gRPC face answered: calls by method (any status, streams counted when they
/// open), the messages its server streams sent and the jobs they carried.
#[derive(Default, Debug)]
pub struct GrpcCounters {
    calls: [Counter; METHODS.len()],
    stream_messages: Counter,
    jobs_activated: Counter,
}

impl GrpcCounters {
    fn answered(&self, method: usize) {
        self.calls[method].inc();
    }

    /// Calls answered so far of `method` (`CreateProcessInstance`, ...); 0 for a name
    /// the gateway does not have.
    pub fn calls(&self, method: &str) -> u64 {
        METHODS
            .iter()
            .position(|m| *m == method)
            .map_or(0, |i| self.calls[i].get())
    }

    /// Calls answered so far, every method.
    pub fn total_calls(&self) -> u64 {
        self.calls.iter().map(Counter::get).sum()
    }

    /// Messages handed to server streams (`ActivateJobs`) so far.
    pub fn stream_messages(&self) -> u64 {
        self.stream_messages.get()
    }

    /// Jobs those messages carried.
    pub fn jobs_activated(&self) -> u64 {
        self.jobs_activated.get()
    }

    /// Appends the counters to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP demo_grpc_calls_total gRPC calls the gRPC face (--grpc-listen) answered, by method (any status; a stream when it opened)."
        );
        let _ = writeln!(out, "# TYPE demo_grpc_calls_total counter");
        for (method, count) in METHODS.iter().zip(&self.calls) {
            let _ = writeln!(
                out,
                "demo_grpc_calls_total{{method=\"{method}\"}} {}",
                count.get()
            );
        }
        crate::counters::render(
            out,
            "demo_grpc_stream_messages_sent_total",
            "counter",
            "Messages the gRPC face's server streams (ActivateJobs) sent.",
            self.stream_messages(),
        );
        crate::counters::render(
            out,
            "demo_grpc_jobs_activated_total",
            "counter",
            "Jobs (queued process instances) ActivateJobs claimed and sent.",
            self.jobs_activated(),
        );
    }
}

/// The gateway service over the shared state.
#[derive(Clone)]
struct Gateway {
    state: Arc<AppState>,
}

impl Gateway {
    /// The caller's user, from the `authorization: Bearer TOKEN` metadata, checked as
    /// the REST API checks its header.
    fn signed_in<T>(&self, request: &Request<T>) -> Result<String, Status> {
        let headers = request.metadata().clone().into_headers();
        crate::routes::auth::user(&self.state, &headers).ok_or_else(|| {
            Status::unauthenticated(
                "missing or unknown bearer token: send the metadata `authorization: Bearer TOKEN` \
                 with a token from POST /auth/token",
            )
        })
    }

    fn create(
        &self,
        request: Request<CreateProcessInstanceRequest>,
    ) -> Result<Response<ProcessInstance>, Status> {
        self.signed_in(&request)?;
        let new = request.into_inner();
        if !crate::routes::commands::KINDS.contains(&new.kind.as_str()) {
            return Err(Status::invalid_argument("kind must be \"export\""));
        }
        let command = self.state.commands.submit(&new.kind, new.group);
        Ok(Response::new(instance(command)))
    }

    fn get(
        &self,
        request: Request<GetProcessInstanceRequest>,
    ) -> Result<Response<ProcessInstance>, Status> {
        self.signed_in(&request)?;
        let id = request.into_inner().id;
        match self.state.commands.get(id) {
            Some(command) => Ok(Response::new(instance(command))),
            None => Err(Status::not_found(format!("no process instance {id}"))),
        }
    }

    fn activate(
        &self,
        request: ActivateJobsRequest,
    ) -> ReceiverStream<Result<ActivateJobsResponse, Status>> {
        let max = match request.max_jobs_to_activate {
            0 => 16,
            n => n.clamp(1, 256) as usize,
        };
        let wait = Duration::from_millis(request.request_timeout_ms).min(MAX_ACTIVATE_WAIT);
        let (tx, rx) = mpsc::channel(4);
        let state = Arc::clone(&self.state);
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + wait;
            let mut left = max;
            while left > 0 {
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                let claimed = state
                    .commands
                    .claim(left, remaining, |group| state.notes.list(group))
                    .await;
                // Empty only once the wait is over: the call ends.
                if claimed.is_empty() {
                    break;
                }
                left = left.saturating_sub(claimed.len());
                let jobs: Vec<ActivatedJob> = claimed
                    .into_iter()
                    .map(|job| ActivatedJob {
                        key: job.id,
                        kind: job.kind,
                        group: job.group,
                        notes: u32::try_from(job.notes.len()).unwrap_or(u32::MAX),
                    })
                    .collect();
                let count = jobs.len() as u64;
                // A client that went away leaves its jobs running, as a lost REST claim does.
                if tx.send(Ok(ActivateJobsResponse { jobs })).await.is_err() {
                    break;
                }
                state.grpc.stream_messages.inc();
                state.grpc.jobs_activated.add(count);
            }
        });
        ReceiverStream::new(rx)
    }

    fn complete(
        &self,
        request: CompleteJobRequest,
    ) -> Result<Response<CompleteJobResponse>, Status> {
        let mut result: serde_json::Value = if request.result_json.trim().is_empty() {
            serde_json::json!({})
        } else {
            serde_json::from_str(&request.result_json)
                .map_err(|e| Status::invalid_argument(format!("result_json is not JSON: {e}")))?
        };
        if !request.error_message.is_empty() {
            result = serde_json::json!({ "error": request.error_message });
        }
        let key = request.key;
        if self.state.commands.complete(key, result) {
            let instance = self.state.commands.get(key).map(instance);
            Ok(Response::new(CompleteJobResponse { instance }))
        } else if self.state.commands.get(key).is_some() {
            Err(Status::failed_precondition(format!(
                "job {key} has finished already"
            )))
        } else {
            Err(Status::not_found(format!("no job {key}")))
        }
    }
}

/// A command as the gateway shows it.
fn instance(command: Command) -> ProcessInstance {
    ProcessInstance {
        id: command.id,
        kind: command.kind,
        group: command.group,
        status: command.status.as_str().to_string(),
        result_json: command.result.map(|r| r.to_string()).unwrap_or_default(),
    }
}

#[tonic::async_trait]
impl GatewayApi for Gateway {
    async fn create_process_instance(
        &self,
        request: Request<CreateProcessInstanceRequest>,
    ) -> Result<Response<ProcessInstance>, Status> {
        let answer = self.create(request);
        self.state.grpc.answered(0);
        answer
    }

    async fn get_process_instance(
        &self,
        request: Request<GetProcessInstanceRequest>,
    ) -> Result<Response<ProcessInstance>, Status> {
        let answer = self.get(request);
        self.state.grpc.answered(1);
        answer
    }

    type ActivateJobsStream = ReceiverStream<Result<ActivateJobsResponse, Status>>;

    async fn activate_jobs(
        &self,
        request: Request<ActivateJobsRequest>,
    ) -> Result<Response<Self::ActivateJobsStream>, Status> {
        let stream = self.activate(request.into_inner());
        self.state.grpc.answered(2);
        Ok(Response::new(stream))
    }

    async fn complete_job(
        &self,
        request: Request<CompleteJobRequest>,
    ) -> Result<Response<CompleteJobResponse>, Status> {
        let answer = self.complete(request.into_inner());
        self.state.grpc.answered(3);
        answer
    }

    async fn topology(
        &self,
        _request: Request<TopologyRequest>,
    ) -> Result<Response<TopologyResponse>, Status> {
        let answer = TopologyResponse {
            gateway_version: env!("CARGO_PKG_VERSION").to_string(),
            partitions_count: 1,
            queued_instances: self.state.commands.queued() as u64,
        };
        self.state.grpc.answered(4);
        Ok(Response::new(answer))
    }
}

/// Serves the gateway and reflection on `listener` until `stop` says so; then open
/// calls get [`DRAIN_TIMEOUT`] to finish.
pub(crate) fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(DESCRIPTOR_SET)
        .build_v1alpha()?;
    let router = tonic::transport::Server::builder()
        .add_service(GatewayServer::new(Gateway { state }))
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha);
    // Small request/response exchanges: waiting to coalesce packets only adds latency.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let mut drain = stop.clone();
    Ok(tokio::spawn(async move {
        let mut signal = stop;
        let serve = router.serve_with_incoming_shutdown(incoming, async move {
            let _ = signal.wait_for(|stop| *stop).await;
        });
        tokio::select! {
            result = serve => {
                if let Err(e) = result {
                    eprintln!("demo target: the gRPC face stopped: {e}");
                }
            }
            () = async {
                let _ = drain.wait_for(|stop| *stop).await;
                tokio::time::sleep(DRAIN_TIMEOUT).await;
            } => {}
        }
    }))
}

/// The address a gRPC client dials for a listener bound to `addr`: a wildcard address
/// becomes loopback.
pub fn dial_address(addr: SocketAddr) -> String {
    let mut addr = addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    addr.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt as _;

    fn gateway() -> Gateway {
        let config = crate::DemoConfig::default();
        Gateway {
            state: Arc::new(AppState::new(&config, std::time::Instant::now())),
        }
    }

    fn signed<T>(gateway: &Gateway, message: T) -> Request<T> {
        let token = gateway.state.tokens.issue("tester");
        let mut request = Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        request
    }

    #[tokio::test]
    async fn an_instance_is_a_command_claimed_as_a_job_and_completed() {
        let gateway = gateway();
        let create = CreateProcessInstanceRequest {
            kind: "export".into(),
            group: 2,
        };
        // Without a token: UNAUTHENTICATED, and still an answered call.
        let refused = gateway
            .create_process_instance(Request::new(create.clone()))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        let bad = CreateProcessInstanceRequest {
            kind: "delete".into(),
            group: 2,
        };
        let refused = gateway
            .create_process_instance(signed(&gateway, bad))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        let made = gateway
            .create_process_instance(signed(&gateway, create))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(made.status, "queued");
        // The REST face's command, in the same counters.
        assert_eq!(gateway.state.commands.get(made.id).unwrap().group, 2);

        let jobs: Vec<ActivateJobsResponse> = gateway
            .activate_jobs(Request::new(ActivateJobsRequest {
                max_jobs_to_activate: 4,
                request_timeout_ms: 50,
            }))
            .await
            .unwrap()
            .into_inner()
            .map(Result::unwrap)
            .collect()
            .await;
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].jobs[0].key, made.id);
        assert_eq!(jobs[0].jobs[0].notes, 20);
        assert_eq!(gateway.state.grpc.stream_messages(), 1);
        assert_eq!(gateway.state.grpc.jobs_activated(), 1);

        let done = gateway
            .complete_job(Request::new(CompleteJobRequest {
                key: made.id,
                result_json: r#"{"notes":20}"#.into(),
                error_message: String::new(),
            }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(done.instance.unwrap().status, "done");
        let again = gateway
            .complete_job(Request::new(CompleteJobRequest {
                key: made.id,
                ..Default::default()
            }))
            .await
            .unwrap_err();
        assert_eq!(again.code(), tonic::Code::FailedPrecondition);
        let seen = gateway
            .get_process_instance(signed(&gateway, GetProcessInstanceRequest { id: made.id }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(seen.result_json, r#"{"notes":20}"#);

        assert_eq!(gateway.state.grpc.calls("CreateProcessInstance"), 3);
        assert_eq!(gateway.state.grpc.total_calls(), 7);
        let mut text = String::new();
        crate::routes::render_parts(&gateway.state, &mut text);
        assert!(
            text.contains("demo_grpc_calls_total{method=\"CompleteJob\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("demo_commands_submitted_total 1\n"), "{text}");
        assert!(
            text.contains("demo_grpc_stream_messages_sent_total 1\n"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_stream_with_nothing_queued_ends_empty_at_its_timeout() {
        let gateway = gateway();
        let started = std::time::Instant::now();
        let count = gateway
            .activate_jobs(Request::new(ActivateJobsRequest {
                max_jobs_to_activate: 0,
                request_timeout_ms: 80,
            }))
            .await
            .unwrap()
            .into_inner()
            .collect::<Vec<_>>()
            .await
            .len();
        assert_eq!(count, 0);
        assert!(started.elapsed() >= Duration::from_millis(70));
    }
}

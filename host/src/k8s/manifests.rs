//! The Kubernetes objects of a distributed run, built from k8s-openapi's typed structs
//! (Kubernetes 1.33's API): a ConfigMap with the plugin and the run's files, a
//! coordinator Job with a Service in front of it, and an Indexed Job of workers that
//! dial the Service. The cluster token is a Secret both read as `HOST_CLUSTER_TOKEN`,
//! and a NetworkPolicy lets only the workers' pods reach the coordinator. The layout is k6-operator's (a starter, N runners), but the
//! coordinator merges the workers' figures exactly and gives one verdict.

use crate::config::{ExecutionSegment, SegmentSequence};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvVar,
    EnvVarSource, ObjectFieldSelector, PodSpec, PodTemplateSpec, Secret, SecretKeySelector,
    Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use std::collections::BTreeMap;

/// Where the ConfigMap's files are mounted in the coordinator.
pub(crate) const FILES_DIR: &str = "/loadtest";
/// Where the coordinator writes the results folder.
pub(crate) const RESULTS_DIR: &str = "/results";
/// The environment variable holding a worker's completion index.
pub(crate) const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The annotation the Job controller sets on each pod of an Indexed Job.
const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The label telling the coordinator's pod from the workers'.
pub(crate) const ROLE_LABEL: &str = "loadtest.host/role";
/// The label naming the run, on every object.
pub(crate) const RUN_LABEL: &str = "app.kubernetes.io/instance";
/// The annotation on the workers' Job listing each index's segment, in order.
pub(crate) const SEGMENTS_ANNOTATION: &str = "loadtest.host/segments";

/// What the objects are made of.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Prefix of every object's name, and the run label's value.
    pub name: String,
    /// Namespace of every object (`None`: kubectl's current one).
    pub namespace: Option<String>,
    /// The host's image (its entrypoint is the `host` binary).
    pub image: String,
    /// How many workers.
    pub workers: u32,
    /// The port the coordinator listens on and the Service exposes.
    pub port: u16,
    /// The coordinator's plugin argument: the plugin's path in [`FILES_DIR`], or the
    /// registry reference the pods pull.
    pub plugin: String,
    /// Files for the ConfigMap: the plugin first (unless pulled), then the run's files,
    /// by key.
    pub files: Vec<(String, Vec<u8>)>,
    /// The coordinator's arguments after `coordinate PLUGIN`: the run flags, paths
    /// already pointing into [`FILES_DIR`], `-e KEY` (no value) for each of `env`.
    pub run_flags: Vec<String>,
    /// The plugin's environment: the values go into a Secret that the coordinator's
    /// variables read (`secretKeyRef`), never into its arguments or the ConfigMap.
    pub env: BTreeMap<String, String>,
    /// The cluster token, for the Secret.
    pub token: String,
}

/// The key of the token in its Secret.
pub(crate) const TOKEN_KEY: &str = "token";

/// The rendered objects.
#[derive(Debug, Clone)]
pub(crate) struct Manifests {
    /// The plugin's environment values (absent when it has none).
    pub env: Option<Secret>,
    /// The plugin and the run's files.
    pub files: ConfigMap,
    /// Selects the coordinator's pod; the workers dial it.
    pub service: Service,
    /// Runs `host coordinate`.
    pub coordinator: Job,
    /// Runs `host worker`, one pod per completion index.
    pub workers: Job,
    /// The cluster token, read by every pod as `HOST_CLUSTER_TOKEN`.
    pub token: Secret,
    /// Lets only the workers' pods reach the coordinator's port.
    pub network_policy: NetworkPolicy,
}

impl Manifests {
    /// The objects as JSON values, in the order to apply them.
    pub(crate) fn to_values(&self) -> serde_json::Result<Vec<serde_json::Value>> {
        let mut values = vec![serde_json::to_value(&self.token)?];
        if let Some(env) = &self.env {
            values.push(serde_json::to_value(env)?);
        }
        values.extend([
            serde_json::to_value(&self.files)?,
            serde_json::to_value(&self.service)?,
            serde_json::to_value(&self.network_policy)?,
            serde_json::to_value(&self.coordinator)?,
            serde_json::to_value(&self.workers)?,
        ]);
        Ok(values)
    }
}

/// The segment of the worker with completion index `index` of `workers`: the
/// `index`-th of `workers` equal segments (`0:1/3`, `1/3:2/3`, `2/3:1`).
pub fn segment_of(index: u32, workers: u32) -> ExecutionSegment {
    let sequence = SegmentSequence::even(u64::from(workers)).expect("at least one worker");
    sequence.segments()[index as usize]
}

/// The coordinator's address as the workers dial it: the Service's name in the
/// namespace's DNS.
pub(crate) fn coordinator_address(plan: &Plan) -> String {
    format!("{}:{}", service_name(plan), plan.port)
}

fn service_name(plan: &Plan) -> String {
    format!("{}-coordinator", plan.name)
}

/// Builds the objects.
pub(crate) fn render(plan: &Plan) -> Manifests {
    let files_name = format!("{}-files", plan.name);
    let files = ConfigMap {
        metadata: meta(plan, &files_name, None),
        binary_data: Some(
            plan.files
                .iter()
                .map(|(key, bytes)| (key.clone(), ByteString(bytes.clone())))
                .collect(),
        ),
        ..Default::default()
    };
    let coordinator_labels = labels(plan, "coordinator");
    let service = Service {
        metadata: meta(plan, &service_name(plan), Some("coordinator")),
        spec: Some(ServiceSpec {
            selector: Some(coordinator_labels.clone()),
            ports: Some(vec![ServicePort {
                name: Some("control".into()),
                port: i32::from(plan.port),
                target_port: Some(IntOrString::Int(i32::from(plan.port))),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut coordinator_args = vec![
        "coordinate".to_string(),
        plan.plugin.clone(),
        "--workers".into(),
        plan.workers.to_string(),
        "--listen".into(),
        format!("0.0.0.0:{}", plan.port),
        "--out".into(),
        RESULTS_DIR.into(),
    ];
    coordinator_args.extend(plan.run_flags.iter().cloned());
    let mut coordinator_container = container(plan, "coordinator", coordinator_args);
    let env_name = format!("{}-env", plan.name);
    let env = (!plan.env.is_empty()).then(|| Secret {
        metadata: meta(plan, &env_name, Some("coordinator")),
        type_: Some("Opaque".into()),
        data: Some(
            plan.env
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                .collect(),
        ),
        ..Default::default()
    });
    coordinator_container
        .env
        .get_or_insert_with(Vec::new)
        .extend(plan.env.keys().map(|key| EnvVar {
            name: key.clone(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: env_name.clone(),
                    key: key.clone(),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }));
    read_token(plan, &mut coordinator_container);
    coordinator_container.ports = Some(vec![ContainerPort {
        name: Some("control".into()),
        container_port: i32::from(plan.port),
        protocol: Some("TCP".into()),
        ..Default::default()
    }]);
    coordinator_container
        .volume_mounts
        .get_or_insert_with(Vec::new)
        .extend([
            mount("files", FILES_DIR, true),
            mount("results", RESULTS_DIR, false),
        ]);
    let coordinator = job(
        plan,
        &format!("{}-coordinator", plan.name),
        "coordinator",
        JobSpec {
            completions: Some(1),
            parallelism: Some(1),
            ..Default::default()
        },
        coordinator_container,
        vec![
            Volume {
                name: "files".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: files_name,
                    ..Default::default()
                }),
                ..Default::default()
            },
            empty_dir("results"),
        ],
    );

    let mut worker_container = container(
        plan,
        "worker",
        vec![
            "worker".into(),
            "--coordinator".into(),
            coordinator_address(plan),
            "--name".into(),
            // Kubernetes expands $(VAR) from the container's environment.
            format!("{}-worker-$({INDEX_ENV})", plan.name),
            // The completion index picks the segment: pod i runs segment i of N,
            // whatever order the pods reach the coordinator in.
            "--index".into(),
            format!("$({INDEX_ENV})"),
        ],
    );
    read_token(plan, &mut worker_container);
    // Set by the Job controller on an Indexed Job's pods; declared here so that the
    // arguments may refer to it.
    worker_container
        .env
        .get_or_insert_with(Vec::new)
        .push(EnvVar {
            name: INDEX_ENV.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    let mut workers = job(
        plan,
        &format!("{}-workers", plan.name),
        "worker",
        JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(plan.workers as i32),
            parallelism: Some(plan.workers as i32),
            ..Default::default()
        },
        worker_container,
        Vec::new(),
    );
    let segments: Vec<String> = (0..plan.workers)
        .map(|i| segment_of(i, plan.workers).to_string())
        .collect();
    workers
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SEGMENTS_ANNOTATION.into(), segments.join(" "));
    Manifests {
        env,
        files,
        service,
        coordinator,
        workers,
        token: token_secret(plan),
        network_policy: network_policy(plan),
    }
}

fn token_secret_name(plan: &Plan) -> String {
    format!("{}-cluster-token", plan.name)
}

/// The Secret holding the cluster token.
fn token_secret(plan: &Plan) -> Secret {
    Secret {
        metadata: meta(plan, &token_secret_name(plan), None),
        type_: Some("Opaque".into()),
        string_data: Some(BTreeMap::from([(TOKEN_KEY.into(), plan.token.clone())])),
        ..Default::default()
    }
}

/// Gives `container` the token as `HOST_CLUSTER_TOKEN`, from the Secret.
fn read_token(plan: &Plan, container: &mut Container) {
    container.env.get_or_insert_with(Vec::new).push(EnvVar {
        name: crate::distributed::trust::TOKEN_ENV.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: token_secret_name(plan),
                key: TOKEN_KEY.into(),
                optional: Some(false),
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
}

/// Ingress to the coordinator's pod: from the run's workers, to its port, only.
fn network_policy(plan: &Plan) -> NetworkPolicy {
    NetworkPolicy {
        metadata: meta(
            plan,
            &format!("{}-coordinator", plan.name),
            Some("coordinator"),
        ),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(labels(plan, "coordinator")),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector {
                        match_labels: Some(labels(plan, "worker")),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ports: Some(vec![NetworkPolicyPort {
                    port: Some(IntOrString::Int(i32::from(plan.port))),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
            }]),
            ..Default::default()
        }),
    }
}

/// The labels of one role's pods.
fn labels(plan: &Plan, role: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".into(), "loadtest-host".into()),
        (RUN_LABEL.into(), plan.name.clone()),
        (ROLE_LABEL.into(), role.into()),
    ])
}

fn meta(plan: &Plan, name: &str, role: Option<&str>) -> ObjectMeta {
    let mut labels = labels(plan, role.unwrap_or("files"));
    if role.is_none() {
        labels.remove(ROLE_LABEL);
    }
    ObjectMeta {
        name: Some(name.into()),
        namespace: plan.namespace.clone(),
        labels: Some(labels),
        ..Default::default()
    }
}

/// The host's container with `args` (the image's entrypoint is the host binary).
fn container(plan: &Plan, name: &str, args: Vec<String>) -> Container {
    Container {
        name: name.into(),
        image: Some(plan.image.clone()),
        args: Some(args),
        env: Some(vec![EnvVar {
            // The compile cache must be writable; the image's root may not be.
            name: "HOST_CACHE_DIR".into(),
            value: Some("/tmp/cache".into()),
            ..Default::default()
        }]),
        volume_mounts: Some(vec![mount("tmp", "/tmp", false)]),
        ..Default::default()
    }
}

/// A Job whose pods run `container` once (no retries: a worker that fails is named
/// by the coordinator, and a late one would be refused).
fn job(
    plan: &Plan,
    name: &str,
    role: &str,
    spec: JobSpec,
    container: Container,
    mut volumes: Vec<Volume>,
) -> Job {
    volumes.push(empty_dir("tmp"));
    Job {
        metadata: meta(plan, name, Some(role)),
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(plan, role)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    containers: vec![container],
                    volumes: Some(volumes),
                    ..Default::default()
                }),
            },
            ..spec
        }),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..Default::default()
    }
}

fn empty_dir(name: &str) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    }
}

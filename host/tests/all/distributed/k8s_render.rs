//! `host k8s render` writes the objects of a distributed run: the plugin and run files
//! in a ConfigMap, a coordinator Job whose pod the Service selects, and an Indexed Job
//! of workers that dial that Service, completion index `i` running segment `i`; the
//! cluster token in a Secret both read, and a NetworkPolicy that lets only the workers
//! reach the coordinator. No cluster is needed: the objects are read back into k8s-openapi's typed structs.

use crate::support as common;

use host::segment_from_flags as from_flags;
use host::segment_of;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The cluster token the renders are given (else each would make its own).
const TOKEN: &str = "k8s-render-test-token-0123456789";

fn host(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .args(args)
        .env("HOST_CLUSTER_TOKEN", TOKEN)
        .current_dir(dir)
        .output()
        .expect("the host binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Renders three workers of `hello` with a run config, as JSON and as YAML.
fn render(dir: &Path, format: &str) -> Output {
    let plugin = common::plugin("hello");
    std::fs::write(
        dir.join("run.toml"),
        "[env]\nBASE_URL = \"http://api:8080\"\n",
    )
    .unwrap();
    host(
        &[
            "k8s",
            "render",
            "--workers",
            "3",
            "--name",
            "shop",
            "--namespace",
            "load",
            "--format",
            format,
            plugin.to_str().unwrap(),
            "--vus",
            "30",
            "-c",
            "run.toml",
            "--allow",
            "http://api:8080",
        ],
        dir,
    )
}

#[test]
fn the_objects_wire_workers_to_the_coordinator_by_index() {
    let dir = tempfile::tempdir().unwrap();
    let out = render(dir.path(), "json");
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "Secret",
            "Secret",
            "ConfigMap",
            "Service",
            "NetworkPolicy",
            "Job",
            "Job"
        ]
    );
    // Each is a valid object of its kind: the token's Secret, the environment's.
    let secret: Secret = serde_json::from_value(items[0].clone()).unwrap();
    let env: Secret = serde_json::from_value(items[1].clone()).unwrap();
    let files: ConfigMap = serde_json::from_value(items[2].clone()).unwrap();
    let service: Service = serde_json::from_value(items[3].clone()).unwrap();
    let policy: NetworkPolicy = serde_json::from_value(items[4].clone()).unwrap();
    let coordinator: Job = serde_json::from_value(items[5].clone()).unwrap();
    let workers: Job = serde_json::from_value(items[6].clone()).unwrap();
    for item in items {
        assert_eq!(item["metadata"]["namespace"], "load");
    }

    // The ConfigMap carries the plugin's and the run config's bytes, the config
    // without its [env], whose values are in the Secret.
    let data = files.binary_data.unwrap();
    assert_eq!(
        data["plugin.wasm"].0,
        std::fs::read(common::plugin("hello")).unwrap()
    );
    assert_eq!(data["file1-run.toml"].0, b"");
    assert_eq!(env.data.unwrap()["BASE_URL"].0, b"http://api:8080");

    // The coordinator reads them from the ConfigMap's mount, listens on the Service's
    // port, and gets the run flags.
    let pod = coordinator.spec.as_ref().unwrap().template.clone();
    let pod_spec = pod.spec.unwrap();
    let c = &pod_spec.containers[0];
    assert_eq!(
        c.args.as_ref().unwrap(),
        &[
            "coordinate",
            "/loadtest/plugin.wasm",
            "--workers",
            "3",
            "--listen",
            "0.0.0.0:7878",
            "--out",
            "/results",
            "--vus",
            "30",
            "-c",
            "/loadtest/file1-run.toml",
            "--allow",
            "http://api:8080",
            "-e",
            "BASE_URL",
        ]
    );
    let files_volume = pod_spec
        .volumes
        .unwrap()
        .into_iter()
        .find_map(|v| v.config_map)
        .expect("the ConfigMap is a volume");
    assert_eq!(Some(files_volume.name), files.metadata.name);
    let mounts = c.volume_mounts.as_ref().unwrap();
    assert!(mounts
        .iter()
        .any(|m| m.mount_path == "/loadtest" && m.read_only == Some(true)));

    // The Service selects the coordinator's pod, and only it.
    let spec = service.spec.unwrap();
    let selector = spec.selector.unwrap();
    let coordinator_labels = pod.metadata.unwrap().labels.unwrap();
    let worker_pod = workers.spec.as_ref().unwrap().template.clone();
    let worker_labels = worker_pod.metadata.unwrap().labels.unwrap();
    let selects = |labels: &std::collections::BTreeMap<String, String>| {
        selector.iter().all(|(k, v)| labels.get(k) == Some(v))
    };
    assert!(selects(&coordinator_labels));
    assert!(!selects(&worker_labels));
    let port = &spec.ports.unwrap()[0];
    assert_eq!(port.port, 7878);

    // The workers: an Indexed Job of 3, each dialling the Service by its name.
    let job = workers.spec.unwrap();
    assert_eq!(job.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((job.completions, job.parallelism), (Some(3), Some(3)));
    assert_eq!(job.backoff_limit, Some(0));
    let w = &worker_pod.spec.unwrap().containers[0];
    let service_name = service.metadata.name.unwrap();
    assert_eq!(service_name, "shop-coordinator");
    assert_eq!(
        w.args.as_ref().unwrap(),
        &[
            "worker",
            "--coordinator",
            &format!("{service_name}:{}", port.port),
            "--name",
            "shop-worker-$(JOB_COMPLETION_INDEX)",
            "--index",
            "$(JOB_COMPLETION_INDEX)",
        ]
    );
    // The index the name refers to is the pod's completion index.
    let index_env = w
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "JOB_COMPLETION_INDEX")
        .expect("JOB_COMPLETION_INDEX is declared");
    let field = index_env
        .value_from
        .as_ref()
        .unwrap()
        .field_ref
        .as_ref()
        .unwrap();
    assert_eq!(
        field.field_path,
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );

    // Both read the token from the Secret, as HOST_CLUSTER_TOKEN (never an argument).
    let secret_name = secret.metadata.name.clone().unwrap();
    assert_eq!(secret.string_data.as_ref().unwrap()["token"], TOKEN);
    let reads_token = |c: &Container| {
        let env = c.env.as_ref().unwrap();
        let token = env
            .iter()
            .find(|e| e.name == "HOST_CLUSTER_TOKEN")
            .expect("HOST_CLUSTER_TOKEN is set");
        assert!(token.value.is_none());
        let key = token
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!(
            (key.name.as_str(), key.key.as_str()),
            (secret_name.as_str(), "token")
        );
        assert!(!c.args.as_ref().unwrap().iter().any(|a| a.contains(TOKEN)));
    };
    reads_token(c);
    reads_token(w);
    // Only the workers' pods reach the coordinator's pod, on its port.
    let policy = policy.spec.unwrap();
    let selected = policy.pod_selector.unwrap().match_labels.unwrap();
    assert_eq!(selected, coordinator_labels);
    assert_eq!(policy.policy_types.unwrap(), ["Ingress"]);
    let rules = policy.ingress.unwrap();
    assert_eq!(rules.len(), 1);
    let from = rules[0].from.as_ref().unwrap();
    assert_eq!(from.len(), 1);
    let peer = from[0].pod_selector.as_ref().unwrap();
    assert_eq!(peer.match_labels.as_ref().unwrap(), &worker_labels);
    assert!(from[0].namespace_selector.is_none() && from[0].ip_block.is_none());
    let ports = rules[0].ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(
        ports[0].port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(7878))
    );

    // Index i runs segment i of the sequence; the segments cover the run once.
    let segments = workers.metadata.annotations.unwrap()["loadtest.host/segments"].clone();
    assert_eq!(segments, "0:1/3 1/3:2/3 2/3:1");
    let mut total = 0;
    for (i, segment) in segments.split(' ').enumerate() {
        assert_eq!(segment_of(i as u32, 3).to_string(), segment);
        let tuple = from_flags(Some(segment), Some("0,1/3,2/3,1")).unwrap();
        assert_eq!(tuple.index(), i);
        total += tuple.scale(30);
    }
    assert_eq!(total, 30, "the workers' VUs add up to --vus");
}

#[test]
fn yaml_holds_the_same_objects() {
    let dir = tempfile::tempdir().unwrap();
    let json = render(dir.path(), "json");
    let yaml = render(dir.path(), "yaml");
    assert!(yaml.status.success(), "{}", stderr(&yaml));
    let list: Value = serde_json::from_slice(&json.stdout).unwrap();
    let text = String::from_utf8(yaml.stdout).unwrap();
    let docs: Vec<Value> = text
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_norway::from_str(d).unwrap())
        .collect();
    assert_eq!(&docs, list["items"].as_array().unwrap());
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = common::plugin("hello");
    let plugin = plugin.to_str().unwrap();
    for (args, says) in [
        (vec!["--workers", "0", plugin], "at least 1"),
        (
            vec!["--workers", "2", "--name", "Shop", plugin],
            "DNS label",
        ),
        (vec!["--workers", "2", plugin, "--vuss", "3"], "--vuss"),
        (
            vec!["--workers", "2", plugin, "--out", "x"],
            "cannot be given here",
        ),
        (
            vec!["--workers", "2", plugin, "--execution-segment", "0:1/2"],
            "hands each worker its segment",
        ),
        (
            vec!["--workers", "2", plugin, "-c", "missing.toml"],
            "missing.toml",
        ),
        (
            vec!["--workers", "2", "nothing.wasm"],
            "cannot read the plugin",
        ),
    ] {
        let mut argv = vec!["k8s", "render"];
        argv.extend(&args);
        let out = host(&argv, dir.path());
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "nothing rendered for {args:?}");
    }
}

/// A k6 script's component (about 3 MB) could not be rendered at all: a ConfigMap holds
/// 1 MiB (issue 49 item 22). A registry reference is rendered instead: nothing of the
/// plugin in the ConfigMap, the coordinator pulls it (and hands its workers the digest).
#[test]
fn a_plugin_in_a_registry_is_pulled_by_the_pods_not_shipped() {
    let dir = tempfile::tempdir().unwrap();
    let reference = "127.0.0.1:5000/team/checkout:1.2.0";
    let out = host(
        &[
            "k8s",
            "render",
            "--workers",
            "2",
            "--format",
            "json",
            reference,
            "--vus",
            "4",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    let files = items.iter().find(|i| i["kind"] == "ConfigMap").unwrap();
    let files: ConfigMap = serde_json::from_value(files.clone()).unwrap();
    assert!(
        files.binary_data.unwrap_or_default().is_empty(),
        "nothing of the plugin is shipped"
    );
    let coordinator = items
        .iter()
        .find(|i| {
            i["kind"] == "Job"
                && i["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .ends_with("coordinator")
        })
        .unwrap();
    let coordinator: Job = serde_json::from_value(coordinator.clone()).unwrap();
    let args = coordinator.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert_eq!(args[..2], ["coordinate", reference], "{args:?}");

    // A script is refused with the way to render it.
    std::fs::write(dir.path().join("s.js"), "export default function () {}\n").unwrap();
    let out = host(&["k8s", "render", "--workers", "2", "s.js"], dir.path());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("host k8s render REGISTRY/NAME:TAG"),
        "{}",
        stderr(&out)
    );
    // A reference that does not parse is refused before anything is rendered.
    let out = host(
        &["k8s", "render", "--workers", "2", "127.0.0.1:5000/../x:1"],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
}

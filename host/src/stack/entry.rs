//! A stack's entry: the URLs of the ports it publishes, http or https, the CA to trust
//! for the https ones, and pointing a run at them and at nothing else.
//!
//! TLS is declared on the entry service with two labels, since a published port alone
//! does not say what it speaks:
//!
//! ```yaml
//! labels:
//!   loadtest.tls-ports: "8443"        # container ports that speak TLS
//!   loadtest.tls-ca: "/tmp/ca.pem"    # the CA (PEM) clients should trust, inside the container
//! ```
//!
//! The CA is read out of the container once it is ready (the Engine's archive endpoint,
//! so a `FROM scratch` image works) and trusted by the run beside the system's roots,
//! so a stack whose certificate is made at start is tested with verification on.

use crate::config::Overrides;
use crate::docker::{files, ServiceContainer};
use anyhow::{Context, Result};
use bollard::Docker;
use std::path::{Path, PathBuf};

/// The label listing the container ports that speak TLS (comma-separated).
pub(crate) const TLS_PORTS_LABEL: &str = "loadtest.tls-ports";

/// The label naming the CA certificate (PEM) inside the container.
pub(crate) const TLS_CA_LABEL: &str = "loadtest.tls-ca";

/// A published port of an entry service, as a URL the host can reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryUrl {
    /// The service that publishes it.
    pub service: String,
    /// The port inside the container.
    pub container_port: u16,
    /// `http://127.0.0.1:PORT`, or `https://` for a port in `loadtest.tls-ports`.
    pub url: String,
    /// For https: the CA read out of the container (`loadtest.tls-ca`), on the host.
    pub ca_file: Option<PathBuf>,
}

/// One URL per published port; a port bound to every interface is still reached
/// through loopback, since the host only ever aims at loopback. A port listed in
/// `loadtest.tls-ports` is https.
pub(crate) fn entry_urls(containers: &[ServiceContainer]) -> Result<Vec<EntryUrl>> {
    let mut urls = Vec::new();
    for c in containers {
        let tls_ports = tls_ports(c)?;
        for port in &c.published {
            if !matches!(port.host_ip.as_str(), "127.0.0.1" | "" | "0.0.0.0") {
                continue;
            }
            if port.host_ip != "127.0.0.1" {
                eprintln!(
                    "warning: {} publishes port {} on every interface; bind it to 127.0.0.1 in the compose file",
                    c.service, port.container_port
                );
            }
            let scheme = if tls_ports.contains(&port.container_port) {
                "https"
            } else {
                "http"
            };
            let url = format!("{scheme}://127.0.0.1:{}", port.host_port);
            if !urls.iter().any(|u: &EntryUrl| u.url == url) {
                urls.push(EntryUrl {
                    service: c.service.clone(),
                    container_port: port.container_port,
                    url,
                    ca_file: None,
                });
            }
        }
    }
    Ok(urls)
}

/// The ports of `loadtest.tls-ports`, with an error that names a bad one.
fn tls_ports(c: &ServiceContainer) -> Result<Vec<u16>> {
    let Some(list) = c.labels.get(TLS_PORTS_LABEL) else {
        return Ok(Vec::new());
    };
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse().map_err(|_| {
                anyhow::anyhow!(
                    "service {}: label {TLS_PORTS_LABEL}={list:?}: {p:?} is not a port number; \
                     list the container ports that speak TLS, as \"8443\" or \"8443,9443\"",
                    c.service
                )
            })
        })
        .collect()
}

/// Reads each https entry's CA (`loadtest.tls-ca`) out of its container into `dir`,
/// and records where. An https entry without the label is trusted by the system's
/// roots (or the run's `[tls] ca_file`) alone.
pub(crate) async fn fetch_cas(
    docker: &Docker,
    containers: &[ServiceContainer],
    urls: &mut [EntryUrl],
    dir: &Path,
) -> Result<()> {
    for url in urls.iter_mut().filter(|u| u.url.starts_with("https://")) {
        let Some(c) = containers.iter().find(|c| c.service == url.service) else {
            continue;
        };
        let Some(path) = c.labels.get(TLS_CA_LABEL) else {
            continue;
        };
        let pem = files::read_file(docker, &c.id, path)
            .await
            .with_context(|| {
                format!(
                    "service {}: cannot read its CA {path} (label {TLS_CA_LABEL}); \
                 does the service write it there before it is healthy?",
                    c.service
                )
            })?;
        let file = dir.join(format!("{}-ca.pem", c.service));
        crate::files::create_private(&file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &pem))
            .with_context(|| format!("cannot write {}", file.display()))?;
        url.ca_file = Some(file);
    }
    Ok(())
}

/// Points a run at the stack and nothing else: `BASE_URL` (the first entry),
/// `BASE_URL_<SERVICE>` for each service's first published port and
/// `BASE_URL_<SERVICE>_<CONTAINER PORT>` for each of its ports (a service that
/// publishes two, such as the demo API's REST and gRPC faces, keeps its first as the
/// plain name), the allowlist replaced by the entry URLs, and their CAs trusted.
pub(crate) fn point_run_at(urls: &[EntryUrl], overrides: &mut Overrides) {
    if let Some(entry) = urls.first() {
        overrides.env.push(("BASE_URL".into(), entry.url.clone()));
    }
    for (i, url) in urls.iter().enumerate() {
        let key = format!("BASE_URL_{}", url.service.to_uppercase().replace('-', "_"));
        if !urls[..i].iter().any(|u| u.service == url.service) {
            overrides.env.push((key.clone(), url.url.clone()));
        }
        overrides
            .env
            .push((format!("{key}_{}", url.container_port), url.url.clone()));
        if let Some(ca) = &url.ca_file {
            if !overrides.ca_files.contains(ca) {
                overrides.ca_files.push(ca.clone());
            }
        }
    }
    overrides.allow = urls.iter().map(|u| u.url.clone()).collect();
    overrides.allow_only = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docker::containers::PublishedPort;

    fn container(labels: &[(&str, &str)], ports: &[(u16, u16)]) -> ServiceContainer {
        ServiceContainer {
            id: "id".into(),
            name: "p_api_1".into(),
            service: "api".into(),
            state: "running".into(),
            cpuset: None,
            memory_limit: None,
            health: None,
            exit_code: None,
            oom_killed: false,
            published: ports
                .iter()
                .map(|&(container_port, host_port)| PublishedPort {
                    container_port,
                    host_ip: "127.0.0.1".into(),
                    host_port,
                })
                .collect(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn ports_labelled_tls_are_https_and_others_http() {
        let c = container(
            &[(TLS_PORTS_LABEL, "8443")],
            &[(8080, 40001), (8443, 40002)],
        );
        let urls: Vec<String> = entry_urls(&[c])
            .unwrap()
            .into_iter()
            .map(|u| u.url)
            .collect();
        assert_eq!(urls, ["http://127.0.0.1:40001", "https://127.0.0.1:40002"]);
    }

    #[test]
    fn a_bad_tls_port_label_names_the_service_and_the_fix() {
        let c = container(&[(TLS_PORTS_LABEL, "8443,https")], &[(8443, 40002)]);
        let e = entry_urls(&[c]).unwrap_err().to_string();
        assert!(
            e.contains("service api") && e.contains("\"https\" is not a port number"),
            "{e}"
        );
    }

    #[test]
    fn a_run_is_pointed_at_the_entries_and_trusts_their_cas() {
        let urls = vec![EntryUrl {
            service: "api".into(),
            container_port: 8443,
            url: "https://127.0.0.1:40002".into(),
            ca_file: Some(PathBuf::from("/tmp/x/api-ca.pem")),
        }];
        let mut overrides = Overrides {
            allow: vec!["http://elsewhere".into()],
            ..Overrides::default()
        };
        point_run_at(&urls, &mut overrides);
        assert_eq!(overrides.allow, ["https://127.0.0.1:40002"]);
        assert!(overrides.allow_only);
        assert!(overrides
            .env
            .contains(&("BASE_URL_API".into(), "https://127.0.0.1:40002".into())));
        assert_eq!(overrides.ca_files, [PathBuf::from("/tmp/x/api-ca.pem")]);
    }

    #[test]
    fn a_service_with_two_ports_keeps_its_first_as_the_plain_name() {
        let c = container(&[], &[(26500, 40003), (8080, 40001)]);
        let mut urls = entry_urls(&[c]).unwrap();
        // Docker's ports come sorted by container port (docker::containers).
        urls.sort_by_key(|u| u.container_port);
        let mut overrides = Overrides::default();
        point_run_at(&urls, &mut overrides);
        let env = |k: &str| -> Vec<&str> {
            overrides
                .env
                .iter()
                .filter(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert_eq!(env("BASE_URL"), ["http://127.0.0.1:40001"]);
        assert_eq!(env("BASE_URL_API"), ["http://127.0.0.1:40001"]);
        assert_eq!(env("BASE_URL_API_8080"), ["http://127.0.0.1:40001"]);
        assert_eq!(env("BASE_URL_API_26500"), ["http://127.0.0.1:40003"]);
    }
}

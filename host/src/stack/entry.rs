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
//! A published UDP port that speaks HTTP/3 is declared the same way
//! (`loadtest.h3-ports: "8443"`): its entry is an `https://` URL reached over QUIC,
//! with the CA of `loadtest.tls-ca`. Other UDP ports are not HTTP entries.
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

/// The label listing the container UDP ports that speak HTTP/3 (comma-separated).
pub(crate) const H3_PORTS_LABEL: &str = "loadtest.h3-ports";

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
    /// HTTP/3 over a published UDP port (`loadtest.h3-ports`), not TCP.
    pub h3: bool,
}

/// One URL per published port; a port bound to every interface is still reached
/// through loopback, since the host only ever aims at loopback. A port listed in
/// `loadtest.tls-ports` is https.
pub(crate) fn entry_urls(containers: &[ServiceContainer]) -> Result<Vec<EntryUrl>> {
    let mut urls = Vec::new();
    for c in containers {
        let tls_ports = ports_of(c, TLS_PORTS_LABEL, "speak TLS")?;
        let h3_ports = ports_of(c, H3_PORTS_LABEL, "speak HTTP/3 over UDP")?;
        for port in &c.published {
            if !matches!(port.host_ip.as_str(), "127.0.0.1" | "" | "0.0.0.0") {
                continue;
            }
            let h3 = match port.protocol.as_str() {
                "tcp" => false,
                "udp" if h3_ports.contains(&port.container_port) => true,
                _ => continue,
            };
            if port.host_ip != "127.0.0.1" {
                eprintln!(
                    "warning: {} publishes port {} on every interface; bind it to 127.0.0.1 in the compose file",
                    c.service, port.container_port
                );
            }
            let scheme = if h3 || tls_ports.contains(&port.container_port) {
                "https"
            } else {
                "http"
            };
            let url = format!("{scheme}://127.0.0.1:{}", port.host_port);
            if !urls.iter().any(|u: &EntryUrl| u.url == url && u.h3 == h3) {
                urls.push(EntryUrl {
                    service: c.service.clone(),
                    container_port: port.container_port,
                    url,
                    ca_file: None,
                    h3,
                });
            }
        }
    }
    Ok(urls)
}

/// The ports of the label `label` (`loadtest.tls-ports`, `loadtest.h3-ports`), with an
/// error that names a bad one and what the label lists (`what`).
fn ports_of(c: &ServiceContainer, label: &str, what: &str) -> Result<Vec<u16>> {
    let Some(list) = c.labels.get(label) else {
        return Ok(Vec::new());
    };
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse().map_err(|_| {
                anyhow::anyhow!(
                    "service {}: label {label}={list:?}: {p:?} is not a port number; \
                     list the container ports that {what}, as \"8443\" or \"8443,9443\"",
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
    let mut read: Vec<(String, PathBuf)> = Vec::new();
    for url in urls.iter_mut().filter(|u| u.url.starts_with("https://")) {
        // A service's https and HTTP/3 entries share its CA: read once.
        if let Some((_, file)) = read.iter().find(|(s, _)| *s == url.service) {
            url.ca_file = Some(file.clone());
            continue;
        }
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
        read.push((url.service.clone(), file.clone()));
        url.ca_file = Some(file);
    }
    Ok(())
}

/// Points a run at the stack and nothing else: `BASE_URL` (the first TCP entry) and
/// `BASE_URL_<SERVICE>` (each service's first), `BASE_URL_<SERVICE>_<CONTAINER PORT>`
/// for each of its TCP ports (a service that publishes several, such as the demo API's
/// REST and gRPC faces, keeps its first as the plain name), `H3_URL` and
/// `H3_URL_<SERVICE>` likewise for the HTTP/3 entries, the allowlist replaced by the
/// entry URLs, and their CAs trusted.
pub(crate) fn point_run_at(urls: &[EntryUrl], overrides: &mut Overrides) {
    let mut named: Vec<String> = Vec::new();
    for url in urls {
        let (all, one) = match url.h3 {
            false => ("BASE_URL", "BASE_URL_"),
            true => ("H3_URL", "H3_URL_"),
        };
        let service = format!("{one}{}", url.service.to_uppercase().replace('-', "_"));
        let by_port = (!url.h3).then(|| format!("{service}_{}", url.container_port));
        for key in [Some(all.to_string()), Some(service), by_port]
            .into_iter()
            .flatten()
        {
            if !named.contains(&key) {
                overrides.env.push((key.clone(), url.url.clone()));
                named.push(key);
            }
        }
        if let Some(ca) = &url.ca_file {
            if !overrides.ca_files.contains(ca) {
                overrides.ca_files.push(ca.clone());
            }
        }
    }
    overrides.allow.clear();
    for url in urls {
        // An https port and its HTTP/3 twin are one origin.
        if !overrides.allow.contains(&url.url) {
            overrides.allow.push(url.url.clone());
        }
    }
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
                    protocol: "tcp".into(),
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
    fn a_udp_port_labelled_h3_is_an_https_entry_over_quic_and_other_udp_ports_none() {
        let mut c = container(
            &[(TLS_PORTS_LABEL, "8443"), (H3_PORTS_LABEL, "8443")],
            &[(8080, 40001), (8443, 40002)],
        );
        for (port, host_port) in [(8443, 40002), (9999, 40003)] {
            c.published.push(PublishedPort {
                container_port: port,
                host_ip: "127.0.0.1".into(),
                host_port,
                protocol: "udp".into(),
            });
        }
        let mut urls = entry_urls(&[c]).unwrap();
        let shown: Vec<(&str, bool)> = urls.iter().map(|u| (u.url.as_str(), u.h3)).collect();
        assert_eq!(
            shown,
            [
                ("http://127.0.0.1:40001", false),
                ("https://127.0.0.1:40002", false),
                ("https://127.0.0.1:40002", true),
            ]
        );
        urls[1].ca_file = Some(PathBuf::from("/ca.pem"));
        let mut overrides = Overrides::default();
        point_run_at(&urls, &mut overrides);
        let env = |k: &str| {
            overrides
                .env
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(env("BASE_URL"), Some("http://127.0.0.1:40001"));
        assert_eq!(env("BASE_URL_API"), Some("http://127.0.0.1:40001"));
        assert_eq!(env("H3_URL"), Some("https://127.0.0.1:40002"));
        assert_eq!(env("H3_URL_API"), Some("https://127.0.0.1:40002"));
        // By container port for the TCP entries only: the HTTP/3 one shares 8443's URL.
        assert_eq!(env("BASE_URL_API_8080"), Some("http://127.0.0.1:40001"));
        assert_eq!(env("BASE_URL_API_8443"), Some("https://127.0.0.1:40002"));
        assert_eq!(overrides.env.len(), 6, "{:?}", overrides.env);
        assert_eq!(
            overrides.allow,
            ["http://127.0.0.1:40001", "https://127.0.0.1:40002"]
        );
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
            h3: false,
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

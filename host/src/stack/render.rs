//! What `host up` prints: each container with its state and limits, then the entry
//! URLs to point a run at.

use super::up::Stack;
use std::fmt::Write as _;

/// The stack as a short table plus its entry URLs.
pub(crate) fn render(stack: &Stack) -> String {
    let mut out = format!(
        "stack {} is up ({:.1}s):\n",
        stack.project,
        stack.took.as_secs_f64()
    );
    let width = stack
        .containers
        .iter()
        .map(|c| c.service.len())
        .max()
        .unwrap_or(0);
    for c in &stack.containers {
        let state = c.health.as_deref().unwrap_or(&c.state);
        let cpus = c
            .cpuset
            .as_ref()
            .map(|s| format!("cpuset {s}"))
            .unwrap_or_else(|| "all cores".into());
        let memory = c
            .memory_limit
            .map(|m| format!("memory {} MiB", m >> 20))
            .unwrap_or_else(|| "no memory limit".into());
        let _ = writeln!(
            out,
            "  {:width$}  {state:9}  {cpus:12}  {memory:16}  {}",
            c.service, c.name
        );
    }
    if stack.entry_urls.is_empty() {
        out.push_str("no service publishes a port\n");
    } else {
        out.push_str("entry URLs:\n");
        let mut shown_cas = Vec::new();
        for url in &stack.entry_urls {
            let _ = match url.h3 {
                false => writeln!(
                    out,
                    "  {}  ({}:{})",
                    url.url, url.service, url.container_port
                ),
                true => writeln!(
                    out,
                    "  {}  HTTP/3 over UDP ({}:{}/udp; [http] versions = [\"h3\"])",
                    url.url, url.service, url.container_port
                ),
            };
            // An https entry and its HTTP/3 twin share the CA: named once.
            if let Some(ca) = url.ca_file.as_ref().filter(|ca| !shown_cas.contains(ca)) {
                shown_cas.push(ca);
                let _ = writeln!(
                    out,
                    "    its CA: {} (trust it: [tls] ca_file)",
                    ca.display()
                );
            }
        }
    }
    out
}

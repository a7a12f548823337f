//! The demo target as a child process (`host target`), for `host demo`.
//!
//! Why a child and not threads of this process: the generator samples its own process
//! (CPU and RSS) to judge whether it was the bottleneck, and a target inside it would
//! count as generator load; and a process's memory cannot be split between threads.
//! As a child, the target's CPU and memory are its own, read from /proc like any
//! `--sample-pid`. It gets a process group of its own, so the terminal's Ctrl-C reaches
//! only the host, which stops the target after the run's graceful stop.

use anyhow::{anyhow, bail, Context, Result};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// What `host target` prints once it listens, before the URL.
pub(crate) const LISTENING: &str = "demo target listening on ";
/// What `host target` prints when it stops, before the count.
pub(crate) const SERVED: &str = "the demo target served ";

/// How long the child may take to start listening, and to stop.
const START_TIMEOUT: Duration = Duration::from_secs(20);
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A running `host target` child.
pub(crate) struct TargetProcess {
    child: Child,
    /// Its process id.
    pub pid: i32,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub base_url: String,
    served: oneshot::Receiver<u64>,
}

impl TargetProcess {
    /// Starts this program's `host target` on a free loopback port with `fault_flags`,
    /// and waits until it listens.
    pub(crate) async fn start(fault_flags: &[String]) -> Result<Self> {
        let exe = std::env::current_exe()
            .context("cannot find the host program to start the demo target")?;
        let mut child = Command::new(&exe)
            .arg("target")
            .args(["--listen", "127.0.0.1:0"])
            .args(fault_flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start the demo target ({} target)", exe.display()))?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| anyhow!("the demo target exited at once"))?;
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(START_TIMEOUT, lines.next_line())
            .await
            .map_err(|_| {
                anyhow!("the demo target did not start listening within {START_TIMEOUT:?}")
            })?
            .context("cannot read the demo target's output")?;
        let Some(base_url) = first.as_deref().and_then(|l| l.strip_prefix(LISTENING)) else {
            bail!("the demo target did not start: it said {first:?}");
        };
        let base_url = base_url.trim().to_string();
        let (tx, served) = oneshot::channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(n) = line
                    .strip_prefix(SERVED)
                    .and_then(|rest| rest.split(' ').next()?.parse().ok())
                {
                    let _ = tx.send(n);
                    return;
                }
            }
        });
        Ok(Self {
            child,
            pid,
            base_url,
            served,
        })
    }

    /// Stops the target (SIGTERM, then SIGKILL after a few seconds) and returns how
    /// many requests it served, if it said.
    pub(crate) async fn stop(mut self) -> Option<u64> {
        // SAFETY: kill(2) on our own child's pid, which is not reaped before the wait below.
        unsafe {
            libc::kill(self.pid, libc::SIGTERM);
        }
        if tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        tokio::time::timeout(Duration::from_secs(1), self.served)
            .await
            .ok()?
            .ok()
    }
}

//! One Compose stack's life around whatever uses it: `host up`, `host run --stack` and
//! `host sweep --stack` all start it, stop on Ctrl-C while it starts, point their runs
//! at its entry URLs, and at the end keep it or remove it, with the same words.

use super::entry::EntryUrl;
use super::up::{self, Stack, UpOptions};
use anyhow::{anyhow, Result};

/// Which command the stack is started for: what its messages say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// `host up`: the stack is left running for later runs.
    Up,
    /// `host run --stack`: one run against it.
    Run,
    /// `host sweep --stack`: every level of a sweep against it.
    Sweep,
}

/// How [`StackSession::start`] ended.
pub(crate) enum Start {
    /// Every service is ready.
    Ready(StackSession),
    /// SIGINT or SIGTERM came while it started; what was started is removed.
    Interrupted,
}

/// A stack that is up, and whether it stays up when its user is done with it.
pub(crate) struct StackSession {
    stack: Stack,
    keep: bool,
    purpose: Purpose,
}

impl StackSession {
    /// Brings the stack up and waits until it is ready. A signal while it starts
    /// removes what was started, as after any failure (on failure `up` leaves nothing).
    pub(crate) async fn start(options: &UpOptions, keep: bool, purpose: Purpose) -> Result<Start> {
        let mut signals = crate::signals::listen();
        tokio::select! {
            stack = up::up(options) => Ok(Start::Ready(StackSession { stack: stack?, keep, purpose })),
            _ = signals.next() => {
                match purpose {
                    Purpose::Up => eprintln!("interrupted: removing project {}", options.project),
                    Purpose::Run | Purpose::Sweep => eprintln!(
                        "interrupted while starting: removing project {}",
                        options.project
                    ),
                }
                up::down_quietly(&options.project).await;
                Ok(Start::Interrupted)
            }
        }
    }

    /// The stack as it became ready.
    pub(crate) fn stack(&self) -> &Stack {
        &self.stack
    }

    /// Its first entry URL, which a run's `BASE_URL` becomes; with none the stack is
    /// removed, since a plugin could reach nothing. `file` is the compose file, named in
    /// the error. Says the stack is ready (unless `quiet`).
    pub(crate) async fn entry(&self, file: &std::path::Path, quiet: bool) -> Result<&EntryUrl> {
        let Some(entry) = self.stack.entry_urls.first() else {
            up::down_quietly(&self.stack.project).await;
            return Err(anyhow!(
                "no service of {} publishes a port, so the plugin could reach nothing; \
                 publish the entry service's port on 127.0.0.1 (ports: [\"127.0.0.1::8080\"])",
                file.display()
            ));
        };
        if !quiet {
            let prefix = match self.purpose {
                Purpose::Sweep => "sweep: ",
                Purpose::Up | Purpose::Run => "",
            };
            eprintln!(
                "{prefix}stack {} ready in {:.1}s; BASE_URL={}",
                self.stack.project,
                self.stack.took.as_secs_f64(),
                entry.url
            );
        }
        Ok(entry)
    }

    /// Leaves the stack running on purpose, without a word (`host up` prints the stack
    /// itself): a second `up` with its name is refused until `host down`.
    pub(crate) fn leave_running(self) -> Stack {
        self.stack.keep();
        self.stack
    }

    /// Its user is done: keeps the stack (`--keep`, `[stack] keep`) or removes it, and
    /// says which.
    pub(crate) async fn end(self) {
        let project = &self.stack.project;
        if self.keep {
            self.stack.keep();
            eprintln!(
                "stack {project} kept running; remove it with: host down --project {project}"
            );
            return;
        }
        match up::down(project).await {
            Ok(removed) => eprintln!(
                "stack {project} removed ({})",
                up::describe_removed(&removed)
            ),
            Err(e) => eprintln!("warning: could not remove the stack {project}: {e:#}"),
        }
    }
}

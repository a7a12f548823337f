//! Asynchronous commands and their outbox: `POST /commands` queues work and answers at
//! once; a worker (`demo-target worker`, a process of its own in the Compose stack)
//! claims queued commands from the outbox, does the work off the request path and
//! reports the result, which `GET /commands/{id}` then shows.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::Notify;

use crate::store::Note;

/// Where a command is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting in the outbox for a worker.
    Queued,
    /// Claimed by a worker, not finished yet.
    Running,
    /// Finished; `result` holds what the worker reported.
    Done,
    /// The worker could not do it; `result` holds `{"error": …}`.
    Failed,
}

impl Status {
    /// The name `GET /commands/{id}` shows (`queued`, `running`, `done`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
        }
    }
}

/// One command, as `GET /commands/{id}` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Command {
    /// Unique id, growing from 1.
    pub id: u64,
    /// What to do: `export` (summarise a group's notes).
    pub kind: String,
    /// The group it works on.
    pub group: u32,
    /// Where it is.
    pub status: Status,
    /// What the worker reported, once done or failed.
    pub result: Option<serde_json::Value>,
}

/// A claimed command as the worker receives it: the command plus the data it needs.
#[derive(Clone, Debug, Serialize)]
pub struct Job {
    /// The command's id, to report the result under.
    pub id: u64,
    /// What to do.
    pub kind: String,
    /// The group it works on.
    pub group: u32,
    /// The group's notes when it was claimed.
    pub notes: Vec<Note>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    queue: VecDeque<u64>,
    all: HashMap<u64, Command>,
    /// Ids in creation order, to forget the oldest first.
    order: VecDeque<u64>,
}

/// The commands of one server and the outbox workers claim them from.
pub struct Commands {
    inner: Mutex<Inner>,
    queued: Notify,
    max_kept: usize,
    submitted: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
}

impl Commands {
    /// Keeps at most `max_kept` commands; the oldest are forgotten first, so a load
    /// test cannot grow memory without bound.
    pub fn new(max_kept: usize) -> Self {
        Commands {
            inner: Mutex::default(),
            queued: Notify::new(),
            max_kept: max_kept.max(1),
            submitted: AtomicU64::new(0),
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a command and wakes a waiting worker.
    pub fn submit(&self, kind: &str, group: u32) -> Command {
        let mut inner = self.lock();
        inner.next_id += 1;
        let command = Command {
            id: inner.next_id,
            kind: kind.to_string(),
            group,
            status: Status::Queued,
            result: None,
        };
        inner.all.insert(command.id, command.clone());
        inner.order.push_back(command.id);
        inner.queue.push_back(command.id);
        while inner.order.len() > self.max_kept {
            if let Some(old) = inner.order.pop_front() {
                inner.all.remove(&old);
                inner.queue.retain(|&id| id != old);
            }
        }
        drop(inner);
        self.submitted.fetch_add(1, Ordering::Relaxed);
        self.queued.notify_waiters();
        command
    }

    /// The command with this id, if it is still kept.
    pub fn get(&self, id: u64) -> Option<Command> {
        self.lock().all.get(&id).cloned()
    }

    /// Commands waiting for a worker.
    pub fn queued(&self) -> usize {
        self.lock().queue.len()
    }

    /// Claims up to `max` queued commands (marking them running), waiting up to `wait`
    /// for one to arrive; `notes` gives each its group's notes.
    pub async fn claim(
        &self,
        max: usize,
        wait: Duration,
        notes: impl Fn(u32) -> Vec<Note>,
    ) -> Vec<Job> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Registered before looking, so a submit in between is not missed.
            let notified = self.queued.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let claimed: Vec<(u64, String, u32)> = {
                let mut inner = self.lock();
                let take = inner.queue.len().min(max.max(1));
                let ids: Vec<u64> = inner.queue.drain(..take).collect();
                ids.into_iter()
                    .filter_map(|id| {
                        let command = inner.all.get_mut(&id)?;
                        command.status = Status::Running;
                        Some((id, command.kind.clone(), command.group))
                    })
                    .collect()
            };
            if !claimed.is_empty() {
                return claimed
                    .into_iter()
                    .map(|(id, kind, group)| Job {
                        id,
                        kind,
                        group,
                        notes: notes(group),
                    })
                    .collect();
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Vec::new();
            }
        }
    }

    /// Records a worker's result: failed when it carries an `error`, done otherwise.
    /// False when the command is unknown (or forgotten) or already finished, so a
    /// result reported twice is counted once.
    pub fn complete(&self, id: u64, result: serde_json::Value) -> bool {
        let failed = result.get("error").is_some();
        let mut inner = self.lock();
        match inner.all.get_mut(&id) {
            Some(command) if matches!(command.status, Status::Queued | Status::Running) => {
                command.status = if failed { Status::Failed } else { Status::Done };
                command.result = Some(result);
                drop(inner);
                let counter = if failed { &self.failed } else { &self.done };
                counter.fetch_add(1, Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }

    /// Appends the commands' counters to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = write!(
            out,
            "# HELP demo_commands_submitted_total Commands accepted by POST /commands (202).\n\
             # TYPE demo_commands_submitted_total counter\n\
             demo_commands_submitted_total {}\n\
             # HELP demo_commands_finished_total Commands that reached a final status.\n\
             # TYPE demo_commands_finished_total counter\n\
             demo_commands_finished_total{{status=\"done\"}} {}\n\
             demo_commands_finished_total{{status=\"failed\"}} {}\n",
            get(&self.submitted),
            get(&self.done),
            get(&self.failed),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_claim_waits_for_a_submit_and_marks_it_running() {
        let commands = std::sync::Arc::new(Commands::new(10));
        let waiter = {
            let commands = commands.clone();
            tokio::spawn(async move {
                commands
                    .claim(8, Duration::from_secs(5), |_| Vec::new())
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let submitted = commands.submit("export", 3);
        let jobs = waiter.await.unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].id, submitted.id);
        assert_eq!(commands.get(submitted.id).unwrap().status, Status::Running);
        assert!(commands.complete(submitted.id, serde_json::json!({"notes": 0})));
        assert_eq!(commands.get(submitted.id).unwrap().status, Status::Done);
        // A second report of the same command changes nothing.
        assert!(!commands.complete(submitted.id, serde_json::json!({"error": "x"})));
        let empty = commands
            .claim(8, Duration::from_millis(20), |_| Vec::new())
            .await;
        assert!(empty.is_empty());
        let failing = commands.submit("export", 99);
        assert!(commands.complete(failing.id, serde_json::json!({"error": "empty"})));
        assert_eq!(commands.get(failing.id).unwrap().status, Status::Failed);
        let mut text = String::new();
        commands.render(&mut text);
        assert!(text.contains("demo_commands_submitted_total 2\n"), "{text}");
        assert!(text.contains("{status=\"done\"} 1\n"), "{text}");
        assert!(text.contains("{status=\"failed\"} 1\n"), "{text}");
    }

    #[test]
    fn the_oldest_commands_are_forgotten_past_the_cap() {
        let commands = Commands::new(2);
        let first = commands.submit("export", 1);
        commands.submit("export", 1);
        commands.submit("export", 1);
        assert!(commands.get(first.id).is_none());
        assert_eq!(commands.queued(), 2);
    }
}

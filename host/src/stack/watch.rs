//! Watches a stack's containers while a run goes on (Docker events, filtered by the
//! project's label): a service that exits or is OOM-killed is noted with its time,
//! and with `[stack] on_service_exit = "abort"` stops the run; one that is paused or
//! unpaused (`docker pause`) is noted with its time too, and the run goes on.

use super::{ServiceContainer, PROJECT_LABEL, SERVICE_LABEL};
use crate::config::OnServiceExit;
use crate::control::{RunControl, RunWatch, StopReason, WatchEvent};
use crate::sampling::docker::ContainerTarget;
use bollard::query_parameters::EventsOptionsBuilder;
use bollard::Docker;
use futures::StreamExt;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
use tokio::task::JoinHandle;

/// The watcher of one stack; stop it (or drop it) before the stack is taken down, or
/// the teardown would be noted as deaths.
pub(crate) struct ServiceWatch {
    docker: Docker,
    project: String,
    on_exit: OnServiceExit,
    /// Unix seconds when the watch was made: events from then on are delivered, even
    /// those between making it and the run's start.
    since: i64,
    seen: Arc<Mutex<Vec<WatchEvent>>>,
    task: Mutex<Option<JoinHandle<()>>>,
    /// The stack's running containers, sampled during the run.
    containers: Vec<ContainerTarget>,
}

impl ServiceWatch {
    /// A watch of `project`, not started yet; `containers` (the stack's, as `up` found
    /// them) are handed to the run's sampler.
    pub(crate) fn new(
        docker: Docker,
        project: &str,
        on_exit: OnServiceExit,
        containers: &[ServiceContainer],
    ) -> ServiceWatch {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        ServiceWatch {
            docker,
            project: project.to_string(),
            on_exit,
            since,
            seen: Arc::default(),
            task: Mutex::default(),
            containers: containers
                .iter()
                .filter(|c| c.state == "running")
                .cloned()
                .map(ContainerTarget::from)
                .collect(),
        }
    }

    /// Stops watching.
    pub(crate) fn stop(&self) {
        if let Some(task) = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

impl Drop for ServiceWatch {
    fn drop(&mut self) {
        self.stop();
    }
}

impl RunWatch for ServiceWatch {
    fn started(&self, t0: Instant, control: Arc<RunControl>) {
        let filters = HashMap::from([
            ("type".to_string(), vec!["container".to_string()]),
            (
                "label".to_string(),
                vec![format!("{PROJECT_LABEL}={}", self.project)],
            ),
            (
                "event".to_string(),
                ["die", "oom", "pause", "unpause"]
                    .map(String::from)
                    .to_vec(),
            ),
        ]);
        let options = EventsOptionsBuilder::default()
            .since(&self.since.to_string())
            .filters(&filters)
            .build();
        let mut events = self.docker.events(Some(options));
        let docker = self.docker.clone();
        let seen = self.seen.clone();
        let on_exit = self.on_exit;
        let task = tokio::spawn(async move {
            let mut oom = HashSet::new();
            while let Some(Ok(event)) = events.next().await {
                let actor = event.actor.unwrap_or_default();
                let id = actor.id.unwrap_or_default();
                let attributes = actor.attributes.unwrap_or_default();
                let service = attributes
                    .get(SERVICE_LABEL)
                    .cloned()
                    .unwrap_or_else(|| id.chars().take(12).collect());
                match event.action.as_deref() {
                    Some("oom") => {
                        oom.insert(id);
                    }
                    Some(action @ ("pause" | "unpause")) => {
                        // A paused service answers nothing but is not gone: noted, and
                        // the run goes on whatever `on_service_exit` says.
                        let at = Instant::now().max(t0);
                        let what = if action == "pause" {
                            "was paused"
                        } else {
                            "was unpaused"
                        }
                        .to_string();
                        eprintln!("warning: service {service} {what}");
                        seen.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(WatchEvent { at, service, what });
                    }
                    Some("die") => {
                        // An event from before the run (`since` has second
                        // resolution) counts as at its start.
                        let at = Instant::now().max(t0);
                        let code = attributes.get("exitCode").cloned().unwrap_or_default();
                        // The `oom` event can be missed or come late (it is the
                        // cgroup's notice, not the container's): the Engine's state says
                        // it too.
                        let oom_killed = oom.contains(&id) || oom_killed(&docker, &id).await;
                        let what = if oom_killed {
                            format!("was OOM-killed (exit code {code})")
                        } else if code == "137" {
                            "exited with code 137 (killed)".to_string()
                        } else {
                            format!("exited with code {code}")
                        };
                        let description = format!("service {service} {what}");
                        seen.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(WatchEvent { at, service, what });
                        if on_exit == OnServiceExit::Abort {
                            eprintln!(
                                "stopping: {description} ([stack] on_service_exit = \"abort\")"
                            );
                            control.stop_with(StopReason::ServiceExit(description));
                            control.hard_stop.cancel();
                        } else {
                            eprintln!("warning: {description}; the run goes on ([stack] on_service_exit = \"continue\")");
                        }
                    }
                    _ => {}
                }
            }
        });
        *self.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
    }

    fn events(&self) -> Vec<WatchEvent> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn containers(&self) -> Vec<ContainerTarget> {
        self.containers.clone()
    }
}

/// Whether the Engine says the kernel killed container `id` for its memory limit.
async fn oom_killed(docker: &Docker, id: &str) -> bool {
    docker
        .inspect_container(id, None)
        .await
        .ok()
        .and_then(|c| c.state)
        .and_then(|s| s.oom_killed)
        .unwrap_or(false)
}

//! Submit-and-follow: work that the server finishes after answering.
//!
//! The request that starts the work is answered `202 Accepted` with the job's id
//! (`{"id": 42, ...}`); the scenario then asks for the job's status every so often until
//! it is final, or gives up after a deadline. [`submit`] sends the first request and
//! [`Job::follow`] runs the polling loop; what one poll is (its request, its checks,
//! what counts as final) stays the scenario's own.
//!
//! ```no_run
//! use std::time::Duration;
//! use loadtest::{check, http, jobs};
//!
//! # fn f(base: &str) -> Result<(), String> {
//! let submit = http::post(format!("{base}/commands"))
//!     .json(&loadtest::serde_json::json!({ "kind": "export", "group": 1 }))
//!     .name("/commands");
//! let job = jobs::submit(submit, "submit answers 202")?;
//! let every = Duration::from_millis(50);
//! let status = job.follow(every, Duration::from_secs(30), |id| {
//!     let res = http::get(format!("{base}/commands/{id}"))
//!         .name("/commands/{id}")
//!         .send()?;
//!     let status: String = res.json::<loadtest::serde_json::Value>()?["status"]
//!         .as_str()
//!         .unwrap_or("")
//!         .to_owned();
//!     Ok((status == "done" || status == "failed").then_some(status))
//! })?;
//! check("the command finished", status.is_some());
//! # Ok(())
//! # }
//! ```

use std::time::{Duration, Instant};

use crate::http::RequestBuilder;

/// A job the server accepted: its id and when the request that started it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// The id the server gave the job.
    pub id: u64,
    /// When the request that submitted it was sent (before its answer).
    pub submitted: Instant,
}

/// The id in the answer to a submission.
#[derive(serde::Deserialize)]
struct Accepted {
    id: u64,
}

/// Sends `request`, which starts a job: records the check `accepted` (passed on a
/// `202`) and returns the job with the id of its JSON answer. Any other status is an
/// error that names the request (`POST /commands answered 500`).
pub fn submit(request: RequestBuilder, accepted: &str) -> Result<Job, String> {
    let what = request.label();
    let submitted = Instant::now();
    let res = request.send()?;
    if !crate::check(accepted, res.status() == 202) {
        return Err(format!("{what} answered {}", res.status()));
    }
    let Accepted { id } = res.json()?;
    Ok(Job { id, submitted })
}

impl Job {
    /// Calls `poll(id)` every `every` (a sleep first, then the poll) until it returns
    /// `Some`, which is returned; `Ok(None)` once `deadline` has passed since the job
    /// was submitted without a final answer (the scenario records the timeout as it
    /// wishes). An error from `poll` ends the loop.
    pub fn follow<T>(
        &self,
        every: Duration,
        deadline: Duration,
        poll: impl FnMut(u64) -> Result<Option<T>, String>,
    ) -> Result<Option<T>, String> {
        self.follow_with(every, deadline, crate::vu::sleep, poll)
    }

    /// [`follow`](Job::follow) with its sleep given (the host's in a plugin).
    fn follow_with<T>(
        &self,
        every: Duration,
        deadline: Duration,
        mut sleep: impl FnMut(Duration),
        mut poll: impl FnMut(u64) -> Result<Option<T>, String>,
    ) -> Result<Option<T>, String> {
        loop {
            sleep(every);
            if let Some(done) = poll(self.id)? {
                return Ok(Some(done));
            }
            if self.submitted.elapsed() > deadline {
                return Ok(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            id: 7,
            submitted: Instant::now(),
        }
    }

    #[test]
    fn polls_after_each_sleep_until_the_answer_is_final() {
        let mut sleeps = Vec::new();
        let mut polls = 0;
        let got = job().follow_with(
            Duration::from_millis(5),
            Duration::from_secs(60),
            |d| sleeps.push(d),
            |id| {
                assert_eq!(id, 7);
                polls += 1;
                Ok((polls == 3).then_some("done"))
            },
        );
        assert_eq!(got, Ok(Some("done")));
        assert_eq!(sleeps, vec![Duration::from_millis(5); 3]);
    }

    #[test]
    fn gives_up_after_the_deadline_with_at_least_one_poll() {
        let mut polls = 0;
        let got: Result<Option<()>, String> = job().follow_with(
            Duration::ZERO,
            Duration::ZERO,
            |_| std::thread::sleep(Duration::from_millis(1)),
            |_| {
                polls += 1;
                Ok(None)
            },
        );
        assert_eq!(got, Ok(None));
        assert_eq!(polls, 1);
    }

    #[test]
    fn a_failed_poll_ends_the_loop() {
        let got: Result<Option<()>, String> = job().follow_with(
            Duration::ZERO,
            Duration::from_secs(60),
            |_| {},
            |id| Err(format!("GET /commands/{id} answered 500")),
        );
        assert_eq!(got, Err("GET /commands/7 answered 500".to_owned()));
    }

    #[test]
    fn errors_name_the_request_by_its_name_tag_or_url() {
        let named = crate::http::post("http://127.0.0.1/commands").name("/commands");
        assert_eq!(named.label(), "POST /commands");
        let unnamed = crate::http::request("patch", "http://127.0.0.1/x");
        assert_eq!(unnamed.label(), "PATCH http://127.0.0.1/x");
    }

    #[test]
    fn the_id_is_read_from_the_answer() {
        let a: Accepted = serde_json::from_str(r#"{"id":42,"status":"queued"}"#).unwrap();
        assert_eq!(a.id, 42);
    }
}

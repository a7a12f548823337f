//! The survey's state: sign-in sessions (a cookie), each with its CSRF token, and the
//! single-use answer tokens handed out with each page. Bounded like the sign-in
//! tokens: the oldest sessions and unanswered tokens are forgotten first.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Most sessions kept, and most unanswered answer tokens kept.
const MAX_ENTRIES: usize = 100_000;

/// What happened to an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Recorded; its token is now spent.
    Accepted,
    /// The session is unknown (no or an expired cookie).
    NoSession,
    /// The CSRF token is not the session's.
    BadCsrf,
    /// The answer token was never issued to this session, or was used already.
    TokenRefused,
}

/// Counters of the survey, for tests and `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SurveyCounts {
    /// Successful form sign-ins.
    pub logins: u64,
    /// Survey pages served (each with a fresh answer token).
    pub pages: u64,
    /// Answers accepted.
    pub accepted: u64,
    /// Answers refused for a spent or unknown token.
    pub token_refused: u64,
    /// Answers refused for a wrong CSRF token.
    pub csrf_refused: u64,
}

struct Session {
    user: String,
    csrf: String,
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, Session>,
    session_order: VecDeque<String>,
    /// Answer token → the session it was issued to.
    tokens: HashMap<String, String>,
    token_order: VecDeque<String>,
}

/// Sessions, tokens and counters of one server.
pub struct Survey {
    inner: Mutex<Inner>,
    keys: RandomState,
    counter: AtomicU64,
    logins: AtomicU64,
    pages: AtomicU64,
    accepted: AtomicU64,
    token_refused: AtomicU64,
    csrf_refused: AtomicU64,
}

impl Default for Survey {
    fn default() -> Self {
        Survey {
            inner: Mutex::default(),
            keys: RandomState::new(),
            counter: AtomicU64::new(0),
            logins: AtomicU64::new(0),
            pages: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            token_refused: AtomicU64::new(0),
            csrf_refused: AtomicU64::new(0),
        }
    }
}

fn bounded(map: &mut HashMap<String, impl Sized>, order: &mut VecDeque<String>, key: String) {
    order.push_back(key);
    while order.len() > MAX_ENTRIES {
        if let Some(old) = order.pop_front() {
            map.remove(&old);
        }
    }
}

impl Survey {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An opaque random-looking id, unique in this server.
    fn fresh(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!(
            "{:016x}{:016x}",
            self.keys.hash_one((n, 2u8)),
            self.keys.hash_one((n, 3u8))
        )
    }

    /// Opens a session for `user`; returns its id (the cookie's value).
    pub fn login(&self, user: &str) -> String {
        let id = self.fresh();
        let csrf = self.fresh();
        let mut inner = self.lock();
        let inner = &mut *inner;
        inner.sessions.insert(
            id.clone(),
            Session {
                user: user.to_owned(),
                csrf,
            },
        );
        bounded(&mut inner.sessions, &mut inner.session_order, id.clone());
        self.logins.fetch_add(1, Ordering::Relaxed);
        id
    }

    /// For a known session: its user, its CSRF token and a fresh answer token.
    pub fn page(&self, session: &str) -> Option<(String, String, String)> {
        let token = self.fresh();
        let mut inner = self.lock();
        let inner = &mut *inner;
        let s = inner.sessions.get(session)?;
        let out = (s.user.clone(), s.csrf.clone(), token.clone());
        inner.tokens.insert(token.clone(), session.to_owned());
        bounded(&mut inner.tokens, &mut inner.token_order, token);
        self.pages.fetch_add(1, Ordering::Relaxed);
        Some(out)
    }

    /// Checks an answer and spends its token.
    pub fn answer(&self, session: &str, csrf: &str, token: &str) -> Verdict {
        let mut inner = self.lock();
        let verdict = match inner.sessions.get(session) {
            None => Verdict::NoSession,
            Some(s) if s.csrf != csrf => Verdict::BadCsrf,
            Some(_) => match inner.tokens.get(token) {
                Some(owner) if owner == session => {
                    inner.tokens.remove(token);
                    Verdict::Accepted
                }
                _ => Verdict::TokenRefused,
            },
        };
        let counter = match verdict {
            Verdict::Accepted => &self.accepted,
            Verdict::BadCsrf => &self.csrf_refused,
            Verdict::TokenRefused => &self.token_refused,
            Verdict::NoSession => return verdict,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        verdict
    }

    /// The counters so far.
    pub fn counts(&self) -> SurveyCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SurveyCounts {
            logins: get(&self.logins),
            pages: get(&self.pages),
            accepted: get(&self.accepted),
            token_refused: get(&self.token_refused),
            csrf_refused: get(&self.csrf_refused),
        }
    }
}

impl SurveyCounts {
    /// Appends the counters to a Prometheus text exposition: an answer refused for a
    /// spent token is a replay (409, a conflict), for a wrong CSRF token a 403.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = write!(
            out,
            "# HELP demo_survey_logins_total Survey form sign-ins that opened a session.\n\
             # TYPE demo_survey_logins_total counter\n\
             demo_survey_logins_total {}\n\
             # HELP demo_survey_pages_total Survey pages served, each with a fresh answer token.\n\
             # TYPE demo_survey_pages_total counter\n\
             demo_survey_pages_total {}\n\
             # HELP demo_survey_answers_total Survey answers by verdict: accepted, conflict (409: the token was spent, a replay, or unknown), csrf (403).\n\
             # TYPE demo_survey_answers_total counter\n\
             demo_survey_answers_total{{verdict=\"accepted\"}} {}\n\
             demo_survey_answers_total{{verdict=\"conflict\"}} {}\n\
             demo_survey_answers_total{{verdict=\"csrf\"}} {}\n",
            self.logins, self.pages, self.accepted, self.token_refused, self.csrf_refused
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_single_use_and_bound_to_their_session() {
        let survey = Survey::default();
        let a = survey.login("ann");
        let b = survey.login("bob");
        let (user, csrf, token) = survey.page(&a).unwrap();
        assert_eq!(user, "ann");
        assert!(survey.page("nope").is_none());
        assert_eq!(survey.answer(&a, "wrong", &token), Verdict::BadCsrf);
        let (_, csrf_b, _) = survey.page(&b).unwrap();
        assert_eq!(survey.answer(&b, &csrf_b, &token), Verdict::TokenRefused);
        assert_eq!(survey.answer(&a, &csrf, &token), Verdict::Accepted);
        assert_eq!(survey.answer(&a, &csrf, &token), Verdict::TokenRefused);
        assert_eq!(survey.answer("nope", &csrf, &token), Verdict::NoSession);
        assert_eq!(
            survey.counts(),
            SurveyCounts {
                logins: 2,
                pages: 2,
                accepted: 1,
                token_refused: 2,
                csrf_refused: 1
            }
        );
    }
}

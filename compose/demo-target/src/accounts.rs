//! Accounts for the REST API: sign-up, deletion, and short-lived access tokens renewed
//! with single-use (rotating) refresh tokens, as an OAuth-style API does.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::counters::{self, Counter};

/// A fresh pair of tokens.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// Bearer token for the API, valid for the access TTL.
    pub access: String,
    /// Single-use token that buys the next pair.
    pub refresh: String,
    /// How long the access token is valid.
    pub expires_in: Duration,
}

/// Why an access token was not accepted.
#[derive(Debug, PartialEq, Eq)]
pub enum AccessError {
    /// Not issued, revoked by a refresh, or its account was deleted.
    Unknown,
    /// Issued, but past its lifetime.
    Expired,
}

/// Why a sign-up failed.
#[derive(Debug, PartialEq, Eq)]
pub enum SignUpError {
    /// That user name is taken.
    Exists,
    /// The store holds its maximum of accounts.
    Full,
}

struct Account {
    access: String,
    refresh: String,
}

#[derive(Default)]
struct Inner {
    accounts: HashMap<String, Account>,
    /// Access token → (user, expiry).
    access: HashMap<String, (String, Instant)>,
    /// Refresh token → user.
    refresh: HashMap<String, String>,
}

/// Every account and its current tokens; one pair per account, so memory is bounded
/// by the number of accounts.
pub struct Accounts {
    inner: Mutex<Inner>,
    ttl: Duration,
    max: usize,
    keys: RandomState,
    next: AtomicU64,
    /// What happened so far.
    pub counters: AccountCounters,
}

/// Counters of the account routes.
#[derive(Default)]
pub struct AccountCounters {
    /// Accounts created.
    pub signups: Counter,
    /// Sign-ups refused because the name was taken.
    pub signup_conflicts: Counter,
    /// Token pairs renewed.
    pub refreshes: Counter,
    /// Refreshes refused (unknown or already used refresh token).
    pub refresh_refused: Counter,
    /// Accounts deleted.
    pub deletions: Counter,
    /// Requests refused because their access token had expired.
    pub expired: Counter,
}

impl Accounts {
    /// An empty store issuing access tokens valid for `ttl`, holding at most `max`
    /// accounts.
    pub fn new(ttl: Duration, max: usize) -> Self {
        Accounts {
            inner: Mutex::new(Inner::default()),
            ttl,
            max: max.max(1),
            keys: RandomState::new(),
            next: AtomicU64::new(0),
            counters: AccountCounters::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn token(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!(
            "{:016x}{:016x}",
            self.keys.hash_one((n, 2u8)),
            self.keys.hash_one((n, 3u8))
        )
    }

    fn issue(&self, inner: &mut Inner, user: &str) -> Tokens {
        let tokens = Tokens {
            access: self.token(),
            refresh: self.token(),
            expires_in: self.ttl,
        };
        inner.access.insert(
            tokens.access.clone(),
            (user.to_owned(), Instant::now() + self.ttl),
        );
        inner
            .refresh
            .insert(tokens.refresh.clone(), user.to_owned());
        inner.accounts.insert(
            user.to_owned(),
            Account {
                access: tokens.access.clone(),
                refresh: tokens.refresh.clone(),
            },
        );
        tokens
    }

    /// Creates the account `user` and its first tokens.
    pub fn sign_up(&self, user: &str) -> Result<Tokens, SignUpError> {
        let mut inner = self.lock();
        if inner.accounts.contains_key(user) {
            self.counters.signup_conflicts.inc();
            return Err(SignUpError::Exists);
        }
        if inner.accounts.len() >= self.max {
            return Err(SignUpError::Full);
        }
        let tokens = self.issue(&mut inner, user);
        self.counters.signups.inc();
        Ok(tokens)
    }

    /// Trades a refresh token for a new pair; the old pair stops working.
    pub fn refresh(&self, refresh: &str) -> Option<Tokens> {
        let mut inner = self.lock();
        let Some(user) = inner.refresh.remove(refresh) else {
            self.counters.refresh_refused.inc();
            return None;
        };
        if let Some(old) = inner.accounts.get(&user).map(|a| a.access.clone()) {
            inner.access.remove(&old);
        }
        let tokens = self.issue(&mut inner, &user);
        self.counters.refreshes.inc();
        Some(tokens)
    }

    /// The user an access token belongs to, if it is current.
    pub fn user_for(&self, access: &str) -> Result<String, AccessError> {
        let inner = self.lock();
        match inner.access.get(access) {
            Some((user, expiry)) if Instant::now() < *expiry => Ok(user.clone()),
            Some(_) => {
                self.counters.expired.inc();
                Err(AccessError::Expired)
            }
            None => Err(AccessError::Unknown),
        }
    }

    /// Deletes `user`'s account and revokes its tokens; false if there was none.
    pub fn delete(&self, user: &str) -> bool {
        let mut inner = self.lock();
        let Some(account) = inner.accounts.remove(user) else {
            return false;
        };
        inner.access.remove(&account.access);
        inner.refresh.remove(&account.refresh);
        self.counters.deletions.inc();
        true
    }

    /// Accounts that exist now.
    pub fn count(&self) -> usize {
        self.lock().accounts.len()
    }

    /// Appends the counters and the accounts gauge to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        let c = &self.counters;
        let rows = [
            (
                "demo_signups_total",
                "Accounts created (POST /accounts).",
                &c.signups,
            ),
            (
                "demo_signup_conflicts_total",
                "Sign-ups refused: the name was taken.",
                &c.signup_conflicts,
            ),
            (
                "demo_token_refreshes_total",
                "Token pairs renewed (POST /auth/refresh).",
                &c.refreshes,
            ),
            (
                "demo_token_refresh_refused_total",
                "Refreshes refused: unknown or already used refresh token.",
                &c.refresh_refused,
            ),
            (
                "demo_account_deletions_total",
                "Accounts deleted (DELETE /accounts/me).",
                &c.deletions,
            ),
            (
                "demo_access_expired_total",
                "Requests refused because their access token had expired.",
                &c.expired,
            ),
        ];
        for (name, help, counter) in rows {
            counters::render(out, name, "counter", help, counter.get());
        }
        counters::render(
            out,
            "demo_accounts",
            "gauge",
            "Accounts that exist now.",
            self.count() as u64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_rotates_and_deletion_revokes() {
        let accounts = Accounts::new(Duration::from_secs(60), 10);
        let first = accounts.sign_up("ann").unwrap();
        assert_eq!(accounts.sign_up("ann").unwrap_err(), SignUpError::Exists);
        assert_eq!(accounts.user_for(&first.access).unwrap(), "ann");
        let second = accounts.refresh(&first.refresh).unwrap();
        // The old pair is spent: a replayed refresh and the old access token fail.
        assert!(accounts.refresh(&first.refresh).is_none());
        assert_eq!(accounts.user_for(&first.access), Err(AccessError::Unknown));
        assert_eq!(accounts.user_for(&second.access).unwrap(), "ann");
        assert!(accounts.delete("ann"));
        assert!(!accounts.delete("ann"));
        assert_eq!(accounts.user_for(&second.access), Err(AccessError::Unknown));
        assert!(accounts.refresh(&second.refresh).is_none());
        assert_eq!(accounts.count(), 0);
        assert_eq!(accounts.counters.refreshes.get(), 1);
        assert_eq!(accounts.counters.refresh_refused.get(), 2);
    }

    #[test]
    fn access_tokens_expire() {
        let accounts = Accounts::new(Duration::ZERO, 10);
        let tokens = accounts.sign_up("bo").unwrap();
        assert_eq!(accounts.user_for(&tokens.access), Err(AccessError::Expired));
        assert_eq!(accounts.counters.expired.get(), 1);
        assert!(accounts.refresh(&tokens.refresh).is_some());
    }

    #[test]
    fn the_store_is_bounded() {
        let accounts = Accounts::new(Duration::from_secs(1), 1);
        accounts.sign_up("a").unwrap();
        assert_eq!(accounts.sign_up("b").unwrap_err(), SignUpError::Full);
    }
}

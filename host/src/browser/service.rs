//! The run's browsers as the VUs reach them: the pool, started once (before the run
//! when the config has `[browser]`, else on first use) or connected to a running
//! browser (`K6_BROWSER_WS_URL`), and where screenshots go.

use super::launch::LaunchOptions;
use super::pool::Pool;
use super::remote::ws_url_from_env;
use super::BrowserError;
use crate::net::NetShared;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The run's browsers: none are started until asked for.
pub(crate) struct Browsers {
    net: Arc<NetShared>,
    processes: usize,
    pool: tokio::sync::OnceCell<Result<Pool, String>>,
    results: OnceLock<PathBuf>,
}

impl Browsers {
    /// Browsers for a run whose pages reach what `net` allows, at most `processes`.
    pub(crate) fn new(net: Arc<NetShared>, processes: usize) -> Browsers {
        Browsers {
            net,
            processes: processes.max(1),
            pool: tokio::sync::OnceCell::new(),
            results: OnceLock::new(),
        }
    }

    /// The pool, its first browser started; the first failure is every call's.
    pub(crate) async fn pool(&self) -> Result<&Pool, BrowserError> {
        let pool = self
            .pool
            .get_or_init(|| async {
                let env = |k: &str| std::env::var(k).ok();
                let pool = match ws_url_from_env(env).map_err(|e| e.to_string())? {
                    Some(url) => Pool::remote(url, self.net.clone()),
                    None => {
                        let options = LaunchOptions::from_env(env).map_err(|e| e.to_string())?;
                        Pool::new(options, self.processes, self.net.clone())
                            .await
                            .map_err(|e| e.to_string())?
                    }
                };
                pool.warm_up().await.map_err(|e| e.to_string())?;
                Ok(pool)
            })
            .await;
        pool.as_ref().map_err(|e| BrowserError::Start(e.clone()))
    }

    /// Screenshots go into `dir` (the run's results folder) from now on.
    pub(crate) fn set_results(&self, dir: PathBuf) {
        let _ = self.results.set(dir);
    }

    /// The results folder, once the run has one.
    pub(crate) fn results(&self) -> Option<&PathBuf> {
        self.results.get()
    }
}

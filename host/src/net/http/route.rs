//! Whether a request goes over TCP (HTTP/1.1, HTTP/2) or HTTP/3, and to which UDP
//! endpoint. With `"h3"` first in `[http] versions`, every `https://` origin is spoken to
//! over QUIC at its own port. With `"h3"` after another version, a VU starts over TCP and
//! moves an origin to HTTP/3 once it answers `Alt-Svc: h3=...`, as browsers do; the
//! alternative's endpoint passes the allowlist first (a denied one is never contacted,
//! and counted), and is forgotten when its `ma` runs out or the origin says `clear`.

use crate::config::{H3Mode, HttpOptions};
use crate::net::allowlist::Origin;
use crate::net::alt_svc::{self, AltSvc};
use crate::net::targets::{PoolKey, Target, Targets};
use crate::net::types::{HttpError, HttpResponse, Proto};
use crate::net::NetShared;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Instant;

/// How a request travels.
#[derive(Clone)]
pub(crate) enum Route {
    /// TCP, with TLS for `https://`; only HTTP/1.1 or only HTTP/2 when the request
    /// asked for that version, else as `[http] versions` allows.
    Tcp(Option<Proto>),
    /// HTTP/3 over QUIC to this endpoint (the origin itself, or its alternative).
    H3(Arc<Origin>),
}

/// An origin's HTTP/3 alternative, as a VU learnt it.
struct Alternative {
    /// The endpoint and its pool key; `None` when the allowlist denies it.
    route: Option<(Arc<Origin>, PoolKey)>,
    /// When it stops holding (`ma`).
    until: Instant,
}

/// One VU's HTTP/3 alternatives by origin (its pool key).
#[derive(Default)]
pub(crate) struct AltRoutes {
    known: FxHashMap<PoolKey, Alternative>,
}

/// Origins a VU remembers alternatives for before it starts over (bounded, as the
/// VU's other caches are).
const MAX_ALTERNATIVES: usize = 256;

/// Refuses a version the URL rules out before anything is sent: HTTP/3 runs over TLS
/// only, so an `http://` URL cannot have it (and is not quietly sent over TCP).
pub(crate) fn check_version(target: &Target, version: Option<Proto>) -> Result<(), HttpError> {
    if version == Some(Proto::Http3) && target.origin.scheme != "https" {
        return Err(HttpError::invalid(format!(
            "{}: the request asks for HTTP/3, which always runs over TLS (QUIC); use an \
             https:// URL, or ask for HTTP/1.1 or HTTP/2",
            target.origin
        )));
    }
    Ok(())
}

impl AltRoutes {
    /// The route of a request to `target`, and where its connection is pooled; with
    /// `version`, the request's own choice (contract 0.3.4), which is never replaced by
    /// another version: HTTP/3 asked of an `http://` URL is refused here.
    pub(crate) fn route(
        &self,
        options: &HttpOptions,
        target: &Target,
        version: Option<Proto>,
    ) -> Result<(Route, PoolKey), HttpError> {
        match version {
            None => Ok(self.default_route(options, target)),
            Some(Proto::Http3) => self.h3_route(options, target),
            // Pooled apart from the run's default connections, which may be of the
            // other version: a pooled connection is then always of the version asked.
            Some(tcp) => Ok((
                Route::Tcp(Some(tcp)),
                Arc::new((
                    format!("{} {}", target.origin.scheme, tcp.name()),
                    target.origin.host.clone(),
                    target.origin.port,
                )),
            )),
        }
    }

    /// The route of a request that asks for HTTP/3: the alternative the VU learnt
    /// from `Alt-Svc`, else the origin's own port over UDP.
    fn h3_route(
        &self,
        options: &HttpOptions,
        target: &Target,
    ) -> Result<(Route, PoolKey), HttpError> {
        check_version(target, Some(Proto::Http3))?;
        match self.default_route(options, target) {
            h3 @ (Route::H3(_), _) => Ok(h3),
            _ => Ok((
                Route::H3(Arc::new(target.origin.clone())),
                Arc::new(("h3".into(), target.origin.host.clone(), target.origin.port)),
            )),
        }
    }

    /// The route `[http] versions` chooses for `target`.
    fn default_route(&self, options: &HttpOptions, target: &Target) -> (Route, PoolKey) {
        let tcp = (Route::Tcp(None), target.pool_key.clone());
        if target.origin.scheme != "https" {
            return tcp;
        }
        match options.h3 {
            H3Mode::Off => tcp,
            // The TCP and QUIC connections of one origin never meet in one pool: only
            // HTTP/3 is spoken to https:// origins.
            H3Mode::Direct => (
                Route::H3(Arc::new(target.origin.clone())),
                target.pool_key.clone(),
            ),
            H3Mode::AltSvc => match self.known.get(&target.pool_key) {
                Some(Alternative {
                    route: Some((to, key)),
                    until,
                }) if *until > Instant::now() => (Route::H3(to.clone()), key.clone()),
                _ => tcp,
            },
        }
    }
}

impl AltRoutes {
    /// Notes the `h3` alternative a TCP response's `Alt-Svc` names, when `versions`
    /// lists `h3` after another version (only an `https://` origin's counts); `url` is
    /// the request's, found among the VU's `targets`.
    pub(super) fn learn(
        &mut self,
        shared: &NetShared,
        targets: &Targets,
        url: &str,
        response: &HttpResponse,
    ) {
        if shared.http.h3 != H3Mode::AltSvc || response.proto == Proto::Http3 {
            return;
        }
        let Some(value) = response.content.headers.get(http::header::ALT_SVC) else {
            return;
        };
        let Some(target) = targets.get(url) else {
            return;
        };
        if target.origin.scheme != "https" {
            return;
        }
        let (host, port, max_age) = match alt_svc::parse(value.to_str().unwrap_or_default()) {
            None => return,
            Some(AltSvc::Clear) => {
                self.known.remove(&target.pool_key);
                return;
            }
            Some(AltSvc::H3 {
                host,
                port,
                max_age,
            }) => (host, port, max_age),
        };
        let until = Instant::now() + max_age;
        let to = Origin {
            scheme: "https".into(),
            host: host.unwrap_or_else(|| target.origin.host.clone()),
            port,
        };
        let known = &mut self.known;
        if let Some(alt) = known.get_mut(&target.pool_key) {
            let same = match &alt.route {
                Some((known_to, _)) => **known_to == to,
                None => true,
            };
            if same && alt.until > Instant::now() {
                alt.until = until;
                return;
            }
        }
        if known.len() >= MAX_ALTERNATIVES {
            known.clear();
        }
        let route = match shared.allowlist.check(&to) {
            Ok(()) => {
                shared.connections.alt_svc_upgrade();
                let key: PoolKey = Arc::new(("h3".into(), to.host.clone(), to.port));
                Some((Arc::new(to), key))
            }
            Err(why) => {
                shared.connections.alt_svc_denied();
                shared.warn_denied_once(&to, "upgrade to HTTP/3 (Alt-Svc) at", &why);
                None
            }
        };
        known.insert(target.pool_key.clone(), Alternative { route, until });
    }
}

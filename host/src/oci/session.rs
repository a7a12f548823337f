//! Talking to one registry as Docker does: a request is sent without credentials
//! first; a 401's `WWW-Authenticate` challenge says how to authenticate, `Basic`
//! (the stored user and password on every request) or `Bearer` (a token fetched from
//! the challenge's realm for its service and scope, with the stored credentials when
//! there are any, else anonymously), and the request is sent again once.

use super::credentials::{self, Credentials};
use super::transport::{self, TransportError};
use crate::plugin::reference::Reference;
use anyhow::{anyhow, bail, Result};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, AUTHORIZATION, LOCATION, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};

/// How to reach registries: the command line's registry flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct RegistryOptions {
    /// Talk plain HTTP (no TLS) to the registry: for a registry that serves no TLS on
    /// another machine (one on this machine, `localhost` or `127.0.0.1`, is spoken to
    /// in plain HTTP anyway, as Docker does).
    #[arg(long, alias = "insecure-registry", env = "HOST_PLAIN_HTTP")]
    pub plain_http: bool,
}

/// Largest answer read that is not a blob (manifests, errors, tokens).
pub(crate) const SMALL: usize = 4 << 20;

/// An authenticated conversation with one registry.
pub(crate) struct Session {
    registry: String,
    plain_http: bool,
    credentials: Option<Credentials>,
    looked_up: bool,
    authorization: Option<HeaderValue>,
}

/// The parts of a `WWW-Authenticate` challenge this client acts on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// `Basic realm="…"`.
    Basic,
    /// `Bearer realm="…",service="…",scope="…"`.
    Bearer {
        /// Where tokens are issued.
        realm: String,
        /// The service the token is for.
        service: Option<String>,
        /// What the token must allow.
        scope: Option<String>,
    },
}

impl Session {
    /// A session with `reference`'s registry (HTTPS unless it is on loopback or
    /// `--plain-http` was given).
    pub(crate) fn new(reference: &Reference, options: &RegistryOptions) -> Session {
        Session {
            registry: reference.registry.clone(),
            plain_http: options.plain_http || reference.is_loopback(),
            credentials: None,
            looked_up: false,
            authorization: None,
        }
    }

    /// A session that uses `credentials` instead of the stored ones (`host login`).
    pub(crate) fn with_credentials(
        reference: &Reference,
        options: &RegistryOptions,
        credentials: Credentials,
    ) -> Session {
        Session {
            credentials: Some(credentials),
            looked_up: true,
            ..Session::new(reference, options)
        }
    }

    /// The registry's base URL, for messages.
    pub(crate) fn base(&self) -> String {
        format!(
            "{}://{}",
            if self.plain_http { "http" } else { "https" },
            self.registry
        )
    }

    /// Sends a request to `path` (path and query, or an absolute URL on the same
    /// registry), authenticating when challenged; follows redirects (to storage
    /// elsewhere without the registry's credentials).
    pub(crate) async fn call(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Bytes,
        limit: usize,
    ) -> Result<Response<Bytes>> {
        let mut target = path.to_string();
        for _hop in 0..5 {
            let response = self
                .call_here(method.clone(), &target, headers, body.clone(), limit)
                .await?;
            if !response.status().is_redirection() || response.status() == StatusCode::NOT_MODIFIED
            {
                return Ok(response);
            }
            let Some(location) = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
            else {
                return Ok(response);
            };
            let base = url::Url::parse(&format!("{}{}", self.base(), target_path(&target)))?;
            let next = base.join(location)?;
            let authority = authority_of(&next);
            if authority == self.registry {
                target = next[url::Position::BeforePath..].to_string();
                continue;
            }
            // Storage elsewhere (a signed URL): no registry credentials go there.
            let request = Request::builder()
                .method(method.clone())
                .uri(&next[url::Position::BeforePath..])
                .body(Full::new(Bytes::new()))?;
            return transport::send(next.scheme() == "http", &authority, request, limit)
                .await
                .map_err(|e| {
                    anyhow::Error::new(e).context(format!(
                        "{} redirected to {next}, which failed",
                        self.registry
                    ))
                });
        }
        bail!("{} redirected {path} more than 5 times", self.registry)
    }

    async fn call_here(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Bytes,
        limit: usize,
    ) -> Result<Response<Bytes>> {
        let mut authenticated = false;
        loop {
            let mut request = Request::builder()
                .method(method.clone())
                .uri(target_path(path));
            for (name, value) in headers {
                request = request.header(*name, value.as_str());
            }
            if let Some(auth) = &self.authorization {
                request = request.header(AUTHORIZATION, auth.clone());
            }
            let request = request.body(Full::new(body.clone()))?;
            let response = self.send(request, limit).await?;
            if response.status() != StatusCode::UNAUTHORIZED {
                return Ok(response);
            }
            let challenge = response
                .headers()
                .get(WWW_AUTHENTICATE)
                .and_then(|h| h.to_str().ok())
                .and_then(parse_challenge);
            if authenticated {
                return Err(self.refused(&response));
            }
            let Some(challenge) = challenge else {
                bail!(
                    "{} answered 401 without a challenge this client understands: {}",
                    self.registry,
                    error_words(&response)
                );
            };
            self.authenticate(challenge).await?;
            authenticated = true;
        }
    }

    async fn send(&self, request: Request<Full<Bytes>>, limit: usize) -> Result<Response<Bytes>> {
        transport::send(self.plain_http, &self.registry, request, limit)
            .await
            .map_err(|e| match e {
                TransportError::Unreachable { .. } => anyhow::Error::new(Unreachable(format!(
                    "cannot reach the registry {} ({e}): check that it runs and that the address \
                     is right; a pinned plugin pulled before runs from the cache without it",
                    self.base()
                ))),
                TransportError::TooLarge { .. } => {
                    anyhow::Error::new(e).context(format!("registry {}", self.base()))
                }
                TransportError::Failed(e) => anyhow!("registry {}: {e:#}", self.base()),
            })
    }

    fn credentials(&mut self) -> Result<Option<Credentials>> {
        if !self.looked_up {
            self.credentials = credentials::lookup(&self.registry)?;
            self.looked_up = true;
        }
        Ok(self.credentials.clone())
    }

    fn missing_credentials(&self) -> anyhow::Error {
        anyhow!(
            "the registry {} wants credentials and none are stored for it in {}: run \
             `host login {}` (or `docker login {}`) first",
            self.registry,
            credentials::config_path().display(),
            self.registry,
            self.registry
        )
    }

    fn refused(&self, response: &Response<Bytes>) -> anyhow::Error {
        let whose = match &self.credentials {
            Some(c) => format!("the credentials of {}", c.username),
            None => "anonymous access".to_string(),
        };
        anyhow!(
            "the registry {} refused {whose} ({}): log in again with `host login {}`, or ask \
             for access to this repository",
            self.registry,
            error_words(response),
            self.registry
        )
    }

    async fn authenticate(&mut self, challenge: Challenge) -> Result<()> {
        match challenge {
            Challenge::Basic => {
                let Some(c) = self.credentials()? else {
                    return Err(self.missing_credentials());
                };
                self.authorization = Some(basic(&c)?);
            }
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                let token = self.fetch_token(&realm, service, scope).await?;
                self.authorization = Some(HeaderValue::from_str(&format!("Bearer {token}"))?);
            }
        }
        Ok(())
    }

    /// A token from the realm (Docker's token protocol): GET with service and scope,
    /// Basic credentials when stored; the answer's `token` or `access_token`.
    async fn fetch_token(
        &mut self,
        realm: &str,
        service: Option<String>,
        scope: Option<String>,
    ) -> Result<String> {
        let mut url = url::Url::parse(realm).map_err(|e| {
            anyhow!(
                "{} gave the token realm {realm:?}, not a URL: {e}",
                self.registry
            )
        })?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(s) = &service {
                query.append_pair("service", s);
            }
            if let Some(s) = &scope {
                query.append_pair("scope", s);
            }
        }
        let mut request = Request::get(&url[url::Position::BeforePath..]);
        let credentials = self.credentials()?;
        if let Some(c) = &credentials {
            request = request.header(AUTHORIZATION, basic(c)?);
        }
        let authority = authority_of(&url);
        let plain = url.scheme() == "http";
        let response = transport::send(
            plain,
            &authority,
            request.body(Full::new(Bytes::new()))?,
            SMALL,
        )
        .await
        .map_err(|e| anyhow!("cannot get a token from {realm} for {}: {e}", self.registry))?;
        if response.status() == StatusCode::UNAUTHORIZED
            || response.status() == StatusCode::FORBIDDEN
        {
            if credentials.is_none() {
                return Err(self.missing_credentials());
            }
            return Err(anyhow!(
                "the token service {realm} refused the credentials of {} for {}: log in again \
                 with `host login {}`",
                credentials.map(|c| c.username).unwrap_or_default(),
                scope.as_deref().unwrap_or("the registry"),
                self.registry
            ));
        }
        if !response.status().is_success() {
            bail!(
                "the token service {realm} answered {}: {}",
                response.status(),
                error_words(&response)
            );
        }
        let answer: serde_json::Value = serde_json::from_slice(response.body())
            .map_err(|e| anyhow!("the token service {realm} did not answer JSON: {e}"))?;
        answer["token"]
            .as_str()
            .or_else(|| answer["access_token"].as_str())
            .map(str::to_string)
            .ok_or_else(|| anyhow!("the token service {realm} answered without a token"))
    }
}

/// Marks an error as "the registry did not answer", so that a pinned pull can fall
/// back to its cache.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unreachable(pub String);

/// Whether `e` is (or was caused by) an unreachable registry.
pub(crate) fn is_unreachable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<Unreachable>().is_some())
}

fn basic(c: &Credentials) -> Result<HeaderValue> {
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", c.username, c.password));
    Ok(HeaderValue::from_str(&format!("Basic {encoded}"))?)
}

/// The path and query of `target` (an absolute URL, or already a path).
fn target_path(target: &str) -> String {
    match url::Url::parse(target) {
        Ok(url) if url.has_host() => url[url::Position::BeforePath..].to_string(),
        _ => target.to_string(),
    }
}

fn authority_of(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// Reads `Basic realm=…` or `Bearer realm=…,service=…,scope=…`.
pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
    let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    let mut realm = None;
    let mut service = None;
    let mut scope = None;
    let mut rest = params.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let after = after.trim_start();
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            after.split_once(',').unwrap_or((after, ""))
        };
        match key.trim().to_ascii_lowercase().as_str() {
            "realm" => realm = Some(value.to_string()),
            "service" => service = Some(value.to_string()),
            "scope" => scope = Some(value.to_string()),
            _ => {}
        }
        rest = tail.trim_start_matches([',', ' ']);
    }
    match scheme.to_ascii_lowercase().as_str() {
        "basic" => Some(Challenge::Basic),
        "bearer" => Some(Challenge::Bearer {
            realm: realm?,
            service,
            scope,
        }),
        _ => None,
    }
}

/// The registry's error in words: its `errors[].code: message` list, else the status.
pub(crate) fn error_words(response: &Response<Bytes>) -> String {
    let listed = serde_json::from_slice::<serde_json::Value>(response.body())
        .ok()
        .and_then(|v| {
            let errors = v["errors"].as_array()?;
            let words: Vec<String> = errors
                .iter()
                .map(|e| {
                    format!(
                        "{}: {}",
                        e["code"].as_str().unwrap_or("?"),
                        e["message"].as_str().unwrap_or("")
                    )
                })
                .collect();
            (!words.is_empty()).then(|| words.join("; "))
        });
    match listed {
        Some(words) => format!("{} {words}", response.status()),
        None => response.status().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_unless_loopback_or_asked() {
        let remote = Reference::parse("ghcr.io/team/x:1").unwrap();
        let local = Reference::parse("localhost:5000/team/x:1").unwrap();
        let plain = RegistryOptions { plain_http: true };
        assert_eq!(
            Session::new(&remote, &RegistryOptions::default()).base(),
            "https://ghcr.io"
        );
        assert_eq!(Session::new(&remote, &plain).base(), "http://ghcr.io");
        assert_eq!(
            Session::new(&local, &RegistryOptions::default()).base(),
            "http://localhost:5000"
        );
    }

    #[test]
    fn challenges_are_read() {
        assert_eq!(
            parse_challenge("Basic realm=\"basic-realm\""),
            Some(Challenge::Basic)
        );
        assert_eq!(
            parse_challenge(
                "Bearer realm=\"https://auth.example/token\",service=\"registry\",scope=\"repository:a/b:pull,push\""
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry".into()),
                scope: Some("repository:a/b:pull,push".into()),
            })
        );
        assert_eq!(parse_challenge("Bearer service=\"x\""), None);
        assert_eq!(parse_challenge("Negotiate"), None);
    }
}

//! Where a connection goes: a host name resolved to its addresses, and a request's
//! absolute URI with the authority its `Host` field names. Shared by TCP connects and
//! HTTP/3, which each open their own sockets.

use super::allowlist::Origin;
use super::types::HttpError;
use std::net::SocketAddr;

/// `uri` with `host` as its authority (`uri` when `host` is not a valid one).
pub(crate) fn with_authority(uri: &http::Uri, host: &http::HeaderValue) -> http::Uri {
    let mut parts = uri.clone().into_parts();
    match http::uri::Authority::try_from(host.as_bytes()) {
        Ok(authority) => parts.authority = Some(authority),
        Err(_) => return uri.clone(),
    }
    http::Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

/// The addresses of `origin`'s host (an IP address is used as it is).
pub(crate) async fn resolve(origin: &Origin) -> Result<Vec<SocketAddr>, HttpError> {
    if let Ok(ip) = origin.host.parse::<std::net::IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, origin.port)]);
    }
    // RFC 6761: these names never resolve, so no resolver is asked.
    if origin.host == "invalid" || origin.host.ends_with(".invalid") {
        return Err(HttpError::connect(format!(
            "cannot resolve {}: names under .invalid never resolve",
            origin.host
        )));
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((origin.host.as_str(), origin.port))
        .await
        .map_err(|e| HttpError::connect(format!("cannot resolve {}: {e}", origin.host)))?
        .collect();
    if addrs.is_empty() {
        return Err(HttpError::connect(format!(
            "cannot resolve {}: no addresses",
            origin.host
        )));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_field_becomes_the_http2_authority() {
        let uri: http::Uri = "https://127.0.0.1:8443/a?b=1".parse().unwrap();
        let host = http::HeaderValue::from_static("api.example:8443");
        assert_eq!(
            with_authority(&uri, &host).to_string(),
            "https://api.example:8443/a?b=1"
        );
        let bad = http::HeaderValue::from_static("not a host");
        assert_eq!(with_authority(&uri, &bad), uri);
    }
}

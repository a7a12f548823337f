//! What a page sees of its surroundings, set by the script: extra request headers
//! (`setExtraHTTPHeaders`), CSS media (`emulateMedia`), scripts run before each
//! document's own (`addInitScript`), and the network taken away (`setOffline`).

use super::page::Page;
use super::BrowserError;
use serde_json::{json, Map, Value};

/// Headers sent with every later request of the page (replacing earlier ones).
pub(crate) async fn set_extra_http_headers(
    page: &Page,
    headers: &[(String, String)],
) -> Result<(), BrowserError> {
    let map: Map<String, Value> = headers
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    page.call("Network.setExtraHTTPHeaders", json!({ "headers": map }))
        .await?;
    Ok(())
}

fn one_of(what: &str, v: &str, allowed: &[&str]) -> Result<(), BrowserError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(BrowserError::Invalid(format!(
            "emulateMedia {what} {v:?}: write {}",
            allowed.join(", ")
        )))
    }
}

/// The media type and features the page's CSS sees; each `None` is left as it is
/// (the protocol resets what a call leaves out, so the page remembers them).
pub(crate) async fn emulate_media(
    page: &Page,
    media: Option<&str>,
    color_scheme: Option<&str>,
    reduced_motion: Option<&str>,
) -> Result<(), BrowserError> {
    if let Some(m) = media {
        one_of("media", m, &["screen", "print", ""])?;
    }
    if let Some(c) = color_scheme {
        one_of("colorScheme", c, &["light", "dark", "no-preference"])?;
    }
    if let Some(r) = reduced_motion {
        one_of("reducedMotion", r, &["reduce", "no-preference"])?;
    }
    let now = page.media(media, color_scheme, reduced_motion);
    let mut features = Vec::new();
    if let Some(c) = &now.1 {
        features.push(json!({ "name": "prefers-color-scheme", "value": c }));
    }
    if let Some(r) = &now.2 {
        features.push(json!({ "name": "prefers-reduced-motion", "value": r }));
    }
    page.call(
        "Emulation.setEmulatedMedia",
        json!({ "media": now.0.clone().unwrap_or_default(), "features": features }),
    )
    .await?;
    Ok(())
}

/// `source` runs in every document the page loads from now on, before its scripts.
pub(crate) async fn add_init_script(page: &Page, source: &str) -> Result<(), BrowserError> {
    page.call(
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": source }),
    )
    .await?;
    Ok(())
}

/// Takes the page off the network, or puts it back.
pub(crate) async fn set_offline(page: &Page, offline: bool) -> Result<(), BrowserError> {
    page.call(
        "Network.emulateNetworkConditions",
        json!({ "offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1 }),
    )
    .await?;
    Ok(())
}

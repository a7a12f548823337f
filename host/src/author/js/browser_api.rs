//! What of `k6/browser` this host has not built: a module that imports `k6/browser`
//! and calls one of these is refused when it is built, with the API's name and its
//! line, instead of failing in the middle of a run.

use super::scan::call_sites;
use anyhow::{bail, Result};

/// Methods of k6's browser API the layer does not have (docs/k6-compatibility.md).
const NOT_BUILT: &[&str] = &[
    ".route",
    ".unroute",
    ".unrouteAll",
    ".frames",
    ".frameLocator",
    ".mainFrame",
    ".evaluateHandle",
    ".waitForEvent",
    ".exposeFunction",
    ".exposeBinding",
    ".addInitScript",
    ".setInputFiles",
    ".dispatchEvent",
    ".emulateMedia",
    ".emulateVisionDeficiency",
    ".setExtraHTTPHeaders",
    ".setOffline",
    ".bringToFront",
    ".throttleCPU",
    ".throttleNetwork",
    ".pdf",
    ".wheel",
    ".$$",
    ".$",
    ".newBrowserCDPSession",
];

/// Page events the layer does not emit (`page.on(...)`).
const EVENTS: &[&str] = &[
    "console",
    "request",
    "response",
    "metric",
    "requestfailed",
    "requestfinished",
    "dialog",
    "load",
];

/// Refuses what `code` (the module with strings and comments blanked; `src` the
/// original, for the lines and the event names) calls of the browser API that is not
/// built. `at` names a line as the build's errors do.
pub(crate) fn check(src: &str, code: &str, at: &dyn Fn(usize) -> String) -> Result<()> {
    for name in NOT_BUILT {
        if let Some((offset, _)) = call_sites(code, name).next() {
            let api = &name[1..];
            bail!(
                "{}: `{api}()` of k6/browser is not supported by this host yet (see \
                 docs/k6-compatibility.md)",
                at(offset)
            );
        }
    }
    for (offset, open) in call_sites(code, ".on") {
        let arg = src[open + 1..].trim_start();
        let event = arg
            .strip_prefix(['\'', '"', '`'])
            .and_then(|a| a.split(['\'', '"', '`']).next())
            .unwrap_or("");
        if EVENTS.contains(&event) {
            bail!(
                "{}: `page.on('{event}')` of k6/browser is not supported by this host yet \
                 (see docs/k6-compatibility.md)",
                at(offset)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(o: usize) -> String {
        format!("s.js:{o}")
    }

    #[test]
    fn names_the_api_and_where() {
        let src = "const p = await browser.newPage();\nawait p.route('**', (r) => r.abort());\n";
        let e = check(src, src, &at).unwrap_err().to_string();
        assert!(e.contains("`route()`") && e.contains("s.js:"), "{e}");
        let src = "page.on('console', (m) => 1);";
        let e = check(src, src, &at).unwrap_err().to_string();
        assert!(e.contains("page.on('console')"), "{e}");
        // What is built passes, and a socket's `on('open')` is no page event.
        let src = "await page.locator('#a').click(); ws.on('open', f); arr.filter(x => x); \
                   await page.mouse.click(1, 2); await page.touchscreen.tap(1, 2);";
        assert!(check(src, src, &at).is_ok());
    }
}

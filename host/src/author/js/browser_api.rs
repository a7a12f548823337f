//! What of `k6/browser` this host has not built: a module that imports `k6/browser`
//! and calls one of these is refused when it is built, with the API's name and its
//! line, instead of failing in the middle of a run.

use super::scan::call_sites;
use anyhow::{bail, Result};

/// Methods of k6's browser API the layer does not have (docs/k6-compatibility.md).
const NOT_BUILT: &[&str] = &[
    ".waitForEvent",
    ".exposeFunction",
    ".exposeBinding",
    ".setInputFiles",
    ".emulateVisionDeficiency",
    ".bringToFront",
    ".throttleCPU",
    ".throttleNetwork",
    ".pdf",
    ".newBrowserCDPSession",
    ".waitForRequest",
    ".waitForResponse",
    ".dragAndDrop",
    ".dragTo",
    ".getProperties",
    ".contentFrame",
    ".ownerFrame",
    ".scrollIntoViewIfNeeded",
    ".selectText",
    ".waitForElementState",
    ".opener",
    ".workers",
];

/// Page events the layer does not emit (`page.on(...)`; it emits `console`,
/// `request`, `response` and `metric`).
const EVENTS: &[&str] = &[
    "requestfailed",
    "requestfinished",
    "dialog",
    "load",
    "domcontentloaded",
    "close",
    "crash",
    "download",
    "filechooser",
    "frameattached",
    "framedetached",
    "framenavigated",
    "pageerror",
    "popup",
    "websocket",
    "worker",
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
        let src = "const p = await browser.newPage();\nawait p.setInputFiles('#f', []);\n";
        let e = check(src, src, &at).unwrap_err().to_string();
        assert!(
            e.contains("`setInputFiles()`") && e.contains("s.js:"),
            "{e}"
        );
        let src = "page.on('dialog', (d) => 1);";
        let e = check(src, src, &at).unwrap_err().to_string();
        assert!(e.contains("page.on('dialog')"), "{e}");
        // What 0.3.10 built passes: events, routes, handles, frames.
        let src = "page.on('console', (m) => 1); page.on('metric', (m) => 1); \
                   await page.route('**', (r) => r.abort()); await page.$('#a'); \
                   page.frameLocator('iframe'); await page.evaluateHandle(() => 1);";
        assert!(check(src, src, &at).is_ok());
        // What is built passes, and a socket's `on('open')` is no page event.
        let src = "await page.locator('#a').click(); ws.on('open', f); arr.filter(x => x); \
                   await page.mouse.click(1, 2); await page.touchscreen.tap(1, 2);";
        assert!(check(src, src, &at).is_ok());
    }
}

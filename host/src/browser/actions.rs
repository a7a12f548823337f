//! Acting on a page's elements as a user does: a small script finds the element a
//! selector names (CSS, `xpath=` or `//…`, `text=`, and the `internal:` selectors the
//! k6 layer's `getBy*` write; chained with ` >> ` for nested locators, with `nth=` and
//! the `internal:has-text=`/`has=` filters of `locator.filter`), waiting in the page until it is there (and visible and
//! enabled when the action needs it); clicks and keys are then real input events
//! (`Input.dispatchMouseEvent`, `Input.dispatchKeyEvent`), so the page's handlers run
//! as they would for a person. Reads (`textContent`, `isVisible` ...) are done by the
//! script itself.

use super::page::{value_of, with_timeout, Page};
use super::BrowserError;
use serde_json::{json, Value};
use std::time::Duration;

/// What to do with an element (the contract's `action`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// A left click.
    Click,
    /// A double click.
    Dblclick,
    /// The mouse moved over it.
    Hover,
    /// Focused.
    Focus,
    /// Checked (clicked unless already checked).
    Check,
    /// Unchecked.
    Uncheck,
    /// Its value set (events `input`, `change`).
    Fill(String),
    /// Text typed key by key.
    Type(String),
    /// One key pressed.
    Press(String),
    /// Options selected by value or label.
    SelectOption(Vec<String>),
    /// `textContent`.
    TextContent,
    /// `innerText`.
    InnerText,
    /// `innerHTML`.
    InnerHtml,
    /// `value` of an input.
    InputValue,
    /// An attribute.
    GetAttribute(String),
    /// Whether it is visible (never waits).
    IsVisible,
    /// Whether it is hidden or absent (never waits).
    IsHidden,
    /// Whether it is enabled.
    IsEnabled,
    /// Whether it is checked.
    IsChecked,
    /// How many elements match (never waits).
    Count,
    /// A DOM event of this type dispatched with this init (k6's `dispatchEvent`).
    Dispatch(String, Value),
}

/// What an action acts on: the element(s) a selector finds, or an element the script
/// holds a handle of (its protocol object id).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    /// A selector (or chain) and which match (none: the first).
    Selector(&'a str, Option<i32>),
    /// An element handle's object.
    Element(&'a str),
}

impl Target<'_> {
    fn shown(&self) -> String {
        match self {
            Target::Selector(s, _) => format!("{s:?}"),
            Target::Element(_) => "the element handle".into(),
        }
    }
}

impl Action {
    /// The in-page operation's name and whether the element must be visible and enabled.
    fn op(&self) -> (&'static str, bool) {
        match self {
            Action::Click | Action::Dblclick | Action::Hover | Action::Check | Action::Uncheck => {
                ("point", true)
            }
            Action::Focus | Action::Type(_) | Action::Press(_) => ("focus", false),
            Action::Fill(_) => ("fill", true),
            Action::SelectOption(_) => ("select", true),
            Action::TextContent => ("textContent", false),
            Action::InnerText => ("innerText", false),
            Action::InnerHtml => ("innerHTML", false),
            Action::InputValue => ("inputValue", false),
            Action::GetAttribute(_) => ("getAttribute", false),
            Action::IsVisible => ("isVisible", false),
            Action::IsHidden => ("isHidden", false),
            Action::IsEnabled => ("isEnabled", false),
            Action::IsChecked => ("isChecked", false),
            Action::Count => ("count", false),
            Action::Dispatch(..) => ("dispatch", false),
        }
    }

    fn arg(&self) -> Value {
        match self {
            Action::Fill(s) | Action::GetAttribute(s) => json!(s),
            Action::SelectOption(v) => json!(v),
            Action::Dispatch(t, init) => json!({ "type": t, "init": init }),
            _ => Value::Null,
        }
    }

    /// Reads that answer at once, found or not.
    fn waits(&self) -> bool {
        !matches!(self, Action::IsVisible | Action::IsHidden | Action::Count)
    }
}

/// The in-page part: finds the elements, waits for them, reads or changes them.
/// `(selector, nth, op, arg, needsReady, timeoutMs)` → a promise of the result, or
/// `{x, y}` (the element's centre, scrolled into view) for `point`.
const SCRIPT: &str = include_str!("locate.js");

/// A JavaScript string literal of `s` (JSON's quoting is JavaScript's).
fn lit(v: &Value) -> String {
    v.to_string()
}

/// Runs the in-page script for `op` on `target`'s element; `by_value`: the result as
/// JSON, else the protocol's remote object (for handles).
// Each argument is one of the in-page script's; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn locate_raw(
    page: &Page,
    target: Target<'_>,
    op: &str,
    arg: Value,
    ready: bool,
    wait: bool,
    timeout: Duration,
    by_value: bool,
) -> Result<Value, BrowserError> {
    let ms = timeout.as_millis();
    let r = match target {
        Target::Selector(selector, nth) => {
            let expression = format!(
                "{SCRIPT}({}, {}, {}, {}, {ready}, {wait}, {ms})",
                lit(&json!(selector)),
                nth.map_or("null".to_owned(), |n| n.to_string()),
                lit(&json!(op)),
                lit(&arg),
            );
            page.call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": by_value, "awaitPromise": true }),
            )
            .await?
        }
        Target::Element(object) => {
            page.call(
                "Runtime.callFunctionOn",
                json!({
                    "objectId": object,
                    "functionDeclaration": format!(
                        "function (op, arg, ready, wait, ms) {{ return ({SCRIPT})(this, null, op, arg, ready, wait, ms); }}"
                    ),
                    "arguments": [{ "value": op }, { "value": arg }, { "value": ready },
                                  { "value": wait }, { "value": ms as u64 }],
                    "returnByValue": by_value,
                    "awaitPromise": true,
                }),
            )
            .await?
        }
    };
    if !by_value {
        if r.get("exceptionDetails").is_some() {
            return value_of(r);
        }
        return Ok(r.get("result").cloned().unwrap_or(Value::Null));
    }
    match value_of(r) {
        Err(BrowserError::Script(m)) if m.contains("Error: timeout") => Err(BrowserError::Timeout(
            format!("waiting for {}: timed out after {ms} ms", target.shown()),
        )),
        Err(BrowserError::Script(m))
            if m.contains("TypeError: Cannot read properties of undefined") =>
        {
            Err(BrowserError::Script(format!(
                "{} matches no element",
                target.shown()
            )))
        }
        other => other,
    }
}

// Each argument is one of the in-page script's; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
async fn locate(
    page: &Page,
    target: Target<'_>,
    op: &str,
    arg: Value,
    ready: bool,
    wait: bool,
    timeout: Duration,
) -> Result<Value, BrowserError> {
    locate_raw(page, target, op, arg, ready, wait, timeout, true).await
}

/// Acts on the element `target` names; the result as JSON (`null` when the action
/// returns nothing).
pub(crate) async fn act(
    page: &Page,
    target: Target<'_>,
    action: &Action,
    timeout: Duration,
) -> Result<Value, BrowserError> {
    let (op, ready) = action.op();
    let what = target.shown();
    let work = async {
        let found = locate(
            page,
            target,
            op,
            action.arg(),
            ready,
            action.waits(),
            timeout,
        )
        .await?;
        match action {
            Action::Click => click(page, &found, 1).await?,
            Action::Dblclick => {
                click(page, &found, 1).await?;
                click(page, &found, 2).await?;
            }
            Action::Hover => mouse(page, "mouseMoved", &found, 0).await?,
            Action::Check | Action::Uncheck => {
                let want = *action == Action::Check;
                if found.get("checked").and_then(Value::as_bool) != Some(want) {
                    click(page, &found, 1).await?;
                    let now = locate(
                        page,
                        target,
                        "isChecked",
                        Value::Null,
                        false,
                        false,
                        timeout,
                    )
                    .await?;
                    if now != json!(want) {
                        return Err(BrowserError::Script(format!(
                            "{what}: clicking did not {} it",
                            if want { "check" } else { "uncheck" }
                        )));
                    }
                }
            }
            Action::Type(text) => type_text(page, text).await?,
            Action::Press(key) => press(page, key).await?,
            _ => return Ok(found),
        }
        Ok(Value::Null)
    };
    // The page's own wait has the timeout; this one guards a page that stopped.
    with_timeout(timeout + Duration::from_secs(1), &what, work).await
}

async fn mouse(page: &Page, kind: &str, at: &Value, clicks: u32) -> Result<(), BrowserError> {
    let x = at.get("x").and_then(Value::as_f64).unwrap_or(0.0);
    let y = at.get("y").and_then(Value::as_f64).unwrap_or(0.0);
    page.call(
        "Input.dispatchMouseEvent",
        json!({ "type": kind, "x": x, "y": y, "button": if kind == "mouseMoved" { "none" } else { "left" }, "clickCount": clicks }),
    )
    .await?;
    Ok(())
}

async fn click(page: &Page, at: &Value, count: u32) -> Result<(), BrowserError> {
    mouse(page, "mouseMoved", at, 0).await?;
    mouse(page, "mousePressed", at, count).await?;
    mouse(page, "mouseReleased", at, count).await
}

/// A named key: its `key`, `code`, virtual key code and the text it types.
fn named_key(name: &str) -> Option<(&'static str, &'static str, u32, &'static str)> {
    Some(match name {
        "Enter" => ("Enter", "Enter", 13, "\r"),
        "Tab" => ("Tab", "Tab", 9, ""),
        "Backspace" => ("Backspace", "Backspace", 8, ""),
        "Delete" => ("Delete", "Delete", 46, ""),
        "Escape" => ("Escape", "Escape", 27, ""),
        "Space" | " " => (" ", "Space", 32, " "),
        "ArrowLeft" => ("ArrowLeft", "ArrowLeft", 37, ""),
        "ArrowUp" => ("ArrowUp", "ArrowUp", 38, ""),
        "ArrowRight" => ("ArrowRight", "ArrowRight", 39, ""),
        "ArrowDown" => ("ArrowDown", "ArrowDown", 40, ""),
        "Home" => ("Home", "Home", 36, ""),
        "End" => ("End", "End", 35, ""),
        "PageUp" => ("PageUp", "PageUp", 33, ""),
        "PageDown" => ("PageDown", "PageDown", 34, ""),
        "Shift" => ("Shift", "ShiftLeft", 16, ""),
        "Control" => ("Control", "ControlLeft", 17, ""),
        "Alt" => ("Alt", "AltLeft", 18, ""),
        "Meta" => ("Meta", "MetaLeft", 91, ""),
        _ => return None,
    })
}

/// One key down and up, with `modifiers` (CDP's bit mask) held.
async fn key(page: &Page, name: &str, modifiers: u32) -> Result<(), BrowserError> {
    key_half(page, name, modifiers, true).await?;
    key_half(page, name, modifiers, false).await
}

/// One key going down (`down`) or up, with `modifiers` held (k6's `keyboard.down` and
/// `keyboard.up` are these alone).
pub(crate) async fn key_half(
    page: &Page,
    name: &str,
    modifiers: u32,
    down: bool,
) -> Result<(), BrowserError> {
    let (key, code, vk, text) = match named_key(name) {
        Some((k, c, v, t)) => (k.to_owned(), c.to_owned(), v, t.to_owned()),
        None => {
            let mut chars = name.chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                return Err(BrowserError::Invalid(format!(
                    "key {name:?}: write one character or a key name such as Enter, Tab, \
                     Backspace, ArrowDown, optionally with modifiers (Control+A)"
                )));
            };
            let upper = c.to_ascii_uppercase();
            let code = if c.is_ascii_alphabetic() {
                format!("Key{upper}")
            } else if c.is_ascii_digit() {
                format!("Digit{c}")
            } else {
                String::new()
            };
            let vk = if c.is_ascii_alphanumeric() {
                upper as u32
            } else {
                0
            };
            (c.to_string(), code, vk, c.to_string())
        }
    };
    if !down {
        page.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers }),
        )
        .await?;
        return Ok(());
    }
    // With Control or Meta held a key types nothing (it is a shortcut).
    let text = if modifiers & 0b0110 != 0 {
        String::new()
    } else {
        text
    };
    let kind = if text.is_empty() {
        "rawKeyDown"
    } else {
        "keyDown"
    };
    page.call(
        "Input.dispatchKeyEvent",
        json!({ "type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk,
                "text": text, "unmodifiedText": text, "modifiers": modifiers }),
    )
    .await?;
    Ok(())
}

/// Presses `combo` (`Enter`, `a`, `Control+A`, `Shift+ArrowLeft`).
pub(crate) async fn press(page: &Page, combo: &str) -> Result<(), BrowserError> {
    let parts: Vec<&str> = if combo == "+" {
        vec!["+"]
    } else {
        combo.split('+').collect()
    };
    let (last, held) = parts
        .split_last()
        .ok_or_else(|| BrowserError::Invalid("empty key".into()))?;
    let mut modifiers = 0;
    for m in held {
        modifiers |= match *m {
            "Alt" => 1,
            "Control" => 2,
            "Meta" => 4,
            "Shift" => 8,
            other => {
                return Err(BrowserError::Invalid(format!(
                    "{combo:?}: {other:?} is not a modifier (Alt, Control, Meta, Shift)"
                )))
            }
        };
    }
    key(page, last, modifiers).await
}

/// Types `text` into the focused element, one key per character (characters no key
/// makes are inserted as text).
pub(crate) async fn type_text(page: &Page, text: &str) -> Result<(), BrowserError> {
    for c in text.chars() {
        if c == '\n' {
            key(page, "Enter", 0).await?;
        } else if c.is_ascii_graphic() || c == ' ' {
            key(page, &c.to_string(), 0).await?;
        } else {
            page.call("Input.insertText", json!({ "text": c.to_string() }))
                .await?;
        }
    }
    Ok(())
}

/// Waits until the element `selector` finds is `state` (`attached`, `detached`,
/// `visible`, `hidden`).
pub(crate) async fn wait_for_selector(
    page: &Page,
    selector: &str,
    state: &str,
    timeout: Duration,
) -> Result<(), BrowserError> {
    let check = match state {
        "" | "visible" => "v",
        "attached" => "n > 0",
        "detached" => "n === 0",
        "hidden" => "!v",
        other => {
            return Err(BrowserError::Invalid(format!(
                "state {other:?}: write attached, detached, visible or hidden"
            )))
        }
    };
    // The same search as the actions' (chains, getBy*, XPath), asked without waiting.
    let q = lit(&json!(selector));
    let function = format!(
        "() => {{ const f = {SCRIPT}; const n = f({q}, null, 'count', null, false, false, 0); \
         const v = n > 0 && f({q}, null, 'isVisible', null, false, false, 0); return {check}; }}"
    );
    wait_for_function(page, &function, "null", 30, timeout)
        .await
        .map(|_| ())
        .map_err(|e| match e {
            BrowserError::Timeout(_) => BrowserError::Timeout(format!(
                "waitForSelector {selector:?} ({}): timed out after {} ms",
                if state.is_empty() { "visible" } else { state },
                timeout.as_millis()
            )),
            other => other,
        })
}

/// Polls `function(arg)` every `polling` ms until it returns a truthy value; that
/// value.
pub(crate) async fn wait_for_function(
    page: &Page,
    function: &str,
    arg_json: &str,
    polling_ms: u32,
    timeout: Duration,
) -> Result<Value, BrowserError> {
    let arg: Value = serde_json::from_str(if arg_json.is_empty() {
        "null"
    } else {
        arg_json
    })
    .map_err(|e| BrowserError::Invalid(format!("the argument is not JSON: {e}")))?;
    let expression = format!(
        "(() => {{ const f = ({function}); const arg = {arg}; const until = Date.now() + {ms};\
         return new Promise((resolve, reject) => {{ (async function poll() {{\
         let v; try {{ v = await (typeof f === 'function' ? f(arg) : f); }} catch (e) {{ reject(e); return; }}\
         if (v) {{ resolve(v); return; }} if (Date.now() >= until) {{ reject(new Error('timeout')); return; }}\
         setTimeout(poll, {poll}); }})(); }}); }})()",
        ms = timeout.as_millis(),
        poll = polling_ms.max(10)
    );
    let work = async {
        match page.evaluate(&expression).await {
            Err(BrowserError::Script(m)) if m.contains("Error: timeout") => {
                Err(BrowserError::Timeout(format!(
                    "waitForFunction: timed out after {} ms",
                    timeout.as_millis()
                )))
            }
            other => other,
        }
    };
    with_timeout(timeout + Duration::from_secs(1), "waitForFunction", work).await
}

/// Evaluates `function` (a function's source or an expression) with the JSON
/// argument in the page.
pub(crate) async fn evaluate(
    page: &Page,
    function: &str,
    arg_json: &str,
) -> Result<Value, BrowserError> {
    let arg: Value = serde_json::from_str(if arg_json.is_empty() {
        "null"
    } else {
        arg_json
    })
    .map_err(|e| BrowserError::Invalid(format!("the argument is not JSON: {e}")))?;
    page.evaluate(&format!(
        "(() => {{ const f = ({function}); return typeof f === 'function' ? f({arg}) : f; }})()"
    ))
    .await
}

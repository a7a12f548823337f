//! What the script does with the values it keeps in the page (k6's `JSHandle`,
//! `ElementHandle`): evaluate one (`evaluateHandle`), find elements (`page.$`,
//! `page.$$`), read, evaluate on and act on a handle, dispose of it. The table of
//! handles is [`super::handles`].

use super::actions::{act, locate_raw, Action, Target};
use super::handles::Held;
use super::page::{value_of, Page};
use super::BrowserError;
use serde_json::{json, Value};
use std::time::Duration;

fn parse_arg(arg_json: &str) -> Result<Value, BrowserError> {
    serde_json::from_str(if arg_json.is_empty() {
        "null"
    } else {
        arg_json
    })
    .map_err(|e| BrowserError::Invalid(format!("the argument is not JSON: {e}")))
}

/// Evaluates `function` (or an expression) with the JSON argument; its value kept.
pub(crate) async fn evaluate_handle(
    page: &Page,
    function: &str,
    arg_json: &str,
) -> Result<u32, BrowserError> {
    let arg = parse_arg(arg_json)?;
    let r = page
        .call(
            "Runtime.evaluate",
            json!({
                "expression": format!(
                    "(() => {{ const f = ({function}); return typeof f === 'function' ? f({arg}) : f; }})()"
                ),
                "returnByValue": false,
                "awaitPromise": true,
                "userGesture": true,
            }),
        )
        .await?;
    remote(page, r)
}

/// A reply's remote object (or the page's exception), kept.
fn remote(page: &Page, r: Value) -> Result<u32, BrowserError> {
    if r.get("exceptionDetails").is_some() {
        return Err(value_of(r)
            .err()
            .unwrap_or_else(|| BrowserError::Script("the page threw".into())));
    }
    page.handles.keep(r.get("result").unwrap_or(&Value::Null))
}

/// Handles of the elements `selector` finds now: the first, or all.
pub(crate) async fn query(
    page: &Page,
    selector: &str,
    all: bool,
) -> Result<Vec<u32>, BrowserError> {
    let target = Target::Selector(selector, None);
    if !all {
        let found = locate_raw(
            page,
            target,
            "element",
            Value::Null,
            false,
            false,
            Duration::ZERO,
            false,
        )
        .await?;
        if found.get("objectId").is_none() {
            return Ok(Vec::new());
        }
        return Ok(vec![page.handles.keep(&found)?]);
    }
    let list = locate_raw(
        page,
        target,
        "elements",
        Value::Null,
        false,
        false,
        Duration::ZERO,
        false,
    )
    .await?;
    let Some(array) = list.get("objectId").and_then(Value::as_str) else {
        return Ok(Vec::new());
    };
    let props = page
        .call(
            "Runtime.getProperties",
            json!({ "objectId": array, "ownProperties": true }),
        )
        .await?;
    let mut out = Vec::new();
    if let Some(Value::Array(items)) = props.get("result") {
        let mut indexed: Vec<(usize, &Value)> = items
            .iter()
            .filter_map(|p| Some((p.get("name")?.as_str()?.parse().ok()?, p.get("value")?)))
            .collect();
        indexed.sort_by_key(|(i, _)| *i);
        for (_, v) in indexed {
            out.push(page.handles.keep(v)?);
        }
    }
    page.send_release(array);
    Ok(out)
}

/// A handle's value as JSON.
pub(crate) async fn json_value(page: &Page, id: u32) -> Result<Value, BrowserError> {
    match page.handles.get(id)? {
        Held::Value(v) => Ok(v),
        Held::Object(object) => {
            let r = page
                .call(
                    "Runtime.callFunctionOn",
                    json!({ "objectId": object, "functionDeclaration": "function () { return this; }",
                            "returnByValue": true }),
                )
                .await?;
            value_of(r)
        }
    }
}

/// `function(value, arg)` on handle `id`'s value: the result as JSON (`by_value`) or
/// kept as a new handle (its number as JSON).
pub(crate) async fn evaluate_on(
    page: &Page,
    id: u32,
    function: &str,
    arg_json: &str,
    by_value: bool,
) -> Result<Value, BrowserError> {
    let arg = parse_arg(arg_json)?;
    let declaration = format!(
        "function (value, arg) {{ const f = ({function}); return typeof f === 'function' ? f(value, arg) : f; }}"
    );
    let first = match page.handles.get(id)? {
        Held::Object(object) => json!({ "objectId": object }),
        Held::Value(v) => json!({ "value": v }),
    };
    // Called on the global object, the value and the argument passed in.
    let global = page
        .call(
            "Runtime.evaluate",
            json!({ "expression": "globalThis", "returnByValue": false }),
        )
        .await?;
    let this = global
        .pointer("/result/objectId")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let r = page
        .call(
            "Runtime.callFunctionOn",
            json!({
                "objectId": this,
                "functionDeclaration": declaration,
                "arguments": [first, { "value": arg }],
                "returnByValue": by_value,
                "awaitPromise": true,
                "userGesture": true,
            }),
        )
        .await;
    page.send_release(&this);
    let r = r?;
    if by_value {
        value_of(r)
    } else {
        remote(page, r).map(|n| json!(n))
    }
}

/// `action` on handle `id`'s element.
pub(crate) async fn act_on(
    page: &Page,
    id: u32,
    action: &Action,
    timeout: Duration,
) -> Result<Value, BrowserError> {
    match page.handles.get(id)? {
        Held::Object(object) => act(page, Target::Element(&object), action, timeout).await,
        Held::Value(_) => Err(BrowserError::Invalid(format!(
            "handle {id} holds a value, not an element"
        ))),
    }
}

/// Releases handle `id` (an unknown one is no error: disposing twice is allowed).
pub(crate) fn dispose(page: &Page, id: u32) {
    if let Some(Held::Object(object)) = page.handles.remove(id) {
        page.send_release(&object);
    }
}

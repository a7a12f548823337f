//! Input at a point of the page rather than on an element: k6's `page.mouse` (move,
//! down, up, click, dblclick, wheel, at viewport coordinates in CSS pixels) and
//! `page.touchscreen.tap`, as real input events (`Input.dispatchMouseEvent`,
//! `Input.dispatchTouchEvent`) so the page's handlers run as they would for a person.

use super::page::Page;
use super::BrowserError;
use serde_json::json;

/// What the mouse does (the contract's `mouse` kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MouseKind {
    /// Moves to the point (no button).
    Move,
    /// Presses the button at the point.
    Down,
    /// Releases it.
    Up,
    /// Moves, presses and releases, `clicks` times.
    Click,
}

impl MouseKind {
    /// k6's names: `move`, `down`, `up`, `click`.
    pub(crate) fn parse(name: &str) -> Result<MouseKind, BrowserError> {
        Ok(match name {
            "move" => MouseKind::Move,
            "down" => MouseKind::Down,
            "up" => MouseKind::Up,
            "click" => MouseKind::Click,
            other => {
                return Err(BrowserError::Invalid(format!(
                    "mouse {other:?}: write move, down, up or click"
                )))
            }
        })
    }
}

fn button(name: &str) -> Result<&'static str, BrowserError> {
    Ok(match name {
        "" | "left" => "left",
        "right" => "right",
        "middle" => "middle",
        other => {
            return Err(BrowserError::Invalid(format!(
                "mouse button {other:?}: write left, right or middle"
            )))
        }
    })
}

async fn dispatch(
    page: &Page,
    kind: &str,
    (x, y): (f64, f64),
    button: &str,
    clicks: u32,
) -> Result<(), BrowserError> {
    page.call(
        "Input.dispatchMouseEvent",
        json!({ "type": kind, "x": x, "y": y, "button": button, "clickCount": clicks }),
    )
    .await?;
    Ok(())
}

/// The mouse's `kind` at `(x, y)` with `button_name`; a click is `clicks` presses (2 for
/// a double click, each press counted as the browser counts them).
pub(crate) async fn mouse(
    page: &Page,
    kind: MouseKind,
    at: (f64, f64),
    button_name: &str,
    clicks: u32,
) -> Result<(), BrowserError> {
    if !(at.0.is_finite() && at.1.is_finite()) {
        return Err(BrowserError::Invalid(
            "mouse coordinates must be numbers".into(),
        ));
    }
    let b = button(button_name)?;
    match kind {
        MouseKind::Move => dispatch(page, "mouseMoved", at, "none", 0).await,
        MouseKind::Down => dispatch(page, "mousePressed", at, b, 1).await,
        MouseKind::Up => dispatch(page, "mouseReleased", at, b, 1).await,
        MouseKind::Click => {
            dispatch(page, "mouseMoved", at, "none", 0).await?;
            for n in 1..=clicks.clamp(1, 3) {
                dispatch(page, "mousePressed", at, b, n).await?;
                dispatch(page, "mouseReleased", at, b, n).await?;
            }
            Ok(())
        }
    }
}

/// A tap at `(x, y)`: a touch that starts and ends there.
pub(crate) async fn tap(page: &Page, (x, y): (f64, f64)) -> Result<(), BrowserError> {
    if !(x.is_finite() && y.is_finite()) {
        return Err(BrowserError::Invalid(
            "tap coordinates must be numbers".into(),
        ));
    }
    page.call(
        "Input.dispatchTouchEvent",
        json!({ "type": "touchStart", "touchPoints": [{ "x": x, "y": y }] }),
    )
    .await?;
    page.call(
        "Input.dispatchTouchEvent",
        json!({ "type": "touchEnd", "touchPoints": [] }),
    )
    .await?;
    Ok(())
}

/// The mouse wheel turned at `(x, y)` by `(dx, dy)` CSS pixels (k6's `mouse.wheel`):
/// the page scrolls as for a person, its `wheel` handlers run.
pub(crate) async fn wheel(
    page: &Page,
    (x, y): (f64, f64),
    (dx, dy): (f64, f64),
) -> Result<(), BrowserError> {
    if ![x, y, dx, dy].iter().all(|v| v.is_finite()) {
        return Err(BrowserError::Invalid(
            "mouse.wheel needs numbers (deltaX, deltaY)".into(),
        ));
    }
    page.call(
        "Input.dispatchMouseEvent",
        json!({ "type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy }),
    )
    .await?;
    Ok(())
}

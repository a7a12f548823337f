//! k6's (Playwright's) permission names as the DevTools protocol's `PermissionType`s,
//! for `context.grantPermissions` and `newContext({ permissions })`.

use super::BrowserError;

/// The protocol's permission for one of k6's names.
fn protocol_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "geolocation" => "geolocation",
        "notifications" => "notifications",
        "camera" => "videoCapture",
        "microphone" => "audioCapture",
        "clipboard-read" => "clipboardReadWrite",
        "clipboard-write" => "clipboardSanitizedWrite",
        "midi" => "midi",
        "midi-sysex" => "midiSysex",
        "background-sync" => "backgroundSync",
        "payment-handler" => "paymentHandler",
        "accelerometer" | "gyroscope" | "magnetometer" | "ambient-light-sensor" => "sensors",
        "storage-access" => "storageAccess",
        "local-fonts" => "localFonts",
        _ => return None,
    })
}

/// The protocol's permissions for `names`, each once; an unknown name is an error
/// listing the names known.
pub(crate) fn protocol_names(names: &[String]) -> Result<Vec<&'static str>, BrowserError> {
    let mut out = Vec::new();
    for name in names {
        let Some(p) = protocol_name(name) else {
            return Err(BrowserError::Invalid(format!(
                "permission {:?}: write one of geolocation, notifications, camera, microphone, \
                 clipboard-read, clipboard-write, midi, midi-sysex, background-sync, \
                 payment-handler, accelerometer, gyroscope, magnetometer, \
                 ambient-light-sensor, storage-access, local-fonts",
                crate::bounded::cut(name, crate::bounded::QUOTED_BYTES)
            )));
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Checks a position: latitude -90..=90, longitude -180..=180, accuracy ≥ 0.
pub(crate) fn check_position(lat: f64, lon: f64, accuracy: f64) -> Result<(), BrowserError> {
    if !(-90.0..=90.0).contains(&lat)
        || !(-180.0..=180.0).contains(&lon)
        || accuracy.is_nan()
        || accuracy < 0.0
    {
        return Err(BrowserError::Invalid(format!(
            "geolocation {lat}, {lon} (accuracy {accuracy}): latitude is -90 to 90, longitude \
             -180 to 180, accuracy 0 or more metres"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k6s_names_map_to_the_protocols() {
        let names = ["geolocation", "camera", "gyroscope", "magnetometer"].map(String::from);
        assert_eq!(
            protocol_names(&names).unwrap(),
            ["geolocation", "videoCapture", "sensors"]
        );
        let e = protocol_names(&["teleport".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"teleport\"") && e.contains("geolocation"),
            "{e}"
        );
        assert!(check_position(52.5, 13.4, 10.0).is_ok());
        assert!(check_position(91.0, 0.0, 0.0).is_err());
        assert!(check_position(0.0, 0.0, f64::NAN).is_err());
    }
}

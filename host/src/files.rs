//! Results files written whole or not at all, and how a write that failed is
//! reported. A leaf: the samplers (stats.md) and the outputs (summary.json, report)
//! both write through it.

use std::path::Path;
use std::time::Duration;

/// A results file that could not be written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    /// The file (`summary.json`, `histograms/`).
    pub file: String,
    /// The error, with what to do when it is a known limit.
    pub error: String,
}

/// Writes `dir/name` whole or not at all: to a temporary name first, then renamed
/// over. Running out of descriptors is waited out briefly (the VUs' connections are
/// closing as the run ends).
pub fn write_whole(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let temp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let mut attempt = 0;
    loop {
        let result = (|| {
            let mut file = std::fs::File::create(&temp)?;
            std::io::Write::write_all(&mut file, bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, &path)
        })();
        match result {
            Ok(()) => return Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                let transient = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                attempt += 1;
                if !transient || attempt >= 5 {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(100 * attempt));
            }
        }
    }
}

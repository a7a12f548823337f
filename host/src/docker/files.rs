//! Reading a file out of a container through the Engine's archive endpoint, which
//! works on any image, even one `FROM scratch` with no shell to `cat` with.

use anyhow::{bail, Context, Result};
use bollard::query_parameters::DownloadFromContainerOptionsBuilder;
use bollard::Docker;
use futures::StreamExt;
use std::io::Read;

/// Largest file read: enough for any certificate or small config, and a bound on what
/// a container can make the host hold.
const MAX_BYTES: usize = 1 << 20;

/// The contents of the regular file at `path` in container `id`.
pub(crate) async fn read_file(docker: &Docker, id: &str, path: &str) -> Result<Vec<u8>> {
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(path)
        .build();
    let mut stream = docker.download_from_container(id, Some(options));
    let mut archive = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.with_context(|| format!("cannot read {path} from container {id}"))?;
        archive.extend_from_slice(&chunk);
        if archive.len() > MAX_BYTES + 64 * 1024 {
            bail!("{path} in container {id} is larger than {MAX_BYTES} bytes");
        }
    }
    // The endpoint answers with a tar of that one path.
    let mut tar = tar::Archive::new(archive.as_slice());
    for entry in tar.entries().context("the Engine sent a broken archive")? {
        let mut entry = entry.context("the Engine sent a broken archive")?;
        if entry.header().entry_type().is_file() {
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .context("the Engine sent a broken archive")?;
            return Ok(bytes);
        }
    }
    bail!("{path} in container {id} is not a regular file")
}

//! Images for the stack, made from this project's binaries with no registry and no
//! rebuild: the binary already built, the shared libraries `ldd` lists and the dynamic
//! loader go into a root-filesystem tar at their own paths, which the Engine imports
//! (`POST /images/create?fromSrc=-`). A static second build of each binary would cost
//! CI minutes; this costs the import of a few tens of megabytes.
//!
//! A service whose image is `loadtest/NAME` gets the image built from the binary
//! `NAME`, tagged with the first 12 hex digits of the binary's SHA-256: a rebuilt binary
//! gets a new image, an unchanged one is never imported twice. Each import removes the
//! repository's older tags past the newest [`KEEP`], so rebuilding the host all day does
//! not fill the Engine's disk with a 130 MB image per build.

use anyhow::{bail, Context, Result};
use bollard::query_parameters::{
    CreateImageOptionsBuilder, ListImagesOptionsBuilder, RemoveImageOptionsBuilder,
};
use bollard::Docker;
use futures::TryStreamExt;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Images named `loadtest/NAME` are built from the project's binary `NAME`.
pub(crate) const REPO_PREFIX: &str = "loadtest/";

/// Tags of one `loadtest/NAME` repository kept in the Engine, newest first.
pub(crate) const KEEP: usize = 3;

/// Where a binary sits inside its image.
pub(crate) const BIN_DIR: &str = "/usr/local/bin";

/// An image ready in the Engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `loadtest/NAME:TAG`.
    pub reference: String,
    /// True when this call imported it; false when the Engine had it already.
    pub imported: bool,
}

/// The binary name an image stands for, when it is one of ours (`loadtest/NAME[:tag]`).
pub(crate) fn binary_for_image(image: &str) -> Option<&str> {
    let name = image.strip_prefix(REPO_PREFIX)?;
    let name = name.split(':').next().unwrap_or(name);
    (!name.is_empty()).then_some(name)
}

/// Finds the project binary `name`: in `LOADTEST_BIN_DIR` when set, else beside the
/// running executable (or one folder up, for test executables in `target/*/deps`).
pub fn find_binary(name: &str) -> Result<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("LOADTEST_BIN_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            dirs.push(dir.to_path_buf());
            if dir.ends_with("deps") {
                dirs.extend(dir.parent().map(Path::to_path_buf));
            }
        }
    }
    for dir in &dirs {
        let path = dir.join(name);
        if path.is_file() {
            return Ok(path);
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    bail!(
        "the image {REPO_PREFIX}{name} is made from the binary `{name}`, which is not in {}; \
         build it with `cargo build -p {name}` (add --release for a release host), \
         or set LOADTEST_BIN_DIR to the folder that holds it",
        looked.join(" or ")
    )
}

/// The variable the Compose and stack files read an image's tag from
/// (`demo-target` → `DEMO_TARGET_TAG`).
pub(crate) fn tag_variable(name: &str) -> String {
    format!("{}_TAG", name.to_uppercase().replace('-', "_"))
}

/// `host images NAME...`: imports each binary's image if the Engine lacks it, and
/// returns `VAR=TAG` lines for the Compose and stack files (`export $(host images)`).
pub(crate) async fn import_for_files(docker: &Docker, names: &[String]) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for name in names {
        let binary = find_binary(name)?;
        let image = ensure_image(docker, name, &binary).await?;
        let tag = image.reference.rsplit(':').next().unwrap_or_default();
        lines.push(format!("{}={tag}", tag_variable(name)));
    }
    Ok(lines)
}

/// Makes sure the image of binary `name` (at `binary`) exists, importing it if not.
pub async fn ensure_image(docker: &Docker, name: &str, binary: &Path) -> Result<Image> {
    let bytes =
        std::fs::read(binary).with_context(|| format!("cannot read {}", binary.display()))?;
    let tag = hex::encode(&Sha256::digest(&bytes)[..6]);
    let repo = format!("{REPO_PREFIX}{name}");
    let reference = format!("{repo}:{tag}");
    if docker.inspect_image(&reference).await.is_ok() {
        return Ok(Image {
            reference,
            imported: false,
        });
    }
    let tar = rootfs_tar(name, binary, &bytes)?;
    let options = CreateImageOptionsBuilder::default()
        .from_src("-")
        .repo(&repo)
        .tag(&tag)
        .changes(vec![format!("ENTRYPOINT [\"{BIN_DIR}/{name}\"]")])
        .build();
    docker
        .create_image(Some(options), Some(bollard::body_full(tar.into())), None)
        .try_collect::<Vec<_>>()
        .await
        .with_context(|| format!("the Engine could not import the image {reference}"))?;
    prune_old_tags(docker, &repo, KEEP).await;
    Ok(Image {
        reference,
        imported: true,
    })
}

/// Removes the tags of `repo` past the newest `keep`. Without force: the Engine refuses
/// to remove an image a container (of any project, running or stopped) still uses, and
/// such a refusal is left alone. Pruning is housekeeping, so no failure is an error.
async fn prune_old_tags(docker: &Docker, repo: &str, keep: usize) {
    let filters = HashMap::from([("reference", vec![repo.to_string()])]);
    let options = ListImagesOptionsBuilder::default()
        .filters(&filters)
        .build();
    let Ok(mut images) = docker.list_images(Some(options)).await else {
        return;
    };
    images.sort_by_key(|i| std::cmp::Reverse(i.created));
    for image in images.iter().skip(keep) {
        for tag in image
            .repo_tags
            .iter()
            .filter(|t| t.starts_with(&format!("{repo}:")))
        {
            let options = RemoveImageOptionsBuilder::default().force(false).build();
            let _ = docker.remove_image(tag, Some(options), None).await;
        }
    }
}

/// The image's root filesystem: the binary, its shared libraries and loader, an
/// `nsswitch.conf` so glibc resolves service names through files then DNS, and `/tmp`.
fn rootfs_tar(name: &str, binary: &Path, bytes: &[u8]) -> Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
    dir(&mut tar, "tmp/", 0o1777)?;
    file(&mut tar, &format!("{}/{name}", &BIN_DIR[1..]), bytes, 0o755)?;
    for library in shared_libraries(binary)? {
        let content = std::fs::read(&library).with_context(|| {
            format!("cannot read {}, a library {name} needs", library.display())
        })?;
        let inside = library.to_string_lossy();
        file(&mut tar, inside.trim_start_matches('/'), &content, 0o755)?;
    }
    file(&mut tar, "etc/nsswitch.conf", b"hosts: files dns\n", 0o644)?;
    file(
        &mut tar,
        "etc/passwd",
        b"root:x:0:0:root:/:/nonexistent\nnobody:x:65534:65534:nobody:/:/nonexistent\n",
        0o644,
    )?;
    Ok(tar.into_inner()?)
}

fn file(tar: &mut tar::Builder<Vec<u8>>, path: &str, bytes: &[u8], mode: u32) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(mode);
    header.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut header, path, bytes)?;
    Ok(())
}

fn dir(tar: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(0);
    header.set_mode(mode);
    header.set_entry_type(tar::EntryType::Directory);
    tar.append_data(&mut header, path, std::io::empty())?;
    Ok(())
}

/// The absolute paths `ldd` prints for `binary` (libraries and the loader); none for a
/// static binary. Symlinks are read through, so each path holds the real file.
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>> {
    let output = Command::new("ldd")
        .arg(binary)
        .output()
        .context("cannot run `ldd` to list the libraries the image needs (Debian: libc-bin)")?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        if text.contains("not a dynamic executable")
            || String::from_utf8_lossy(&output.stderr).contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        bail!(
            "`ldd {}` failed: {}",
            binary.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(parse_ldd(&text))
}

/// `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` and
/// `/lib64/ld-linux-x86-64.so.2 (0x...)` give their path; `linux-vdso.so.1` lives in
/// the kernel and has none.
fn parse_ldd(text: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = text
        .lines()
        .filter_map(|line| {
            let target = match line.split_once("=>") {
                Some((_, right)) => right,
                None => line,
            };
            let path = target.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_libraries_and_loader_but_not_the_vdso() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn only_loadtest_images_name_a_binary() {
        assert_eq!(
            binary_for_image("loadtest/demo-target"),
            Some("demo-target")
        );
        assert_eq!(
            binary_for_image("loadtest/demo-target:abc"),
            Some("demo-target")
        );
        assert_eq!(binary_for_image("nginx:1.25"), None);
        assert_eq!(binary_for_image("loadtest/"), None);
    }
}

//! Containers for the sampling tests, on the real Docker engine: a tiny image imported
//! from a root-filesystem tar made of this machine's `md5sum` and `sleep` with the
//! libraries they load (no image can be pulled), and containers named uniquely and
//! removed when dropped, even when the test fails.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// The test image's tag.
pub const IMAGE: &str = "host-sampling-test:1";

/// Imports the test image once per test binary (if the engine lacks it).
pub fn image() -> &'static str {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let present = Command::new("docker")
            .args(["image", "inspect", IMAGE])
            .output()
            .expect("docker runs")
            .status
            .success();
        if present {
            return;
        }
        let root = tempfile::tempdir().unwrap();
        for program in ["/usr/bin/md5sum", "/usr/bin/sleep"] {
            copy_into(root.path(), program);
            let ldd = Command::new("ldd").arg(program).output().unwrap();
            for line in String::from_utf8_lossy(&ldd.stdout).lines() {
                // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or the loader.
                let path = line
                    .split("=>")
                    .last()
                    .and_then(|rest| rest.split_whitespace().next())
                    .filter(|p| p.starts_with('/'));
                if let Some(path) = path {
                    copy_into(root.path(), path);
                }
            }
        }
        let tar = Command::new("tar")
            .arg("-C")
            .arg(root.path())
            .args(["-c", "."])
            .output()
            .unwrap();
        assert!(tar.status.success());
        let mut import = Command::new("docker")
            .args([
                "import",
                "--change",
                r#"CMD ["/usr/bin/sleep","infinity"]"#,
                "-",
                IMAGE,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        import.stdin.take().unwrap().write_all(&tar.stdout).unwrap();
        assert!(import.wait().unwrap().success(), "docker import {IMAGE}");
    });
    IMAGE
}

fn copy_into(root: &Path, path: &str) {
    let to = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    // Follows symlinks: the image gets the file itself.
    std::fs::copy(path, &to).unwrap_or_else(|e| panic!("copy {path}: {e}"));
}

/// A running container, removed (with `docker rm -f`) when dropped.
pub struct Container {
    /// Its unique name.
    pub name: String,
}

impl Container {
    /// `docker run -d --name <unique> <args> IMAGE <cmd>`; `stem` starts the name.
    pub fn run(stem: &str, args: &[&str], cmd: &[&str]) -> Container {
        let name = unique(stem);
        let image = image();
        // Made before the run, so a failed `docker run` still removes what it created.
        let container = Container { name: name.clone() };
        let out = Command::new("docker")
            .args(["run", "-d", "--name", &name])
            .args(args)
            .arg(image)
            .args(cmd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "docker run {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        container
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "-f", "-v", &self.name])
            .output();
    }
}

/// A name no other test run uses: the stem, this process's id and a counter.
pub fn unique(stem: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{stem}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

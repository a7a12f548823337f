//! Starting one Chromium: where it is, its arguments (read from the environment as k6
//! reads them), and the process itself, talking the DevTools protocol over two pipes
//! (`--remote-debugging-pipe`: commands on the child's fd 3, replies on its fd 4), so
//! no port is opened on loopback that another local process could connect to.
//!
//! Every browser process dies with the host however the host ends: each is the leader
//! of its own process group, killed as a group when its [`Process`] is dropped; and
//! `PR_SET_PDEATHSIG` kills it if the host is killed outright (SIGKILL, a crash), its
//! helpers (zygote, renderers) following their parent as Chromium makes them do. The
//! death signal fires when the *thread* that forked exits, so every browser is forked
//! from one long-lived launcher thread (see [`Launcher`]), never from a pool thread that
//! tokio may retire.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// The Debian package that provides the browser, named in the error when none is found.
pub(crate) const DEBIAN_PACKAGE: &str = "chromium";

/// Names looked for on `PATH` when `K6_BROWSER_EXECUTABLE_PATH` is not set (k6's list,
/// Debian's name first).
const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];

/// Arguments every browser gets (k6's defaults, less those that only matter with a
/// screen): nothing of the browser's own reaches the network (no component updates,
/// no sync, no safe-browsing lists), so a page's requests are the only traffic.
const DEFAULT_ARGS: &[&str] = &[
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-extensions",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-client-side-phishing-detection",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-ipc-flooding-protection",
    // The WebUI omnibox popups and reload button: Chromium 156 gives every window, so
    // every browser context, a renderer of its own for them (a renderer of about
    // 24 MiB PSS per context; results/browser.md).
    "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,WebUIReloadButton",
    "--metrics-recording-only",
    "--no-pings",
    "--no-service-autorun",
    "--password-store=basic",
    "--use-mock-keychain",
    "--mute-audio",
    "--hide-scrollbars",
    "--enable-automation",
];

/// How browsers are started: the executable, headless or not, extra arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaunchOptions {
    /// The browser's executable (found on `PATH` or given).
    pub(crate) executable: PathBuf,
    /// Whether it runs without a window (`K6_BROWSER_HEADLESS`, default true).
    pub(crate) headless: bool,
    /// Arguments from `K6_BROWSER_ARGS`, each already `--name[=value]`.
    pub(crate) args: Vec<String>,
    /// Whether `--no-sandbox` is added: the host runs as root, where Chromium's
    /// sandbox refuses to start (k6 leaves it to `K6_BROWSER_ARGS=no-sandbox`).
    pub(crate) no_sandbox: bool,
}

/// Why no browser could be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    /// No executable was found.
    #[error(
        "browser tests need Chromium, and {0}; install Debian's `{DEBIAN_PACKAGE}` package \
         (apt-get install {DEBIAN_PACKAGE}) or set K6_BROWSER_EXECUTABLE_PATH to a \
         Chromium or Chrome executable"
    )]
    NotFound(String),
    /// An environment variable has a value that cannot be read.
    #[error("{name}={value:?}: {why}")]
    BadEnv {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What to write instead.
        why: &'static str,
    },
    /// The process did not start.
    #[error("could not start the browser {}: {why}", executable.display())]
    Spawn {
        /// The executable.
        executable: PathBuf,
        /// The operating system's reason.
        why: std::io::Error,
    },
}

impl LaunchOptions {
    /// The options k6 would use, from its environment variables
    /// (`K6_BROWSER_EXECUTABLE_PATH`, `K6_BROWSER_HEADLESS`, `K6_BROWSER_ARGS`), checked
    /// now: a missing browser is an error before the run, not in its first iteration.
    pub(crate) fn from_env(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<LaunchOptions, LaunchError> {
        let executable = match get("K6_BROWSER_EXECUTABLE_PATH").filter(|p| !p.is_empty()) {
            Some(path) => {
                let path = PathBuf::from(path);
                if !is_executable(&path) {
                    return Err(LaunchError::NotFound(format!(
                        "K6_BROWSER_EXECUTABLE_PATH={} is not an executable file",
                        path.display()
                    )));
                }
                path
            }
            None => find_on_path(get("PATH").map(OsString::from)).ok_or_else(|| {
                LaunchError::NotFound(format!("none of {} is on PATH", CANDIDATES.join(", ")))
            })?,
        };
        let headless = match get("K6_BROWSER_HEADLESS").as_deref().map(str::trim) {
            None | Some("") => true,
            Some(v) if v.eq_ignore_ascii_case("true") || v == "1" => true,
            Some(v) if v.eq_ignore_ascii_case("false") || v == "0" => false,
            Some(v) => {
                return Err(LaunchError::BadEnv {
                    name: "K6_BROWSER_HEADLESS",
                    value: v.to_owned(),
                    why: "write true or false",
                })
            }
        };
        let args = parse_args(get("K6_BROWSER_ARGS").as_deref().unwrap_or(""))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let no_sandbox = root && !args.iter().any(|a| a == "--no-sandbox");
        Ok(LaunchOptions {
            executable,
            headless,
            args,
            no_sandbox,
        })
    }

    /// The command line after the executable.
    pub(crate) fn command_line(&self, user_data_dir: &Path) -> Vec<OsString> {
        let mut line: Vec<OsString> = DEFAULT_ARGS.iter().map(OsString::from).collect();
        if self.headless {
            line.push("--headless=new".into());
        }
        if self.no_sandbox {
            line.push("--no-sandbox".into());
        }
        line.extend(self.args.iter().map(OsString::from));
        let mut dir = OsString::from("--user-data-dir=");
        dir.push(user_data_dir);
        line.push(dir);
        line.push("about:blank".into());
        line
    }
}

/// `K6_BROWSER_ARGS` as k6 reads it: a comma-separated list of `name` or `name=value`
/// without the leading dashes (`no-sandbox,lang=de`).
fn parse_args(text: &str) -> Result<Vec<String>, LaunchError> {
    let mut args = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let item = item.trim_start_matches('-');
        let name = item.split('=').next().unwrap_or("");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(LaunchError::BadEnv {
                name: "K6_BROWSER_ARGS",
                value: text.to_owned(),
                why: "write a comma-separated list of Chromium switches without dashes, \
                      such as no-sandbox,lang=en-US",
            });
        }
        // The host owns the protocol channel and the profile folder.
        if matches!(
            name,
            "remote-debugging-pipe" | "remote-debugging-port" | "user-data-dir"
        ) {
            return Err(LaunchError::BadEnv {
                name: "K6_BROWSER_ARGS",
                value: text.to_owned(),
                why: "remote-debugging-* and user-data-dir are set by the host",
            });
        }
        args.push(format!("--{item}"));
    }
    Ok(args)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn find_on_path(path: Option<OsString>) -> Option<PathBuf> {
    let path = path?;
    CANDIDATES.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| is_executable(p))
    })
}

/// A running browser process and the host's ends of its two pipes.
pub(crate) struct Process {
    child: Child,
    /// The profile folder, removed with the process.
    _profile: tempfile::TempDir,
}

/// The host's ends of the protocol pipes: it writes commands to `commands` and reads
/// replies and events from `replies`.
pub(crate) struct Pipes {
    /// Where commands go (the child's fd 3).
    pub(crate) commands: OwnedFd,
    /// Where replies come from (the child's fd 4).
    pub(crate) replies: OwnedFd,
}

impl Process {
    /// The process id (also its process group's id).
    #[cfg(test)]
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // The whole group: the browser and every helper it started.
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: kill has no memory preconditions; a group already gone gives ESRCH.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Forks and starts one browser (called on the launcher thread).
fn spawn(options: &LaunchOptions) -> Result<(Process, Pipes), LaunchError> {
    let err = |why| LaunchError::Spawn {
        executable: options.executable.clone(),
        why,
    };
    let profile = tempfile::Builder::new()
        .prefix("host-browser-")
        .tempdir()
        .map_err(err)?;
    let (child_reads, host_writes) = pipe().map_err(err)?;
    let (host_reads, child_writes) = pipe().map_err(err)?;
    let (cr, cw) = (child_reads.as_raw_fd(), child_writes.as_raw_fd());
    let mut command = Command::new(&options.executable);
    command
        .args(options.command_line(profile.path()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // Chromium's stderr is noise (D-Bus, GPU) that would interleave with the
        // host's own lines.
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: only async-signal-safe calls (prctl, getppid, fcntl, dup2) between fork
    // and exec, on descriptors that are open in the child.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Moved above 4 first, so that neither lands on the other's target.
            let r = libc::fcntl(cr, libc::F_DUPFD_CLOEXEC, 10);
            let w = libc::fcntl(cw, libc::F_DUPFD_CLOEXEC, 10);
            if r < 0 || w < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // dup2 clears close-on-exec on the new descriptor: these two survive exec.
            if libc::dup2(r, 3) < 0 || libc::dup2(w, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(err)?;
    drop((child_reads, child_writes));
    Ok((
        Process {
            child,
            _profile: profile,
        },
        Pipes {
            commands: host_writes,
            replies: host_reads,
        },
    ))
}

type Reply = mpsc::Sender<Result<(Process, Pipes), LaunchError>>;

/// The thread every browser is forked from: it lives as long as the pool, so a
/// browser's death signal (sent when its forking thread exits) fires only when the
/// host goes.
pub(crate) struct Launcher {
    requests: Option<mpsc::Sender<(LaunchOptions, Reply)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Launcher {
    /// Starts the launcher thread.
    pub(crate) fn start() -> std::io::Result<Launcher> {
        let (tx, rx) = mpsc::channel::<(LaunchOptions, Reply)>();
        let thread = std::thread::Builder::new()
            .name("browser-launcher".into())
            .spawn(move || {
                for (options, reply) in rx {
                    let _ = reply.send(spawn(&options));
                }
            })?;
        Ok(Launcher {
            requests: Some(tx),
            thread: Some(thread),
        })
    }

    /// Starts a browser; waits (off the async threads) for the fork.
    pub(crate) async fn launch(
        &self,
        options: &LaunchOptions,
    ) -> Result<(Process, Pipes), LaunchError> {
        let (tx, rx) = mpsc::channel();
        let gone = || LaunchError::Spawn {
            executable: options.executable.clone(),
            why: std::io::Error::other("the launcher thread has stopped"),
        };
        self.requests
            .as_ref()
            .ok_or_else(gone)?
            .send((options.clone(), tx))
            .map_err(|_| gone())?;
        tokio::task::spawn_blocking(move || rx.recv())
            .await
            .map_err(|_| gone())?
            .map_err(|_| gone())?
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn reads_k6s_variables() {
        let o = LaunchOptions::from_env(env(&[
            ("K6_BROWSER_EXECUTABLE_PATH", "/bin/sh"),
            ("K6_BROWSER_HEADLESS", "false"),
            ("K6_BROWSER_ARGS", "no-sandbox, lang=de-DE"),
        ]))
        .unwrap();
        assert_eq!(o.executable, PathBuf::from("/bin/sh"));
        assert!(!o.headless);
        assert_eq!(o.args, ["--no-sandbox", "--lang=de-DE"]);
        assert!(!o.no_sandbox, "given once by the user, not added again");
        let line = o.command_line(Path::new("/tmp/p"));
        assert!(line.iter().any(|a| a == "--remote-debugging-pipe"));
        assert!(!line.iter().any(|a| a == "--headless=new"));
        assert!(line.iter().any(|a| a == "--user-data-dir=/tmp/p"));
    }

    #[test]
    fn a_missing_browser_names_the_package() {
        let e = LaunchOptions::from_env(env(&[("K6_BROWSER_EXECUTABLE_PATH", "/nonexistent")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent") && e.contains("apt-get install chromium"),
            "{e}"
        );
        let e = LaunchOptions::from_env(env(&[("PATH", "/nonexistent-dir")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("none of chromium") && e.contains("`chromium`"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let e = LaunchOptions::from_env(env(&[
            ("K6_BROWSER_EXECUTABLE_PATH", "/bin/sh"),
            ("K6_BROWSER_HEADLESS", "maybe"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("true or false"), "{e}");
        assert!(parse_args("remote-debugging-port=9222").is_err());
        assert!(parse_args("a b").is_err());
        assert_eq!(parse_args("--mute-audio,").unwrap(), ["--mute-audio"]);
    }
}

//! A throwaway PostgreSQL 15 cluster (Debian's postgresql package; `./dev test`
//! installs it) in a temporary folder owned by the `postgres` user (the server
//! refuses to run as root), on a free loopback port, stopped (`pg_ctl stop -m
//! immediate`) and removed when dropped, even when the test fails.
//!
//! Its roles, one per authentication method the client speaks, each matched by its
//! own pg_hba.conf line: `lt_scram` (SCRAM-SHA-256), `lt_md5` (md5, its password
//! stored as an md5 hash), `lt_trust` (trust); every one may create tables in the
//! database `loadtest`. `psql` reads it as `postgres` over its unix socket.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The password of `lt_scram` and `lt_md5`.
pub const PASSWORD: &str = "s3cret pass";

/// A running cluster.
pub struct Postgres {
    /// Its port on 127.0.0.1.
    pub port: u16,
    bin: PathBuf,
    data: PathBuf,
    socket_dir: PathBuf,
    started: bool,
    _dir: tempfile::TempDir,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if !self.started {
            return;
        }
        let stopped = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["stop", "-m", "immediate", "-w", "-t", "20"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            // The postmaster's pid is the first line of postmaster.pid.
            if let Ok(text) = std::fs::read_to_string(self.data.join("postmaster.pid")) {
                if let Some(pid) = text.lines().next() {
                    let _ = Command::new("kill").args(["-9", pid.trim()]).status();
                }
            }
        }
    }
}

/// `program` run as the `postgres` user.
fn as_postgres(program: &Path) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", "postgres", "--"]).arg(program);
    c
}

impl Postgres {
    /// Creates the cluster, starts it and adds the roles and the database.
    pub fn start() -> Postgres {
        let bin = PathBuf::from("/usr/lib/postgresql/15/bin");
        assert!(
            bin.join("postgres").exists(),
            "the tests need PostgreSQL 15: install Debian's postgresql package"
        );
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("chown")
            .arg("postgres:postgres")
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "chown postgres {}", dir.path().display());
        let data = dir.path().join("data");
        let socket_dir = dir.path().to_path_buf();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut pg = Postgres {
            port,
            bin,
            data,
            socket_dir,
            started: false,
            _dir: dir,
        };
        let out = as_postgres(&pg.bin.join("initdb"))
            .arg("-D")
            .arg(&pg.data)
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // First match wins: the superuser over the socket, then one line per role.
        let hba = "local all postgres trust\n\
                   host all lt_trust 127.0.0.1/32 trust\n\
                   host all lt_md5 127.0.0.1/32 md5\n\
                   host all all 127.0.0.1/32 scram-sha-256\n";
        std::fs::write(pg.data.join("pg_hba.conf"), hba).unwrap();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50",
            pg.socket_dir.display()
        );
        pg.started = true;
        let out = as_postgres(&pg.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&pg.data)
            .args(["-o", &options, "-l"])
            .arg(pg.socket_dir.join("server.log"))
            .args(["-w", "-t", "60", "start"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl start: {} {}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(pg.socket_dir.join("server.log")).unwrap_or_default()
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while pg.try_psql("postgres", "SELECT 1").as_deref() != Some("1") {
            assert!(
                Instant::now() < deadline,
                "postgres did not answer on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        pg.psql(
            "postgres",
            &format!(
                "CREATE ROLE lt_scram LOGIN PASSWORD '{PASSWORD}';\
                 CREATE ROLE lt_trust LOGIN;\
                 SET password_encryption = 'md5';\
                 CREATE ROLE lt_md5 LOGIN PASSWORD '{PASSWORD}';"
            ),
        );
        pg.psql("postgres", "CREATE DATABASE loadtest");
        pg.psql("loadtest", "GRANT CREATE ON SCHEMA public TO PUBLIC");
        pg
    }

    fn try_psql(&self, database: &str, sql: &str) -> Option<String> {
        let out = Command::new(self.bin.join("psql"))
            .arg("-h")
            .arg(&self.socket_dir)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                database,
            ])
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// What `psql -At` prints for `sql` in `database`, as the superuser.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        self.try_psql(database, sql)
            .unwrap_or_else(|| panic!("psql {sql:?} failed"))
    }

    /// An integer `sql` answers in the database `loadtest`.
    pub fn int(&self, sql: &str) -> i64 {
        let text = self.psql("loadtest", sql);
        text.parse()
            .unwrap_or_else(|_| panic!("{sql:?}: {text:?} is not an integer"))
    }
}

//! The gRPC server of grpc/python_server.rs and js/grpc.rs: Python's grpcio with
//! grpcio-reflection (tests/fixtures/grpc/server.py, from the venv that `./dev test`
//! makes in target/grpc-venv), a server this project did not write, on 127.0.0.1; it
//! counts what it served, and the tests compare that with the host's metrics.
// Each test module that uses it takes a part of it (grpc/python_server.rs the TLS port,
// js/grpc.rs the plaintext server).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The Python of the venv holding grpcio, grpcio-reflection and grpcio-tools.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("GRPC_PYTHON") {
        return p.into();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let python = root.join("target/grpc-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `./dev test` once, or make it with `python3 -m venv \
         target/grpc-venv && target/grpc-venv/bin/pip install grpcio grpcio-reflection \
         grpcio-tools` (or point GRPC_PYTHON at a Python that has them)",
        python.display()
    );
    python
}

/// The Python server, killed when dropped.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The plaintext port.
    pub plain: u16,
    /// The TLS port (0 when started without a certificate).
    pub tls: u16,
    /// The TLS port that demands a client certificate (0 when started without a
    /// client CA).
    pub mtls: u16,
}

impl Server {
    /// Starts it with a certificate for its TLS port.
    pub fn start(cert: &Path, key: &Path) -> Self {
        Self::start_with(&[
            "--cert".as_ref(),
            cert.as_os_str(),
            "--key".as_ref(),
            key.as_os_str(),
        ])
    }

    /// Starts it with a certificate for its TLS ports and `client_ca`, whose
    /// certificates the third port demands from clients.
    pub fn start_mtls(cert: &Path, key: &Path, client_ca: &Path) -> Self {
        Self::start_with(&[
            "--cert".as_ref(),
            cert.as_os_str(),
            "--key".as_ref(),
            key.as_os_str(),
            "--client-ca".as_ref(),
            client_ca.as_os_str(),
        ])
    }

    /// Starts it in plaintext only.
    pub fn plaintext() -> Self {
        Self::start_with(&[])
    }

    fn start_with(args: &[&std::ffi::OsStr]) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc/server.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the Python gRPC server");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let ports: Vec<u16> = line
            .strip_prefix("PORTS ")
            .unwrap_or_else(|| panic!("the server said {line:?}"))
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        Self {
            child,
            stdin,
            stdout,
            plain: ports[0],
            tls: ports[1],
            mtls: ports[2],
        }
    }

    /// What the server served so far.
    pub fn stats(&mut self) -> serde_json::Value {
        writeln!(self.stdin, "stats").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

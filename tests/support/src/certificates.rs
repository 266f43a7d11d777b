//! TLS certificates for servers on loopback, made by openssl: a fresh CA,
//! and a certificate it signed for 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The PEM files `for_loopback` made.
pub struct Certificates {
    pub ca: PathBuf,
    pub server: PathBuf,
    pub key: PathBuf,
}

/// Makes a CA and a server certificate for 127.0.0.1 in `dir`.
pub fn for_loopback(dir: &Path) -> Certificates {
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=ssq-test-ca",
            "-keyout",
            &file("ca.key"),
            "-out",
            &file("ca.pem"),
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            &file("server.key"),
            "-out",
            &file("server.csr"),
        ],
        &[
            "x509",
            "-req",
            "-in",
            &file("server.csr"),
            "-CA",
            &file("ca.pem"),
            "-CAkey",
            &file("ca.key"),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &file("san.ext"),
            "-out",
            &file("server.pem"),
        ],
    ];
    for step in steps {
        let status = Command::new("openssl")
            .args(step)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl is installed");
        assert!(status.success(), "openssl {step:?} failed");
    }
    Certificates {
        ca: dir.join("ca.pem"),
        server: dir.join("server.pem"),
        key: dir.join("server.key"),
    }
}

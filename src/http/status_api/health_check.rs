//! `ssq --check-health`: the client side of `/health`, for a container's
//! HEALTHCHECK. The image carries nothing but ssq (no shell, no curl), so
//! the binary asks itself: it reads the same flags and `SSQ_*` variables
//! as the server it checks, asks `/health` where that server answers it
//! (`--admin-listen` if set, else `--listen`; an unspecified address such
//! as `0.0.0.0` is asked on loopback), and exits 0 on a 200 within the
//! timeout, 1 otherwise. `/health` and not `/ready`: a passive instance of
//! a group is healthy, and a container restarted for being passive would
//! only take a standby away.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// Why the server is not healthy, as the health check prints it.
#[derive(Debug, thiserror::Error)]
pub enum HealthCheckError {
    #[error("ssq at {address} did not answer /health: {error}")]
    Unreachable {
        address: SocketAddr,
        error: std::io::Error,
    },
    #[error("ssq at {address} answered /health with `{status}`")]
    Unhealthy { address: SocketAddr, status: String },
}

/// The address to ask: where the server listens, with an unspecified IP
/// (listening on every interface) replaced by loopback.
pub fn address_to_ask(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// Asks `GET /health` at `address`; connecting, writing and reading each
/// within `timeout`. The answer's first line is all it reads (at most
/// 256 bytes), so a server that answers slowly or forever cannot hold it.
pub fn check(address: SocketAddr, timeout: Duration) -> Result<(), HealthCheckError> {
    let unreachable = |error| HealthCheckError::Unreachable { address, error };
    let mut stream = TcpStream::connect_timeout(&address, timeout).map_err(unreachable)?;
    stream.set_read_timeout(Some(timeout)).map_err(unreachable)?;
    stream.set_write_timeout(Some(timeout)).map_err(unreachable)?;
    let request = format!("GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(unreachable)?;
    let mut head = Vec::with_capacity(256);
    stream.take(256).read_to_end(&mut head).map_err(unreachable)?;
    let status = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    // "HTTP/1.1 200 OK": the code is the second word.
    if status.split_whitespace().nth(1) == Some("200") {
        Ok(())
    } else {
        Err(HealthCheckError::Unhealthy { address, status })
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    /// A one-connection server that answers with `answer` once it has read
    /// the request's head.
    fn answering(answer: &'static str) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut head = [0u8; 1024];
            let read = stream.read(&mut head).unwrap();
            assert!(head[..read].starts_with(b"GET /health HTTP/1.1\r\n"));
            stream.write_all(answer.as_bytes()).unwrap();
        });
        address
    }

    #[test]
    fn a_200_is_healthy_and_anything_else_is_not() {
        let healthy = answering("HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n");
        check(healthy, Duration::from_secs(2)).unwrap();

        let failing = answering("HTTP/1.1 503 Service Unavailable\r\n\r\n");
        let error = check(failing, Duration::from_secs(2)).unwrap_err();
        assert!(error.to_string().contains("503"), "{error}");
    }

    #[test]
    fn nothing_listening_is_unreachable_and_silence_times_out() {
        let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let error = check(closed, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(error, HealthCheckError::Unreachable { .. }), "{error}");

        // Accepts, never answers: the read times out instead of hanging.
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let started = std::time::Instant::now();
        let error = check(silent.local_addr().unwrap(), Duration::from_millis(200)).unwrap_err();
        assert!(matches!(error, HealthCheckError::Unreachable { .. }), "{error}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn every_interface_is_asked_on_loopback() {
        assert_eq!(
            address_to_ask("0.0.0.0:9324".parse().unwrap()),
            "127.0.0.1:9324".parse().unwrap()
        );
        assert_eq!(
            address_to_ask("[::]:9324".parse().unwrap()),
            "[::1]:9324".parse().unwrap()
        );
        assert_eq!(
            address_to_ask("10.1.2.3:80".parse().unwrap()),
            "10.1.2.3:80".parse().unwrap()
        );
    }
}

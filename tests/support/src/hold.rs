//! A TCP relay on loopback that can hold back what clients send: the
//! network fault in which a connection's bytes arrive seconds late.
//!
//! [`HoldingRelay::hold`] holds every connection open at that moment: what
//! their clients send waits in the relay, in order, and reaches the server
//! at [`HoldingRelay::release`], even if the client has closed the
//! connection by then, as delayed packets still arrive. Connections opened
//! while others are held pass freely, unless [`HoldingRelay::cut_off`]
//! holds them too: a client then reaches the server on no connection, as
//! behind a network partition.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct HoldingRelay {
    pub port: u16,
    /// Each open connection's switch: true while its client's bytes are held.
    switches: Arc<Mutex<Vec<watch::Sender<bool>>>>,
    /// Whether connections opened now start held.
    cut: Arc<AtomicBool>,
    accepting: tokio::task::JoinHandle<()>,
}

impl HoldingRelay {
    /// A relay on a free loopback port to `127.0.0.1:upstream`. A client
    /// whose upstream connection cannot be made (the server is down) is
    /// disconnected at once, as the server itself would refuse it.
    pub async fn start(upstream: u16) -> HoldingRelay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let switches: Arc<Mutex<Vec<watch::Sender<bool>>>> = Arc::default();
        let registry = switches.clone();
        let cut = Arc::new(AtomicBool::new(false));
        let cut_now = cut.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let (switch, held) = watch::channel(cut_now.load(Ordering::SeqCst));
                let mut switches = registry.lock().unwrap();
                switches.retain(|switch| !switch.is_closed());
                switches.push(switch);
                tokio::spawn(relay(client, server, held));
            }
        });
        HoldingRelay {
            port,
            switches,
            cut,
            accepting,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Holds what the clients of the connections open now send.
    pub fn hold(&self) {
        for switch in self.switches.lock().unwrap().iter() {
            let _ = switch.send(true);
        }
    }

    /// Holds the connections open now and every one opened until
    /// [`HoldingRelay::release`].
    pub fn cut_off(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.hold();
    }

    /// Lets everything held through, in the order it was sent.
    pub fn release(&self) {
        self.cut.store(false, Ordering::SeqCst);
        for switch in self.switches.lock().unwrap().iter() {
            let _ = switch.send(false);
        }
    }
}

impl Drop for HoldingRelay {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// Copies both ways; a chunk from the client waits while `held` is true.
async fn relay(client: TcpStream, server: TcpStream, mut held: watch::Receiver<bool>) {
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let answers = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
        let _ = to_client.shutdown().await;
    });
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = from_client.read(&mut chunk).await.unwrap_or(0);
        // Held bytes go on at release, even after the client closed.
        if held.wait_for(|held| !*held).await.is_err() {
            break;
        }
        if n == 0 || to_server.write_all(&chunk[..n]).await.is_err() {
            break;
        }
    }
    let _ = to_server.shutdown().await;
    let _ = answers.await;
}

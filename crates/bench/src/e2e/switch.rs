//! The bench's switchable forwarder: a plain TCP relay on loopback between the CL and its
//! Engine link's middle, whose target can be changed while the chain runs. A connection
//! keeps the target it was opened to; after a switch, each older connection is closed once it
//! is idle with its last answer delivered (HTTP/1.1 keep-alive lets the client open a new one
//! to the new target for its next call), so no call in flight is cut.
//!
//! Not here: what the middles are, or when to switch.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::watch,
    task::JoinHandle,
};

/// How long an old connection must be idle, its last answer sent, before it is closed.
const QUIET: Duration = Duration::from_millis(250);
/// Bytes moved per read.
const BUFFER: usize = 256 << 10;

/// A running forwarder; it stops accepting when dropped.
pub(crate) struct Switch {
    /// Where the CL connects.
    pub(crate) addr: SocketAddr,
    target: watch::Sender<SocketAddr>,
    accept: JoinHandle<()>,
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Switch {
    /// A forwarder to `target` on a free loopback port.
    pub(crate) async fn start(target: SocketAddr) -> std::io::Result<Switch> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (sender, _) = watch::channel(target);
        let targets = sender.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, targets.subscribe()));
            }
        });
        Ok(Switch {
            addr,
            target: sender,
            accept,
        })
    }

    /// New connections go to `target` from now on; older ones close once idle.
    pub(crate) fn point_at(&self, target: SocketAddr) {
        self.target.send_replace(target);
    }
}

/// Moves bytes both ways between `client` and the target current at its start, until either
/// side closes, or a switch happened and the connection is quiet with its answer delivered.
async fn relay(mut client: TcpStream, mut target: watch::Receiver<SocketAddr>) {
    let to = *target.borrow_and_update();
    let Ok(mut upstream) = TcpStream::connect(to).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (mut client_in, mut client_out) = client.split();
    let (mut upstream_in, mut upstream_out) = upstream.split();
    let (mut up, mut down) = (vec![0u8; BUFFER], vec![0u8; BUFFER]);
    let mut switched = false;
    let mut answered = true;
    let mut last = Instant::now();
    let mut tick = tokio::time::interval(QUIET / 5);
    loop {
        tokio::select! {
            read = client_in.read(&mut up) => {
                let Ok(n @ 1..) = read else { return };
                if upstream_out.write_all(&up[..n]).await.is_err() {
                    return;
                }
                (answered, last) = (false, Instant::now());
            }
            read = upstream_in.read(&mut down) => {
                let Ok(n @ 1..) = read else { return };
                if client_out.write_all(&down[..n]).await.is_err() {
                    return;
                }
                (answered, last) = (true, Instant::now());
            }
            changed = target.changed(), if !switched => {
                switched = true;
                if changed.is_err() {
                    return;
                }
            }
            _ = tick.tick(), if switched => {
                if answered && last.elapsed() >= QUIET {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that answers every line with its own name, as many lines as sent.
    async fn named_server(name: &'static str) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n @ 1..) = s.read(&mut buf).await {
                        let _ = n;
                        if s.write_all(name.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn ask(s: &mut TcpStream) -> Option<String> {
        s.write_all(b"?").await.ok()?;
        let mut buf = [0u8; 16];
        let n = s.read(&mut buf).await.ok()?;
        (n > 0).then(|| String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    #[tokio::test]
    async fn a_switch_closes_idle_old_connections_and_new_ones_reach_the_new_target() {
        let (a, b) = (named_server("a").await, named_server("b").await);
        let switch = Switch::start(a).await.unwrap();
        let mut old = TcpStream::connect(switch.addr).await.unwrap();
        assert_eq!(ask(&mut old).await.as_deref(), Some("a"));
        switch.point_at(b);
        // Quiet with its answer delivered: closed once QUIET has passed (each answer it
        // still gets restarts that wait; a loaded machine may take a few).
        let mut closed = false;
        for _ in 0..100 {
            tokio::time::sleep(QUIET * 2).await;
            if ask(&mut old).await.is_none() {
                closed = true;
                break;
            }
        }
        assert!(closed, "the old connection was never closed");
        let mut new = TcpStream::connect(switch.addr).await.unwrap();
        assert_eq!(ask(&mut new).await.as_deref(), Some("b"));
        assert_eq!(ask(&mut new).await.as_deref(), Some("b"));
    }

    #[tokio::test]
    async fn a_connection_waiting_for_its_answer_is_not_cut_by_a_switch() {
        // A target that answers 3 QUIET periods late.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let slow = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 8];
            let _ = s.read(&mut buf).await;
            tokio::time::sleep(QUIET * 3).await;
            let _ = s.write_all(b"late").await;
        });
        let switch = Switch::start(slow).await.unwrap();
        let mut client = TcpStream::connect(switch.addr).await.unwrap();
        client.write_all(b"?").await.unwrap();
        tokio::time::sleep(QUIET / 2).await;
        switch.point_at(named_server("b").await);
        let mut buf = [0u8; 8];
        let n = client.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"late");
    }
}

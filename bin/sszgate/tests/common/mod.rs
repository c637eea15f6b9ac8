//! What the binary's tests share: free ports, a raw HTTP/1.1 POST, and `sszgate proxy` started
//! and stopped as a user would (flags, SIGTERM).

#![allow(dead_code)] // each test file uses its own part of this module

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A free port on 127.0.0.1 (bound and released).
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A JSON POST on its own connection; the whole answer, head and body.
pub(crate) fn post(addr: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// `sszgate proxy` relaying to `el` with `extra` arguments, once it accepts connections;
/// the process and its listen address.
pub(crate) fn start_proxy(el: SocketAddr, extra: &[String]) -> (Child, String) {
    let (listen, metrics) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(["proxy", "--upstream", &format!("http://{el}")])
        .args(["--listen", &listen, "--metrics", &metrics])
        .args(["--upstream-transport", "relay"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while TcpStream::connect(&listen).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the proxy did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, listen)
}

/// Sends SIGTERM to `child`.
pub(crate) fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// SIGTERM, then waits for `child` and checks it exits 0.
pub(crate) fn terminate(mut child: Child) {
    sigterm(&child);
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}

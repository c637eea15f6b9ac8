//! What the binary's tests share: free ports, a raw HTTP/1.1 POST, and `sszgate proxy` started
//! and stopped as a user would (flags, SIGTERM).

#![allow(dead_code)] // each test file uses its own part of this module

pub(crate) mod chain;
pub(crate) mod tamper;

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// The most bytes a test reads of one answer, and the largest body the counting EL reads.
const MAX_TEST_ANSWER: u64 = 256 << 20;

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
    (&mut stream)
        .take(MAX_TEST_ANSWER)
        .read_to_string(&mut answer)
        .unwrap();
    answer
}

/// `sszgate proxy` relaying to `el` with `extra` arguments, once it accepts connections;
/// the process and its listen address.
pub(crate) fn start_proxy(el: SocketAddr, extra: &[String]) -> (Child, String) {
    let proxy = start_proxy_under(&[], el, extra);
    (proxy.child, proxy.listen)
}

/// A proxy under test: the process, its Engine API address and its metrics address.
pub(crate) struct Proxy {
    pub(crate) child: Child,
    pub(crate) listen: String,
    pub(crate) metrics: String,
    /// Its standard error (its log), removed with the value.
    pub(crate) log: tempfile::NamedTempFile,
}

/// As [`start_proxy`], run under `wrapper` (a command and its arguments that then runs
/// sszgate, such as `prlimit --nofile=128:128 --`; empty for none).
pub(crate) fn start_proxy_under(wrapper: &[&str], el: SocketAddr, extra: &[String]) -> Proxy {
    let listen = format!("127.0.0.1:{}", free_port());
    start_proxy_at(&listen, wrapper, el, extra)
}

/// As [`start_proxy_under`], listening on `listen` (chosen before a client is told of it).
pub(crate) fn start_proxy_at(
    listen: &str,
    wrapper: &[&str],
    el: SocketAddr,
    extra: &[String],
) -> Proxy {
    let (listen, metrics) = (listen.to_string(), format!("127.0.0.1:{}", free_port()));
    let sszgate = env!("CARGO_BIN_EXE_sszgate");
    let mut command = match wrapper {
        [] => Command::new(sszgate),
        [program, args @ ..] => {
            let mut c = Command::new(program);
            c.args(args).arg(sszgate);
            c
        }
    };
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = command
        .args(["proxy", "--upstream", &format!("http://{el}")])
        .args(["--listen", &listen, "--metrics", &metrics])
        .args(
            (!extra.iter().any(|a| a == "--upstream-transport"))
                .then_some(["--upstream-transport", "relay"])
                .into_iter()
                .flatten(),
        )
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // A proxy with --verify loads the KZG setup first: seconds in a debug build, more on a
    // loaded machine. Two minutes without a listener is a hang.
    while TcpStream::connect(&listen).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the proxy did not start within two minutes"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Proxy {
        child,
        listen,
        metrics,
        log,
    }
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
pub(crate) fn terminate(child: Child) {
    terminate_showing(child, String::new);
}

/// As [`terminate`], with the end of the proxy's log in the failure.
pub(crate) fn terminate_proxy(proxy: Proxy) {
    let log = proxy.log;
    terminate_showing(proxy.child, || {
        format!(
            "; the proxy's log ends:\n{}",
            log_tail(log.path(), 16 << 10)
        )
    });
}

/// SIGTERM, then waits for `child`; when it does not exit 0, fails with `context()`.
fn terminate_showing(mut child: Child, context: impl FnOnce() -> String) {
    sigterm(&child);
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}{}", context());
}

/// A counting EL on loopback: answers every request with `head` (extra header lines, each
/// ending in CRLF) and `body`, then closes the connection; counts requests and body bytes.
pub(crate) struct CountingEl {
    pub(crate) addr: SocketAddr,
    pub(crate) requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
    pub(crate) body_bytes: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl CountingEl {
    /// Starts one answering `body` with the extra header lines `head`.
    pub(crate) fn start(head: &'static str, body: std::sync::Arc<Vec<u8>>) -> CountingEl {
        use std::{
            io::{BufRead, BufReader},
            sync::atomic::Ordering,
        };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let el = CountingEl {
            addr,
            requests: Default::default(),
            body_bytes: Default::default(),
        };
        let (requests, body_bytes) = (el.requests.clone(), el.body_bytes.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (requests, body_bytes, body) =
                    (requests.clone(), body_bytes.clone(), body.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    // A body over the largest a proxy may send is not read (the call is not counted).
                    if length > MAX_TEST_ANSWER as usize {
                        return;
                    }
                    let mut request = vec![0; length];
                    if reader.read_exact(&mut request).is_err() {
                        return;
                    }
                    requests.fetch_add(1, Ordering::SeqCst);
                    body_bytes.fetch_add(length as u64, Ordering::SeqCst);
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{head}connection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes());
                    let _ = stream.write_all(&body);
                });
            }
        });
        el
    }

    /// Requests it has answered.
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// An HTTP/1.1 request on its own connection (`Connection: close`): the status code and the
/// body of the answer (0 when the connection closed without one).
pub(crate) fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<u8>) {
    // A short connect timeout: a listener whose backlog is full drops the SYN, and the
    // kernel would only try again a second later; the caller tries again instead.
    let addr_parsed: SocketAddr = addr.parse().unwrap();
    let Ok(mut stream) = TcpStream::connect_timeout(&addr_parsed, Duration::from_millis(250))
    else {
        return (0, Vec::new());
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    // A server may answer (401, 413) and close before the body is sent: read what it said.
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
    // The largest answer a test expects is tens of MB; a runaway one is cut, not buffered.
    let mut answer = Vec::new();
    let _ = (&mut stream).take(MAX_TEST_ANSWER).read_to_end(&mut answer);
    let Some(split) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (0, Vec::new());
    };
    let status = std::str::from_utf8(&answer[..split])
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, answer[split + 4..].to_vec())
}

/// `GET /_sszgate/status` of a proxy, as JSON.
pub(crate) fn status(metrics: &str) -> serde_json::Value {
    let (code, body) = request(metrics, "GET", "/_sszgate/status", &[], b"");
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// `GET /metrics` of a proxy.
pub(crate) fn metrics_text(metrics: &str) -> String {
    let (code, body) = request(metrics, "GET", "/metrics", &[], b"");
    assert_eq!(code, 200);
    String::from_utf8(body).unwrap()
}

/// Waits (at most 30 s) until the proxy has written every record it queued; the counters.
pub(crate) fn settled(metrics: &str) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let s = status(metrics);
        let r = &s["records"];
        if r["queue_depth"] == 0
            && r["pending"] == 0
            && r["recorded"].as_u64() >= r["queued"].as_u64()
        {
            return s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "records never settled: {s}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process's resident memory now and at its peak, KiB (`VmRSS`, `VmHWM`).
pub(crate) fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The file descriptors a process holds open.
pub(crate) fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Kills a proxy the test started if the test ends (a failed assertion) without stopping it:
/// its process id, and its listen address, which its command line must still name (a
/// recycled pid is never touched).
pub(crate) struct KillOnDrop {
    pub(crate) pid: u32,
    pub(crate) listen: String,
}

impl KillOnDrop {
    /// The guard of `proxy`.
    pub(crate) fn of(proxy: &Proxy) -> KillOnDrop {
        KillOnDrop {
            pid: proxy.child.id(),
            listen: proxy.listen.clone(),
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&self.listen) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.pid.to_string()])
                .status();
        }
    }
}

/// The most bytes a test reads of a log or event file a peer wrote (a few MB in the longest run).
pub(crate) const MAX_LOG_BYTES: u64 = 64 << 20;

/// A log or event file a peer wrote, whole, as text: at most [`MAX_LOG_BYTES`] of it (a longer
/// one is an error, not a truncation a test could misread).
pub(crate) fn read_log(path: impl AsRef<std::path::Path>) -> std::io::Result<String> {
    let path = path.as_ref();
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_LOG_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_LOG_BYTES {
        return Err(std::io::Error::other(format!(
            "{}: over {MAX_LOG_BYTES} bytes",
            path.display()
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The last `max` bytes of a log file, as text (empty when there is none): a client's log
/// grows for as long as it runs, and only its end is of use in a failure message.
pub(crate) fn log_tail(path: &std::path::Path, max: u64) -> String {
    use std::io::Seek;
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(std::io::SeekFrom::Start(len.saturating_sub(max)));
    let mut tail = Vec::new();
    let _ = file.take(max).read_to_end(&mut tail);
    String::from_utf8_lossy(&tail).into_owned()
}

/// Rows of `sql` from a proxy's database, each column as text.
pub(crate) fn sql_rows(db: &std::path::Path, sql: &str) -> Vec<Vec<Option<String>>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        Ok((0..n)
            .map(|i| match r.get::<_, rusqlite::types::Value>(i).unwrap() {
                rusqlite::types::Value::Null => None,
                rusqlite::types::Value::Integer(v) => Some(v.to_string()),
                rusqlite::types::Value::Text(t) => Some(t),
                other => Some(format!("{other:?}")),
            })
            .collect())
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

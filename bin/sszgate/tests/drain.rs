//! SIGTERM during traffic, on the real binary: the calls in flight finish with the EL's
//! answers, the process exits 0, and the store holds exactly one record per call answered.

mod common;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

/// An EL that answers every call after `delay`, echoing its JSON-RPC id; counts the calls that
/// reached it.
fn slow_el(delay: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let arrived = Arc::new(AtomicUsize::new(0));
    let counter = arrived.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let counter = counter.clone();
            std::thread::spawn(move || serve(stream, delay, &counter));
        }
    });
    (addr, arrived)
}

/// Serves the calls of one (keep-alive) connection.
fn serve(mut stream: TcpStream, delay: Duration, arrived: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut length = 0;
        let mut any = false;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            any = true;
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        if !any {
            return;
        }
        let mut request = vec![0; length];
        if reader.read_exact(&mut request).is_err() {
            return;
        }
        arrived.fetch_add(1, Ordering::SeqCst);
        let request = String::from_utf8_lossy(&request).into_owned();
        let id = request
            .split("\"id\":")
            .nth(1)
            .and_then(|rest| rest.split([',', '}']).next())
            .unwrap_or("null")
            .to_string();
        std::thread::sleep(delay);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"status":"VALID","latestValidHash":null,"validationError":null}}}}"#
        );
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// One JSON-RPC call on its own connection; the whole answer.
fn call(addr: &str, id: usize) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"engine_newPayloadV4","params":[{{}},[],"0x{}",[]]}}"#,
        "00".repeat(32)
    );
    common::post(addr, &body)
}

#[test]
fn sigterm_mid_call_drains_the_calls_in_flight_and_records_each_once() {
    let (el, arrived) = slow_el(Duration::from_millis(1500));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db");
    let (mut child, listen) = common::start_proxy(
        el,
        &[
            "--verify".into(),
            "off".into(),
            "--store".into(),
            format!("sqlite:{}", db.display()),
        ],
    );
    const CALLS: usize = 6;
    let callers: Vec<_> = (1..=CALLS)
        .map(|id| {
            let listen = listen.clone();
            std::thread::spawn(move || call(&listen, id))
        })
        .collect();
    // Every call is at the EL, none answered yet (each takes 1.5 s there): SIGTERM now.
    let waiting = Instant::now();
    while arrived.load(Ordering::SeqCst) < CALLS {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "the calls never reached the EL"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    common::sigterm(&child);
    for (i, caller) in callers.into_iter().enumerate() {
        let answer = caller.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let id = i + 1;
        assert!(
            answer.ends_with(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"status":"VALID","latestValidHash":null,"validationError":null}}}}"#
            )),
            "{answer}"
        );
    }
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<(String, i64, String, Option<String>)> = conn
        .prepare("SELECT rpc_id, status, payload_status, error_side FROM calls ORDER BY CAST(rpc_id AS INTEGER)")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let expected: Vec<(String, i64, String, Option<String>)> = (1..=CALLS)
        .map(|id| (id.to_string(), 200, "VALID".to_string(), None))
        .collect();
    assert_eq!(rows, expected, "one record per call answered");
}

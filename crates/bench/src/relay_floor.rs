//! Floor relays for the proxy benchmark: the least any relay between the caller and the EL can
//! cost on this machine, to read sszgate's overhead against.
//!
//! The first two are plain TCP relays on loopback, no HTTP at all: every accepted connection
//! gets its own connection to the EL and two threads that move bytes one way each, until
//! either side closes; HTTP/1.1 keep-alive calls pass through unchanged. The third speaks HTTP.
//! - [`Mode::Copy`]: `read` into a 256 KiB buffer and `write` it out, the way any user-space
//!   relay moves bytes (sszgate and nginx included).
//! - [`Mode::Splice`]: `splice(2)` socket → pipe → socket, the bytes never enter user space.
//! - [`Mode::SpliceTee`]: the same, and `tee(2)` duplicates each chunk into a second pipe
//!   that the relay's thread reads into memory once the chunk is passed on: the least a relay
//!   that records every byte (as sszgate does) can cost, one copy to user space, off the
//!   forwarding path.
//! - [`Mode::Hyper`]: an HTTP/1.1 relay with nothing but hyper, the HTTP library sszgate's
//!   proxy is built on (its server, and its pooled client with `TCP_NODELAY`), on a runtime of
//!   its own with two worker threads: what HTTP alone costs, without classifying, checking or
//!   recording anything.
//!
//! The relay's CPU time is the sum of its threads' (`CLOCK_THREAD_CPUTIME_ID` for the TCP
//! relays, read after every transfer; the on-CPU time of `/proc/self/task/<tid>/schedstat` for
//! the hyper relay's runtime threads), so it counts only what the relay did.
//!
//! Not here: anything sszgate runs; these are measuring instruments. The splicing relays and
//! the hyper relay's CPU figure are Linux only (elsewhere the first two are refused when
//! started, the last reads 0).

use std::{
    io::{Read, Write},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    os::fd::AsRawFd,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread,
};

/// How a floor relay moves bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `read` + `write` through a user-space buffer.
    Copy,
    /// `splice(2)` through a pipe, no copy to user space.
    Splice,
    /// `splice(2)` through a pipe, each chunk also `tee(2)`d and read into memory.
    SpliceTee,
    /// hyper's HTTP/1.1 server and pooled client, relaying bodies frame by frame.
    Hyper,
}

impl Mode {
    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Copy => "copy relay",
            Mode::Splice => "splice relay",
            Mode::SpliceTee => "splice+tee relay",
            Mode::Hyper => "hyper relay",
        }
    }
}

/// A running floor relay; stops accepting when dropped.
pub struct FloorRelay {
    /// How it moves bytes.
    pub mode: Mode,
    /// Where callers connect.
    pub addr: SocketAddr,
    /// What the TCP relays' threads count (unused by the hyper relay).
    counters: Counters,
    stop: Arc<AtomicBool>,
    /// The hyper relay's runtime and the ids of its threads.
    hyper: Option<(tokio::runtime::Runtime, Arc<std::sync::Mutex<Vec<i32>>>)>,
}

impl FloorRelay {
    /// Starts a relay of each mode to `upstream`; one that cannot start is left out, said on
    /// stderr.
    pub fn start_each(modes: &[Mode], upstream: SocketAddr) -> Vec<FloorRelay> {
        modes
            .iter()
            .filter_map(|&mode| match FloorRelay::start(mode, upstream) {
                Ok(relay) => Some(relay),
                Err(e) => {
                    eprintln!("sszgate bench proxy: the {} is left out: {e}", mode.name());
                    None
                }
            })
            .collect()
    }

    /// Starts a relay to `upstream` on a free loopback port.
    pub fn start(mode: Mode, upstream: SocketAddr) -> std::io::Result<FloorRelay> {
        let pump: fn(TcpStream, TcpStream, &Counters) = match mode {
            Mode::Copy => copy_pump,
            #[cfg(target_os = "linux")]
            Mode::Splice => |from, to, counters| splice_pump(from, to, counters, false),
            #[cfg(target_os = "linux")]
            Mode::SpliceTee => |from, to, counters| splice_pump(from, to, counters, true),
            #[cfg(not(target_os = "linux"))]
            Mode::Splice | Mode::SpliceTee => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "splice(2) is Linux only",
                ));
            }
            Mode::Hyper => return hyper_relay(upstream),
        };
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let counters = Counters::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (threads, stopped) = (counters.clone(), stop.clone());
        thread::Builder::new()
            .name("floor-accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(client) = stream else { continue };
                    let Ok(el) = TcpStream::connect(upstream) else {
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = el.set_nodelay(true);
                    for (from, to) in [(&client, &el), (&el, &client)] {
                        let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) else {
                            continue;
                        };
                        let counters = threads.clone();
                        let _ = thread::Builder::new()
                            .name("floor-relay".into())
                            .spawn(move || pump(from, to, &counters));
                    }
                }
            })?;
        Ok(FloorRelay {
            mode,
            addr,
            counters,
            stop,
            hyper: None,
        })
    }

    /// Bytes the splice+tee relay has read into memory so far, and their sum (mod 2^64); zero
    /// for the others.
    pub fn teed(&self) -> (u64, u64) {
        (
            self.counters.teed.0.load(Ordering::Relaxed),
            self.counters.teed.1.load(Ordering::Relaxed),
        )
    }

    /// CPU seconds the relay's threads have used so far.
    pub fn cpu_seconds(&self) -> f64 {
        match &self.hyper {
            Some((_, tids)) => {
                let tids = tids.lock().expect("thread id list");
                tids.iter().map(|tid| on_cpu_ns(*tid)).sum::<u64>() as f64 / 1e9
            }
            None => self.counters.cpu.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

/// Time thread `tid` of this process has run on a CPU, ns (the first field of its
/// `schedstat`); 0 when unreadable.
fn on_cpu_ns(tid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The hyper relay: an HTTP/1.1 server whose every request goes on, as it is, through a
/// pooled hyper client, and whose answer comes back frame by frame.
fn hyper_relay(upstream: SocketAddr) -> std::io::Result<FloorRelay> {
    use hyper_util::{
        client::legacy::{Client, connect::HttpConnector},
        rt::{TokioExecutor, TokioIo},
        server::conn::auto,
    };
    let tids = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorded = tids.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            #[cfg(target_os = "linux")]
            {
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() };
                recorded.lock().expect("thread id list").push(tid);
            }
            #[cfg(not(target_os = "linux"))]
            let _ = &recorded;
        })
        .build()?;
    // Bound here, taken over inside the runtime: the caller may itself be on a runtime,
    // where blocking on another is not allowed.
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<HttpConnector, hyper::body::Incoming> =
        Client::builder(TokioExecutor::new()).build(connector);
    let stop = Arc::new(AtomicBool::new(false));
    runtime.spawn(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let _ = stream.set_nodelay(true);
            let client = client.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: http::Request<_>| {
                    let client = client.clone();
                    async move {
                        let (mut parts, body) = request.into_parts();
                        parts.uri = format!("http://{upstream}{}", parts.uri)
                            .parse()
                            .expect("a loopback URI");
                        client.request(http::Request::from_parts(parts, body)).await
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(FloorRelay {
        mode: Mode::Hyper,
        addr,
        counters: Counters::default(),
        stop,
        hyper: Some((runtime, tids)),
    })
}

impl Drop for FloorRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        // The hyper relay's runtime stops with its tasks, without waiting for them.
        if let Some((runtime, _)) = self.hyper.take() {
            runtime.shutdown_background();
        }
    }
}

/// This thread's CPU time, ns.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Adds this thread's CPU time since `last` to `cpu`, and moves `last` on.
fn account(cpu: &AtomicU64, last: &mut u64) {
    let now = thread_cpu_ns();
    cpu.fetch_add(now - *last, Ordering::Relaxed);
    *last = now;
}

/// What a TCP relay's threads count.
#[derive(Clone, Default)]
struct Counters {
    /// CPU time, ns.
    cpu: Arc<AtomicU64>,
    /// Bytes read from the tee pipe, and their sum.
    teed: Arc<(AtomicU64, AtomicU64)>,
}

/// Moves bytes from `from` to `to` through a user-space buffer until `from` ends or either
/// fails, adding this thread's CPU time to `cpu` after every transfer.
fn copy_pump(mut from: TcpStream, mut to: TcpStream, counters: &Counters) {
    let cpu = &*counters.cpu;
    let mut last = thread_cpu_ns();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let written = to.write_all(&buf[..n]);
        account(cpu, &mut last);
        if written.is_err() {
            break;
        }
    }
    account(cpu, &mut last);
    let _ = to.shutdown(Shutdown::Write);
}

/// Bytes the splice+tee relay keeps of what it read, per direction of a connection: more than
/// a 72-blob answer (20 MB); past it, it starts over at the buffer's beginning.
#[cfg(target_os = "linux")]
const KEEP: usize = 32 << 20;

/// As [`copy_pump`], with `splice(2)` through a pipe: the bytes never enter user space. With
/// `tee`, each chunk is also duplicated into a second pipe (`tee(2)`, no copy) and, once passed
/// on, read from it into a buffer allocated once: the one copy a recording relay must make.
#[cfg(target_os = "linux")]
fn splice_pump(from: TcpStream, to: TcpStream, counters: &Counters, tee: bool) {
    let mut last = thread_cpu_ns();
    let Ok((pipe_r, pipe_w)) = pipe() else { return };
    let mut copy = match tee {
        true => match TeeCopy::new() {
            Ok(copy) => Some(copy),
            Err(_) => return,
        },
        false => None,
    };
    // Not SPLICE_F_MORE: on a socket it corks the answer's tail until TCP's timer.
    let flags = libc::SPLICE_F_MOVE;
    'relay: loop {
        let n = splice(from.as_raw_fd(), pipe_w.as_raw_fd(), 1 << 20, flags);
        if n == 0 {
            break;
        }
        let mut left = n;
        while left > 0 {
            let chunk = match &copy {
                Some(copy) => match copy.duplicate(&pipe_r, left) {
                    0 => break 'relay,
                    t => t,
                },
                None => left,
            };
            let mut out = chunk;
            while out > 0 {
                match splice(pipe_r.as_raw_fd(), to.as_raw_fd(), out, flags) {
                    0 => break 'relay,
                    m => out -= m,
                }
            }
            left -= chunk;
            if copy.as_mut().is_some_and(|copy| !copy.keep(chunk)) {
                break 'relay;
            }
        }
        account(&counters.cpu, &mut last);
    }
    account(&counters.cpu, &mut last);
    if let Some(copy) = &copy {
        copy.count(&counters.teed);
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// The splice+tee relay's copy of one direction: a second pipe that `tee(2)` fills, and the
/// buffer (allocated once) it is read into.
#[cfg(target_os = "linux")]
struct TeeCopy {
    pipe: (std::io::PipeReader, std::io::PipeWriter),
    kept: Vec<u8>,
    /// Where the next chunk goes in `kept`.
    at: usize,
    /// Bytes read so far.
    read: u64,
}

#[cfg(target_os = "linux")]
impl TeeCopy {
    fn new() -> std::io::Result<TeeCopy> {
        Ok(TeeCopy {
            pipe: pipe()?,
            kept: vec![0u8; KEEP],
            at: 0,
            read: 0,
        })
    }

    /// Duplicates up to `len` bytes from the start of `from` (not consuming them) into the
    /// copy's pipe; how many, 0 on an error.
    fn duplicate(&self, from: &std::io::PipeReader, len: usize) -> usize {
        // SAFETY: two valid pipe descriptors, open for the call.
        let t = unsafe { libc::tee(from.as_raw_fd(), self.pipe.1.as_raw_fd(), len, 0) };
        t.max(0) as usize
    }

    /// Reads the `chunk` bytes duplicated last into the buffer; false on an error.
    fn keep(&mut self, chunk: usize) -> bool {
        if self.at + chunk > KEEP {
            self.at = 0;
        }
        let read = self
            .pipe
            .0
            .read_exact(&mut self.kept[self.at..self.at + chunk]);
        self.at += chunk;
        self.read += chunk as u64;
        read.is_ok()
    }

    /// Adds the bytes read and the sum of those held to `teed` (summed here, after the
    /// relaying: what a test compares with what was sent).
    fn count(&self, teed: &(AtomicU64, AtomicU64)) {
        let sum = self.kept[..self.at].iter().map(|&b| b as u64).sum::<u64>();
        teed.0.fetch_add(self.read, Ordering::Relaxed);
        teed.1.fetch_add(sum, Ordering::Relaxed);
    }
}

/// A pipe of 1 MiB (fewer round trips through the kernel per large answer than its default
/// 64 KiB); both ends close when dropped.
#[cfg(target_os = "linux")]
fn pipe() -> std::io::Result<(std::io::PipeReader, std::io::PipeWriter)> {
    let (r, w) = std::io::pipe()?;
    // SAFETY: plain fcntl on a pipe this function owns; a refused size keeps the default.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    Ok((r, w))
}

/// `splice(2)` of at most `len` bytes from `from` to `to` (null offsets, as sockets and pipes
/// need); 0 at the end of the input or on any error.
#[cfg(target_os = "linux")]
fn splice(from: i32, to: i32, len: usize, flags: u32) -> usize {
    // SAFETY: the descriptors are open for the caller's whole call; null offsets are allowed.
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            flags,
        )
    };
    n.max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU seconds of this whole process so far (every thread, the relay's among them).
    fn process_cpu_seconds() -> f64 {
        // SAFETY: an all-zero rusage is a valid value, and getrusage fills the one given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        t(usage.ru_utime) + t(usage.ru_stime)
    }

    /// The relay's CPU is some, and no more than the whole process used since `before` (its
    /// threads are the process's): a count of the relay's own threads, not of anything else.
    fn assert_counted(relay_cpu: f64, before: f64, what: &str) {
        let process = process_cpu_seconds() - before;
        assert!(relay_cpu > 0.0, "{what}: no CPU counted");
        // getrusage and the thread clocks round differently: allow a millisecond.
        assert!(
            relay_cpu <= process + 1e-3,
            "{what}: {relay_cpu} s counted, the process used {process} s"
        );
    }

    /// An upstream that answers every message with its bytes reversed, then closes.
    fn reversing_upstream() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut got = Vec::new();
                stream.read_to_end(&mut got).unwrap();
                got.reverse();
                stream.write_all(&got).unwrap();
            }
        });
        addr
    }

    #[test]
    fn every_tcp_relay_passes_every_byte_both_ways_and_counts_its_cpu() {
        let upstream = reversing_upstream();
        // 3 MiB of varied bytes: several pipe and buffer fills in each direction.
        let message: Vec<u8> = (0..3 << 20).map(|i: u32| (i * 7 % 251) as u8).collect();
        for mode in [Mode::Copy, Mode::Splice, Mode::SpliceTee] {
            let before = process_cpu_seconds();
            let relay = FloorRelay::start(mode, upstream).unwrap();
            let mut client = TcpStream::connect(relay.addr).unwrap();
            let writer = {
                let mut client = client.try_clone().unwrap();
                let message = message.clone();
                thread::spawn(move || {
                    client.write_all(&message).unwrap();
                    client.shutdown(Shutdown::Write).unwrap();
                })
            };
            let mut answer = Vec::new();
            client.read_to_end(&mut answer).unwrap();
            writer.join().unwrap();
            let mut expected = message.clone();
            expected.reverse();
            assert!(answer == expected, "{}: the bytes changed", mode.name());
            assert_counted(relay.cpu_seconds(), before, mode.name());
            if mode == Mode::SpliceTee {
                // Both directions read into memory whole (their sums are added once a
                // direction ends, which is after the answer's last byte: wait for it).
                let sum: u64 = message.iter().map(|&b| b as u64).sum();
                let want = (2 * message.len() as u64, 2 * sum);
                let started = std::time::Instant::now();
                while relay.teed() != want && started.elapsed().as_secs() < 10 {
                    thread::sleep(std::time::Duration::from_millis(10));
                }
                assert_eq!(relay.teed(), want, "splice+tee: what was read into memory");
            }
        }
    }

    /// An HTTP/1.1 upstream: answers each POST with its body reversed.
    fn reversing_http_upstream() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let stream = stream.unwrap();
                thread::spawn(move || {
                    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                    let mut writer = stream;
                    while let Some(mut body) = read_http_body(&mut reader) {
                        body.reverse();
                        let head =
                            format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
                        writer.write_all(head.as_bytes()).unwrap();
                        writer.write_all(&body).unwrap();
                    }
                });
            }
        });
        addr
    }

    /// The body of the next HTTP/1.1 message on `reader` (by its Content-Length).
    fn read_http_body(reader: &mut impl std::io::BufRead) -> Option<Vec<u8>> {
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok()?;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        Some(body)
    }

    #[test]
    fn the_hyper_relay_passes_calls_on_a_kept_alive_connection_and_counts_its_cpu() {
        let upstream = reversing_http_upstream();
        let before = process_cpu_seconds();
        let relay = FloorRelay::start(Mode::Hyper, upstream).unwrap();
        let stream = TcpStream::connect(relay.addr).unwrap();
        let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        for size in [5usize, 3 << 20] {
            let body: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let head = format!("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: {size}\r\n\r\n");
            writer.write_all(head.as_bytes()).unwrap();
            writer.write_all(&body).unwrap();
            let mut answer = read_http_body(&mut reader).expect("an answer");
            answer.reverse();
            assert!(answer == body, "{size} bytes: the body changed");
        }
        assert_counted(relay.cpu_seconds(), before, "hyper relay");
    }
}

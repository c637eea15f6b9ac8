//! Floor relays for the proxy benchmark: the least any relay between the caller and the EL can
//! cost on this machine, to read sszgate's overhead against.
//!
//! Each is a plain TCP relay on loopback, no HTTP at all: every accepted connection gets its
//! own connection to the EL and two threads that move bytes one way each, until either side
//! closes. HTTP/1.1 keep-alive calls pass through unchanged.
//! - [`Mode::Copy`]: `read` into a 256 KiB buffer and `write` it out, the way any user-space
//!   relay moves bytes (sszgate and nginx included).
//! - [`Mode::Splice`]: `splice(2)` socket → pipe → socket, the bytes never enter user space.
//!
//! The relay's CPU time is the sum of its threads' (`CLOCK_THREAD_CPUTIME_ID`), read after
//! every transfer, so it counts only what the relay did.
//!
//! Not here: anything sszgate runs; these are measuring instruments, Linux only.

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
}

impl Mode {
    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Copy => "copy relay",
            Mode::Splice => "splice relay",
        }
    }
}

/// A running floor relay; stops accepting when dropped.
pub struct FloorRelay {
    /// How it moves bytes.
    pub mode: Mode,
    /// Where callers connect.
    pub addr: SocketAddr,
    cpu_ns: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl FloorRelay {
    /// Starts a relay to `upstream` on a free loopback port.
    pub fn start(mode: Mode, upstream: SocketAddr) -> std::io::Result<FloorRelay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (cpu, stopped) = (cpu_ns.clone(), stop.clone());
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
                        let cpu = cpu.clone();
                        let _ = thread::Builder::new()
                            .name("floor-relay".into())
                            .spawn(move || pump(mode, from, to, &cpu));
                    }
                }
            })?;
        Ok(FloorRelay {
            mode,
            addr,
            cpu_ns,
            stop,
        })
    }

    /// CPU seconds the relay's threads have used so far.
    pub fn cpu_seconds(&self) -> f64 {
        self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9
    }
}

impl Drop for FloorRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
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

/// Moves bytes from `from` to `to` until `from` ends or either fails, adding this thread's
/// CPU time to `cpu` after every transfer.
fn pump(mode: Mode, mut from: TcpStream, mut to: TcpStream, cpu: &AtomicU64) {
    let mut last = thread_cpu_ns();
    let mut account = || {
        let now = thread_cpu_ns();
        cpu.fetch_add(now - last, Ordering::Relaxed);
        last = now;
    };
    match mode {
        Mode::Copy => {
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let written = to.write_all(&buf[..n]);
                account();
                if written.is_err() {
                    break;
                }
            }
        }
        Mode::Splice => {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors pipe2 returns.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return;
            }
            let (pipe_r, pipe_w) = (fds[0], fds[1]);
            // A 1 MiB pipe: fewer round trips through the kernel per large answer.
            // SAFETY: plain fcntl on a pipe this function owns.
            unsafe { libc::fcntl(pipe_w, libc::F_SETPIPE_SZ, 1 << 20) };
            // Not SPLICE_F_MORE: on a socket it corks the answer's tail until TCP's timer.
            let flags = libc::SPLICE_F_MOVE;
            'relay: loop {
                // SAFETY: valid descriptors; null offsets are what sockets and pipes need.
                let n = unsafe {
                    libc::splice(
                        from.as_raw_fd(),
                        std::ptr::null_mut(),
                        pipe_w,
                        std::ptr::null_mut(),
                        1 << 20,
                        flags,
                    )
                };
                if n <= 0 {
                    break;
                }
                let mut left = n as usize;
                while left > 0 {
                    // SAFETY: as above.
                    let m = unsafe {
                        libc::splice(
                            pipe_r,
                            std::ptr::null_mut(),
                            to.as_raw_fd(),
                            std::ptr::null_mut(),
                            left,
                            flags,
                        )
                    };
                    if m <= 0 {
                        break 'relay;
                    }
                    left -= m as usize;
                }
                account();
            }
            // SAFETY: closing the pipe this function opened, once.
            unsafe {
                libc::close(pipe_r);
                libc::close(pipe_w);
            }
        }
    }
    account();
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn both_relays_pass_every_byte_both_ways_and_count_their_cpu() {
        let upstream = reversing_upstream();
        // 3 MiB of varied bytes: several pipe and buffer fills in each direction.
        let message: Vec<u8> = (0..3 << 20).map(|i: u32| (i * 7 % 251) as u8).collect();
        for mode in [Mode::Copy, Mode::Splice] {
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
            assert!(relay.cpu_seconds() > 0.0, "{}: no CPU counted", mode.name());
        }
    }
}

//! A real ClickHouse server for tests: Debian's `clickhouse-server`, started on free loopback
//! ports with its data in a temporary directory, stopped by its process id.
//!
//! The binary is `$SSZGATE_CLICKHOUSE`, else `clickhouse-server` on the `PATH` or in
//! `/usr/sbin`. When it is missing, [`ClickHouseServer::start`] says so loudly and returns
//! `None`, except under `CI=true`, where a missing server is a failure.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use super::{ClickHouseUrl, Client};

/// A ClickHouse server this process started.
pub struct ClickHouseServer {
    binary: PathBuf,
    dir: tempfile::TempDir,
    http_port: u16,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SSZGATE_CLICKHOUSE") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("clickhouse-server"))
        .find(|p| p.is_file())
}

impl ClickHouseServer {
    /// Starts a server and waits until it answers; `None` (with a loud message) when the
    /// binary is missing outside CI. Panics under `CI=true` when it is missing or does not
    /// start: a test that needs it must not pass without it.
    pub fn start() -> Option<ClickHouseServer> {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        let Some(binary) = binary() else {
            assert!(
                !ci,
                "clickhouse-server is not installed (apt-get install clickhouse-server, or set SSZGATE_CLICKHOUSE); CI requires it"
            );
            eprintln!(
                "\n!!! SKIPPED: clickhouse-server is not installed (apt-get install clickhouse-server, or set SSZGATE_CLICKHOUSE) !!!\n"
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("sszgate-clickhouse-")
            .tempdir()
            .expect("a temporary directory");
        let http_port = free_port();
        let tcp_port = free_port();
        let root = dir.path().display().to_string();
        let config = format!(
            r#"<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><log>{root}/server.log</log><errorlog>{root}/server.err.log</errorlog><console>0</console></logger>
    <http_port>{http_port}</http_port>
    <tcp_port>{tcp_port}</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <path>{root}/data/</path>
    <tmp_path>{root}/tmp/</tmp_path>
    <user_files_path>{root}/user_files/</user_files_path>
    <format_schema_path>{root}/format_schemas/</format_schema_path>
    <users_config>{root}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mark_cache_size>268435456</mark_cache_size>
    <mlock_executable>false</mlock_executable>
</yandex>
"#
        );
        std::fs::write(dir.path().join("config.xml"), config).expect("writing the config");
        let users = r#"<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas><default></default></quotas>
</yandex>
"#;
        std::fs::write(dir.path().join("users.xml"), users).expect("writing the users");
        let mut server = ClickHouseServer {
            binary,
            dir,
            http_port,
            child: None,
        };
        server.run();
        Some(server)
    }

    /// Starts the process (again) on the same ports and data, and waits until it answers.
    fn run(&mut self) {
        let config = self.dir.path().join("config.xml");
        let child = Command::new(&self.binary)
            .arg(format!("--config-file={}", config.display()))
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(self.dir.path().join("stderr.log")).expect("a log file"),
            ))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.binary.display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = ureq::get(format!("http://127.0.0.1:{}/ping", self.http_port))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok());
            if answer.as_deref() == Some("Ok.\n") {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                let log =
                    std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default();
                panic!("clickhouse-server exited ({status}) before answering: {log:.2000}");
            }
            assert!(
                Instant::now() < deadline,
                "clickhouse-server did not answer on port {} within 60 s",
                self.http_port
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The sink address of database `db` (`http://127.0.0.1:PORT/db`).
    pub fn url(&self, db: &str) -> String {
        format!("http://127.0.0.1:{}/{db}", self.http_port)
    }

    /// A client for database `db`.
    pub fn client(&self, db: &str) -> Client {
        let url: ClickHouseUrl = self.url(db).parse().expect("a valid address");
        Client::new(url, Duration::from_secs(30))
    }

    /// Stops the server (SIGTERM to its process id, then waits for it).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the id of a child this value started and has not reaped.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Starts it again after [`ClickHouseServer::stop`], on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.run();
    }
}

impl Drop for ClickHouseServer {
    fn drop(&mut self) {
        self.stop();
    }
}

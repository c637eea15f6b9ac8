//! The ClickHouse sink: records go to a local [`crate::spool`] first and a shipper thread
//! sends them to ClickHouse over HTTP in batches, so the recorder never waits for the server
//! and nothing is lost while it is slow or down.
//!
//! - [`ClickHouseUrl`]: the `clickhouse:http://[USER[:PASSWORD]@]HOST:PORT/DB` value;
//! - [`Client`]: statements, queries and `INSERT … FORMAT JSONEachRow` over HTTP (blocking: it
//!   runs on the recorder's and the shipper's own threads, never on the forward path);
//! - `schema`: the versioned DDL kept in `crates/record/clickhouse/*.sql`, applied on first use;
//! - `row`: a record as a row of `sszgate_calls`, with the node's identity;
//! - `shipper`: the thread that replays the spool in order, exactly once.
//!
//! Exactly once: every row carries its spool's id and its sequence number in that spool
//! (`spool_id`, `spool_seq`, the table's sort key). The first batch after a start and every
//! batch after a failed try are looked up by that key before they are sent, and only the rows
//! the server does not hold are inserted. The lookup is row by row, so a batch half written
//! (an insert is one part per partition: a batch across a month boundary is two) is completed,
//! not repeated.
//!
//! Not here: the recorder's queue (`recorder`), SQLite and JSON lines (`sink`).

mod row;
mod schema;
mod shipper;
#[cfg(feature = "test-server")]
pub mod test_server;

use std::time::Duration;

pub use row::Identity;
pub(crate) use row::call_row;
pub use schema::{FILL_XATU, MIGRATIONS, XATU_TABLES, migrate, xatu_fill};
pub use shipper::{ShipStats, Shipper};

/// A parsed ClickHouse address: the HTTP endpoint, the database and the credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct ClickHouseUrl {
    /// `http://HOST:PORT` (no path, no credentials).
    pub endpoint: String,
    /// The database the tables live in.
    pub database: String,
    /// The user (`X-ClickHouse-User`), if given.
    pub user: Option<String>,
    /// The password (`X-ClickHouse-Key`), if given.
    pub password: Option<String>,
}

impl std::str::FromStr for ClickHouseUrl {
    type Err = String;

    /// Parses `http://[USER[:PASSWORD]@]HOST:PORT/DB` (the part after `clickhouse:`).
    fn from_str(url: &str) -> Result<ClickHouseUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url:?}: expected http://HOST:PORT/DB (https is not supported; put a TLS proxy on loopback)"))?;
        let (authority, database) = rest
            .split_once('/')
            .ok_or_else(|| format!("{url:?}: no database (expected http://HOST:PORT/DB)"))?;
        let database = database.trim_end_matches('/');
        if database.is_empty()
            || !database
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "{url:?}: database {database:?} must be letters, digits and _ only"
            ));
        }
        let (credentials, host) = match authority.rsplit_once('@') {
            Some((c, h)) => (Some(c), h),
            None => (None, authority),
        };
        if host.is_empty() {
            return Err(format!("{url:?}: no host"));
        }
        let (user, password) = match credentials.map(|c| c.split_once(':').unwrap_or((c, ""))) {
            Some((u, p)) => (Some(u.to_string()), (!p.is_empty()).then(|| p.to_string())),
            None => (None, None),
        };
        Ok(ClickHouseUrl {
            endpoint: format!("http://{host}"),
            database: database.to_string(),
            user,
            password,
        })
    }
}

impl std::fmt::Debug for ClickHouseUrl {
    /// As [`Display`](std::fmt::Display): never the password, so error messages can show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for ClickHouseUrl {
    /// The address without the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.endpoint, self.database)
    }
}

/// What went wrong talking to ClickHouse.
#[derive(Debug, thiserror::Error)]
pub enum ClickHouseError {
    /// The server could not be reached, or the connection broke.
    #[error("{endpoint}: {source}")]
    Unreachable {
        /// The server.
        endpoint: String,
        /// The cause.
        source: Box<ureq::Error>,
    },
    /// The server answered with an error.
    #[error("{endpoint}: HTTP {status}: {message}")]
    Server {
        /// The server.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// The server's message (first line).
        message: String,
    },
}

/// A blocking ClickHouse HTTP client.
#[derive(Clone)]
pub struct Client {
    url: ClickHouseUrl,
    agent: ureq::Agent,
}

/// Longest answer read from the server (queries here return small results; reports read more).
const MAX_ANSWER: u64 = 1 << 30;

impl Client {
    /// A client for `url`; `timeout` bounds each request (connect included).
    pub fn new(url: ClickHouseUrl, timeout: Duration) -> Client {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .timeout_connect(Some(timeout.min(Duration::from_secs(3))))
            .http_status_as_error(false)
            .build()
            .into();
        Client { url, agent }
    }

    /// The address.
    pub fn url(&self) -> &ClickHouseUrl {
        &self.url
    }

    /// Runs a statement or query sent as the request body; returns the answer's text.
    pub fn execute(&self, sql: &str) -> Result<String, ClickHouseError> {
        self.post("", sql.as_bytes())
    }

    /// Runs `query` (a statement ending in `FORMAT …`) with `data` as its input.
    pub fn insert(&self, query: &str, data: &[u8]) -> Result<String, ClickHouseError> {
        let encoded =
            percent_encoding::utf8_percent_encode(query, percent_encoding::NON_ALPHANUMERIC);
        self.post(&format!("?query={encoded}"), data)
    }

    /// Runs a query and reads its answer as JSON rows (`FORMAT JSONEachRow` is appended), 64-bit
    /// integers as numbers.
    pub fn rows<T: serde::de::DeserializeOwned>(
        &self,
        query: &str,
    ) -> Result<Vec<T>, ClickHouseError> {
        let text = self.post(
            "?output_format_json_quote_64bit_integers=0",
            format!("{query} FORMAT JSONEachRow").as_bytes(),
        )?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                serde_json::from_str(line).map_err(|e| ClickHouseError::Server {
                    endpoint: self.url.endpoint.clone(),
                    status: 200,
                    message: format!("an answer row does not parse ({e}): {line:.200}"),
                })
            })
            .collect()
    }

    fn post(&self, query_string: &str, body: &[u8]) -> Result<String, ClickHouseError> {
        let unreachable = |source| ClickHouseError::Unreachable {
            endpoint: self.url.endpoint.clone(),
            source: Box::new(source),
        };
        let mut request = self
            .agent
            .post(format!("{}/{}", self.url.endpoint, query_string))
            .header("X-ClickHouse-Database", &self.url.database);
        if let Some(user) = &self.url.user {
            request = request.header("X-ClickHouse-User", user);
        }
        if let Some(password) = &self.url.password {
            request = request.header("X-ClickHouse-Key", password);
        }
        let mut response = request.send(body).map_err(unreachable)?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_string()
            .map_err(unreachable)?;
        if status != 200 {
            return Err(ClickHouseError::Server {
                endpoint: self.url.endpoint.clone(),
                status,
                message: text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(500)
                    .collect(),
            });
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_and_without_credentials() {
        let url: ClickHouseUrl = "http://127.0.0.1:8123/sszgate".parse().unwrap();
        assert_eq!(url.endpoint, "http://127.0.0.1:8123");
        assert_eq!(url.database, "sszgate");
        assert_eq!((url.user, url.password), (None, None));
        let url: ClickHouseUrl = "http://ops:s3cret@ch.local:8123/fleet/".parse().unwrap();
        assert_eq!(url.endpoint, "http://ch.local:8123");
        assert_eq!(url.database, "fleet");
        assert_eq!(url.user.as_deref(), Some("ops"));
        assert_eq!(url.password.as_deref(), Some("s3cret"));
        assert_eq!(url.to_string(), "http://ch.local:8123/fleet");
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (url, says) in [
            ("https://h:8123/db", "https is not supported"),
            ("http://h:8123", "no database"),
            ("http://h:8123/", "must be letters"),
            ("http://h:8123/a-b", "must be letters"),
            ("http:///db", "no host"),
        ] {
            let err = url.parse::<ClickHouseUrl>().unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}

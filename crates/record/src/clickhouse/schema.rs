//! The versioned ClickHouse DDL (`crates/record/clickhouse/NNN_*.sql`) and its migration: each
//! server records the versions it has in `sszgate_schema`, and a newer sszgate applies the
//! missing ones in order on first use. The fill statements of the xatu-shaped tables live
//! here too. Everything is kept within what ClickHouse 18.16 accepts.

use super::{ClickHouseError, Client};

/// The schema versions, in order: (version, DDL with `{db}` for the database).
pub const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("../../clickhouse/001_calls.sql")),
    (2, include_str!("../../clickhouse/002_xatu.sql")),
    (3, include_str!("../../clickhouse/003_capture_note.sql")),
    (4, include_str!("../../clickhouse/004_injected.sql")),
];

/// Fills one of xatu's tables from one batch of `sszgate_calls` rows: `{table}`, `{columns}`
/// and `{method}` come from [`XATU_TABLES`].
pub const FILL_XATU: &str = include_str!("../../clickhouse/fill_xatu.sql");

/// xatu's tables: (name, the method prefix its rows come from, its own columns' expressions).
pub const XATU_TABLES: &[(&str, &str, &str)] = &[
    (
        "execution_engine_new_payload",
        "engine_newPayload",
        include_str!("../../clickhouse/xatu_new_payload.sql"),
    ),
    (
        "execution_engine_get_blobs",
        "engine_getBlobs",
        include_str!("../../clickhouse/xatu_get_blobs.sql"),
    ),
];

/// SQL without its comment lines.
fn without_comments(sql: &str) -> String {
    sql.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The statements of a SQL file: comment lines dropped, split at the `;` ending a line.
pub(crate) fn statements(sql: &str) -> Vec<String> {
    without_comments(sql)
        .split(";\n")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The fill statement of one of [`XATU_TABLES`], with `{db}`, `{spool_id}`, `{first}`,
/// `{last}` and `{replay}` left for the batch. Comments go before anything is filled in, so
/// a placeholder a comment names is never filled with a fragment.
pub fn xatu_fill(table: &str, method: &str, columns: &str) -> String {
    without_comments(FILL_XATU)
        .replace("{table}", table)
        .replace("{method}", method)
        .replace("{columns}", without_comments(columns).trim_end())
}

/// Creates the database and applies the schema versions the server does not have yet;
/// returns the version it is at.
pub fn migrate(client: &Client) -> Result<u32, ClickHouseError> {
    let db = &client.url().database;
    client.execute(&format!("CREATE DATABASE IF NOT EXISTS {db}"))?;
    client.execute(&format!(
        "CREATE TABLE IF NOT EXISTS {db}.sszgate_schema (version UInt32, applied DateTime) ENGINE = TinyLog"
    ))?;
    let have: u32 = client
        .execute(&format!("SELECT max(version) FROM {db}.sszgate_schema"))?
        .trim()
        .parse()
        .unwrap_or(0);
    let mut at = have;
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > have) {
        for statement in statements(&sql.replace("{db}", db)) {
            client.execute(&statement)?;
        }
        client.execute(&format!(
            "INSERT INTO {db}.sszgate_schema VALUES ({version}, now())"
        ))?;
        tracing::info!(database = %db, version, "ClickHouse schema applied");
        at = *version;
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_splits_into_its_statements() {
        let counts: Vec<usize> = MIGRATIONS
            .iter()
            .map(|(_, s)| statements(s).len())
            .collect();
        assert_eq!(counts, [1, 2, 1, 1]);
        for (table, method, columns) in XATU_TABLES {
            let parts = statements(&xatu_fill(table, method, columns));
            assert_eq!(parts.len(), 1);
            assert!(parts[0].starts_with(&format!("INSERT INTO {{db}}.{table}\nSELECT")));
            assert!(!parts[0].contains("--"), "the columns' comment is dropped");
            for placeholder in ["{db}", "{spool_id}", "{first}", "{last}", "{replay}"] {
                assert!(parts[0].contains(placeholder), "{placeholder}");
            }
        }
    }

    #[test]
    fn versions_ascend() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].0 < w[1].0));
    }
}

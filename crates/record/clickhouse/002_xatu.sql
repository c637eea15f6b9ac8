-- sszgate ClickHouse schema, version 2: tables with the column names and meanings of xatu's
-- execution_engine_new_payload and execution_engine_get_blobs, so that dashboards and queries
-- written for xatu run on sszgate data. The shipper fills them from sszgate_calls after each
-- batch (fill_*.sql; the proxy's records only). Two columns are added to xatu's set:
-- sszgate_spool_id and sszgate_spool_seq, the row's key in sszgate_calls, so that a replayed
-- batch is not filled twice. Differences forced by 18.16 (DateTime instead of DateTime64(3),
-- String instead of LowCardinality and IPv6, plain MergeTree instead of the replicated
-- engines) are listed in docs/clickhouse.md.
CREATE TABLE IF NOT EXISTS {db}.execution_engine_new_payload (
    updated_date_time DateTime,
    event_date_time DateTime,
    requested_date_time DateTime,
    duration_ms UInt32,
    source String,
    block_number UInt64,
    block_hash FixedString(66),
    parent_hash FixedString(66),
    gas_used UInt64,
    gas_limit UInt64,
    tx_count UInt32,
    blob_count UInt32,
    status String,
    latest_valid_hash Nullable(FixedString(66)),
    validation_error Nullable(String),
    method_version String,
    meta_execution_implementation String,
    meta_execution_version String,
    meta_execution_version_major String,
    meta_execution_version_minor String,
    meta_execution_version_patch String,
    meta_client_name String,
    meta_client_id String,
    meta_client_version String,
    meta_client_implementation String,
    meta_client_os String,
    meta_client_ip Nullable(String),
    meta_client_geo_city String,
    meta_client_geo_country String,
    meta_client_geo_country_code String,
    meta_client_geo_continent_code String,
    meta_client_geo_longitude Nullable(Float64),
    meta_client_geo_latitude Nullable(Float64),
    meta_client_geo_autonomous_system_number Nullable(UInt32),
    meta_client_geo_autonomous_system_organization Nullable(String),
    meta_network_id Int32,
    meta_network_name String,
    sszgate_spool_id String,
    sszgate_spool_seq UInt64
) ENGINE = MergeTree()
PARTITION BY intDiv(block_number, 5000000)
ORDER BY (block_number, meta_network_name, meta_client_name, block_hash, event_date_time);


CREATE TABLE IF NOT EXISTS {db}.execution_engine_get_blobs (
    updated_date_time DateTime,
    event_date_time DateTime,
    requested_date_time DateTime,
    duration_ms UInt32,
    source String,
    requested_count UInt32,
    versioned_hashes Array(FixedString(66)),
    returned_count UInt32,
    status String,
    error_message Nullable(String),
    method_version String,
    meta_execution_implementation String,
    meta_execution_version String,
    meta_execution_version_major String,
    meta_execution_version_minor String,
    meta_execution_version_patch String,
    meta_client_name String,
    meta_client_id String,
    meta_client_version String,
    meta_client_implementation String,
    meta_client_os String,
    meta_client_ip Nullable(String),
    meta_client_geo_city String,
    meta_client_geo_country String,
    meta_client_geo_country_code String,
    meta_client_geo_continent_code String,
    meta_client_geo_longitude Nullable(Float64),
    meta_client_geo_latitude Nullable(Float64),
    meta_client_geo_autonomous_system_number Nullable(UInt32),
    meta_client_geo_autonomous_system_organization Nullable(String),
    meta_network_id Int32,
    meta_network_name String,
    sszgate_spool_id String,
    sszgate_spool_seq UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(event_date_time)
ORDER BY (event_date_time, meta_network_name, meta_client_name);


-- Fills one of xatu's tables from the rows of sszgate_calls with one spool batch (a spool id
-- and a range of its sequence numbers) whose method starts with the table's prefix: the
-- proxy's records only (xatu's `source = 'SNOOPER'` side). The table's own columns come
-- from xatu_<table>.sql; the rest is common to both tables. INSERT ... SELECT is positional:
-- the SELECT's order is the table's column order (002_xatu.sql). On a replay, a condition
-- is added that skips the rows already filled. The placeholders (in braces, in the
-- statement only) are filled by the shipper. Column meanings and the differences from xatu:
-- docs/clickhouse.md.
INSERT INTO {db}.{table}
SELECT
    now() AS updated_date_time,
    toDateTime(intDiv(c_arrival_unix_us + toInt64(c_total_us), 1000000)) AS event_date_time,
    toDateTime(intDiv(c_arrival_unix_us, 1000000)) AS requested_date_time,
    toUInt32(intDiv(c_total_us, 1000)) AS duration_ms,
    'SNOOPER' AS source,
{columns}
    c_method_version AS method_version,
    c_el_implementation AS meta_execution_implementation,
    c_el_version AS meta_execution_version,
    extract(c_el_version, '^v?([0-9]+)') AS meta_execution_version_major,
    extract(c_el_version, '^v?[0-9]+[.]([0-9]+)') AS meta_execution_version_minor,
    extract(c_el_version, '^v?[0-9]+[.][0-9]+[.]([0-9]+)') AS meta_execution_version_patch,
    c_node AS meta_client_name,
    c_run_id AS meta_client_id,
    c_recorder_version AS meta_client_version,
    'sszgate' AS meta_client_implementation,
    c_recorder_os AS meta_client_os,
    CAST(NULL AS Nullable(String)) AS meta_client_ip,
    '' AS meta_client_geo_city,
    '' AS meta_client_geo_country,
    '' AS meta_client_geo_country_code,
    '' AS meta_client_geo_continent_code,
    CAST(NULL AS Nullable(Float64)) AS meta_client_geo_longitude,
    CAST(NULL AS Nullable(Float64)) AS meta_client_geo_latitude,
    CAST(NULL AS Nullable(UInt32)) AS meta_client_geo_autonomous_system_number,
    CAST(NULL AS Nullable(String)) AS meta_client_geo_autonomous_system_organization,
    c_network_id AS meta_network_id,
    c_network AS meta_network_name,
    c_spool_id AS sszgate_spool_id,
    c_spool_seq AS sszgate_spool_seq
FROM (
    SELECT
        arrival_unix_us AS c_arrival_unix_us,
        total_us AS c_total_us,
        block_number AS c_block_number,
        block_hash AS c_block_hash,
        parent_hash AS c_parent_hash,
        gas_used AS c_gas_used,
        tx_count AS c_tx_count,
        versioned_hash_count AS c_versioned_hash_count,
        blob_count AS c_blob_count,
        payload_status AS c_payload_status,
        latest_valid_hash AS c_latest_valid_hash,
        error_message AS c_error_message,
        validation_error AS c_validation_error,
        method_version AS c_method_version,
        el_implementation AS c_el_implementation,
        el_version AS c_el_version,
        node AS c_node,
        run_id AS c_run_id,
        recorder_version AS c_recorder_version,
        recorder_os AS c_recorder_os,
        network_id AS c_network_id,
        network AS c_network,
        blobs_requested AS c_blobs_requested,
        blobs_returned AS c_blobs_returned,
        error_code AS c_error_code,
        status AS c_status,
        spool_id AS c_spool_id,
        spool_seq AS c_spool_seq
    FROM {db}.sszgate_calls
    WHERE spool_id = '{spool_id}' AND spool_seq BETWEEN {first} AND {last}
      AND source = 'proxy'{replay} AND method LIKE '{method}%'
)

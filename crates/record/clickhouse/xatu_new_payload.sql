-- The columns of execution_engine_new_payload between `source` and `method_version`, in
-- the table's order, for fill_xatu.sql.
    ifNull(c_block_number, 0) AS block_number,
    toFixedString(ifNull(c_block_hash, ''), 66) AS block_hash,
    toFixedString(ifNull(c_parent_hash, ''), 66) AS parent_hash,
    ifNull(c_gas_used, 0) AS gas_used,
    toUInt64(0) AS gas_limit,
    toUInt32(ifNull(c_tx_count, 0)) AS tx_count,
    toUInt32(ifNull(c_versioned_hash_count, ifNull(c_blob_count, 0))) AS blob_count,
    ifNull(c_payload_status, 'ERROR') AS status,
    if(isNull(c_latest_valid_hash), NULL, toFixedString(assumeNotNull(c_latest_valid_hash), 66)) AS latest_valid_hash,
    if(isNull(c_payload_status), c_error_message, c_validation_error) AS validation_error,

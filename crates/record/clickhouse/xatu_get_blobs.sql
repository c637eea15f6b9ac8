-- The columns of execution_engine_get_blobs between `source` and `method_version`, in
-- the table's order, for fill_xatu.sql.
    toUInt32(ifNull(c_blobs_requested, ifNull(c_versioned_hash_count, 0))) AS requested_count,
    CAST([] AS Array(FixedString(66))) AS versioned_hashes,
    toUInt32(ifNull(c_blobs_returned, 0)) AS returned_count,
    multiIf(
        c_error_code IN (-32601, -38005), 'UNSUPPORTED',
        isNotNull(c_error_code) OR c_status >= 400, 'ERROR',
        ifNull(c_blobs_returned, 0) = 0, 'EMPTY',
        ifNull(c_blobs_returned, 0) < ifNull(c_blobs_requested, 0), 'PARTIAL',
        'SUCCESS') AS status,
    c_error_message AS error_message,

-- sszgate ClickHouse schema, version 3: capture_note, what the recorder could not read of a
-- call's bodies and why (a content coding that does not decode or decodes past its bound, an
-- answer too large to hold, a fault caught while reading it).
ALTER TABLE {db}.sszgate_calls ADD COLUMN capture_note Nullable(String);

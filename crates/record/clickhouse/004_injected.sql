-- sszgate ClickHouse schema, version 4: injected, the fault a control rule injected into a
-- call and which rule (the answer the CL saw was not, or not only, the EL's).
ALTER TABLE {db}.sszgate_calls ADD COLUMN injected Nullable(String);

//! Fixed-shape JSON: hand-written readers and writers for the Engine API messages whose
//! shape is known field by field (execution payloads, newPayload and forkchoiceUpdated
//! params), used before serde and byte-identical to it.
//!
//! - [`read`]: a cursor and the readers; any surprise returns `None` and serde decides.
//! - [`write`]: the writers, in the key order of alloy's serde impls.
//!
//! Not here: the blob bundles and blob lists (`crate::bulk`, which uses both halves), and the
//! messages serde alone handles (Amsterdam payloads, bodies, statuses).

pub(crate) mod read;
pub(crate) mod write;

#[cfg(test)]
mod tests {
    use alloy_rpc_types_engine::{ExecutionPayloadV3, ForkchoiceState, PayloadAttributes};

    use super::{
        read::{forkchoice_from_json, new_payload_from_json},
        write::{forkchoice_json, new_payload_json},
    };
    use crate::{
        fork::Fork,
        message::NewPayload,
        method::{self, MethodSpec},
    };

    /// The row of `engine_newPayloadV{n}`.
    fn v(n: u8) -> &'static MethodSpec {
        method::by_name(&format!("engine_newPayloadV{n}")).unwrap()
    }

    #[test]
    fn new_payload_params_decode_at_their_shape_as_serde_decodes_them() {
        use alloy_primitives::{B256, Bytes};
        let h = "12".repeat(32);
        let a = "34".repeat(20);
        let payload_json = format!(
            r#"{{"parentHash":"0x{h}","feeRecipient":"0x{a}","stateRoot":"0x{h}","receiptsRoot":"0x{h}","logsBloom":"0x{bloom}","prevRandao":"0x{h}","blockNumber":"0x1b4","gasLimit":"0x1c9c380","gasUsed":"0x0","timestamp":"0x6553f100","extraData":"0x","baseFeePerGas":"0x7","blockHash":"0x{h}","transactions":["0x02aa","0x01bbcc"],"withdrawals":[{{"index":"0x1","validatorIndex":"0x2","address":"0x{a}","amount":"0x3"}}],"blobGasUsed":"0x20000","excessBlobGas":"0x0"}}"#,
            bloom = "00".repeat(256)
        );
        let params = format!(r#"[{payload_json},["0x{h}"],"0x{h}",["0x0102"]]"#);
        let (p, hashes, root, requests): (ExecutionPayloadV3, Vec<B256>, B256, Vec<Bytes>) =
            serde_json::from_str(&params).unwrap();
        let expected =
            crate::message::NewPayload::Prague(p.clone(), hashes.clone(), root, requests.into());
        assert_eq!(
            new_payload_from_json(v(4), Fork::Prague, params.as_bytes()),
            Some(expected)
        );
        let v3 = format!(r#" [ {payload_json} , ["0x{h}"] , "0x{h}" ] "#);
        assert_eq!(
            new_payload_from_json(v(3), Fork::Cancun, v3.as_bytes()),
            Some(crate::message::NewPayload::Cancun(p, hashes, root))
        );
        // A fork the method does not serve: serde's to refuse.
        assert_eq!(
            new_payload_from_json(v(3), Fork::Prague, v3.as_bytes()),
            None
        );
        // Not the canonical shape: left to serde (which may still take it).
        for (from, to) in [
            ("\"blockNumber\":\"0x1b4\"", "\"blockNumber\":\"0x01b4\""),
            ("\"blockNumber\":\"0x1b4\"", "\"blockNumber\":436"),
            (
                "\"gasUsed\":\"0x0\"",
                "\"gasUsed\":\"0x0\",\"gasUsed\":\"0x0\"",
            ),
            ("\"gasUsed\":\"0x0\"", "\"gasUsed\":\"0x0\",\"extra\":1"),
            ("\"extraData\":\"0x\"", "\"extraData\":\"0x1\""),
            (
                "\"excessBlobGas\":\"0x0\"",
                "\"excessBlobGas\":\"0x10000000000000000\"",
            ),
            (",\"blobGasUsed\":\"0x20000\"", ""),
        ] {
            let changed = params.replacen(from, to, 1);
            assert_ne!(changed, params);
            assert_eq!(
                new_payload_from_json(v(4), Fork::Prague, changed.as_bytes()),
                None,
                "{to}"
            );
        }
        assert_eq!(
            new_payload_from_json(v(4), Fork::Prague, v3.as_bytes()),
            None,
            "V4 needs requests"
        );
        assert_eq!(
            new_payload_from_json(v(2), Fork::Prague, params.as_bytes()),
            None
        );
    }

    /// `(params, serde's reading)` of a forkchoiceUpdated with every attribute set.
    fn forkchoice_doc() -> String {
        let h = |b: u8| format!("\"0x{}\"", format!("{b:02x}").repeat(32));
        let a = format!("\"0x{}\"", "ab".repeat(20));
        format!(
            r#"[{{"headBlockHash":{},"safeBlockHash":{},"finalizedBlockHash":{}}},{{"timestamp":"0x6553f100","prevRandao":{},"suggestedFeeRecipient":{a},"withdrawals":[{{"index":"0x0","validatorIndex":"0xffffffffffffffff","address":{a},"amount":"0x10"}}],"parentBeaconBlockRoot":{},"slotNumber":"0x1","targetGasLimit":"0x2aea540"}}]"#,
            h(1),
            h(2),
            h(3),
            h(4),
            h(5)
        )
    }

    fn serde_forkchoice(doc: &str) -> (ForkchoiceState, Option<PayloadAttributes>) {
        serde_json::from_str(doc).unwrap()
    }

    #[test]
    fn forkchoice_params_decode_at_their_shape_as_serde_decodes_them() {
        let doc = forkchoice_doc();
        let read = forkchoice_from_json(doc.as_bytes()).expect("the fixed shape");
        assert_eq!(read, serde_forkchoice(&doc));
        let attrs = read.1.as_ref().unwrap();
        assert_eq!(attrs.timestamp, 0x6553f100);
        assert_eq!(attrs.slot_number, Some(1));
        assert_eq!(attrs.target_gas_limit, Some(45_000_000));
        assert_eq!(
            attrs.withdrawals.as_ref().unwrap()[0].validator_index,
            u64::MAX
        );
        // ... and the writer gives back the same bytes.
        assert_eq!(
            String::from_utf8(forkchoice_json(&read.0, read.1.as_ref())).unwrap(),
            doc
        );
        // Without attributes: `null`, left out, and with spaces.
        let state_only = &doc[1..doc.find("},{").unwrap() + 1];
        for params in [
            format!("[{state_only},null]"),
            format!("[{state_only}]"),
            format!(" [ {state_only} , null ] "),
        ] {
            let read = forkchoice_from_json(params.as_bytes()).expect(&params);
            // (serde's tuple needs both elements; the crate's serde reader allows one.)
            let with_null = format!("[{state_only},null]");
            assert_eq!(read, serde_forkchoice(&with_null), "{params}");
            assert_eq!(read.1, None);
        }
        // Cancun attributes: no Amsterdam fields, keys in another order.
        let mut cancun = doc
            .replace(r#","slotNumber":"0x1","targetGasLimit":"0x2aea540""#, "")
            .replacen(r#""timestamp":"0x6553f100","#, "", 1);
        cancun.insert_str(cancun.len() - 2, r#","timestamp":"0x6553f100""#);
        let read = forkchoice_from_json(cancun.as_bytes()).expect("cancun");
        assert_eq!(read, serde_forkchoice(&cancun));
        assert_eq!(read.1.unwrap().slot_number, None);
    }

    #[test]
    fn unusual_forkchoice_params_are_left_to_serde() {
        let doc = forkchoice_doc();
        for (from, to) in [
            // A key twice, an unknown key, `null` for an optional field.
            (
                r#""slotNumber":"0x1""#,
                r#""slotNumber":"0x1","slotNumber":"0x1""#,
            ),
            (r#""slotNumber":"0x1""#, r#""slotNumber":"0x1","extra":1"#),
            (r#""slotNumber":"0x1""#, r#""slotNumber":null"#),
            // Non-canonical quantities and hex of the wrong length.
            (r#""amount":"0x10""#, r#""amount":"0x010""#),
            (r#""amount":"0x10""#, r#""amount":16"#),
            (
                r#""timestamp":"0x6553f100""#,
                r#""timestamp":"0x10000000000000000""#,
            ),
            (r#"{"headBlockHash":"0x01"#, r#"{"headBlockHash":"0x1"#),
            // A missing field, a third param, trailing bytes, form feed as whitespace.
            (r#""prevRandao":"#, r#""prevRandaoX":"#),
            ("}]", "},null]"),
            ("}]", "}]]"),
            ("}]", "}]\u{c}"),
        ] {
            let changed = doc.replacen(from, to, 1);
            assert_ne!(changed, doc, "{to}");
            assert_eq!(forkchoice_from_json(changed.as_bytes()), None, "{to}");
        }
    }

    #[test]
    fn the_new_payload_writer_writes_what_serde_writes() {
        use alloy_primitives::{B256, Bytes};
        let doc = std::str::from_utf8(&forkchoice_json(&ForkchoiceState::default(), None))
            .unwrap()
            .to_string();
        assert_eq!(
            doc,
            serde_json::to_string(&(ForkchoiceState::default(), None::<PayloadAttributes>))
                .unwrap()
        );
        let h = "12".repeat(32);
        let a = "34".repeat(20);
        let payload_json = format!(
            r#"{{"parentHash":"0x{h}","feeRecipient":"0x{a}","stateRoot":"0x{h}","receiptsRoot":"0x{h}","logsBloom":"0x{bloom}","prevRandao":"0x{h}","blockNumber":"0x1b4","gasLimit":"0x1c9c380","gasUsed":"0x0","timestamp":"0x6553f100","extraData":"0x","baseFeePerGas":"0x0","blockHash":"0x{h}","transactions":[],"withdrawals":[],"blobGasUsed":"0xffffffffffffffff","excessBlobGas":"0x0"}}"#,
            bloom = "00".repeat(256)
        );
        let p: ExecutionPayloadV3 = serde_json::from_str(&payload_json).unwrap();
        let np = NewPayload::Prague(
            p.clone(),
            vec![B256::ZERO],
            B256::ZERO,
            vec![Bytes::new()].into(),
        );
        let serde =
            serde_json::to_string(&(&p, vec![B256::ZERO], B256::ZERO, vec![Bytes::new()])).unwrap();
        assert_eq!(
            String::from_utf8(new_payload_json(&np).unwrap()).unwrap(),
            serde
        );
        // Amsterdam: the V4 payload through serde, the rest as for Prague.
        let p4 = alloy_rpc_types_engine::ExecutionPayloadV4 {
            payload_inner: p.clone(),
            block_access_list: Bytes::from_static(&[0xc0, 0x01]),
            slot_number: 0x2a,
        };
        let hashes = vec![B256::repeat_byte(7), B256::ZERO];
        let np = NewPayload::Amsterdam(
            p4.clone(),
            hashes.clone(),
            B256::repeat_byte(9),
            vec![Bytes::from_static(&[1, 2])].into(),
        );
        let serde = serde_json::to_string(&(
            &p4,
            &hashes,
            B256::repeat_byte(9),
            vec![Bytes::from_static(&[1, 2])],
        ))
        .unwrap();
        assert!(serde.contains(r#""blockAccessList":"0xc001","slotNumber":"0x2a""#));
        assert_eq!(
            String::from_utf8(new_payload_json(&np).unwrap()).unwrap(),
            serde
        );
        // Quantities at their edges: zero, one digit, all 64 bits, and a 256-bit base fee.
        let mut p2 = p.clone();
        p2.payload_inner.payload_inner.base_fee_per_gas = alloy_primitives::U256::MAX;
        p2.payload_inner.payload_inner.gas_used = 0xf;
        p2.payload_inner.payload_inner.block_number = 0x10;
        for p in [p, p2] {
            let np = NewPayload::Cancun(p.clone(), vec![], B256::ZERO);
            let serde = serde_json::to_string(&(&p, Vec::<B256>::new(), B256::ZERO)).unwrap();
            assert_eq!(
                String::from_utf8(new_payload_json(&np).unwrap()).unwrap(),
                serde
            );
        }
    }

    #[test]
    fn bodies_decode_at_their_shape_and_unusual_ones_are_left_to_serde() {
        use alloy_rpc_types_engine::ExecutionPayloadBodyV1;

        use super::{read::bodies_v1_from_json, write::bodies_v1_json};
        let a = "ab".repeat(20);
        let doc = format!(
            r#"[{{"transactions":["0x02aa","0x"],"withdrawals":[{{"index":"0x1","validatorIndex":"0x2","address":"0x{a}","amount":"0x3"}}]}},null,{{"transactions":[],"withdrawals":null}}]"#
        );
        let serde: Vec<Option<ExecutionPayloadBodyV1>> = serde_json::from_str(&doc).unwrap();
        assert_eq!(bodies_v1_from_json(doc.as_bytes()), Some(serde.clone()));
        assert_eq!(
            serde[0].as_ref().unwrap().transactions[0].as_ref(),
            [0x02, 0xaa]
        );
        assert_eq!(String::from_utf8(bodies_v1_json(&serde)).unwrap(), doc);
        // `withdrawals` left out reads as `null`, as serde reads it.
        let left_out = doc.replace(r#","withdrawals":null"#, "");
        assert_eq!(bodies_v1_from_json(left_out.as_bytes()), Some(serde));
        assert_eq!(bodies_v1_from_json(b"[]"), Some(vec![]));
        for (from, to) in [
            (r#""0x02aa""#, r#""0x2aa""#),
            (r#""0x02aa""#, r#""02aa""#),
            (r#"null,"#, r#"{},"#),
            (
                r#""transactions":[]"#,
                r#""transactions":[],"transactions":[]"#,
            ),
            (
                r#""transactions":[]"#,
                r#""transactions":[],"blockAccessList":"0x""#,
            ),
            (r#""amount":"0x3""#, r#""amount":"0x03""#),
        ] {
            let changed = doc.replacen(from, to, 1);
            assert_ne!(changed, doc, "{to}");
            assert_eq!(bodies_v1_from_json(changed.as_bytes()), None, "{to}");
        }
    }

    #[test]
    fn v1_and_v2_payloads_take_the_fork_serde_would_give_them() {
        let shanghai = shanghai_payload();
        let v2 = format!("[{}]", serde_json::to_string(&shanghai).unwrap());
        let v1 = format!(
            "[{}]",
            serde_json::to_string(&shanghai.payload_inner).unwrap()
        );
        let read =
            |version, fork, doc: &str| new_payload_from_json(v(version), fork, doc.as_bytes());
        let paris = Some(NewPayload::Paris(shanghai.payload_inner.clone()));
        assert_eq!(read(1, Fork::Paris, &v1), paris);
        assert_eq!(read(2, Fork::Paris, &v1), paris);
        assert_eq!(
            read(2, Fork::Shanghai, &v2),
            Some(NewPayload::Shanghai(shanghai))
        );
        // Withdrawals in Paris, none in Shanghai, or any in a V1 payload: serde decides.
        assert_eq!(read(2, Fork::Paris, &v2), None);
        assert_eq!(read(2, Fork::Shanghai, &v1), None);
        assert_eq!(read(1, Fork::Paris, &v2), None);
    }

    /// A Shanghai payload with a transaction and a withdrawal.
    fn shanghai_payload() -> alloy_rpc_types_engine::ExecutionPayloadV2 {
        let p3: ExecutionPayloadV3 = serde_json::from_str(&format!(
            r#"{{"parentHash":"0x{h}","feeRecipient":"0x{a}","stateRoot":"0x{h}","receiptsRoot":"0x{h}","logsBloom":"0x{bloom}","prevRandao":"0x{h}","blockNumber":"0x1","gasLimit":"0x2","gasUsed":"0x3","timestamp":"0x4","extraData":"0x0102","baseFeePerGas":"0x5","blockHash":"0x{h}","transactions":["0x02aa"],"withdrawals":[{{"index":"0x1","validatorIndex":"0x2","address":"0x{a}","amount":"0x3"}}],"blobGasUsed":"0x0","excessBlobGas":"0x0"}}"#,
            h = "12".repeat(32),
            a = "34".repeat(20),
            bloom = "00".repeat(256)
        ))
        .unwrap();
        p3.payload_inner
    }
}

#!/usr/bin/env python3
"""Cross-check sszgate's REST-SSZ encodings against remerkleable, an independent SSZ library.

Usage:
    crosscheck_ssz.py DIR          check every case pair DIR/<name>.json + DIR/<name>.ssz
    crosscheck_ssz.py --self-test  check the container definitions against the golden vectors
                                   (testdata/vectors/geth-golden.json) and the spec's examples

A case file is {"container": <spec container name>, "fork": <fork>, "method": <engine_* method>,
"json": <the JSON-RPC params (requests) or result (answers)>}. For each case the container is
built from the JSON alone with remerkleable's types, defined here from the spec text
(engine-rest-ssz-containers.md), serialized and compared with the .ssz bytes; then the .ssz
bytes are decoded by remerkleable and re-serialized. Prints one line per failure and a summary
`crosscheck: N passed, M failed`; exits 1 on any failure or when DIR holds no case.
"""

import json
import pathlib
import sys

try:
    from remerkleable.basic import boolean, uint8, uint64, uint256
    from remerkleable.bitfields import Bitvector
    from remerkleable.byte_arrays import ByteList, ByteVector
    from remerkleable.complex import Container, List
except ImportError:
    print("crosscheck: remerkleable is not installed (pip install -r scripts/requirements.txt)", file=sys.stderr)
    sys.exit(2)

# MAX_* constants (engine-rest-ssz-containers.md)
MAX_BYTES_PER_TX = 2**30
MAX_TXS_PER_PAYLOAD = 2**20
MAX_WITHDRAWALS_PER_PAYLOAD = 16
MAX_EXTRA_DATA_BYTES = 32
MAX_BLOB_COMMITMENTS_PER_BLOCK = 4096
BYTES_PER_BLOB = 131072
CELLS_PER_EXT_BLOB = 128
MAX_BAL_BYTES = MAX_BYTES_PER_TX
MAX_EXECUTION_REQUESTS_PER_PAYLOAD = 256
MAX_BYTES_PER_EXECUTION_REQUEST = MAX_BYTES_PER_TX
MAX_BLOBS_REQUEST = 128
MAX_BODIES_REQUEST = 32
MAX_ERROR_BYTES = 1024

Hash32 = ByteVector[32]
Address = ByteVector[20]
Bytes8 = ByteVector[8]
Bytes48 = ByteVector[48]
Blob = ByteVector[BYTES_PER_BLOB]
Transactions = List[ByteList[MAX_BYTES_PER_TX], MAX_TXS_PER_PAYLOAD]
Requests = List[ByteList[MAX_BYTES_PER_EXECUTION_REQUEST], MAX_EXECUTION_REQUESTS_PER_PAYLOAD]


def Optional(t):
    """Optional[T] = List[T, 1]."""
    return List[t, 1]


class Withdrawal(Container):
    index: uint64
    validator_index: uint64
    address: Address
    amount: uint64


Withdrawals = List[Withdrawal, MAX_WITHDRAWALS_PER_PAYLOAD]


def container(name, fields):
    """A Container subclass named `name` with `fields` [(name, type)] in order."""
    return type(name, (Container,), {"__annotations__": dict(fields)})


PARIS_PAYLOAD = [
    ("parent_hash", Hash32), ("fee_recipient", Address), ("state_root", Hash32),
    ("receipts_root", Hash32), ("logs_bloom", ByteVector[256]), ("prev_randao", Hash32),
    ("block_number", uint64), ("gas_limit", uint64), ("gas_used", uint64), ("timestamp", uint64),
    ("extra_data", ByteList[MAX_EXTRA_DATA_BYTES]), ("base_fee_per_gas", uint256),
    ("block_hash", Hash32), ("transactions", Transactions),
]
SHANGHAI_PAYLOAD = PARIS_PAYLOAD + [("withdrawals", Withdrawals)]
CANCUN_PAYLOAD = SHANGHAI_PAYLOAD + [("blob_gas_used", uint64), ("excess_blob_gas", uint64)]
AMSTERDAM_PAYLOAD = CANCUN_PAYLOAD + [("block_access_list", ByteList[MAX_BAL_BYTES]), ("slot_number", uint64)]

FORKS = ["paris", "shanghai", "cancun", "prague", "osaka", "amsterdam"]
PAYLOAD = {
    "paris": container("ExecutionPayloadParis", PARIS_PAYLOAD),
    "shanghai": container("ExecutionPayloadShanghai", SHANGHAI_PAYLOAD),
    "cancun": container("ExecutionPayloadCancun", CANCUN_PAYLOAD),
    "amsterdam": container("ExecutionPayloadAmsterdam", AMSTERDAM_PAYLOAD),
}
PAYLOAD["prague"] = PAYLOAD["osaka"] = PAYLOAD["cancun"]

PARIS_ATTRS = [("timestamp", uint64), ("prev_randao", Hash32), ("suggested_fee_recipient", Address)]
SHANGHAI_ATTRS = PARIS_ATTRS + [("withdrawals", Withdrawals)]
CANCUN_ATTRS = SHANGHAI_ATTRS + [("parent_beacon_block_root", Hash32)]
AMSTERDAM_ATTRS = CANCUN_ATTRS + [("slot_number", uint64), ("target_gas_limit", uint64)]
ATTRIBUTES = {
    "paris": container("PayloadAttributesParis", PARIS_ATTRS),
    "shanghai": container("PayloadAttributesShanghai", SHANGHAI_ATTRS),
    "cancun": container("PayloadAttributesCancun", CANCUN_ATTRS),
    "amsterdam": container("PayloadAttributesAmsterdam", AMSTERDAM_ATTRS),
}
ATTRIBUTES["prague"] = ATTRIBUTES["osaka"] = ATTRIBUTES["cancun"]

BODY = {
    "paris": container("ExecutionPayloadBodyParis", [("transactions", Transactions)]),
    "shanghai": container("ExecutionPayloadBodyShanghai", [("transactions", Transactions), ("withdrawals", Withdrawals)]),
    "amsterdam": container("ExecutionPayloadBodyAmsterdam", [
        ("transactions", Transactions), ("withdrawals", Withdrawals), ("block_access_list", ByteList[MAX_BAL_BYTES])]),
}
BODY["cancun"] = BODY["prague"] = BODY["osaka"] = BODY["shanghai"]

ForkchoiceState = container("ForkchoiceState", [
    ("head_block_hash", Hash32), ("safe_block_hash", Hash32), ("finalized_block_hash", Hash32)])
PayloadStatus = container("PayloadStatus", [
    ("status", uint8), ("latest_valid_hash", Optional(Hash32)),
    ("validation_error", Optional(ByteList[MAX_ERROR_BYTES]))])
ForkchoiceUpdateResponse = container("ForkchoiceUpdateResponse", [
    ("payload_status", PayloadStatus), ("payload_id", Optional(Bytes8))])
BlobsBundleV1 = container("BlobsBundleV1", [
    ("commitments", List[Bytes48, MAX_BLOB_COMMITMENTS_PER_BLOCK]),
    ("proofs", List[Bytes48, MAX_BLOB_COMMITMENTS_PER_BLOCK]),
    ("blobs", List[Blob, MAX_BLOB_COMMITMENTS_PER_BLOCK])])
BlobsBundleV2 = container("BlobsBundleV2", [
    ("commitments", List[Bytes48, MAX_BLOB_COMMITMENTS_PER_BLOCK]),
    ("proofs", List[Bytes48, MAX_BLOB_COMMITMENTS_PER_BLOCK * CELLS_PER_EXT_BLOB]),
    ("blobs", List[Blob, MAX_BLOB_COMMITMENTS_PER_BLOCK])])


def built_payload_type(fork):
    fields = [("payload", PAYLOAD[fork]), ("block_value", uint256)]
    if FORKS.index(fork) >= FORKS.index("cancun"):
        fields.append(("blobs_bundle", BlobsBundleV2 if FORKS.index(fork) >= FORKS.index("osaka") else BlobsBundleV1))
    if FORKS.index(fork) >= FORKS.index("prague"):
        fields.append(("execution_requests", Requests))  # before should_override_builder
    if FORKS.index(fork) >= FORKS.index("cancun"):
        fields.append(("should_override_builder", boolean))
    return container("BuiltPayload" + fork.capitalize(), fields)


def envelope_type(fork):
    fields = [("payload", PAYLOAD[fork])]
    if FORKS.index(fork) >= FORKS.index("cancun"):
        fields.append(("parent_beacon_block_root", Hash32))
    if FORKS.index(fork) >= FORKS.index("prague"):
        fields.append(("execution_requests", Requests))
    return container("ExecutionPayloadEnvelope" + fork.capitalize(), fields)


def forkchoice_update_type(fork):
    fields = [("forkchoice_state", ForkchoiceState), ("payload_attributes", Optional(ATTRIBUTES[fork]))]
    if fork == "amsterdam":
        fields.append(("custody_columns", Optional(Bitvector[CELLS_PER_EXT_BLOB])))
    return container("ForkchoiceUpdate" + fork.capitalize(), fields)


BodiesByHashRequest = container("BodiesByHashRequest", [("block_hashes", List[Hash32, MAX_BODIES_REQUEST])])


def bodies_response_type(fork):
    entry = container("BodyEntry", [("available", boolean), ("body", BODY[fork])])
    return container("BodiesResponse", [("entries", List[entry, MAX_BODIES_REQUEST])])


BlobsV1Request = container("BlobsV1Request", [("versioned_hashes", List[Hash32, MAX_BLOBS_REQUEST])])
BlobsV4Request = container("BlobsV4Request", [
    ("versioned_hashes", List[Hash32, MAX_BLOBS_REQUEST]), ("indices_bitarray", Bitvector[CELLS_PER_EXT_BLOB])])
BlobAndProofV1 = container("BlobAndProofV1", [("blob", Blob), ("proof", Bytes48)])
BlobAndProofV2 = container("BlobAndProofV2", [("blob", Blob), ("proofs", List[Bytes48, CELLS_PER_EXT_BLOB])])
BlobV1Entry = container("BlobV1Entry", [("available", boolean), ("contents", BlobAndProofV1)])
BlobV2Entry = container("BlobV2Entry", [("available", boolean), ("contents", BlobAndProofV2)])
BlobsV1Response = container("BlobsV1Response", [("entries", List[BlobV1Entry, MAX_BLOBS_REQUEST])])
BlobsV2Response = container("BlobsV2Response", [("entries", List[BlobV2Entry, MAX_BLOBS_REQUEST])])

# ------------------------------------------------------------------ JSON-RPC -> values


def data(s):
    """DATA: 0x-prefixed hex."""
    if not isinstance(s, str) or not s.startswith("0x"):
        raise ValueError(f"not 0x-hex: {s!r}")
    return bytes.fromhex(s[2:])


def qty(s):
    """QUANTITY: 0x-prefixed big-endian hex."""
    if not isinstance(s, str) or not s.startswith("0x"):
        raise ValueError(f"not a 0x quantity: {s!r}")
    return int(s, 16)


def withdrawal(w):
    return Withdrawal(index=qty(w["index"]), validator_index=qty(w["validatorIndex"]),
                      address=Address(data(w["address"])), amount=qty(w["amount"]))


def payload(fork, p):
    t = PAYLOAD[fork]
    v = dict(
        parent_hash=data(p["parentHash"]), fee_recipient=data(p["feeRecipient"]),
        state_root=data(p["stateRoot"]), receipts_root=data(p["receiptsRoot"]),
        logs_bloom=data(p["logsBloom"]), prev_randao=data(p["prevRandao"]),
        block_number=qty(p["blockNumber"]), gas_limit=qty(p["gasLimit"]), gas_used=qty(p["gasUsed"]),
        timestamp=qty(p["timestamp"]), extra_data=data(p["extraData"]),
        base_fee_per_gas=qty(p["baseFeePerGas"]), block_hash=data(p["blockHash"]),
        transactions=[data(tx) for tx in p["transactions"]],
    )
    if FORKS.index(fork) >= FORKS.index("shanghai"):
        v["withdrawals"] = [withdrawal(w) for w in p["withdrawals"]]
    if FORKS.index(fork) >= FORKS.index("cancun"):
        v["blob_gas_used"] = qty(p["blobGasUsed"])
        v["excess_blob_gas"] = qty(p["excessBlobGas"])
    if fork == "amsterdam":
        v["block_access_list"] = data(p["blockAccessList"])
        v["slot_number"] = qty(p["slotNumber"])
    return build(t, v)


def build(t, values):
    """Instantiate container type `t` from plain Python values, field by field."""
    fields = t.fields()
    kwargs = {}
    for name, ftype in fields.items():
        value = values[name]
        kwargs[name] = value if isinstance(value, ftype) else coerce(ftype, value)
    return t(**kwargs)


def coerce(ftype, value):
    if isinstance(value, (bytes, bytearray)) and issubclass(ftype, (ByteVector, ByteList)):
        return ftype(value)
    if hasattr(ftype, "element_cls") and isinstance(value, list):
        elem = ftype.element_cls()
        return ftype(*[v if isinstance(v, elem) else coerce(elem, v) for v in value])
    return ftype(value)


def attributes(fork, a):
    v = dict(timestamp=qty(a["timestamp"]), prev_randao=data(a["prevRandao"]),
             suggested_fee_recipient=data(a["suggestedFeeRecipient"]))
    if FORKS.index(fork) >= FORKS.index("shanghai"):
        v["withdrawals"] = [withdrawal(w) for w in a["withdrawals"]]
    if FORKS.index(fork) >= FORKS.index("cancun"):
        v["parent_beacon_block_root"] = data(a["parentBeaconBlockRoot"])
    if fork == "amsterdam":
        v["slot_number"] = qty(a["slotNumber"])
        v["target_gas_limit"] = qty(a["targetGasLimit"])
    return build(ATTRIBUTES[fork], v)


STATUS = {"VALID": 0, "INVALID": 1, "SYNCING": 2, "ACCEPTED": 3, "INVALID_BLOCK_HASH": 1}


def payload_status(s):
    lvh = s.get("latestValidHash")
    err = s.get("validationError")
    return PayloadStatus(
        status=STATUS[s["status"]],
        latest_valid_hash=Optional(Hash32)(*([Hash32(data(lvh))] if lvh else [])),
        validation_error=Optional(ByteList[MAX_ERROR_BYTES])(*([ByteList[MAX_ERROR_BYTES](err.encode())] if err is not None else [])),
    )


def bitvector128(hex_be):
    n = int(hex_be, 16)
    return Bitvector[CELLS_PER_EXT_BLOB](*[(n >> i) & 1 for i in range(CELLS_PER_EXT_BLOB)])


def bundle(fork, b):
    t = BlobsBundleV2 if FORKS.index(fork) >= FORKS.index("osaka") else BlobsBundleV1
    return build(t, dict(commitments=[data(c) for c in b["commitments"]], proofs=[data(p) for p in b["proofs"]],
                         blobs=[data(x) for x in b["blobs"]]))


def build_case(container_name, fork, j):
    """The remerkleable value and its type for a case, from the JSON-RPC form alone."""
    if container_name.startswith("ExecutionPayloadEnvelope"):
        t = envelope_type(fork)
        v = {"payload": payload(fork, j[0])}
        if FORKS.index(fork) >= FORKS.index("cancun"):
            v["parent_beacon_block_root"] = data(j[2])
        if FORKS.index(fork) >= FORKS.index("prague"):
            v["execution_requests"] = [data(r) for r in j[3]]
        return t, build(t, v)
    if container_name.startswith("BuiltPayload"):
        t = built_payload_type(fork)
        v = {"payload": payload(fork, j["executionPayload"]), "block_value": qty(j["blockValue"])}
        if FORKS.index(fork) >= FORKS.index("cancun"):
            v["blobs_bundle"] = bundle(fork, j["blobsBundle"])
            v["should_override_builder"] = bool(j["shouldOverrideBuilder"])
        if FORKS.index(fork) >= FORKS.index("prague"):
            v["execution_requests"] = [data(r) for r in j["executionRequests"]]
        return t, build(t, v)
    if container_name.startswith("ForkchoiceUpdateResponse"):
        pid = j.get("payloadId")
        return ForkchoiceUpdateResponse, ForkchoiceUpdateResponse(
            payload_status=payload_status(j["payloadStatus"]),
            payload_id=Optional(Bytes8)(*([Bytes8(data(pid))] if pid else [])))
    if container_name.startswith("ForkchoiceUpdate"):
        t = forkchoice_update_type(fork)
        s = j[0]
        state = ForkchoiceState(head_block_hash=data(s["headBlockHash"]), safe_block_hash=data(s["safeBlockHash"]),
                                finalized_block_hash=data(s["finalizedBlockHash"]))
        attrs = j[1] if len(j) > 1 else None
        opt = Optional(ATTRIBUTES[fork])(*([attributes(fork, attrs)] if attrs else []))
        v = {"forkchoice_state": state, "payload_attributes": opt}
        if fork == "amsterdam":
            v["custody_columns"] = Optional(Bitvector[CELLS_PER_EXT_BLOB])()
        return t, t(**v)
    if container_name == "PayloadStatus":
        return PayloadStatus, payload_status(j)
    if container_name == "BodiesByHashRequest":
        return BodiesByHashRequest, build(BodiesByHashRequest, {"block_hashes": [data(h) for h in j[0]]})
    if container_name.startswith("BodiesResponse"):
        t = bodies_response_type(fork)
        entry_t = t.fields()["entries"].element_cls()
        body_t = BODY[fork]
        entries = []
        for body in j:
            if body is None:
                entries.append(entry_t(available=False, body=body_t()))
                continue
            v = {"transactions": [data(tx) for tx in body["transactions"]]}
            if "withdrawals" in body_t.fields():
                v["withdrawals"] = [withdrawal(w) for w in body["withdrawals"]]
            if "block_access_list" in body_t.fields():
                v["block_access_list"] = data(body["blockAccessList"])
            entries.append(entry_t(available=True, body=build(body_t, v)))
        return t, t(entries=List[entry_t, MAX_BODIES_REQUEST](*entries))
    if container_name in ("BlobsV1Request", "BlobsV2Request", "BlobsV3Request"):
        return BlobsV1Request, build(BlobsV1Request, {"versioned_hashes": [data(h) for h in j[0]]})
    if container_name == "BlobsV4Request":
        return BlobsV4Request, BlobsV4Request(
            versioned_hashes=List[Hash32, MAX_BLOBS_REQUEST](*[Hash32(data(h)) for h in j[0]]),
            indices_bitarray=bitvector128(j[1]))
    if container_name == "BlobsV1Response":
        entries = [BlobV1Entry(available=True, contents=BlobAndProofV1(blob=data(e["blob"]), proof=data(e["proof"])))
                   if e is not None else BlobV1Entry(available=False, contents=BlobAndProofV1()) for e in j]
        return BlobsV1Response, BlobsV1Response(entries=List[BlobV1Entry, MAX_BLOBS_REQUEST](*entries))
    if container_name in ("BlobsV2Response", "BlobsV3Response"):
        entries = []
        for e in j or []:
            if e is None:
                entries.append(BlobV2Entry(available=False, contents=BlobAndProofV2()))
            else:
                proofs = List[Bytes48, CELLS_PER_EXT_BLOB](*[Bytes48(data(p)) for p in e["proofs"]])
                entries.append(BlobV2Entry(available=True, contents=BlobAndProofV2(blob=data(e["blob"]), proofs=proofs)))
        return BlobsV2Response, BlobsV2Response(entries=List[BlobV2Entry, MAX_BLOBS_REQUEST](*entries))
    raise ValueError(f"unsupported container {container_name}")


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare(label, ours, theirs):
    """None when equal, else a description of the first difference."""
    if ours == theirs:
        return None
    at = first_difference(ours, theirs)
    return (f"{label}: {len(ours)} vs {len(theirs)} bytes, first difference at byte {at}: "
            f"ours {ours[max(0, at - 4):at + 8].hex()} remerkleable {theirs[max(0, at - 4):at + 8].hex()}")


def check_dir(directory):
    cases = sorted(directory.glob("*.json"))
    passed = failed = 0
    for case_path in cases:
        case = json.loads(case_path.read_text())
        ours = case_path.with_suffix(".ssz").read_bytes()
        problems = []
        try:
            t, value = build_case(case["container"], case["fork"], case["json"])
            problem = compare("encode from JSON", ours, value.encode_bytes())
            if problem:
                problems.append(problem)
            problem = compare("decode+re-encode", ours, t.decode_bytes(ours).encode_bytes())
            if problem:
                problems.append(problem)
        except Exception as e:  # a case that cannot even be built is a failure, with its reason
            problems.append(f"{type(e).__name__}: {e}")
        if problems:
            failed += 1
            for p in problems:
                print(f"FAIL {case_path.stem} ({case['container']}, {case['fork']}): {p}")
        else:
            passed += 1
    print(f"crosscheck: {passed} passed, {failed} failed")
    if not cases:
        print("crosscheck: no case in", directory, file=sys.stderr)
        return 1
    return 1 if failed else 0


def self_test():
    root = pathlib.Path(__file__).resolve().parent.parent
    golden = json.loads((root / "testdata/vectors/geth-golden.json").read_text())
    types = {"PayloadParis": PAYLOAD["paris"], "PayloadShanghai": PAYLOAD["shanghai"],
             "PayloadCancun": PAYLOAD["cancun"], "PayloadAmsterdam": PAYLOAD["amsterdam"],
             "AttrsParis": ATTRIBUTES["paris"], "AttrsShanghai": ATTRIBUTES["shanghai"],
             "AttrsCancun": ATTRIBUTES["cancun"], "AttrsAmsterdam": ATTRIBUTES["amsterdam"],
             "BodyParis": BODY["paris"], "BodyCancun": BODY["cancun"], "BodyAmsterdam": BODY["amsterdam"]}
    examples = {
        "PayloadStatus A": (PayloadStatus, bytes.fromhex("00" "09000000" "29000000" + "ab" * 32)),
        "PayloadStatus B": (PayloadStatus, bytes.fromhex("01" "09000000" "09000000" "04000000" + b"bad state root".hex())),
    }
    passed = failed = 0
    for name, hexstr in golden.items():
        examples[name] = (types[name], bytes.fromhex(hexstr))
    for name, (t, raw) in examples.items():
        problem = compare(name, raw, t.decode_bytes(raw).encode_bytes())
        if problem:
            failed += 1
            print("FAIL", problem)
        else:
            passed += 1
    print(f"crosscheck: {passed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    if argv[1] == "--self-test":
        return self_test()
    return check_dir(pathlib.Path(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))

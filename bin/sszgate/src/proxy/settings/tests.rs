//! Tests of [`resolve`]: the defaults, every environment variable, and the contradictions
//! refused. Parses here read no environment (`flags::without_env`), except the one test of
//! the variables, which runs in a child process so that no other test sees them.

use std::{collections::BTreeSet, process::Command};

use clap::{CommandFactory, FromArgMatches, Parser};
use sszgate_gateway::{DEFAULT_MAX_ANSWER_BYTES, Limits};

use super::*;

/// `sszgate proxy` alone, as the tests parse it.
#[derive(Debug, Parser)]
struct ProxyCli {
    #[command(flatten)]
    args: ProxyArgs,
}

/// The flags `argv` (after `proxy`) parse into, reading no environment variable.
fn parse(argv: &[&str]) -> ProxyArgs {
    let argv = std::iter::once("proxy").chain(argv.iter().copied());
    let matches = crate::flags::without_env(ProxyCli::command())
        .try_get_matches_from(argv)
        .unwrap_or_else(|e| panic!("{e}"));
    ProxyCli::from_arg_matches(&matches).unwrap().args
}

const UPSTREAM: [&str; 2] = ["--upstream", "http://127.0.0.1:8552"];

fn secret() -> JwtSecret {
    JwtSecret::from_hex(&"11".repeat(32)).unwrap()
}

/// The error `resolve` gives for `argv` without a secret.
fn refused(argv: &[&str]) -> String {
    let args = parse(&[&UPSTREAM[..], argv].concat());
    resolve(&args, None).unwrap_err().to_string()
}

#[test]
fn the_defaults_are_the_documented_ones() {
    let settings = resolve(&parse(&UPSTREAM), None).unwrap();
    assert_eq!(settings.listen, "127.0.0.1:8551".parse().unwrap());
    assert_eq!(settings.metrics, "127.0.0.1:9551".parse().unwrap());
    assert_eq!(settings.worker_threads, None);
    let upstream = UpstreamSettings {
        url: UPSTREAM[1].into(),
        timeout: Duration::from_secs(8),
        http2: false,
    };
    assert_eq!(settings.upstream, upstream);
    assert_eq!(settings.transport, TransportPlan::Auto);
    let (limits, default) = (settings.limits, Limits::default());
    assert_eq!(limits.header_timeout, default.header_timeout);
    assert_eq!(limits.body_timeout, default.body_timeout);
    assert_eq!(limits.max_in_flight, default.max_in_flight);
    assert_eq!(limits.max_header_bytes, default.max_header_bytes);
    assert_eq!(limits.max_answer_bytes, DEFAULT_MAX_ANSWER_BYTES);
    assert_eq!(settings.max_body, 64 << 20);
    assert_eq!(settings.cl_label, None);
    assert!(!settings.verify_jwt && !settings.verify_enforce);
    assert!(settings.splice, "answers are spliced by default");
    let recording = settings.recording;
    assert_eq!(recording.stores, [SinkSpec::Sqlite("sszgate.db".into())]);
    assert_eq!(recording.jsonl_body_bytes, 256);
    assert_eq!(recording.spool_dir, PathBuf::from("sszgate-spool"));
    assert_eq!(recording.spool_max_bytes, 1 << 30);
    assert_eq!((recording.node, recording.network), (None, None));
    let recorder = recording.recorder;
    assert_eq!(recorder.source, "proxy");
    assert!(recorder.labels.is_empty());
    assert_eq!(recorder.capacity, 65_536);
    assert_eq!(recorder.queue_bytes, sszgate_record::DEFAULT_QUEUE_BYTES);
    assert_eq!(recorder.max_decoded, DEFAULT_MAX_ANSWER_BYTES);
    let sample = sszgate_verify::Mode::Sample { kzg_percent: 10 };
    assert_eq!(recorder.verify, sample);
}

#[test]
fn flags_reach_their_settings() {
    let args = parse(
        &[
            &UPSTREAM[..],
            &[
                "--upstream-transport",
                "relay",
                "--auth",
                "verify",
                "--verify",
                "all",
            ],
            &["--label", "node=n1,cl=lighthouse", "--label", "way=proxy"],
            &[
                "--store",
                "jsonl:-,none",
                "--max-answer",
                "1000",
                "--queue",
                "7",
            ],
        ]
        .concat(),
    );
    let settings = resolve(&args, Some(&secret())).unwrap();
    assert_eq!(
        settings.transport,
        TransportPlan::Fixed(UpstreamTransport::Relay)
    );
    assert!(settings.verify_jwt);
    assert_eq!(settings.cl_label.as_deref(), Some("lighthouse"));
    assert_eq!(settings.limits.max_answer_bytes, 1000);
    let recording = settings.recording;
    let stores = [SinkSpec::Jsonl("-".into()), SinkSpec::None];
    assert_eq!(recording.stores, stores);
    assert_eq!(recording.recorder.labels.len(), 3);
    assert_eq!(recording.recorder.max_decoded, 1000);
    assert_eq!(recording.recorder.capacity, 7);
    assert_eq!(recording.recorder.verify, sszgate_verify::Mode::All);
}

#[test]
fn the_kzg_share_paces_sample_mode() {
    let args = parse(&[&UPSTREAM[..], &["--verify-kzg-share", "25"]].concat());
    let recorder = resolve(&args, None).unwrap().recording.recorder;
    let paced = sszgate_verify::Mode::Sample { kzg_percent: 25 };
    assert_eq!(recorder.verify, paced);
}

#[test]
fn contradictory_flags_are_refused_with_the_flag_that_is_missing() {
    assert_eq!(refused(&["--queue", "0"]), "--queue must be at least 1");
    let auth = refused(&["--auth", "verify"]);
    assert_eq!(
        auth,
        "--auth verify checks every call's JWT, which needs --jwt-secret"
    );
    let ssz = refused(&["--upstream-transport", "ssz"]);
    assert!(
        ssz.starts_with(
            "--upstream-transport ssz bridges JSON-RPC calls to REST-SSZ, which needs --jwt-secret"
        ),
        "{ssz}"
    );
    // With the secret, both are what they say.
    let args = parse(
        &[
            &UPSTREAM[..],
            &["--auth", "verify", "--upstream-transport", "ssz"],
        ]
        .concat(),
    );
    let settings = resolve(&args, Some(&secret())).unwrap();
    assert_eq!(
        settings.transport,
        TransportPlan::Fixed(UpstreamTransport::Ssz)
    );
    // The EL answering `ssz` to `auto` is held to the same rule.
    assert!(check_transport(UpstreamTransport::Ssz, false).is_err());
    assert!(check_transport(UpstreamTransport::Json, false).is_ok());
}

#[test]
fn bad_values_are_refused_when_the_flags_are_read() {
    let cli = || crate::flags::without_env(ProxyCli::command());
    let parse_err = |extra: &[&str]| {
        let argv = [&["proxy"][..], &UPSTREAM[..], extra].concat();
        cli().try_get_matches_from(argv).unwrap_err().to_string()
    };
    assert!(parse_err(&["--verify", "some"]).contains("[possible values: off, sample, all]"));
    for share in ["0", "101", "ten"] {
        let err = parse_err(&["--verify-kzg-share", share]);
        assert!(err.contains("--verify-kzg-share <PERCENT>"), "{err}");
    }
    assert!(parse_err(&["--store", "mysql:x"]).contains("mysql:x"));
    assert!(parse_err(&["--label", "novalue"]).contains("is not KEY=VALUE"));
}

/// Every variable of `sszgate proxy` with a value that is not its default.
const ENV: [(&str, &str); 29] = [
    ("SSZGATE_UPSTREAM", "http://10.0.0.2:8551"),
    ("SSZGATE_LISTEN", "127.0.0.1:18551"),
    ("SSZGATE_WORKER_THREADS", "3"),
    ("SSZGATE_UPSTREAM_TIMEOUT", "2s"),
    ("SSZGATE_HEADER_TIMEOUT", "3s"),
    ("SSZGATE_BODY_TIMEOUT", "4s"),
    ("SSZGATE_MAX_IN_FLIGHT", "5"),
    ("SSZGATE_MAX_BODY", "6000"),
    ("SSZGATE_MAX_HEADER_BYTES", "7000"),
    ("SSZGATE_MAX_ANSWER", "8000"),
    ("SSZGATE_UPSTREAM_TRANSPORT", "ssz"),
    ("SSZGATE_UPSTREAM_HTTP2", "true"),
    (
        "SSZGATE_JWT_SECRET",
        "0x1111111111111111111111111111111111111111111111111111111111111111",
    ),
    ("SSZGATE_STORE", "jsonl:env.jsonl,none"),
    ("SSZGATE_JSONL_BODY_BYTES", "9"),
    ("SSZGATE_LABEL", "cl=teku,node=env"),
    ("SSZGATE_QUEUE", "10"),
    ("SSZGATE_QUEUE_BYTES", "11000"),
    ("SSZGATE_SPOOL_DIR", "env-spool"),
    ("SSZGATE_SPOOL_MAX_BYTES", "12000"),
    ("SSZGATE_NODE", "env-node"),
    ("SSZGATE_NETWORK", "hoodi"),
    ("SSZGATE_AUTH", "verify"),
    ("SSZGATE_VERIFY", "off"),
    ("SSZGATE_VERIFY_KZG_SHARE", "25"),
    ("SSZGATE_VERIFY_ENFORCE", "true"),
    ("SSZGATE_NO_SPLICE", "true"),
    ("SSZGATE_METRICS", "127.0.0.1:19551"),
    ("SSZGATE_CONTROL_TOKEN", "env-control"),
];

#[test]
fn every_flag_has_a_variable_and_each_is_tested_here() {
    let cmd = ProxyCli::command();
    let mut named = BTreeSet::new();
    for arg in cmd.get_arguments().filter(|a| a.get_long().is_some()) {
        let long = arg.get_long().unwrap();
        if matches!(long, "help" | "version") {
            continue;
        }
        let env = arg
            .get_env()
            .unwrap_or_else(|| panic!("--{long} has no variable"));
        named.insert(env.to_str().unwrap().to_string());
    }
    let tested: BTreeSet<String> = ENV.iter().map(|(name, _)| name.to_string()).collect();
    assert_eq!(named, tested);
}

#[test]
fn each_variable_sets_its_flag() {
    // The variables are set in a child run of this test alone: a variable set in this
    // process would be seen by every test running beside it.
    if std::env::var_os("SSZGATE_TEST_CHILD").is_some() {
        return each_variable_sets_its_flag_in_the_child();
    }
    let name = "proxy::settings::tests::each_variable_sets_its_flag";
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads=1"])
        .env("SSZGATE_TEST_CHILD", "1")
        .envs(ENV)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the child ran no test: {stdout}"
    );
}

fn each_variable_sets_its_flag_in_the_child() {
    let args = ProxyCli::try_parse_from(["proxy"]).unwrap().args;
    assert_eq!(args.verify_kzg_share, 25);
    let secret = crate::flags::read_jwt_secret(args.jwt.jwt_secret.as_deref().unwrap());
    let settings = resolve(&args, Some(&secret.unwrap())).unwrap();
    assert_eq!(settings.upstream.url, "http://10.0.0.2:8551");
    assert_eq!(settings.listen, "127.0.0.1:18551".parse().unwrap());
    assert_eq!(settings.metrics, "127.0.0.1:19551".parse().unwrap());
    assert_eq!(settings.control_token.as_deref(), Some("env-control"));
    assert_eq!(settings.worker_threads, NonZeroUsize::new(3));
    assert_eq!(settings.upstream.timeout, Duration::from_secs(2));
    assert!(settings.upstream.http2);
    assert_eq!(
        settings.transport,
        TransportPlan::Fixed(UpstreamTransport::Ssz)
    );
    let limits = settings.limits;
    assert_eq!(limits.header_timeout, Duration::from_secs(3));
    assert_eq!(limits.body_timeout, Duration::from_secs(4));
    assert_eq!(limits.max_in_flight, 5);
    assert_eq!(settings.max_body, 6000);
    assert_eq!(limits.max_header_bytes, 7000);
    assert_eq!(limits.max_answer_bytes, 8000);
    assert!(settings.verify_jwt && settings.verify_enforce);
    assert!(!settings.splice, "SSZGATE_NO_SPLICE");
    assert_eq!(settings.cl_label.as_deref(), Some("teku"));
    let recording = settings.recording;
    let stores = [SinkSpec::Jsonl("env.jsonl".into()), SinkSpec::None];
    assert_eq!(recording.stores, stores);
    assert_eq!(recording.jsonl_body_bytes, 9);
    assert_eq!(recording.spool_dir, PathBuf::from("env-spool"));
    assert_eq!(recording.spool_max_bytes, 12000);
    assert_eq!(recording.node.as_deref(), Some("env-node"));
    assert_eq!(recording.network.as_deref(), Some("hoodi"));
    let recorder = recording.recorder;
    assert_eq!(recorder.labels.len(), 2);
    assert_eq!(recorder.capacity, 10);
    assert_eq!(recorder.queue_bytes, 11000);
    assert_eq!(recorder.verify, sszgate_verify::Mode::Off);
}

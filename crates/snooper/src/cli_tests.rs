//! The parser on the argv the Kurtosis launcher passes, with `extra_args`, the environment,
//! and what it refuses.

use super::*;

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// Proxy flags as the binary's parser knows them: two with a value, one switch.
fn proxy_flag(name: &str) -> Option<bool> {
    match name {
        "store" | "verify" | "upstream-transport" => Some(true),
        "upstream-http2" => Some(false),
        _ => None,
    }
}

fn parse_with(line: &str, env: &[(&str, &str)]) -> Result<SnooperCli, CliError> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let read = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    parse(&args(line), &read, &proxy_flag)
}

fn ok(line: &str) -> SnooperCli {
    parse_with(line, &[]).unwrap()
}

#[test]
fn the_kurtosis_launchers_argv_runs_on_its_port_with_rpc_snoopers_defaults() {
    let cli = ok("-b=0.0.0.0 -p=8561 http://172.16.0.10:8551");
    assert_eq!(cli.action, Action::Run);
    assert_eq!(cli.target.as_deref(), Some("http://172.16.0.10:8551"));
    assert_eq!(cli.listen, "0.0.0.0:8561".parse().unwrap());
    assert_eq!(
        cli.api,
        ApiSettings {
            on_proxy_port: true,
            listen: None,
            auth: vec![],
        }
    );
    assert_eq!(cli.metrics, None);
    assert!(cli.log.color && cli.log.truncate && !cli.log.hide_bodies && !cli.log.verbose);
    assert!(cli.proxy_args.is_empty());
}

#[test]
fn defaults_without_flags_are_rpc_snoopers() {
    let cli = ok("http://el:8551");
    assert_eq!(cli.listen, "127.0.0.1:3000".parse().unwrap());
}

#[test]
fn extra_args_combinations_after_the_target_and_before_it() {
    let cli = ok(
        "-b=0.0.0.0 -p=8561 http://el:8551 --no-color --hide-bodies --api-port 9000 --api-auth alice:s3cret,bob:pw --metrics-port=9090 -v",
    );
    assert!(!cli.log.color && cli.log.hide_bodies && cli.log.verbose);
    assert_eq!(cli.api.listen, Some("0.0.0.0:9000".parse().unwrap()));
    assert_eq!(
        cli.api.auth,
        vec![
            ("alice".to_string(), "s3cret".to_string()),
            ("bob".to_string(), "pw".to_string())
        ]
    );
    assert_eq!(cli.metrics, Some("127.0.0.1:9090".parse().unwrap()));
    let cli = ok("--truncate=false --no-api --api-bind 127.0.0.1 --api-port=1 -p8000 http://el");
    assert!(!cli.log.truncate && !cli.api.on_proxy_port);
    assert_eq!(cli.api.listen, Some("127.0.0.1:1".parse().unwrap()));
    assert_eq!(cli.listen.port(), 8000);
    let cli = ok("-b 10.0.0.1 -p 1 -- http://el");
    assert_eq!(cli.listen, "10.0.0.1:1".parse().unwrap());
}

#[test]
fn sszgate_proxy_flags_mixed_in_are_handed_on_with_their_values() {
    let cli = ok(
        "--store none -p=1 --upstream-http2 http://el --verify=all --log-skip eth_chainId,engine_exchange*",
    );
    assert_eq!(cli.target.as_deref(), Some("http://el"));
    assert_eq!(
        cli.proxy_args,
        args("--store none --upstream-http2 --verify=all")
    );
    assert_eq!(cli.log.skip, vec!["eth_chainId", "engine_exchange*"]);
}

#[test]
fn the_environment_gives_defaults_and_flags_win() {
    let env = [
        ("SNOOPER_PORT", "4000"),
        ("SNOOPER_TARGET", "http://from-env:8551"),
        ("SNOOPER_NO_COLOR", "true"),
        ("SNOOPER_HIDE_BODIES", "1"),
        ("SNOOPER_API_AUTH", "u:p"),
        ("SNOOPER_BIND_ADDRESS", "0.0.0.0"),
    ];
    let cli = parse_with("", &env).unwrap();
    assert_eq!(cli.target.as_deref(), Some("http://from-env:8551"));
    assert_eq!(cli.listen, "0.0.0.0:4000".parse().unwrap());
    assert!(!cli.log.color && cli.log.hide_bodies);
    assert_eq!(cli.api.auth, vec![("u".into(), "p".into())]);
    let cli = parse_with("-p 5000 --no-color=false http://arg", &env).unwrap();
    assert_eq!(cli.listen.port(), 5000);
    assert!(cli.log.color);
    assert_eq!(cli.target.as_deref(), Some("http://arg"));
    // An unparsable variable is ignored, as rpc-snooper ignores it.
    let cli = parse_with(
        "http://el",
        &[("SNOOPER_PORT", "x"), ("SNOOPER_NO_COLOR", "yes")],
    )
    .unwrap();
    assert_eq!(cli.listen.port(), DEFAULT_PORT);
    assert!(cli.log.color);
}

#[test]
fn help_and_version_are_actions() {
    assert_eq!(ok("-h").action, Action::Help);
    assert_eq!(ok("--version").action, Action::Version);
    assert_eq!(ok("-vV").action, Action::Version);
    assert!(help().contains("--bind-address") && help().contains("SNOOPER_API_AUTH"));
}

#[test]
fn xatu_flags_resolve_with_repeats_and_environment_lists() {
    use crate::xatu::sink::Output;
    let base = "--xatu-enabled --xatu-name n --xatu-network-name testnet --xatu-network-id 7";
    let cli = ok(&format!(
        "{base} --xatu-output xatu:h:8080 --xatu-output=stdout --xatu-label b=2,a=1 \
         --xatu-header authorization=Basic%20x --xatu-batch-timeout 200ms http://el"
    ));
    let xatu = cli.xatu.expect("xatu settings");
    assert_eq!(
        xatu.outputs,
        [Output::Xatu("h:8080".into()), Output::Stdout]
    );
    assert_eq!(
        xatu.labels,
        [("a".into(), "1".into()), ("b".into(), "2".into())]
    );
    assert_eq!(xatu.headers, [("authorization".into(), "Basic%20x".into())]);
    assert_eq!(
        xatu.bounds.batch_timeout,
        std::time::Duration::from_millis(200)
    );
    assert_eq!(ok("http://el").xatu, None);
    // The environment's list is replaced by the flags', not added to.
    let env = [
        ("SNOOPER_XATU_ENABLED", "true"),
        ("SNOOPER_XATU_NAME", "n"),
        ("SNOOPER_XATU_NETWORK_NAME", "t"),
        ("SNOOPER_XATU_NETWORK_ID", "1"),
        ("SNOOPER_XATU_OUTPUTS", "stdout,xatu:e:1"),
    ];
    let from_env = parse_with("http://el", &env).unwrap().xatu.unwrap();
    assert_eq!(
        from_env.outputs,
        [Output::Stdout, Output::Xatu("e:1".into())]
    );
    let flags_win = parse_with("--xatu-output xatu:f:2 http://el", &env).unwrap();
    assert_eq!(
        flags_win.xatu.unwrap().outputs,
        [Output::Xatu("f:2".into())]
    );
    // --xatu-tls (flag or SNOOPER_XATU_TLS) puts the xatu outputs on TLS, not http: ones.
    let tls = parse_with(
        "--xatu-tls --xatu-output xatu:g:443,http:https://h/x http://el",
        &env,
    );
    assert_eq!(
        tls.unwrap().xatu.unwrap().outputs,
        [
            Output::XatuTls("g:443".into()),
            Output::Http("https://h/x".into())
        ]
    );
    let err = parse_with("--xatu-network-id=0 http://el", &env).unwrap_err();
    assert!(err.to_string().contains("--xatu-network-id"), "{err}");
}

#[test]
fn bad_input_is_an_error_naming_the_flag() {
    let err = |line: &str| parse_with(line, &[]).unwrap_err().to_string();
    assert!(err("-p=99999 http://el").contains("--port"));
    assert!(err("-p=abc http://el").contains("\"abc\""));
    assert!(err("-b=localhost http://el").contains("--bind-address"));
    assert!(err("--no-color=maybe http://el").contains("--no-color"));
    assert!(err("http://el --frobnicate").contains("unknown flag: --frobnicate"));
    assert!(err("http://el -x").contains("-x"));
    assert!(err("http://el --port").contains("needs an argument: --port"));
    assert!(err("http://el --store").contains("needs an argument: --store"));
    assert!(err("http://el --listen 1.2.3.4:5").contains("--listen is set by"));
    assert!(err("http://el http://other").contains("\"http://other\""));
}

//! rpc-snooper's command line (`snooper [flags] TARGET_URL`, its `SNOOPER_*` environment),
//! parsed by one pure function, [`parse`], into [`SnooperCli`]: what the front needs (API,
//! log) and the arguments of sszgate's own proxy. Flags follow rpc-snooper's parser (pflag):
//! `--name=value`, `--name value`, `-x=value`, `-x value`, `-xvalue`, bare booleans,
//! `--bool=false`, `--` ends the flags; the environment gives defaults, flags win, an
//! unparsable environment value is ignored (as rpc-snooper does), an unparsable flag is an
//! error naming it. sszgate's proxy flags may be mixed in (`--store none`, say): they are
//! handed on as they are, for the proxy's parser to check.
//!
//! Not here: running anything (the binary's `snooper` command), the flags' effects (`api`,
//! `log`).

use std::net::{IpAddr, SocketAddr};

/// rpc-snooper's own port default (`-p`).
pub const DEFAULT_PORT: u16 = 3000;

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run the proxy.
    Run,
    /// Print the flags and exit (`-h`).
    Help,
    /// Log the version line and exit (`-V`).
    Version,
}

/// The management API's placement and credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiSettings {
    /// `/_snooper/*` on the proxy port (false with `--no-api`).
    pub on_proxy_port: bool,
    /// The separate API server (`--api-bind`:`--api-port`), when a port is given.
    pub listen: Option<SocketAddr>,
    /// `--api-auth` credentials (user, password), asked by the separate API server.
    pub auth: Vec<(String, String)>,
}

/// How calls are logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSettings {
    /// ANSI colours (off with `--no-color`).
    pub color: bool,
    /// 0x-strings over 256 characters shortened (`--truncate`, on by default).
    pub truncate: bool,
    /// Bodies left out (`--hide-bodies`).
    pub hide_bodies: bool,
    /// JSON-RPC methods whose calls are not logged (`--log-skip`; names, or prefixes ending
    /// in `*`).
    pub skip: Vec<String>,
    /// Debug level (`-v`).
    pub verbose: bool,
}

/// rpc-snooper's command line, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnooperCli {
    /// Run, help or version.
    pub action: Action,
    /// The target URL (the positional argument, or `SNOOPER_TARGET`).
    pub target: Option<String>,
    /// The proxy's address (`-b`:`-p`).
    pub listen: SocketAddr,
    /// The management API.
    pub api: ApiSettings,
    /// Prometheus `/metrics` (`--metrics-bind`:`--metrics-port`), when a port is given.
    pub metrics: Option<SocketAddr>,
    /// `--jwt-secret`: hex or a file path.
    pub jwt_secret: Option<String>,
    /// The log.
    pub log: LogSettings,
    /// sszgate proxy flags given among rpc-snooper's, in order, for the proxy's parser.
    pub proxy_args: Vec<String>,
    /// The xatu output, with `--xatu-enabled`.
    pub xatu: Option<crate::xatu::XatuSettings>,
}

/// A command line that cannot run, naming the flag or value at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CliError {
    /// A flag rpc-snooper has that sszgate does not implement.
    #[error("{flag}: {why}")]
    Refused {
        /// The flag as given.
        flag: String,
        /// Why it is refused.
        why: String,
    },
    /// A value that does not parse.
    #[error("invalid value {value:?} for {flag}: {why}")]
    BadValue {
        /// The flag (or variable).
        flag: String,
        /// The value given.
        value: String,
        /// What was expected.
        why: String,
    },
    /// A flag that needs a value came last.
    #[error("flag needs an argument: {0}")]
    NoValue(String),
    /// Neither rpc-snooper's flag nor one of sszgate's proxy.
    #[error(
        "unknown flag: {0} (neither an rpc-snooper flag nor an `sszgate proxy` flag; see --help)"
    )]
    Unknown(String),
    /// A proxy flag the rpc-snooper flags already decide.
    #[error("{flag} is set by rpc-snooper's flags here ({instead}); use those")]
    Reserved {
        /// The proxy flag.
        flag: String,
        /// The rpc-snooper flags that set it.
        instead: &'static str,
    },
    /// A second positional argument.
    #[error("unexpected argument {0:?}: the only positional argument is the target URL")]
    ExtraArgument(String),
}

/// Whether a flag takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    Value,
    /// A repeatable value (pflag's string slice): each occurrence comma-split and added,
    /// the first replacing the environment's list.
    List,
}

/// One rpc-snooper flag: long name, shorthand, kind, environment variable.
struct Flag {
    long: &'static str,
    short: Option<char>,
    kind: Kind,
    env: &'static str,
    help: &'static str,
}

const fn flag(
    long: &'static str,
    short: Option<char>,
    kind: Kind,
    env: &'static str,
    help: &'static str,
) -> Flag {
    Flag {
        long,
        short,
        kind,
        env,
        help,
    }
}

/// rpc-snooper's flags (its `cmd/snooper/main.go`), and `--log-skip`.
const FLAGS: &[Flag] = &[
    flag(
        "verbose",
        Some('v'),
        Kind::Bool,
        "SNOOPER_VERBOSE",
        "Debug log level",
    ),
    flag(
        "version",
        Some('V'),
        Kind::Bool,
        "SNOOPER_VERSION",
        "Print version information",
    ),
    flag(
        "help",
        Some('h'),
        Kind::Bool,
        "SNOOPER_HELP",
        "Print these flags",
    ),
    flag(
        "bind-address",
        Some('b'),
        Kind::Value,
        "SNOOPER_BIND_ADDRESS",
        "Address to listen on (default 127.0.0.1)",
    ),
    flag(
        "port",
        Some('p'),
        Kind::Value,
        "SNOOPER_PORT",
        "Port to listen on (default 3000)",
    ),
    flag(
        "no-color",
        None,
        Kind::Bool,
        "SNOOPER_NO_COLOR",
        "No terminal colours in the log",
    ),
    flag(
        "truncate",
        None,
        Kind::Bool,
        "SNOOPER_TRUNCATE",
        "Shorten long hex values in the log (default true)",
    ),
    flag(
        "no-api",
        None,
        Kind::Bool,
        "SNOOPER_NO_API",
        "No /_snooper/* management API on the proxy port",
    ),
    flag(
        "api-port",
        None,
        Kind::Value,
        "SNOOPER_API_PORT",
        "Separate port for /_snooper/* (default off)",
    ),
    flag(
        "api-bind",
        None,
        Kind::Value,
        "SNOOPER_API_BIND",
        "Address for --api-port (default 0.0.0.0)",
    ),
    flag(
        "api-auth",
        None,
        Kind::Value,
        "SNOOPER_API_AUTH",
        "Basic auth for --api-port (user:pass,user2:pass2)",
    ),
    flag(
        "metrics-port",
        None,
        Kind::Value,
        "SNOOPER_METRICS_PORT",
        "Port for Prometheus /metrics (sszgate's metrics; default off)",
    ),
    flag(
        "metrics-bind",
        None,
        Kind::Value,
        "SNOOPER_METRICS_BIND",
        "Address for --metrics-port (default 127.0.0.1)",
    ),
    flag(
        "jwt-secret",
        None,
        Kind::Value,
        "SNOOPER_JWT_SECRET",
        "Engine API JWT secret (hex or file): sszgate asks the EL its client version with it",
    ),
    flag(
        "hide-bodies",
        None,
        Kind::Bool,
        "SNOOPER_HIDE_BODIES",
        "No request/response bodies in the log",
    ),
    flag(
        "log-skip",
        None,
        Kind::Value,
        "SNOOPER_LOG_SKIP",
        "JSON-RPC methods not logged (comma separated; a trailing * matches a prefix)",
    ),
    flag(
        "xatu-enabled",
        None,
        Kind::Bool,
        "SNOOPER_XATU_ENABLED",
        "Publish Engine API events to xatu",
    ),
    flag(
        "xatu-name",
        None,
        Kind::Value,
        "SNOOPER_XATU_NAME",
        "Instance name in xatu events (required with --xatu-enabled)",
    ),
    flag(
        "xatu-network-name",
        None,
        Kind::Value,
        "SNOOPER_XATU_NETWORK_NAME",
        "Network name in xatu events (required)",
    ),
    flag(
        "xatu-network-id",
        None,
        Kind::Value,
        "SNOOPER_XATU_NETWORK_ID",
        "Network id in xatu events (required, non-zero)",
    ),
    flag(
        "xatu-output",
        None,
        Kind::List,
        "SNOOPER_XATU_OUTPUTS",
        "xatu:HOST:PORT, http:URL (http or https) or stdout (repeatable)",
    ),
    flag(
        "xatu-label",
        None,
        Kind::List,
        "SNOOPER_XATU_LABELS",
        "key=value label on xatu events (repeatable)",
    ),
    flag(
        "xatu-tls",
        None,
        Kind::Bool,
        "SNOOPER_XATU_TLS",
        "TLS to the xatu server (system roots, or SSL_CERT_FILE)",
    ),
    flag(
        "xatu-header",
        None,
        Kind::List,
        "SNOOPER_XATU_HEADERS",
        "name=value header / gRPC metadata (repeatable)",
    ),
    flag(
        "xatu-max-queue-size",
        None,
        Kind::Value,
        "SNOOPER_XATU_MAX_QUEUE_SIZE",
        "Events queued before dropping (default 51200)",
    ),
    flag(
        "xatu-max-export-batch-size",
        None,
        Kind::Value,
        "SNOOPER_XATU_MAX_EXPORT_BATCH_SIZE",
        "Events per export (default 512)",
    ),
    flag(
        "xatu-workers",
        None,
        Kind::Value,
        "SNOOPER_XATU_WORKERS",
        "Exports in flight (default 5)",
    ),
    flag(
        "xatu-batch-timeout",
        None,
        Kind::Value,
        "SNOOPER_XATU_BATCH_TIMEOUT",
        "Wait for a partial batch (default 5s)",
    ),
    flag(
        "xatu-export-timeout",
        None,
        Kind::Value,
        "SNOOPER_XATU_EXPORT_TIMEOUT",
        "Limit per export (default 30s)",
    ),
    flag(
        "xatu-keepalive-enabled",
        None,
        Kind::Bool,
        "SNOOPER_XATU_KEEPALIVE_ENABLED",
        "gRPC keepalive (always on, as in rpc-snooper)",
    ),
    flag(
        "xatu-keepalive-time",
        None,
        Kind::Value,
        "SNOOPER_XATU_KEEPALIVE_TIME",
        "gRPC keepalive ping interval (default 150s)",
    ),
    flag(
        "xatu-keepalive-timeout",
        None,
        Kind::Value,
        "SNOOPER_XATU_KEEPALIVE_TIMEOUT",
        "gRPC keepalive answer limit (default 30s)",
    ),
];

/// rpc-snooper's flags whose value is a number (a port).
const NUMBERS: &[&str] = &["port", "api-port", "metrics-port"];

/// sszgate proxy flags the rpc-snooper flags decide, and which.
const RESERVED: &[(&str, &str)] = &[
    ("upstream", "the target URL"),
    ("listen", "-b/--bind-address and -p/--port"),
    ("metrics", "--metrics-bind and --metrics-port"),
];

/// The help text: rpc-snooper's flags as sszgate takes them.
pub fn help() -> String {
    let mut out = String::from(
        "Usage: snooper [flags] TARGET_URL   (or sszgate snooper …; TARGET_URL also from SNOOPER_TARGET)\n\
         rpc-snooper's command line over sszgate's relay; `sszgate proxy` flags may be mixed in.\n\n",
    );
    for f in FLAGS.iter().filter(|f| !f.help.is_empty()) {
        let short = f.short.map_or("    ".to_string(), |c| format!("-{c}, "));
        let value = if f.kind == Kind::Bool { "" } else { " VALUE" };
        let name = format!("{short}--{}{value}", f.long);
        out.push_str(&format!("  {name:<28} {} (env: {})\n", f.help, f.env));
    }
    out
}

/// The values seen so far, by long name: the environment's, then the flags'.
#[derive(Default)]
struct Values {
    given: Vec<(&'static str, String)>,
}

impl Values {
    fn set(&mut self, long: &'static str, value: String) {
        self.given.retain(|(k, _)| *k != long);
        self.given.push((long, value));
    }

    fn get(&self, long: &str) -> Option<&str> {
        self.given
            .iter()
            .find(|(k, _)| *k == long)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses rpc-snooper's command line. `args` is the argv without the program name; `env`
/// reads an environment variable; `proxy_flag` says whether a long name is an `sszgate
/// proxy` flag (`Some(true)`: it takes a value, `Some(false)`: a switch; `None`: not one).
pub fn parse(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    proxy_flag: &dyn Fn(&str) -> Option<bool>,
) -> Result<SnooperCli, CliError> {
    let mut values = Values::default();
    for f in FLAGS.iter().filter(|f| !f.env.is_empty()) {
        if let Some(v) = env(f.env).filter(|v| !v.is_empty()) {
            values.set(f.long, v);
        }
    }
    // An environment value that does not parse is ignored, as rpc-snooper ignores it.
    for f in FLAGS {
        let parses = |v: &str| match f.kind {
            Kind::Bool => parse_bool(v).is_some(),
            _ if NUMBERS.contains(&f.long) => v.parse::<u16>().is_ok(),
            _ => true,
        };
        if values.get(f.long).is_some_and(|v| !parses(v)) {
            values.given.retain(|(k, _)| *k != f.long);
        }
    }
    let mut positional = Vec::new();
    let mut proxy_args = Vec::new();
    let mut flag_values = Values::default();
    read_args(
        args,
        &mut flag_values,
        &mut positional,
        &mut proxy_args,
        proxy_flag,
    )?;
    for (k, v) in flag_values.given {
        values.set(k, v);
    }
    let target = match positional.as_slice() {
        [] => env("SNOOPER_TARGET").filter(|t| !t.is_empty()),
        [target] => Some(target.clone()),
        [_, extra, ..] => return Err(CliError::ExtraArgument(extra.clone())),
    };
    resolve(&values, target, proxy_args)
}

/// Reads the argv: rpc-snooper's flags into `values`, the positional arguments, and the
/// proxy's flags (with their values) into `proxy_args`.
fn read_args(
    args: &[String],
    values: &mut Values,
    positional: &mut Vec<String>,
    proxy_args: &mut Vec<String>,
    proxy_flag: &dyn Fn(&str) -> Option<bool>,
) -> Result<(), CliError> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            positional.extend(rest.by_ref().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            match FLAGS.iter().find(|f| f.long == name) {
                Some(f) => take(f, arg, inline, &mut rest, values)?,
                None => pass_on(name, arg, inline, &mut rest, proxy_args, proxy_flag)?,
            }
        } else if let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            read_shorts(shorts, arg, &mut rest, values)?;
        } else {
            positional.push(arg.clone());
        }
    }
    Ok(())
}

/// One rpc-snooper long flag and its value.
fn take<'a>(
    f: &Flag,
    arg: &str,
    inline: Option<String>,
    rest: &mut impl Iterator<Item = &'a String>,
    values: &mut Values,
) -> Result<(), CliError> {
    let kind = f.kind;
    let value = match (kind, inline) {
        (_, Some(v)) => v,
        (Kind::Bool, None) => "true".into(),
        (_, None) => rest
            .next()
            .cloned()
            .ok_or_else(|| CliError::NoValue(arg.to_string()))?,
    };
    if kind == Kind::Bool && parse_bool(&value).is_none() {
        return Err(bad(&format!("--{}", f.long), &value, "a boolean"));
    }
    match (kind, values.get(f.long)) {
        (Kind::List, Some(before)) => {
            let joined = format!("{before},{value}");
            values.set(f.long, joined);
        }
        _ => values.set(f.long, value),
    }
    Ok(())
}

/// Shorthand flags: `-v`, `-vV` (booleans), `-p=8561`, `-p 8561`, `-p8561`.
fn read_shorts<'a>(
    shorts: &str,
    arg: &str,
    rest: &mut impl Iterator<Item = &'a String>,
    values: &mut Values,
) -> Result<(), CliError> {
    for (i, c) in shorts.char_indices() {
        let f = FLAGS
            .iter()
            .find(|f| f.short == Some(c))
            .ok_or_else(|| CliError::Unknown(format!("-{c} (in {arg})")))?;
        let after = &shorts[i + c.len_utf8()..];
        if f.kind == Kind::Bool {
            match after.strip_prefix('=') {
                Some(v) => return take(f, arg, Some(v.to_string()), rest, values),
                None => take(f, arg, None, rest, values)?,
            }
            continue;
        }
        let inline = match after {
            "" => None,
            v => Some(v.strip_prefix('=').unwrap_or(v).to_string()),
        };
        return take(f, arg, inline, rest, values);
    }
    Ok(())
}

/// An sszgate proxy flag: handed on with its value; anything else refused by name.
fn pass_on<'a>(
    name: &str,
    arg: &str,
    inline: Option<String>,
    rest: &mut impl Iterator<Item = &'a String>,
    proxy_args: &mut Vec<String>,
    proxy_flag: &dyn Fn(&str) -> Option<bool>,
) -> Result<(), CliError> {
    if let Some((_, instead)) = RESERVED.iter().find(|(n, _)| *n == name) {
        return Err(CliError::Reserved {
            flag: format!("--{name}"),
            instead,
        });
    }
    let takes_value = proxy_flag(name).ok_or_else(|| CliError::Unknown(format!("--{name}")))?;
    proxy_args.push(arg.to_string());
    if takes_value && inline.is_none() {
        let value = rest
            .next()
            .ok_or_else(|| CliError::NoValue(arg.to_string()))?;
        proxy_args.push(value.clone());
    }
    Ok(())
}

/// The settings from the values gathered.
fn resolve(
    values: &Values,
    target: Option<String>,
    proxy_args: Vec<String>,
) -> Result<SnooperCli, CliError> {
    let flag = |long: &str| values.get(long).and_then(parse_bool).unwrap_or(false);
    let action = if flag("help") {
        Action::Help
    } else if flag("version") {
        Action::Version
    } else {
        Action::Run
    };
    let port = |long: &str, default: u16| -> Result<u16, CliError> {
        match values.get(long) {
            None => Ok(default),
            Some(v) => v
                .parse::<u16>()
                .map_err(|_| bad(&format!("--{long}"), v, "a port number (0-65535)")),
        }
    };
    let addr = |bind_flag: &str, default_bind: &str, port: u16| {
        let bind = values.get(bind_flag).unwrap_or(default_bind);
        socket(bind_flag, bind, port)
    };
    let listen = addr("bind-address", "127.0.0.1", port("port", DEFAULT_PORT)?)?;
    let api_port = port("api-port", 0)?;
    let metrics_port = port("metrics-port", 0)?;
    let api = ApiSettings {
        on_proxy_port: !flag("no-api"),
        listen: (api_port > 0)
            .then(|| addr("api-bind", "0.0.0.0", api_port))
            .transpose()?,
        auth: credentials(values.get("api-auth").unwrap_or("")),
    };
    let log = LogSettings {
        color: !flag("no-color"),
        truncate: values.get("truncate").and_then(parse_bool).unwrap_or(true),
        hide_bodies: flag("hide-bodies"),
        skip: list(values.get("log-skip").unwrap_or("")),
        verbose: flag("verbose"),
    };
    Ok(SnooperCli {
        action,
        target,
        listen,
        api,
        metrics: (metrics_port > 0)
            .then(|| addr("metrics-bind", "127.0.0.1", metrics_port))
            .transpose()?,
        jwt_secret: values.get("jwt-secret").map(str::to_string),
        log,
        proxy_args,
        xatu: crate::xatu::settings::resolve(&|long| values.get(long).map(str::to_string))?,
    })
}

/// `bind`:`port` as a socket address; `bind` must be an IP address.
fn socket(long: &str, bind: &str, port: u16) -> Result<SocketAddr, CliError> {
    let ip = bind
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .map_err(|_| bad(&format!("--{long}"), bind, "an IP address"))?;
    Ok(SocketAddr::new(ip, port))
}

/// `user:pass,user2:pass2`; an entry without a colon is skipped (as rpc-snooper does).
fn credentials(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|c| c.split_once(':'))
        .map(|(u, p)| (u.to_string(), p.to_string()))
        .collect()
}

/// A comma-separated list, blanks dropped.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn bad(flag: &str, value: &str, why: &str) -> CliError {
    CliError::BadValue {
        flag: flag.into(),
        value: value.into(),
        why: why.into(),
    }
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;

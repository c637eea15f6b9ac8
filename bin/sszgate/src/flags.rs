//! Flags that more than one subcommand takes, each defined here once: its name, environment
//! variable, value parser and help. A subcommand flattens the struct (`#[command(flatten)]`)
//! or, where its default differs, uses the constant and the parser from here with help of
//! its own. Flags that only one subcommand takes stay with that subcommand.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};
use clap::{
    Arg, Args, Command, ValueEnum,
    builder::{PossibleValue, PossibleValuesParser, TypedValueParser},
};
use sszgate_engine::Fork;
use sszgate_gateway::JwtSecret;
use sszgate_record::SinkSpec;

/// The environment variable of every `--fork`.
pub(crate) const FORK_ENV: &str = "SSZGATE_FORK";

/// The environment variable of every `--store`.
pub(crate) const STORE_ENV: &str = "SSZGATE_STORE";

/// The value parser of every `--fork`: a fork name, in any case; an unknown name is refused
/// with the list of names, and `--help` lists them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ForkParser;

impl TypedValueParser for ForkParser {
    type Value = Fork;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> clap::error::Result<Fork> {
        // Fork names are matched as HTTP header values are: case-insensitive, blanks trimmed.
        let normalized = value.to_string_lossy().trim().to_ascii_lowercase();
        let names = Fork::ALL.map(Fork::name);
        let name = PossibleValuesParser::new(names).parse_ref(cmd, arg, OsStr::new(&normalized))?;
        Ok(name.parse().expect("a name from Fork::ALL parses"))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            Fork::ALL.into_iter().map(|f| PossibleValue::new(f.name())),
        ))
    }
}

/// The value parser of every `--store`: a sink spec, checked when the flags are read.
pub(crate) fn parse_store(text: &str) -> Result<SinkSpec, String> {
    text.parse()
        .map_err(|e: sszgate_record::Error| e.to_string())
}

/// A sink spec as the user writes it (a ClickHouse address without its password).
pub(crate) fn store_text(spec: &SinkSpec) -> String {
    match spec {
        SinkSpec::Sqlite(path) => format!("sqlite:{path}"),
        SinkSpec::Jsonl(path) => format!("jsonl:{path}"),
        SinkSpec::ClickHouse(url) => format!("clickhouse:{url}"),
        SinkSpec::None => "none".to_string(),
    }
}

/// `cmd` reading no environment variable: for a parse that must depend on its arguments
/// alone (the demo's drive, the tests).
pub(crate) fn without_env(cmd: Command) -> Command {
    cmd.mut_args(|arg| arg.env(None::<&str>))
}

/// `--fork` of the commands that read one message: the fork it belongs to.
#[derive(Debug, Args)]
pub(crate) struct MessageForkArg {
    /// The fork (Eth-Execution-Version); default: the newest fork the method serves, or osaka
    /// for a message name.
    #[arg(short, long, env = FORK_ENV, value_parser = ForkParser)]
    pub(crate) fork: Option<Fork>,
}

impl MessageForkArg {
    /// The fork given, else the newest `message` serves (osaka for a message name).
    pub(crate) fn or_latest_for(&self, message: &str) -> Result<Fork> {
        Ok(match self.fork {
            Some(fork) => fork,
            None if message.starts_with("engine_") => {
                sszgate_engine::method::by_name(message)?.latest_fork()
            }
            None => Fork::Osaka,
        })
    }
}

/// `--jwt-secret`: the secret shared by CL and EL.
#[derive(Debug, Args)]
pub(crate) struct JwtSecretArg {
    /// The Engine API JWT secret: a file holding 64 hex digits, or the hex itself. The proxy
    /// needs it to check tokens and to bridge, and asks the EL its client version with it;
    /// the driver signs its calls with it.
    #[arg(long, env = "SSZGATE_JWT_SECRET", hide_env_values = true)]
    pub(crate) jwt_secret: Option<String>,
}

/// Reads a `--jwt-secret` value: the file it names, or the hex it is.
pub(crate) fn read_jwt_secret(value: &str) -> Result<JwtSecret> {
    let is_file = Path::new(value).exists();
    let text = if is_file {
        // 64 hex digits, perhaps a 0x and a newline: anything past 1 KiB is not a secret.
        let bytes =
            crate::input::read_file(Path::new(value), 1024, "a JWT secret is 64 hex digits")
                .with_context(|| format!("reading the JWT secret file {value}"))?;
        String::from_utf8(bytes)
            .with_context(|| format!("the JWT secret file {value} is not text"))?
    } else {
        value.to_string()
    };
    // The hex itself is a secret: it is never echoed in an error.
    let shown = if is_file { value } else { "(hex)" };
    JwtSecret::from_hex(&text).with_context(|| format!("--jwt-secret {shown}"))
}

/// `--data`: where real mainnet data is read from.
#[derive(Debug, Args)]
pub(crate) struct DataArg {
    /// Directory of real mainnet blocks and blob transactions; default: ../shared/data/mainnet
    /// next to the repository when present, else the repository's testdata/.
    #[arg(long, env = "SSZGATE_DATA")]
    pub(crate) data: Option<PathBuf>,
}

impl DataArg {
    /// The directory given, else the repository's data set.
    pub(crate) fn dir(&self) -> PathBuf {
        self.data.clone().unwrap_or_else(sszgate_fixtures::data_dir)
    }
}

/// `--label`: labels stamped on every record a command writes.
#[derive(Debug, Args)]
pub(crate) struct LabelsArg {
    /// A label stamped on every record, KEY=VALUE; repeatable or comma separated (e.g.
    /// node=mainnet-1,cl=lighthouse).
    #[arg(long = "label", env = "SSZGATE_LABEL", value_delimiter = ',', value_parser = parse_label)]
    pub(crate) labels: Vec<(String, String)>,
}

/// Parses one `KEY=VALUE` label.
pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

/// `--out` of the lab commands that print a Markdown report.
#[derive(Debug, Args)]
pub(crate) struct MarkdownOutArg {
    /// Also write the Markdown report to this file.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// `--json` of the lab commands that also give their rows as JSON.
#[derive(Debug, Args)]
pub(crate) struct JsonOutArg {
    /// Also write the report, with every row and sample, as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
}

/// `--proxy-arg` of the lab commands that start `sszgate proxy` children.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgsArg {
    /// An extra argument for each `sszgate proxy` started, e.g. --proxy-arg=--verify=off;
    /// repeatable.
    #[arg(long = "proxy-arg", allow_hyphen_values = true)]
    pub(crate) proxy_args: Vec<String>,
}

/// `--verify` values, as the help lists them; [`sszgate_verify::Mode`] is what the code uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum VerifyArg {
    /// No checks.
    Off,
    /// Every cheap check on every call; the KZG proofs of calls with blobs as often as a
    /// share of the wall clock allows.
    Sample,
    /// Every check on every call.
    All,
}

impl VerifyArg {
    /// The library's mode, `sample` with its KZG checks at `kzg_percent` of the wall clock.
    pub(crate) fn mode(self, kzg_percent: u8) -> sszgate_verify::Mode {
        match self {
            VerifyArg::Off => sszgate_verify::Mode::Off,
            VerifyArg::Sample => sszgate_verify::Mode::Sample { kzg_percent },
            VerifyArg::All => sszgate_verify::Mode::All,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct ForkOnly {
        #[arg(long, value_parser = ForkParser)]
        fork: Fork,
    }

    #[test]
    fn a_fork_is_read_in_any_case_and_an_unknown_one_lists_the_names() {
        let parsed = ForkOnly::try_parse_from(["t", "--fork", " Prague "]).unwrap();
        assert_eq!(parsed.fork, Fork::Prague);
        let err = ForkOnly::try_parse_from(["t", "--fork", "pectra"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("paris, shanghai, cancun, prague, osaka, amsterdam"),
            "{err}"
        );
    }

    #[test]
    fn verify_values_map_to_the_library_modes() {
        for (arg, text) in [
            (VerifyArg::Off, "off"),
            (VerifyArg::Sample, "sample"),
            (VerifyArg::All, "all"),
        ] {
            let mode: sszgate_verify::Mode = text.parse().unwrap();
            let default = sszgate_verify::pace::DEFAULT_KZG_PERCENT;
            assert_eq!(arg.mode(default), mode);
        }
    }

    #[test]
    fn a_label_is_key_equals_value() {
        assert_eq!(parse_label("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_label("=b").is_err());
        assert!(parse_label("ab").is_err());
    }
}

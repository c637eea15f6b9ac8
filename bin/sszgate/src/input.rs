//! Reading what the user hands over (a message file or standard input, a secret file),
//! bounded: a larger input is refused with its name rather than read whole (a device file or
//! a mistaken path never exhausts memory).

use std::{io::Read, path::Path};

use anyhow::{Context, Result, bail};

/// The most bytes read from one input: the gateway's bound on an EL's answer.
const MAX_INPUT: u64 = sszgate_gateway::DEFAULT_MAX_ANSWER_BYTES as u64;

/// The bytes of `path`, or of standard input for `None` or `-`.
pub(crate) fn read(path: Option<&Path>) -> Result<Vec<u8>> {
    let why = "no Engine API message is that large";
    match path.filter(|p| p.as_os_str() != "-") {
        Some(path) => read_file(path, MAX_INPUT, why),
        None => bounded(std::io::stdin().lock(), "standard input", MAX_INPUT, why),
    }
}

/// The bytes of the file at `path`, refused past `max` bytes with `why` (what makes a
/// larger one wrong).
pub(crate) fn read_file(path: &Path, max: u64, why: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    bounded(file, &path.display().to_string(), max, why)
}

/// Reads `source` to its end, refusing it past `max` bytes.
fn bounded(source: impl Read, name: &str, max: u64, why: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    source
        .take(max + 1)
        .read_to_end(&mut out)
        .with_context(|| format!("reading {name}"))?;
    if out.len() as u64 > max {
        bail!("{name} is over {max} bytes: {why}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_past_the_bound_is_refused_by_name() {
        let err = read_file(Path::new("/dev/zero"), 10, "endless").unwrap_err();
        assert_eq!(err.to_string(), "/dev/zero is over 10 bytes: endless");
        assert_eq!(bounded(&b"abc"[..], "x", 3, "").unwrap(), b"abc");
        let err = bounded(&b"abcd"[..], "x", 3, "too long").unwrap_err();
        assert_eq!(err.to_string(), "x is over 3 bytes: too long");
    }
}

//! Reading a message the user hands over (a file, or standard input), bounded: no Engine API
//! message is larger than the gateway's answer bound, so a larger input is refused with its
//! name rather than read whole (a device file or a mistaken path never exhausts memory).

use std::{io::Read, path::Path};

use anyhow::{Context, Result, bail};

/// The most bytes read from one input: the gateway's bound on an EL's answer.
const MAX_INPUT: u64 = sszgate_gateway::DEFAULT_MAX_ANSWER_BYTES as u64;

/// The bytes of `path`, or of standard input for `None` or `-`.
pub(crate) fn read(path: Option<&Path>) -> Result<Vec<u8>> {
    match path.filter(|p| p.as_os_str() != "-") {
        Some(path) => {
            let file =
                std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
            bounded(file, &path.display().to_string())
        }
        None => bounded(std::io::stdin().lock(), "standard input"),
    }
}

/// Reads `source` to its end, refusing it past [`MAX_INPUT`] bytes.
fn bounded(source: impl Read, name: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    source
        .take(MAX_INPUT + 1)
        .read_to_end(&mut out)
        .with_context(|| format!("reading {name}"))?;
    if out.len() as u64 > MAX_INPUT {
        bail!("{name} is over {MAX_INPUT} bytes: no Engine API message is that large");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_past_the_bound_is_refused_by_name() {
        let err = bounded(std::io::repeat(0), "/dev/zero").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("/dev/zero is over {MAX_INPUT} bytes: no Engine API message is that large")
        );
        assert_eq!(bounded(&b"abc"[..], "x").unwrap(), b"abc");
    }
}

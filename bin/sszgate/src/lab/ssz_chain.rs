//! `sszgate bench ssz-chain`: the SSZ Engine API study on a real chain — its flags, a line
//! of progress per step, and the files it writes (`ssz-chain.md`, `.html`, `.json`). The
//! chain, the load and the measuring are `sszgate_bench::ssz_study`'s; the sections'
//! layout is `sszgate_report::ssz_study`'s.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use crate::flags::DataArg;

/// Arguments of `sszgate bench ssz-chain`.
#[derive(Debug, Args)]
pub(crate) struct SszChainArgs {
    #[command(flatten)]
    data: DataArg,
    /// Blob counts of the blocks made (multiples of 6 up to 72; 0: blocks without a load).
    #[arg(long, value_delimiter = ',', default_value = "0,6,12,24,48,72")]
    blobs: Vec<usize>,
    /// Blocks made per blob count.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Most rounds of each encode and decode measurement (a recorded message per row).
    #[arg(long, default_value_t = 30)]
    codec_rounds: usize,
    /// Where the report goes: ssz-chain.md, ssz-chain.html (tables and charts) and
    /// ssz-chain.json (the rows).
    #[arg(long, default_value = "sszgate-bench")]
    out: PathBuf,
    /// Leave the run's directory (the four bridges' records with the CL's bodies, the
    /// chain's logs) in place and say where.
    #[arg(long)]
    keep_records: bool,
    #[command(flatten)]
    chain: super::bench::LiveChainArgs,
}

/// Runs the study and writes its report; an error when it could not run or found something
/// wrong (a load that did not land whole, a message that did not measure).
pub(crate) fn run(args: SszChainArgs) -> Result<()> {
    let command = format!(
        "sszgate bench ssz-chain --blobs {} --rounds {} --codec-rounds {}",
        args.blobs
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        args.rounds,
        args.codec_rounds
    );
    let options = sszgate_bench::ssz_study::Options {
        sszgate: std::env::current_exe().context("finding the sszgate executable")?,
        tools: args.chain.tools(),
        data: args.data.dir(),
        blobs: args.blobs,
        rounds: args.rounds,
        codec_rounds: args.codec_rounds,
        keep: args.keep_records,
    };
    options.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    // alloy's blob type is a 128 KiB array moved by value: the codecs need a large stack.
    let report = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            sszgate_bench::ssz_study::run(&options, &mut |step| {
                eprintln!("sszgate bench ssz-chain: {step}");
            })
        })
        .context("starting the study thread")?
        .join()
        .map_err(|_| anyhow::anyhow!("the study thread panicked"))?
        .map_err(|e| anyhow::anyhow!("bench ssz-chain: {e}"))?;
    let page = report.report(&command, &sszgate_bench::harness::machine());
    let write = |name: &str, text: &str| {
        let path = args.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    let markdown = page.markdown();
    write("ssz-chain.md", &markdown)?;
    write("ssz-chain.html", &page.html())?;
    write(
        "ssz-chain.json",
        &serde_json::to_string_pretty(&report).context("the report as JSON")?,
    )?;
    println!("{markdown}");
    eprintln!(
        "sszgate bench ssz-chain: wrote ssz-chain.md, .html and .json to {}",
        args.out.display()
    );
    if !report.findings.is_empty() {
        anyhow::bail!(
            "{} findings:\n{}",
            report.findings.len(),
            report.findings.join("\n")
        );
    }
    Ok(())
}

//! A small interleaving benchmark harness: medians and spread, measured side by side.
//!
//! The machines this runs on are noisy 2-core VMs, so variants that are compared are run in
//! the same rounds, one sample each per round, in rotating order; a burst of noise then hits
//! all of them alike, and their ratio stays meaningful. Not a replacement for criterion's
//! statistics: a tool to compare things in one run and report what a reader needs (median,
//! p10–p90, sample count, the machine).

use std::{
    fmt::Write as _,
    time::{Duration, Instant},
};

/// One variant under test: a name and a closure that runs it once.
pub struct Variant<'a> {
    /// The name shown in the report.
    pub name: String,
    run: Box<dyn FnMut() + 'a>,
}

impl<'a> Variant<'a> {
    /// A variant named `name` that runs `run` once per sample.
    pub fn new(name: impl Into<String>, run: impl FnMut() + 'a) -> Variant<'a> {
        Variant {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// The samples of one variant and their summary.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The variant's name.
    pub name: String,
    /// Every sample, in the order taken.
    pub samples: Vec<Duration>,
}

impl Summary {
    fn sorted(&self) -> Vec<Duration> {
        let mut s = self.samples.clone();
        s.sort();
        s
    }

    /// The `q` quantile (0..=1), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        let s = self.sorted();
        if s.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((s.len() - 1) as f64 * q).round() as usize;
        s[rank]
    }

    /// The median sample.
    pub fn median(&self) -> Duration {
        self.quantile(0.5)
    }
}

/// The value after `--name` on the command line of a bench binary, if given.
pub fn flag(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Runs every variant `warmup` times, then `rounds` rounds of one sample each, rotating the
/// order of the variants every round.
pub fn interleave(variants: &mut [Variant<'_>], warmup: usize, rounds: usize) -> Vec<Summary> {
    for variant in variants.iter_mut() {
        for _ in 0..warmup {
            (variant.run)();
        }
    }
    let mut samples = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..rounds {
        for i in 0..variants.len() {
            let index = (i + round) % variants.len();
            let start = Instant::now();
            (variants[index].run)();
            samples[index].push(start.elapsed());
        }
    }
    variants
        .iter()
        .zip(samples)
        .map(|(v, samples)| Summary {
            name: v.name.clone(),
            samples,
        })
        .collect()
}

/// Milliseconds with three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// A Markdown table of summaries: median, p10, p90 in milliseconds, and samples.
pub fn markdown_table(summaries: &[Summary]) -> String {
    let mut out = String::from(
        "| what | median ms | p10 ms | p90 ms | samples |\n|---|---:|---:|---:|---:|\n",
    );
    for s in summaries {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            s.name,
            ms(s.median()),
            ms(s.quantile(0.1)),
            ms(s.quantile(0.9)),
            s.samples.len()
        );
    }
    out
}

/// A description of this machine: CPU model, cores, memory, kernel, rustc.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or_else(|| "?".into(), |kib| format!("{:.0}", kib / 1024.0 / 1024.0));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!(
        "{model}, {cores} cores, {mem_gib} GiB, Linux {}, {rustc}",
        kernel.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_takes_one_sample_per_round_and_orders_quantiles() {
        let mut counts = [0usize; 2];
        let (a, b) = counts.split_at_mut(1);
        let mut variants = [
            Variant::new("fast", || a[0] += 1),
            Variant::new("slow", || {
                b[0] += 1;
                std::thread::sleep(Duration::from_millis(2));
            }),
        ];
        let summaries = interleave(&mut variants, 1, 5);
        drop(variants);
        assert_eq!(counts, [6, 6]);
        assert_eq!(summaries[0].samples.len(), 5);
        assert!(summaries[1].median() >= Duration::from_millis(2));
        assert!(summaries[0].median() < summaries[1].median());
        assert!(summaries[1].quantile(0.1) <= summaries[1].quantile(0.9));
        let table = markdown_table(&summaries);
        assert!(
            table.contains("| fast |") && table.contains("| 5 |"),
            "{table}"
        );
    }
}

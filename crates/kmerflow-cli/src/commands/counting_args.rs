//! khmer's table-sizing flags (`build_graph_args` / `build_counting_args`), shared by every
//! command that builds a countgraph or nodegraph.

use crate::common::Ctx;
use crate::flags;
use clap::Args;
use kmerflow_core::ops::count::{write_text, ReadTally};
use kmerflow_core::ops::sizing::{self, TableParams};
use kmerflow_core::table::{AllocOptions, HugePages, Layout};
use kmerflow_core::Result;

/// The `json|tsv` value of `load-into-counting -s` and `trim-low-abund --summary-info`.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum SummaryFormatArg {
    /// `<name>.info.json`.
    Json,
    /// `<name>.info.tsv`.
    Tsv,
}

impl From<SummaryFormatArg> for kmerflow_core::ops::SummaryFormat {
    fn from(arg: SummaryFormatArg) -> Self {
        match arg {
            SummaryFormatArg::Json => Self::Json,
            SummaryFormatArg::Tsv => Self::Tsv,
        }
    }
}

/// Parses a `FromStr` flag value, keeping its one-line error.
fn parse_flag<T: std::str::FromStr<Err = kmerflow_core::Error>>(text: &str) -> Result<T, String> {
    text.parse().map_err(|e: kmerflow_core::Error| e.to_string())
}

/// Sizing flags of presence tables (nodegraphs): `-k -N -U --fp-rate -x|-M`.
#[derive(Args, Debug, Clone)]
pub struct GraphArgs {
    /// k-mer size to use.
    #[arg(short = 'k', long = "ksize", default_value_t = sizing::DEFAULT_K, value_parser = flags::positive, allow_negative_numbers = true)]
    pub ksize: usize,
    /// Number of tables to use.
    #[arg(short = 'N', long = "n_tables", alias = "n-tables", default_value_t = sizing::DEFAULT_N_TABLES,
          value_parser = flags::positive, allow_negative_numbers = true)]
    pub n_tables: usize,
    /// Approximate number of unique k-mers in the input set (sizes the tables, see --fp-rate).
    #[arg(short = 'U', long = "unique-kmers", default_value_t = 0.0, value_parser = flags::unique_kmers, allow_negative_numbers = true)]
    pub unique_kmers: f64,
    /// Override the command's default false-positive-rate ceiling used with -U.
    #[arg(long = "fp-rate", value_parser = flags::fp_rate, allow_negative_numbers = true)]
    pub fp_rate: Option<f64>,
    /// Upper bound on the size of each table (overridden by -M).
    #[arg(short = 'x', long = "max-tablesize", default_value_t = sizing::DEFAULT_MAX_TABLESIZE,
          conflicts_with = "max_memory", value_parser = flags::tablesize, allow_negative_numbers = true)]
    pub max_tablesize: f64,
    /// Maximum memory for the tables, in bytes; K/M/G/T suffixes are decimal (e.g. 4G).
    #[arg(short = 'M', long = "max-memory-usage", value_parser = flags::memory, allow_negative_numbers = true)]
    pub max_memory: Option<f64>,
}

impl GraphArgs {
    /// The sizing parameters (`force` is the command's `-f/--force`).
    pub fn params(&self, force: bool) -> TableParams {
        TableParams {
            ksize: self.ksize,
            n_tables: self.n_tables,
            max_tablesize: self.max_tablesize,
            max_memory: self.max_memory,
            unique_kmers: self.unique_kmers,
            fp_rate: self.fp_rate,
            small_count: false,
            force,
            alloc: AllocOptions::default(),
        }
    }
}

/// Sizing flags of counting tables: [`GraphArgs`] plus `--small-count`.
#[derive(Args, Debug, Clone)]
pub struct CountingArgs {
    #[command(flatten)]
    /// The flags shared with nodegraph commands.
    pub graph: GraphArgs,
    /// Use 4-bit counters (maximum count 15) to halve memory.
    #[arg(long = "small-count")]
    pub small_count: bool,
    /// Transparent huge pages for the table memory: auto (tables of 64 MiB and more), on or off.
    #[arg(long = "huge-pages", value_name = "auto|on|off", default_value = "auto", value_parser = parse_flag::<HugePages>)]
    pub huge_pages: HugePages,
}

impl CountingArgs {
    /// The sizing parameters (`force` is the command's `-f/--force`).
    pub fn params(&self, force: bool) -> TableParams {
        TableParams {
            small_count: self.small_count,
            alloc: AllocOptions { huge_pages: self.huge_pages, ..AllocOptions::default() },
            ..self.graph.params(force)
        }
    }
}

/// `--layout khmer|blocked`, for the commands that can count into either layout.
#[derive(Args, Debug, Clone)]
pub struct LayoutArgs {
    /// Table layout: khmer (khmer's file format, k <= 32) or blocked (a k-mer's counters in one
    /// cache line, any k, kmerflow's own file format; -x × -N bytes or -M bytes as for khmer,
    /// -N counters per k-mer, 8 or 4 (--small-count) bits each, no counts past 255).
    #[arg(long = "layout", value_name = "khmer|blocked", default_value = "khmer", value_parser = parse_flag::<Layout>)]
    pub layout: Layout,
}

/// `-f/--force` and `--report-json`, shared by the counting commands (`-q` and `-T` come from
/// [`crate::common::CommonArgs`]).
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Continue past sizing and false-positive-rate limits.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Also write the run's read and k-mer counts as JSON to this file.
    #[arg(long = "report-json", value_name = "FILE")]
    pub report_json: Option<String>,
}

impl RunArgs {
    /// Reports the reads seen and those shorter than k on stderr (unless `-q`), and writes
    /// `--report-json` with those counts plus `extra`.
    pub fn report(&self, ctx: &mut Ctx, tally: ReadTally, extra: &[(&str, serde_json::Value)]) -> Result<()> {
        ctx.info(format_args!(
            "{} reads, {} k-mers; {} reads shorter than k contributed no k-mers",
            tally.reads, tally.kmers, tally.short_reads
        ));
        let Some(path) = &self.report_json else { return Ok(()) };
        let mut map = serde_json::Map::new();
        map.insert("reads".into(), tally.reads.into());
        map.insert("kmers".into(), tally.kmers.into());
        map.insert("short_reads".into(), tally.short_reads.into());
        for (key, value) in extra {
            map.insert((*key).into(), value.clone());
        }
        write_text(path, serde_json::Value::Object(map).to_string() + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        counting: CountingArgs,
        #[command(flatten)]
        layout: LayoutArgs,
    }

    fn parse(args: &[&str]) -> Result<TableParams, clap::Error> {
        let argv = std::iter::once("prog").chain(args.iter().copied());
        Cli::try_parse_from(argv).map(|c| c.counting.params(false))
    }

    #[test]
    fn defaults_are_khmers() {
        assert_eq!(parse(&[]).unwrap(), TableParams::default());
    }

    #[test]
    fn flags_map_to_params() {
        let p = parse(&["-k", "20", "-N", "2", "-M", "2G", "-U", "1e6", "--fp-rate", "0.05", "--small-count"]).unwrap();
        assert_eq!((p.ksize, p.n_tables, p.max_memory), (20, 2, Some(2e9)));
        assert_eq!((p.unique_kmers, p.fp_rate, p.small_count), (1e6, Some(0.05), true));
        assert_eq!(parse(&["-x", "1e4"]).unwrap().max_tablesize, 1e4);
    }

    #[test]
    fn layout_and_huge_pages_parse() {
        let argv = ["prog", "--layout", "blocked", "--huge-pages", "off"];
        let cli = Cli::try_parse_from(argv).unwrap();
        assert_eq!(cli.layout.layout, Layout::Blocked);
        assert_eq!(cli.counting.params(false).alloc.huge_pages, HugePages::Off);
        assert_eq!(Cli::try_parse_from(["prog"]).unwrap().layout.layout, Layout::Khmer);
        assert!(Cli::try_parse_from(["prog", "--layout", "dense"]).is_err());
        assert!(Cli::try_parse_from(["prog", "--huge-pages", "always"]).is_err());
    }

    #[test]
    fn x_conflicts_with_m_and_bad_memory_is_refused() {
        assert!(parse(&["-x", "1e4", "-M", "1e6"]).is_err());
        assert!(parse(&["-M", "1GB"]).is_err());
    }
}

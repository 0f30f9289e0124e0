//! khmer's table-sizing flags (`build_graph_args` / `build_counting_args`), shared by every
//! command that builds a countgraph or nodegraph.

use crate::common::Ctx;
use crate::flags;
use clap::Args;
use kmerflow_core::kmer::Strand;
use kmerflow_core::ops::autosize;
use kmerflow_core::ops::count::ReadTally;
use kmerflow_core::ops::sizing::{self, GraphKind, TableParams};
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

/// The value of `-M`: bytes, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryArg {
    /// Total table memory in bytes.
    Bytes(f64),
    /// Sized for the false-positive rate from the distinct k-mers of the inputs.
    Auto,
}

/// Parses `-M`: `auto`, or a memory setting as [`flags::memory`] checks it.
fn memory_arg(text: &str) -> Result<MemoryArg, String> {
    if text.eq_ignore_ascii_case("auto") {
        Ok(MemoryArg::Auto)
    } else {
        flags::memory(text).map(MemoryArg::Bytes)
    }
}

/// `--single-strand`, shared by every command that hashes k-mers.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct StrandArgs {
    /// Hash k-mers as read, not canonically: a k-mer and its reverse complement are counted
    /// apart (stranded RNA-seq, single-stranded DNA). Saved tables record it, and a table made
    /// the other way is refused.
    #[arg(long = "single-strand")]
    pub single_strand: bool,
}

impl StrandArgs {
    /// The strand k-mers are hashed on.
    pub fn strand(&self) -> Strand {
        Strand::from_single(self.single_strand)
    }
}

/// Sizing flags of presence tables (nodegraphs): `-k -N -U --fp-rate -x|-M`, `--single-strand`.
#[derive(Args, Debug, Clone)]
pub struct GraphArgs {
    /// k-mer size to use.
    #[arg(short = 'k', long = "ksize", default_value_t = sizing::DEFAULT_K, value_parser = flags::positive, allow_negative_numbers = true)]
    pub ksize: usize,
    /// Number of tables to use.
    #[arg(short = 'N', long = "n_tables", alias = "n-tables", default_value_t = sizing::DEFAULT_N_TABLES,
          value_parser = flags::positive, allow_negative_numbers = true)]
    pub n_tables: usize,
    /// Approximate number of unique k-mers in the input set; without -x/-M the tables are sized
    /// for --fp-rate from it.
    #[arg(short = 'U', long = "unique-kmers", default_value_t = 0.0, value_parser = flags::unique_kmers, allow_negative_numbers = true)]
    pub unique_kmers: f64,
    /// The false-positive rate the tables are sized for with -U or -M auto (default 0.1 for
    /// counting tables).
    #[arg(long = "fp-rate", value_parser = flags::fp_rate, allow_negative_numbers = true)]
    pub fp_rate: Option<f64>,
    /// Upper bound on the size of each table (overridden by -M) [default: 1000000.0 (khmer's);
    /// tables are sized from the data without -M/-x/-U, see -M].
    #[arg(short = 'x', long = "max-tablesize", conflicts_with = "max_memory", value_parser = flags::tablesize,
          allow_negative_numbers = true)]
    pub max_tablesize: Option<f64>,
    /// Maximum memory for the tables, in bytes; K/M/G/T suffixes are decimal (e.g. 4G). `auto`:
    /// count the distinct k-mers first (a HyperLogLog pass over the inputs) and size the tables
    /// for --fp-rate, within --memory-cap. Tables are sized so by default when none of -M/-x/-U
    /// is given (khmer's default table for stdin or a FIFO).
    #[arg(short = 'M', long = "max-memory-usage", value_name = "BYTES|auto", value_parser = memory_arg,
          allow_negative_numbers = true)]
    pub max_memory: Option<MemoryArg>,
    /// The most memory an automatically sized table (-M auto, -U) may take; a larger one is
    /// refused before counting [default: half the available memory].
    #[arg(long = "memory-cap", value_name = "BYTES", value_parser = flags::memory, allow_negative_numbers = true)]
    pub memory_cap: Option<f64>,
    #[command(flatten)]
    /// `--single-strand`.
    pub strand: StrandArgs,
}

impl GraphArgs {
    /// The sizing parameters (`force` is the command's `-f/--force`).
    pub fn params(&self, force: bool) -> TableParams {
        TableParams {
            ksize: self.ksize,
            n_tables: self.n_tables,
            max_tablesize: self.max_tablesize.unwrap_or(sizing::DEFAULT_MAX_TABLESIZE),
            max_memory: match self.max_memory {
                Some(MemoryArg::Bytes(bytes)) => Some(bytes),
                _ => None,
            },
            unique_kmers: self.unique_kmers,
            fp_rate: self.fp_rate,
            small_count: false,
            force,
            alloc: AllocOptions::default(),
            auto_memory: self.max_memory == Some(MemoryArg::Auto),
            memory_cap: self.memory_cap,
            strand: self.strand.strand(),
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
    /// The sizing parameters (`force` is the command's `-f/--force`); `-U` without `-x`/`-M`
    /// sizes the table for the rate (khmer only warned when its default table was too small).
    pub fn params(&self, force: bool) -> TableParams {
        let graph = &self.graph;
        let u_alone = graph.unique_kmers > 0.0 && graph.max_tablesize.is_none() && graph.max_memory.is_none();
        TableParams {
            auto_memory: graph.max_memory == Some(MemoryArg::Auto) || u_alone,
            small_count: self.small_count,
            alloc: AllocOptions { huge_pages: self.huge_pages, ..AllocOptions::default() },
            ..self.graph.params(force)
        }
    }
}

impl CountingArgs {
    /// [`Self::params`] with an automatic size resolved ([`GraphArgs::resolved`]).
    pub fn resolved_params(&self, force: bool, inputs: &[String], loading: bool, ctx: &mut Ctx) -> Result<TableParams> {
        let kind = if self.small_count { GraphKind::SmallCountgraph } else { GraphKind::Countgraph };
        self.graph.resolved(self.params(force), kind, inputs, loading, ctx)
    }

    /// [`Self::params`] for a command that reads no reads to size its table from: khmer's rules
    /// (`-U` alone sizes for the false-positive rate as khmer does; `-M auto` is refused).
    pub fn fixed_params(&self, force: bool) -> TableParams {
        TableParams { auto_memory: self.graph.max_memory == Some(MemoryArg::Auto), ..self.params(force) }
    }
}

/// The help of `-U`, `-x` and `-M` for a command whose table reads no reads to be sized from
/// ([`CountingArgs::fixed_params`]), in place of the data-sized tables' help; other arguments
/// are kept. Used as `#[command(mut_args(counting_args::fixed_size_help))]`.
pub fn fixed_size_help(arg: clap::Arg) -> clap::Arg {
    let help = match arg.get_id().as_str() {
        "unique_kmers" => {
            "Approximate number of unique k-mers in the input set: without -M the table is sized \
            for --fp-rate from it up to -x (a warning where -x is smaller, as in khmer); -M is \
            checked against it"
        }
        "max_tablesize" => {
            "Upper bound on the size of each table (overridden by -M) [default: 1000000.0 \
            (khmer's); this command has no reads to size its table from]"
        }
        "max_memory" => {
            "Maximum memory for the tables, in bytes; K/M/G/T suffixes are decimal (e.g. 4G). \
            Without -M/-x/-U the table is khmer's default, -N tables of 1e6 counters; `auto` is \
            refused (no reads to size the table from)"
        }
        _ => return arg,
    };
    arg.help(help)
}

impl GraphArgs {
    /// The nodegraph parameters of load-graph and do-partition (`force` is `-f/--force`), sized
    /// from `inputs` as the counting tables are ([`Self::resolved`]).
    pub fn nodegraph_params(&self, force: bool, inputs: &[String], ctx: &mut Ctx) -> Result<TableParams> {
        self.resolved(self.params(force), GraphKind::Nodegraph, inputs, false, ctx)
    }

    /// Whether none of `-M`, `-x` and `-U` was given, so that the table is sized from the data
    /// (khmer's default table where the inputs can be read only once).
    fn size_unset(&self) -> bool {
        self.max_memory.is_none() && self.max_tablesize.is_none() && self.unique_kmers <= 0.0
    }

    /// `params` (from these flags) with an automatic size (`-M auto`, `-U` alone, or none of
    /// `-M`/`-x`/`-U` with inputs that can be read twice) resolved for tables of `kind` by a
    /// pre-pass over `inputs` (none when `loading` a saved table); the size chosen is told in
    /// one line unless `-q` and kept in `ctx` for the report. Without `-M`/`-x`/`-U` and with an
    /// input read once (stdin, a FIFO) the table is khmer's default, told so.
    /// The command plans its own passes over the inputs first (`progress().plan_passes`), so
    /// that the progress line's overall fraction counts the pre-pass as one more.
    pub fn resolved(
        &self,
        mut params: TableParams,
        kind: GraphKind,
        inputs: &[String],
        loading: bool,
        ctx: &mut Ctx,
    ) -> Result<TableParams> {
        if loading {
            params.auto_memory = false;
            return Ok(params);
        }
        let by_default = self.size_unset();
        // By default the pre-pass counts the inputs that exist: a missing one is the command's
        // to refuse (or, with -f, to skip) as it would with khmer's table.
        let existing: Vec<String>;
        let mut counted = inputs;
        if by_default {
            match autosize::read_once_input(inputs) {
                Some(input) => ctx.info(format_args!(
                    "{input} can be read only once, so the table is khmer's default ({} tables of {} counters); \
                     give -M or -U to size it for the data",
                    params.n_tables,
                    format_args!("{:e}", sizing::DEFAULT_MAX_TABLESIZE)
                )),
                None => {
                    params.auto_memory = true;
                    existing = inputs.iter().filter(|path| std::fs::metadata(path).is_ok()).cloned().collect();
                    counted = &existing;
                }
            }
        }
        if params.auto_memory && params.unique_kmers <= 0.0 {
            ctx.run.progress().plan_passes(1);
        }
        ctx.table_sizing = autosize::resolve_kind(&mut params, kind, counted, &ctx.run)?;
        if let Some(chosen) = &ctx.table_sizing {
            let hint = if by_default {
                format!(
                    "; no -M/-x/-U given: -x {} gives khmer's default table",
                    format_args!("{:e}", sizing::DEFAULT_MAX_TABLESIZE)
                )
            } else {
                String::new()
            };
            ctx.info(format_args!("{}{hint}", chosen.describe()));
        }
        Ok(params)
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

/// `-f/--force`, shared by the counting commands (`-q`, `-T` and `--report-json` come from
/// [`crate::common::CommonArgs`]).
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Continue past sizing and false-positive-rate limits.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
}

impl RunArgs {
    /// Reports the reads seen and those shorter than k on stderr (unless `-q`).
    pub fn report(&self, ctx: &mut Ctx, tally: ReadTally) {
        ctx.info(format_args!(
            "{} reads, {} k-mers; {} reads shorter than k contributed no k-mers",
            tally.reads, tally.kmers, tally.short_reads
        ));
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
    fn auto_memory_from_m_auto_or_u_alone() {
        let auto = parse(&["-M", "auto", "--memory-cap", "2G"]).unwrap();
        assert_eq!((auto.auto_memory, auto.max_memory, auto.memory_cap), (true, None, Some(2e9)));
        assert!(parse(&["-U", "1e6"]).unwrap().auto_memory);
        // khmer's rules whenever -x or -M is given.
        assert!(!parse(&["-U", "1e6", "-x", "1e6"]).unwrap().auto_memory);
        assert!(!parse(&["-U", "1e6", "-M", "1e8"]).unwrap().auto_memory);
        assert!(!parse(&[]).unwrap().auto_memory);
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
    fn single_strand_flag_sets_the_strand() {
        assert_eq!(parse(&[]).unwrap().strand, Strand::Canonical);
        assert_eq!(parse(&["--single-strand"]).unwrap().strand, Strand::Single);
    }

    #[test]
    fn x_conflicts_with_m_and_bad_memory_is_refused() {
        assert!(parse(&["-x", "1e4", "-M", "1e6"]).is_err());
        assert!(parse(&["-M", "1GB"]).is_err());
    }
}

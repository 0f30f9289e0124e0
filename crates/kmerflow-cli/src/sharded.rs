//! The command line of a run on a table sharded over Dask workers (`--scheduler`,
//! `--local-cluster`; [`crate::commands::shard_args`]), parsed and checked here with the same
//! clap definitions as every other run, and carried out by the Python package
//! (`kmerflow.distributed.cli`):
//! - [`plan`] parses the command line (help, usage errors, range checks and the table's sizing
//!   are the native ones), refuses the flags a sharded run does not have (exit 2, the flag
//!   named) and hands over what the run needs, table sizes included, as a [`Plan`] (JSON);
//! - [`finish`] writes what the native command writes besides its main outputs
//!   (`load-into-counting`'s `OUT.info` and `-s` file) and the run report (`--report-json`),
//!   from the run's summary;
//! - [`terminal`] prints the run as the one-process command line does: its messages above the
//!   progress line, and the resource line at the end.
//!
//! This executable alone cannot run them: [`refusal`] is its usage error.

use crate::commands::counting_args::CountingArgs;
use crate::commands::shard_args::ShardArgs;
use crate::commands::Command;
use crate::commands::{load_into_counting, normalize, normalize_by_median};
use crate::common::{summary_json, Ctx};
use crate::console::Terminal;
use crate::{cli_command, parse, report, run_failure, CliError, Parsed, EXIT_DATA, EXIT_USAGE};
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::FromArgMatches;
use kmerflow_core::ops::count;
use kmerflow_core::ops::normalize::Tables;
use kmerflow_core::ops::read_filter::{self, FpLimit};
use kmerflow_core::ops::sizing::TableParams;
use kmerflow_core::ops::{abundance_dist, diginorm, filter_abund, sizing, trim_low_abund};
use kmerflow_core::run::files::{preflight, Output};
use kmerflow_core::run::{CancelToken, Message, RunContext};
use kmerflow_core::shards::drive::{DrivenLayout, ShardedTable, Shards};
use kmerflow_core::shards::runs::{RemoteShards, ShardedDecisions};
use kmerflow_core::table::khmer_format::ByteFrame;
use kmerflow_core::table::{native_format, Layout};
use serde::Deserialize;
use serde_json::Value;
use std::ffi::OsString;
use std::time::Duration;

/// Why `--small-count` is refused where the table has khmer's layout.
const EIGHT_BIT: &str = "the shards of khmer's layout hold 8-bit counters";

/// Why the sharded run of `command` does not have the argument `id` of its clap definition;
/// `None` for every argument it has.
fn why_not(command: &str, id: &str) -> Option<&'static str> {
    let by_median = command == "normalize-by-median";
    Some(match id {
        "metrics" => "per-stage metrics are measured in one process; use --report-json",
        "single_strand" => "sharded tables hold canonical k-mers",
        "batched" => "the sharded run is batched already",
        // With the blocked layout, these commands' shards hold 4-bit counters (see `table`).
        "small_count" if !matches!(command, "load-into-counting" | "normalize-by-median") => EIGHT_BIT,
        "gzip" | "bzip" if by_median => "the sharded normalize-by-median writes uncompressed reads",
        "mate" | "output2" | "orphans" if by_median => {
            "the sharded normalize-by-median reads interleaved or single files"
        }
        _ => return None,
    })
}

/// The sharding flags of a parsed command, when it has them.
fn shard_args(command: &Command) -> Option<&ShardArgs> {
    match command {
        Command::LoadIntoCounting(a) => Some(&a.sharding),
        Command::NormalizeByMedian(a) => Some(&a.sharding),
        Command::AbundanceDistSingle(a) => Some(&a.sharding),
        Command::FilterAbundSingle(a) => Some(&a.sharding),
        Command::FilterAbund(a) => Some(&a.sharding),
        Command::TrimLowAbund(a) => Some(&a.sharding),
        Command::Normalize(a) => Some(&a.sharding),
        _ => None,
    }
}

/// Whether the command line `argv` (program name first) asks for a sharded run: a command that
/// has one, given `--scheduler` or `--local-cluster` in any spelling the parser accepts
/// (`--local-clus 2`, `--sched=ADDRESS`). A command line that does not parse is not one: its
/// run reports the usage error.
pub fn requested(argv: &[OsString]) -> bool {
    cli_command()
        .try_get_matches_from(argv)
        .ok()
        .and_then(|matches| crate::Cli::from_arg_matches(&matches).ok())
        .is_some_and(|cli| shard_args(&cli.command).is_some_and(ShardArgs::requested))
}

/// The usage error of this executable given a sharded command line (the Python package runs
/// them), `None` for any other.
pub(crate) fn refusal(command: &Command) -> Option<CliError> {
    shard_args(command).filter(|s| s.requested()).map(|_| CliError {
        code: EXIT_USAGE,
        message: format!(
            "kmerflow {}: --scheduler and --local-cluster run the table on Dask workers, which the kmerflow \
             Python package's `kmerflow` command does (pip install 'kmerflow[dask]'; then `kmerflow ...` or \
             `python -m kmerflow ...`); this executable counts in one process",
            command.name()
        ),
        file: None,
    })
}

/// Checks the sharded command line `argv` (program name first) of `command` as [`plan`] does
/// before anything is read: a flag the sharded run does not have ([`why_not`]) is refused,
/// naming it, and so are more `--local-shards` than `--shards`; `Ok` for a command line that
/// is not sharded.
pub(crate) fn check(command: &Command, argv: &[OsString]) -> Result<(), CliError> {
    let Some(sharding) = shard_args(command).filter(|s| s.requested()) else { return Ok(()) };
    let name = command.name();
    if let Some(shards) = sharding.shards.filter(|&n| sharding.local_shards > n) {
        let message = format!("--local-shards {} is more than the --shards {shards}", sharding.local_shards);
        return Err(usage_error(name, ErrorKind::ValueValidation, message));
    }
    let matches = cli_command().try_get_matches_from(argv).map_err(|e| CliError {
        code: EXIT_USAGE,
        message: e.render().to_string(),
        file: None,
    })?;
    let Some((_, sub)) = matches.subcommand() else { return Ok(()) };
    let root = cli_command();
    let cmd = root.find_subcommand(name).expect("a parsed subcommand exists");
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        let given = matches!(sub.value_source(id), Some(ValueSource::CommandLine));
        if let Some(why) = why_not(name, id).filter(|_| given) {
            let flag = arg.get_long().map(|l| format!("--{l}")).unwrap_or_else(|| id.to_string());
            return Err(refused_flag(name, &flag, why));
        }
    }
    Ok(())
}

/// A usage error of `command` rendered as clap renders its own (exit 2).
fn usage_error(command: &str, kind: ErrorKind, message: String) -> CliError {
    let mut cmd = cli_command();
    // Built whole, so that the subcommand has the version its `--version` flag prints.
    cmd.build();
    let sub = cmd.find_subcommand_mut(command).expect("a parsed subcommand exists");
    CliError { code: EXIT_USAGE, message: sub.error(kind, message).render().to_string(), file: None }
}

/// The usage error of `flag`, which the sharded run of `command` does not have for `why`.
fn refused_flag(command: &str, flag: &str, why: &str) -> CliError {
    let message = format!("the argument '{flag}' cannot be used with '--scheduler' or '--local-cluster': {why}");
    usage_error(command, ErrorKind::ArgumentConflict, message)
}

/// The run of a sharded command line, as [`plan`] hands it to the Python package (serialized as
/// JSON, read by `kmerflow.distributed.plan`): what the Python side needs to place the table
/// and carry the run; the native parts of the run read the rest from the command line.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Plan {
    /// The command's name.
    pub command: &'static str,
    /// The cluster to run on and how the table is split over it (`--scheduler`,
    /// `--local-cluster`, `--shards`, `--local-shards`, `--batch-kmers`).
    pub cluster: ShardArgs,
    /// The table's shape, or the saved table to load into the shards.
    pub table: Table,
    /// Whether counts go past 255 (khmer's bigcount); false where the command stops them there.
    pub bigcount: bool,
    /// Where the table is saved shard by shard once the native run is done ([`saved_table`]).
    pub save: Option<String>,
    /// The sizing's notes and warnings and the command's opening lines, to print before the run.
    pub messages: Vec<Message>,
    /// The run report's `table_sizing` (`-M auto`, `-U`), handed back to [`finish`].
    pub table_sizing: Option<Value>,
}

/// The table of a sharded run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Table {
    /// The layout (`khmer` or `blocked`); a loaded table's is its file's.
    pub layout: Layout,
    /// The k-mer size (a loaded table's is its file's).
    pub ksize: usize,
    /// How the table is made.
    #[serde(flatten)]
    pub shape: Shape,
}

/// How the table of a sharded run is made: sized as the native command sizes it (`-x`, `-M`,
/// `-M auto`, `-U`), or loaded from a saved table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Shape {
    /// A zeroed table of this shape ([`sized`]).
    Sized {
        /// khmer's hash table sizes, or the blocked layout's `[memory_bytes, bits, probes]`.
        shape: Vec<u64>,
    },
    /// A saved table (`-l`, `filter-abund`'s countgraph), each shard reading its range of it.
    Saved {
        /// The saved table's path.
        loadgraph: String,
    },
    /// Tables made by the run as it needs them (`normalize`: one a pass, sized by the run).
    PerPass {},
}

/// The shape of a table of `layout` sized for `params` as the one-process command sizes it
/// (`multiplier`: its share of `-M`), as the Python package places it: khmer's hash table
/// sizes, or the blocked layout's `[memory_bytes, bits, probes]` (the table's bytes in whole
/// cache lines, 8 bits a counter or 4 with `--small-count`, counters a k-mer).
pub fn sized(
    params: &TableParams,
    layout: Layout,
    multiplier: f64,
    run: &RunContext,
) -> kmerflow_core::Result<Vec<u64>> {
    Ok(match layout {
        Layout::Khmer => sizing::countgraph_sizes(params, multiplier, run)?,
        Layout::Blocked => {
            let shape = sizing::blocked_countgraph_params(params, multiplier, run)?;
            vec![shape.data_bytes(), u64::from(shape.width.bits()), shape.probes as u64]
        }
    })
}

/// The data error (exit 1) of `command` for `e`.
fn data_error(command: &str, e: kmerflow_core::Error) -> CliError {
    CliError { code: EXIT_DATA, message: format!("kmerflow {command}: error: {e}"), file: None }
}

/// A context of `run` without metrics, console or sizing, for the one-process code that
/// speaks through one.
fn bare_ctx(run: &RunContext) -> Ctx {
    Ctx { run: run.clone(), metrics: None, console: None, table_sizing: None }
}

/// The sequence files the sharded run of `command` reads, in order: those `-M auto` sizes the
/// table for and the run report records (`filter-abund`: the saved table first;
/// `trim-low-abund`: the mates after the inputs; `normalize-by-median`: `-u`'s last).
fn inputs(command: &Command) -> Vec<String> {
    match command {
        Command::LoadIntoCounting(a) => a.inputs.clone(),
        Command::NormalizeByMedian(a) => a.inputs.iter().chain(&a.unpaired).cloned().collect(),
        Command::AbundanceDistSingle(a) => vec![a.seqs.clone()],
        Command::FilterAbundSingle(a) => vec![a.input.clone()],
        Command::FilterAbund(a) => std::iter::once(&a.graph).chain(&a.inputs).cloned().collect(),
        Command::TrimLowAbund(a) => a.inputs.iter().chain(&a.mates.mate).cloned().collect(),
        Command::Normalize(a) => a.inputs.clone(),
        _ => Vec::new(),
    }
}

/// Where the sharded run of `command` saves its table shard by shard once its native run is
/// done (load-into-counting's output, `-s`), and the line the one-process command says before
/// that save where the native run does not say it (said by [`run_command`] as it ends).
fn saved_table(command: &Command) -> (Option<&String>, Option<&'static str>) {
    const SAVING: &str = "Saving k-mer countgraph filename";
    match command {
        Command::LoadIntoCounting(a) => (Some(&a.output), None),
        Command::NormalizeByMedian(a) => (a.savegraph.as_ref(), None),
        Command::AbundanceDistSingle(a) => (a.savegraph.as_ref(), Some(SAVING)),
        Command::FilterAbundSingle(a) => (a.savegraph.as_ref(), Some(SAVING)),
        Command::TrimLowAbund(a) => (a.savegraph.as_ref(), Some("Saving k-mer countgraph to")),
        _ => (None, None),
    }
}

/// The table of a sharded run, sized as the native command sizes it (`-x`, `-M`, `-M auto` and
/// `-U` with their checks and messages); `layout` is given by the commands with `--layout`.
fn table(
    command: &str,
    counting: &CountingArgs,
    layout: Option<Layout>,
    force: bool,
    inputs: &[String],
    ctx: &mut Ctx,
) -> Result<Table, CliError> {
    let layout = layout.unwrap_or(Layout::Khmer);
    if counting.small_count && layout == Layout::Khmer {
        return Err(refused_flag(command, "--small-count", EIGHT_BIT));
    }
    let data = |e| data_error(command, e);
    let params = counting.resolved_params(force, inputs, false, ctx).map_err(data)?;
    // abundance-dist-single's -M holds its tracking filter too, as in one process.
    let multiplier = if command == "abundance-dist-single" { abundance_dist::SINGLE_MULTIPLIER } else { 1.0 };
    let shape = sized(&params, layout, multiplier, &ctx.run).map_err(data)?;
    Ok(Table { layout, ksize: params.ksize, shape: Shape::Sized { shape } })
}

/// The table of a sharded run that loads the saved table `path` (`-l`): its layout is read
/// from the file (`blocked` for kmerflow's format, else `khmer`, whose file must hold 8-bit
/// counters, uncompressed), and so is its k-mer size, which wins over `-k` with the one-process
/// command's warning; `loading` is the one-process command's message. `khmer_only`: a
/// kmerflow-format file is refused (the command loads khmer's).
fn loaded_table(
    command: &str,
    path: &str,
    counting: &CountingArgs,
    force: bool,
    (loading, khmer_only): (&str, bool),
    ctx: &mut Ctx,
) -> Result<Table, CliError> {
    let data = |e| data_error(command, e);
    let params = counting.resolved_params(force, &[], true, ctx).map_err(data)?;
    let mut start = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut start))
        .map_err(|e| data(kmerflow_core::Error::io(path, e)))?;
    let blocked = !khmer_only && native_format::is_native(&start[..n]);
    let k = if blocked {
        native_format::read_params(path).map_err(data)?.k
    } else {
        ByteFrame::read(path).map_err(data)?.k
    };
    ctx.run.info(format!("{loading} {path}"));
    read_filter::loadgraph_params(&params, path, k, &ctx.run);
    let layout = if blocked { Layout::Blocked } else { Layout::Khmer };
    Ok(Table { layout, ksize: k, shape: Shape::Saved { loadgraph: path.to_string() } })
}

/// The table of a sharded `filter-abund`: the countgraph saved at `path`, loaded into the shards.
/// As the one-process command says `loading countgraph:` and `K:`; a file the shards cannot read
/// (compressed, 4-bit counters, a nodegraph) is refused with one line naming it.
fn saved_countgraph(command: &str, path: &str, run: &RunContext) -> Result<Table, CliError> {
    run.info(format!("loading countgraph: {path}"));
    let k = ByteFrame::read(path).map_err(|e| data_error(command, e))?.k;
    run.info(format!("K: {k}"));
    Ok(Table { layout: Layout::Khmer, ksize: k, shape: Shape::Saved { loadgraph: path.to_string() } })
}

/// Refuses, before the cluster starts and before anything is read, an output or side output of
/// the sharded run of `command` that is one of its inputs (by path, link or inode): the check
/// the one-process command makes first, on the same files. Only file names enter it, so the
/// commands' options are made with a default table.
fn refuse_overwrites(command: &Command, run: &RunContext) -> kmerflow_core::Result<()> {
    match command {
        Command::LoadIntoCounting(a) => count::refuse_overwrites(&a.inputs, &a.output, run),
        Command::NormalizeByMedian(a) => {
            diginorm::checked_files(&normalize_by_median::options(a.clone(), TableParams::default()), run).map(drop)
        }
        Command::AbundanceDistSingle(a) => {
            abundance_dist::check_single_outputs(&a.seqs, &a.histogram.output(&a.output), a.savegraph.as_ref(), run)
        }
        Command::FilterAbundSingle(a) => {
            a.filter.params().refuse_inputs_as_outputs(run, None, std::slice::from_ref(&a.input), a.savegraph.as_ref())
        }
        Command::FilterAbund(a) => {
            a.filter.params().refuse_inputs_as_outputs(run, std::iter::once(&a.graph), &a.inputs, None)
        }
        Command::TrimLowAbund(a) => {
            let options = crate::commands::trim_low_abund::sized_options(a.clone(), TableParams::default());
            trim_low_abund::checked_files(&options, run).map(drop)
        }
        Command::Normalize(a) => normalize::options(a.clone(), run).check(run),
        _ => Ok(()),
    }
}

/// Parses the sharded command line `argv` (program name first) with the command definitions
/// and returns the run to carry out ([`Plan`]). `None` for a help, version or `--info` request
/// (printed here). A usage error (exit 2) names the flag, including a flag the sharded run does
/// not have; an input that cannot be read while sizing the table (`-M auto`) is a data error
/// (exit 1).
pub fn plan(argv: Vec<OsString>) -> Result<Option<Plan>, CliError> {
    let Some(Parsed { cli, .. }) = parse(&argv)? else { return Ok(None) };
    let command = cli.command;
    let name = command.name();
    let Some(sharding) = shard_args(&command) else {
        return Err(usage_error(name, ErrorKind::InvalidSubcommand, format!("{name} has no sharded run")));
    };
    if !sharding.requested() {
        let message = "--scheduler ADDRESS or --local-cluster N is required for a sharded run".to_string();
        return Err(usage_error(name, ErrorKind::MissingRequiredArgument, message));
    }
    check(&command, &argv)?;
    let run = RunContext::new();
    crate::declare_run_files(name, &command.settings(), &run);
    refuse_overwrites(&command, &run).map_err(|e| data_error(name, e))?;
    let mut ctx = bare_ctx(&run);
    let inputs = inputs(&command);
    // The one-process command's line as it makes its table (not for one it loads).
    let made = |ctx: &mut Ctx, counting: &CountingArgs, layout, force| {
        ctx.info("making countgraph");
        table(name, counting, layout, force, &inputs, ctx)
    };
    let table = match &command {
        Command::LoadIntoCounting(a) => {
            if a.layout.layout == Layout::Blocked {
                count::check_blocked_output(&a.output).map_err(|e| data_error(name, e))?;
            }
            table(name, &a.counting, Some(a.layout.layout), a.run.force, &inputs, &mut ctx)?
        }
        Command::NormalizeByMedian(a) => match &a.loadgraph {
            Some(path) => {
                loaded_table(name, path, &a.counting, a.force, ("loading k-mer countgraph from", false), &mut ctx)?
            }
            None => made(&mut ctx, &a.counting, Some(a.layout.layout), a.force)?,
        },
        Command::AbundanceDistSingle(a) => table(name, &a.counting, None, a.run.force, &inputs, &mut ctx)?,
        Command::FilterAbundSingle(a) => {
            let table = made(&mut ctx, &a.counting, None, a.filter.force)?;
            ctx.info(format_args!("consuming input, round 1 -- {}", a.input));
            table
        }
        Command::FilterAbund(a) => saved_countgraph(name, &a.graph, &run)?,
        Command::TrimLowAbund(a) => match &a.loadgraph {
            Some(path) => loaded_table(name, path, &a.counting, a.force, ("loading countgraph from", true), &mut ctx)?,
            None => made(&mut ctx, &a.counting, None, a.force)?,
        },
        Command::Normalize(a) => {
            Table { layout: a.layout.layout, ksize: a.counting.graph.ksize, shape: Shape::PerPass {} }
        }
        _ => unreachable!("shard_args answers for these commands only"),
    };
    // As khmer's (and the one-process) commands: counts stop at 255 but for those with bigcount.
    let bigcount = match &command {
        Command::LoadIntoCounting(a) => !a.no_bigcount,
        Command::AbundanceDistSingle(a) => !a.histogram.no_bigcount,
        _ => false,
    };
    Ok(Some(Plan {
        command: name,
        cluster: sharding.clone(),
        table,
        bigcount,
        save: saved_table(&command).0.cloned(),
        messages: run.messages(),
        table_sizing: ctx.table_sizing.as_ref().map(report::sizing_json),
    }))
}

/// Runs the sharded command line `argv` (program name first) on the table `shards` (either
/// layout; its remote shards reached through `remote`) within `run`, as the one-process
/// command does, and returns its summary:
/// - `normalize-by-median`: [`diginorm::run_sharded`] (its messages, keep curve, `-R` report,
///   false-positive ceiling and outputs; a loaded table's k wins over `-k`, as the plan told);
/// - `load-into-counting`: the inputs counted ([`count::run_sharded`], the false-positive
///   ceiling checked after each batch and at the end) and the native command's closing lines
///   (`OUT.info` is [`finish`]'s);
/// - `trim-low-abund`: pass 1 deciding batch by batch on the shards, pass 2 trimming from
///   counts looked up there ([`trim_low_abund::run_sharded`]);
/// - `filter-abund-single`: its input counted on the shards (the one-process run's lines and
///   false-positive ceiling, checked after each batch and at the end), then the filtering
///   ([`filter_abund::run_sharded`]; the summary has the table's `unique_kmers`);
/// - `filter-abund`: the filtering of the saved table loaded into the shards;
/// - `abundance-dist-single`: its input counted on the shards, then the histogram, each
///   batch's k-mers new to the tracking filter looked up there
///   ([`abundance_dist::run_single_sharded`]), and the native command's closing lines.
///
/// Its outputs are recorded in `run`'s files; the run report is [`finish`]'s. The table is not
/// gathered nor saved here: the plan's `save` is the caller's to write shard by shard once this
/// returns (the one-process command's line before it said here, [`saved_table`]), the shards
/// holding every update.
pub fn run_command<C: DrivenLayout>(
    argv: &[OsString],
    run: &RunContext,
    mut shards: Shards<'_, C>,
    remote: &mut dyn RemoteShards,
) -> Result<Value, CliError> {
    on_shards(argv, run, |command| {
        let client = shards.client;
        let Some(batch_kmers) = shard_args(&command).map(|s| s.batch_kmers) else { return Ok(None) };
        let saving = match saved_table(&command) {
            (Some(path), Some(line)) => Some(format!("{line} {path}")),
            _ => None,
        };
        let summary = match command {
            Command::NormalizeByMedian(a) => {
                let params = TableParams { ksize: client.ksize(), ..a.counting.fixed_params(a.force) };
                let options = normalize_by_median::options(a, params);
                summary_json(&diginorm::run_sharded(&options, &mut shards, remote, batch_kmers, run)?)
            }
            Command::LoadIntoCounting(a) => {
                let opts = count::Options {
                    params: a.counting.fixed_params(a.run.force),
                    output: a.output.clone(),
                    inputs: a.inputs.clone(),
                    bigcount: !a.no_bigcount,
                    summary: None,
                    layout: a.layout.layout,
                };
                let summary = count::run_sharded(&opts, &mut shards, remote, batch_kmers, run)?;
                load_into_counting::tell(&a, &summary, &mut bare_ctx(run));
                summary_json(&summary)
            }
            Command::TrimLowAbund(a) => {
                // The table's sizing was told by `plan`; its messages are not repeated.
                let options = crate::commands::trim_low_abund::options(a, &mut bare_ctx(&RunContext::new()))?;
                let decisions = ShardedDecisions::new(client, shards.local, remote, batch_kmers)?;
                summary_json(&trim_low_abund::run_sharded(&options, decisions, run)?)
            }
            Command::FilterAbundSingle(a) => {
                let params = a.counting.fixed_params(a.filter.force);
                let limit = FpLimit::of(filter_abund::MAX_FP_RATE, &params);
                count_input(&mut shards, remote, &a.input, batch_kmers, Some(&limit), run)?;
                filter_abund::counted(client, client.n_unique_kmers(), &params, run)?;
                let decisions = ShardedDecisions::new(client, shards.local, remote, batch_kmers)?;
                let mut summary = filter_abund::run_sharded(&[a.input], &a.filter.params(), decisions, run)?;
                summary.unique_kmers = client.n_unique_kmers();
                summary_json(&summary)
            }
            Command::FilterAbund(a) => {
                let decisions = ShardedDecisions::new(client, shards.local, remote, batch_kmers)?;
                summary_json(&filter_abund::run_sharded(&a.inputs, &a.filter.params(), decisions, run)?)
            }
            Command::AbundanceDistSingle(a) => {
                count_input(&mut shards, remote, &a.seqs, batch_kmers, None, run)?;
                let decisions = ShardedDecisions::new(client, shards.local, remote, batch_kmers)?;
                let output = a.histogram.output(&a.output);
                let savegraph = a.savegraph.as_ref();
                let summary = abundance_dist::run_single_sharded(&a.seqs, &output, savegraph, decisions, run)?;
                let mut ctx = bare_ctx(run);
                ctx.info(format_args!("Total number of unique k-mers: {}", summary.unique_kmers));
                a.run.report(&mut ctx, summary.tally);
                summary_json(&summary)
            }
            _ => return Ok(None),
        }?;
        saving.into_iter().for_each(|line| run.info(line));
        Ok(Some(summary))
    })
}

/// Runs the sharded `normalize` command line `argv` (program name first) within `run`: the
/// one-process run ([`kmerflow_core::ops::normalize::run_on`]: its messages, progress passes,
/// checks, histograms and outputs), each pass's table made on the shards by `tables`; returns
/// its summary.
pub fn normalize(argv: &[OsString], run: &RunContext, tables: &mut dyn Tables) -> Result<Value, CliError> {
    on_shards(argv, run, |command| {
        let Command::Normalize(a) = command else { return Ok(None) };
        let options = normalize::options(a, run);
        summary_json(&kmerflow_core::ops::normalize::run_on(&options, tables, run)?).map(Some)
    })
}

/// Counts the reads of `input` on the table `shards` (`remote` as for [`run_command`]) in batches
/// of `batch_kmers` k-mers, stopping once over `limit` when given.
fn count_input(
    shards: &mut dyn ShardedTable,
    remote: &mut dyn RemoteShards,
    input: &String,
    batch_kmers: usize,
    limit: Option<&FpLimit>,
    run: &RunContext,
) -> kmerflow_core::Result<()> {
    run.progress().begin_pass("counting");
    count::count_sharded(std::slice::from_ref(input), shards, remote, batch_kmers, limit, run).map(drop)
}

/// Parses the sharded command line `argv` (program name first), sets `run`'s threads and
/// runs `command` on the parsed command: its summary, `None` when the command is not one it
/// runs (a usage error). A failure is the native command's error.
fn on_shards(
    argv: &[OsString],
    run: &RunContext,
    command: impl FnOnce(Command) -> kmerflow_core::Result<Option<Value>>,
) -> Result<Value, CliError> {
    let Some(Parsed { cli, .. }) = parse(argv)? else { return Ok(Value::Null) };
    let name = cli.command.name();
    run.set_threads(cli.command.settings().threads.unwrap_or_else(kmerflow_core::pipeline::available_threads));
    match command(cli.command) {
        Ok(Some(summary)) => Ok(summary),
        Ok(None) => Err(usage_error(name, ErrorKind::InvalidSubcommand, format!("{name} has no such sharded run"))),
        Err(e) => Err(run_failure(name, run, e)),
    }
}

/// The terminal of the sharded command line `argv` (program name first): quiet with `-q`, its
/// progress line (on a terminal) started and fed by the contexts that read the run's inputs
/// ([`RunContext::build_showing_progress`] of [`Terminal::run`]), its clock started `elapsed`
/// ago (when the run began: its plan, `-M auto`'s sizing pass included, as the one-process
/// run's resource line counts it); `None` for a help, version or `--info` request.
pub fn terminal(argv: &[OsString], elapsed: Duration) -> Result<Option<Terminal>, CliError> {
    let Some(Parsed { cli, .. }) = parse(argv)? else { return Ok(None) };
    let terminal = Terminal::new(argv, cli.command.settings().quiet, CancelToken::new()).begun_before(elapsed);
    terminal.console().start_progress(cli.command.name(), terminal.run());
    Ok(Some(terminal))
}

/// Finishes the sharded run of `argv` (program name first) that returned `summary` (the
/// native command's summary fields) after `wall_s` seconds, having written `outputs` and its
/// table's save ([`saved_table`]): writes `load-into-counting`'s `OUT.info` (and `-s` file) and the `--report-json`
/// document; returns the run report, whose `table_sizing` is the plan's (`-M auto`, `-U`) and whose
/// `warnings` are the final checks' (a table above the false-positive warning rate), for the caller to show.
pub fn finish(
    argv: Vec<OsString>,
    summary: Value,
    table_sizing: Value,
    outputs: &[String],
    wall_s: f64,
) -> Result<Value, CliError> {
    let Some(Parsed { cli, parameters }) = parse(&argv)? else { return Ok(Value::Null) };
    let command = cli.command;
    let name = command.name();
    let run = RunContext::new();
    let failed = |e| data_error(name, e);
    let inputs = inputs(&command);
    let outputs: Vec<&String> = outputs.iter().chain(saved_table(&command).0).collect();
    run.set_threads(command.settings().threads.unwrap_or(1));
    // The inputs normalize-by-median skipped with -f were never opened, as in one process.
    let skipped: Vec<&str> =
        summary["skipped_files"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    for input in inputs.iter().filter(|i| *i != "-" && !skipped.contains(&i.as_str())) {
        // Opened to record its size and compression, as a native run's report does.
        kmerflow_core::io::compress::open_input(input, &run).map_err(failed)?;
    }
    for output in &outputs {
        run.files().add_output(output);
    }
    if let Command::LoadIntoCounting(a) = &command {
        let counted =
            count::Summary::deserialize(&summary).map_err(|e| failed(kmerflow_core::Error::invalid(e.to_string())))?;
        count::write_side_files(&a.output, &a.inputs, &counted, a.summary_info.map(Into::into), &run)
            .map_err(failed)?;
    }
    report::warn_full_tables(&summary, &run);
    let mut document = report::Report::started_before(&argv, Duration::from_secs_f64(wall_s.max(0.0)))
        .document(name, parameters, &run, &summary, None);
    document["table_sizing"] = table_sizing;
    if let Some(path) = &command.settings().report_json {
        let written =
            outputs.iter().map(|o| Output::file(o.as_str())).chain([Output::side_file("--report-json", path.as_str())]);
        preflight(&inputs, &written.collect::<Vec<_>>()).map_err(failed)?;
        report::write(path, &document).map_err(failed)?;
    }
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmerflow_core::ops::sizing::TableParams;
    use serde_json::json;

    fn argv(args: &[&str]) -> Vec<OsString> {
        std::iter::once("kmerflow").chain(args.iter().copied()).map(OsString::from).collect()
    }

    /// The command of the command line `argv`.
    fn parsed(argv: &[OsString]) -> Command {
        parse(argv).unwrap().unwrap().cli.command
    }

    /// The hash table sizes of a plan's khmer-layout table.
    fn sizes(plan: &Plan) -> &[u64] {
        match &plan.table.shape {
            Shape::Sized { shape } if plan.table.layout == Layout::Khmer => shape,
            other => panic!("not a khmer table: {other:?}"),
        }
    }

    #[test]
    fn the_plan_carries_the_native_sizes_and_defaults() {
        let counted =
            plan(argv(&["load-into-counting", "-N", "3", "-x", "1000", "--local-cluster", "2", "o.ct", "a.fq"]))
                .unwrap()
                .unwrap();
        let expected: Vec<u64> = kmerflow_core::table::primes::get_n_primes_near_x(3, 1000).unwrap();
        assert_eq!(sizes(&counted), expected);
        assert_eq!(counted.table.ksize, sizing::DEFAULT_K);
        assert_eq!(counted.cluster.cluster.local_cluster, Some(2));
        assert_eq!(counted.cluster.batch_kmers, crate::commands::shard_args::DEFAULT_BATCH_KMERS);
        assert_eq!((counted.command, counted.save.as_deref()), ("load-into-counting", Some("o.ct")));
        assert!(counted.bigcount);
        let memory =
            plan(argv(&["normalize-by-median", "-M", "4e6", "--scheduler", "s.json", "a.fq"])).unwrap().unwrap();
        let expected: Vec<u64> = kmerflow_core::table::primes::get_n_primes_near_x(4, 1_000_000).unwrap();
        assert_eq!(sizes(&memory), expected);
        assert_eq!((memory.command, &memory.save), ("normalize-by-median", &None));
        let trim = argv(&["trim-low-abund", "-N", "3", "-x", "1000", "--local-cluster", "1", "a.fq", "--mate", "b.fq"]);
        assert_eq!(
            (sizes(&plan(trim.clone()).unwrap().unwrap()), inputs(&parsed(&trim))),
            (sizes(&counted), vec!["a.fq".to_string(), "b.fq".to_string()])
        );
        let histogram =
            plan(argv(&["abundance-dist-single", "-M", "4e6", "--local-cluster", "1", "a.fq", "h"])).unwrap().unwrap();
        let params = TableParams { max_memory: Some(4e6), ..TableParams::default() };
        let one_process = sizing::create_countgraph(&params, abundance_dist::SINGLE_MULTIPLIER, &RunContext::new());
        assert_eq!(sizes(&histogram), one_process.unwrap().hashsizes());
    }

    #[test]
    fn the_plan_serializes_flat_with_the_command_named() {
        let args = ["normalize-by-median", "-N", "3", "-x", "1000", "-s", "t.ct", "--local-cluster", "1", "a.fq"];
        let value = serde_json::to_value(plan(argv(&args)).unwrap().unwrap()).unwrap();
        assert_eq!((&value["command"], &value["save"]), (&json!("normalize-by-median"), &json!("t.ct")));
        assert_eq!(value["table"]["layout"], json!("khmer"));
        assert_eq!(value["table"]["shape"].as_array().map(Vec::len), Some(3));
        let filter = ["filter-abund-single", "-N", "3", "-x", "1000", "--local-cluster", "1", "a.fq"];
        let value = serde_json::to_value(plan(argv(&filter)).unwrap().unwrap()).unwrap();
        assert_eq!((&value["command"], &value["save"]), (&json!("filter-abund-single"), &Value::Null));
        assert_eq!(value["messages"][0], json!({"level": "info", "text": "making countgraph"}));
    }

    #[test]
    fn load_into_counting_plans_blocked_shards() {
        let args = ["load-into-counting", "-N", "3", "-x", "1000", "--layout", "blocked", "--local-cluster", "2"];
        let counted = plan(argv(&[&args[..], &["--small-count", "o.kf", "a.fq"]].concat())).unwrap().unwrap();
        assert_eq!(counted.table.layout, Layout::Blocked);
        assert_eq!(counted.table.shape, Shape::Sized { shape: vec![1472, 4, 3] });
        let gz = plan(argv(&[&args[..], &["o.kf.gz", "a.fq"]].concat())).unwrap_err();
        assert_eq!(gz.code, EXIT_DATA);
        assert!(gz.message.contains("drop the .gz"), "{}", gz.message);
        let small = plan(argv(&["load-into-counting", "--small-count", "--local-cluster", "2", "o.ct", "a.fq"]));
        assert!(small.unwrap_err().message.contains("'--small-count'"));
    }

    #[test]
    fn normalize_plans_a_table_a_pass_of_its_layout() {
        for (args, layout) in [
            (&["normalize", "--layout", "khmer", "--local-clus", "1", "-o", "o.fq", "a.fq"][..], Layout::Khmer),
            (&["normalize", "--local-cluster", "1", "-o", "o.fq", "a.fq"], Layout::Blocked),
        ] {
            let planned = plan(argv(args)).unwrap().unwrap();
            assert_eq!((planned.command, &planned.table.shape), ("normalize", &Shape::PerPass {}));
            assert_eq!((planned.table.layout, inputs(&parsed(&argv(args)))), (layout, vec!["a.fq".to_string()]));
            crate::check(argv(args)).unwrap();
        }
        let small = ["normalize", "--layout", "khmer", "--small-count", "--local-cluster", "1", "-o", "o.fq", "a.fq"];
        assert!(crate::check(argv(&small)).unwrap_err().message.contains("'--small-count'"));
    }

    #[test]
    fn usage_errors_are_the_native_ones() {
        for args in [
            &["load-into-counting", "-k", "0", "--local-cluster", "2", "o.ct", "a.fq"][..],
            &["normalize-by-median", "-C", "300", "--local-cluster", "2", "a.fq"],
            &["normalize-by-median", "--shards", "2", "a.fq"],
            &["normalize-by-median", "--local-cluster", "0", "a.fq"],
            &["normalize-by-median", "--local-cluster", "1", "--scheduler", "x", "a.fq"],
            &["normalize-by-median", "--local-cluster", "1", "--shards", "2", "--local-shards", "3", "a.fq"],
        ] {
            let err = plan(argv(args)).unwrap_err();
            assert_eq!(err.code, EXIT_USAGE, "{args:?}: {}", err.message);
        }
    }

    #[test]
    fn flags_without_a_sharded_run_are_named() {
        for (args, flag) in [
            (&["load-into-counting", "--small-count", "--local-cluster", "2", "o.ct", "a.fq"][..], "--small-count"),
            (&["normalize-by-median", "--small-count", "--local-cluster", "2", "a.fq"], "--small-count"),
            (&["abundance-dist-single", "--metrics", "m.json", "--local-cluster", "2", "a.fq", "h"], "--metrics"),
            (&["trim-low-abund", "--batched", "--scheduler", "s.json", "a.fq"], "--batched"),
        ] {
            let err = plan(argv(args)).unwrap_err();
            assert_eq!(err.code, EXIT_USAGE);
            assert!(err.message.contains(&format!("'{flag}'")), "{}", err.message);
        }
    }

    #[test]
    fn every_flag_of_a_sharded_command_is_decided() {
        // A flag added to one of these commands changes its count: decide in `why_not` whether
        // the sharded run has it, then count it here.
        let root = cli_command();
        for (command, n) in [
            ("load-into-counting", 29),
            ("normalize-by-median", 41),
            ("abundance-dist-single", 30),
            ("filter-abund-single", 33),
            ("filter-abund", 24),
            ("normalize", 38),
            ("trim-low-abund", 44),
        ] {
            assert_eq!(root.find_subcommand(command).unwrap().get_arguments().count(), n, "{command}");
        }
    }

    #[test]
    fn the_parser_tells_a_sharded_command_line_in_any_spelling() {
        for args in [
            &["load-into-counting", "--local-clus", "2", "o.ct", "a.fq"][..],
            &["normalize-by-median", "--sched=tcp://127.0.0.1:1", "a.fq"],
            &["trim-low-abund", "a.fq", "--local-cluster=1"],
        ] {
            assert!(requested(&argv(args)), "{args:?}");
        }
        for args in [
            &["load-into-counting", "o.ct", "a.fq"][..],
            &["normalize-by-median", "--local-cluster", "0", "a.fq"],
            &["readstats", "a.fq"],
            &["normalize-by-median", "--", "--local-cluster"],
        ] {
            assert!(!requested(&argv(args)), "{args:?}");
        }
    }

    #[test]
    fn an_output_naming_an_input_is_refused_before_the_cluster_starts() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.fq");
        std::fs::write(&input, "@a\nACGTACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIII\n").unwrap();
        let input = input.to_str().unwrap();
        let dotted = format!("{}/./in.fq", dir.path().display());
        let table = input.strip_suffix(".fq").unwrap();
        std::fs::copy(input, format!("{table}.info")).unwrap();
        let info = format!("{table}.info");
        for args in [
            vec!["load-into-counting", "--local-cluster", "1", input, input],
            vec!["load-into-counting", "--local-cluster", "1", table, &info],
            vec!["load-into-counting", "--local-cluster", "1", &dotted, input],
            vec!["normalize-by-median", "--local-cluster", "1", "-o", input, input],
            vec!["normalize-by-median", "--local-cluster", "1", "-s", input, input],
            vec!["normalize-by-median", "--local-cluster", "1", "-R", input, input],
            vec!["abundance-dist-single", "--local-cluster", "1", "--savegraph", input, input, "h"],
            vec!["filter-abund-single", "--local-cluster", "1", "--savegraph", input, input],
            vec!["filter-abund-single", "--local-cluster", "1", "-o", input, input],
            vec!["trim-low-abund", "--local-cluster", "1", "-s", input, input],
            vec!["load-into-counting", "--local-cluster", "1", "--report-json", input, "o.ct", input],
            vec!["load-into-counting", "--local-cluster", "1", "--html", input, "o.ct", input],
        ] {
            let err = plan(argv(&args)).unwrap_err();
            assert_eq!(err.code, EXIT_DATA, "{args:?}: {}", err.message);
            assert!(err.message.contains("same file as"), "{args:?}: {}", err.message);
        }
    }

    #[test]
    fn this_executable_refuses_sharded_runs() {
        let err = crate::execute(argv(&["load-into-counting", "--local-cluster", "2", "o.ct", "a.fq"])).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
        assert!(err.message.contains("pip install 'kmerflow[dask]'"), "{}", err.message);
        let help = cli_command().find_subcommand_mut("normalize-by-median").unwrap().render_long_help().to_string();
        assert!(help.contains("--scheduler <ADDRESS>") && help.contains("kmerflow[dask]"), "{help}");
    }
}

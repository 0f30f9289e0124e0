//! The R1/R2 flags shared by the commands that keep pairs (see `kmerflow_core::io::mates`):
//! `--mate R2` beside each input, `-O/--mate-output R2_OUT` beside `-o`, `--orphans FILE`.

use clap::Args;
use kmerflow_core::io::MateFiles;

/// R1/R2 inputs and outputs.
#[derive(Args, Debug, Clone, Default)]
pub struct MateArgs {
    /// R2 file of the corresponding input (R1) file: record i of R2 is the mate of record i of
    /// R1, by name; repeat once per input
    #[arg(long, value_name = "R2")]
    pub mate: Vec<String>,
    /// Write kept pairs as R1/R2 files: first mates to -o, second mates to this file
    #[arg(short = 'O', long = "mate-output", value_name = "R2_OUT", requires = "output")]
    pub output2: Option<String>,
    /// With -O: write kept reads whose mate is not kept here (else they are left out and counted)
    #[arg(long, value_name = "FILE", requires = "output2")]
    pub orphans: Option<String>,
}

impl From<MateArgs> for MateFiles {
    fn from(args: MateArgs) -> Self {
        MateFiles { mate: args.mate, output2: args.output2, orphans: args.orphans }
    }
}

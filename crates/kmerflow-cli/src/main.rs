//! The `kmerflow` executable (also installed as a Python console script).

fn main() {
    std::process::exit(kmerflow_cli::run(std::env::args_os().collect()));
}

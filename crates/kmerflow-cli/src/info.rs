//! `--info`: the publications to cite for a command (khmer's citation notice), printed on stderr
//! with exit 0, whatever other arguments are given.

use std::ffi::OsString;

const KHMER: &str = "MR Crusoe et al., 2015. https://doi.org/10.12688/f1000research.6924.1";
const COUNTING: &str = "Q Zhang et al., https://doi.org/10.1371/journal.pone.0101271";
const SEQAN: &str = "A. Döring et al. https://doi.org:80/10.1186/1471-2105-9-11";
const DIGINORM: &str = "CT Brown et al., arXiv:1203.4802 [q-bio.GN]";
const GRAPH: &str = "J Pell et al., https://doi.org/10.1073/pnas.1121464109";
const TRIMMING: &str = "Q Zhang, S Awad, CT Brown, https://doi.org/10.7287/peerj.preprints.890v1";
const HLL: &str = "Irber and Brown. https://doi.org/10.1101/056846";

/// The publications to cite for `command`, as khmer lists them for its script.
pub fn citations(command: &str) -> Vec<&'static str> {
    let extra: &[&str] = match command {
        "abundance-dist" | "filter-abund" => &[COUNTING],
        "abundance-dist-single" | "filter-abund-single" | "load-into-counting" => &[COUNTING, SEQAN],
        "load-graph" => &[GRAPH, SEQAN],
        "partition-graph"
        | "merge-partitions"
        | "annotate-partitions"
        | "extract-partitions"
        | "do-partition"
        | "filter-stoptags"
        | "make-initial-stoptags"
        | "find-knots" => &[GRAPH],
        "normalize-by-median" => &[DIGINORM],
        "trim-low-abund" => &[TRIMMING],
        "unique-kmers" => &[SEQAN, HLL],
        _ => &[],
    };
    std::iter::once(KHMER).chain(extra.iter().copied()).collect()
}

/// The citation notice of `command`.
pub fn notice(command: &str) -> String {
    let mut text = format!(
        "|| This is kmerflow {command} (version {}), a successor of khmer's {command}.py.\n||\n\
         || If you use it in a publication, please cite EACH of the following:\n||\n",
        env!("CARGO_PKG_VERSION")
    );
    for citation in citations(command) {
        text.push_str(&format!("||   * {citation}\n"));
    }
    text.push_str("||\n|| Please see http://khmer.readthedocs.io/en/latest/citations.html for details.\n");
    text
}

/// The command of `argv` (program name first) when its arguments ask for `--info` (before any
/// `--`), so that the notice is printed even where required arguments are missing.
pub fn requested(argv: &[OsString], is_command: impl Fn(&str) -> bool) -> Option<String> {
    let command = argv.get(1)?.to_str().filter(|c| is_command(c))?;
    argv[2..].iter().take_while(|a| *a != "--").any(|a| a == "--info").then(|| command.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notice_lists_the_commands_citations() {
        let text = notice("normalize-by-median");
        assert!(text.contains("f1000research.6924.1") && text.contains("arXiv:1203.4802"), "{text}");
        assert_eq!(citations("readstats").len(), 1);
        assert_eq!(citations("unique-kmers").len(), 3);
    }

    #[test]
    fn info_is_found_before_a_double_dash() {
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let known = |c: &str| c == "readstats";
        assert_eq!(requested(&argv(&["kmerflow", "readstats", "--info"]), known), Some("readstats".into()));
        assert_eq!(requested(&argv(&["kmerflow", "readstats", "--", "--info"]), known), None);
        assert_eq!(requested(&argv(&["kmerflow", "bogus", "--info"]), known), None);
    }
}

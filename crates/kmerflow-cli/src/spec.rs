//! The command definitions as data: for each subcommand, its arguments as clap declares them
//! (long flag, whether it takes a value, may repeat, is positional). Front ends other than the
//! command line (the Python command functions) build their keyword arguments from this, so the
//! flags are declared in one place.

use crate::commands::Command;
use clap::{ArgAction, Subcommand};

/// One argument of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSpec {
    /// clap's id (the field name, e.g. `max_tablesize`).
    pub id: String,
    /// The long flag without `--` (`None` for positional arguments).
    pub long: Option<String>,
    /// True for a positional argument.
    pub positional: bool,
    /// True when the argument takes a value (false for a switch such as `--force`).
    pub takes_value: bool,
    /// True when it may be given several times, or takes several values (positional lists).
    pub repeatable: bool,
    /// True when the command cannot run without it.
    pub required: bool,
    /// The one-line help.
    pub help: String,
    /// The value taken when the argument is not given, as the command line would show it
    /// (`None` for a switch or an argument without one).
    pub default: Option<String>,
}

/// One subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The name typed on the command line (`normalize-by-median`).
    pub name: String,
    /// The one-line description.
    pub about: String,
    /// Its arguments in declaration order (positional ones in their order), without `--help`.
    pub args: Vec<ArgSpec>,
}

/// The definitions of every subcommand, in the order of `kmerflow --help`.
pub fn command_specs() -> Vec<CommandSpec> {
    let mut root = Command::augment_subcommands(clap::Command::new("kmerflow"));
    root.build();
    root.get_subcommands().filter(|c| c.get_name() != "help").map(command_spec).collect()
}

fn command_spec(cmd: &clap::Command) -> CommandSpec {
    let args = cmd
        .get_arguments()
        .filter(|a| {
            !matches!(a.get_action(), ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version)
        })
        .map(|a| {
            let takes_value = a.get_action().takes_values();
            let many_values = a.get_num_args().is_some_and(|n| n.max_values() > 1);
            ArgSpec {
                id: a.get_id().to_string(),
                long: a.get_long().map(str::to_owned),
                positional: a.is_positional(),
                takes_value,
                repeatable: matches!(a.get_action(), ArgAction::Append | ArgAction::Count) || many_values,
                required: a.is_required_set(),
                help: a.get_help().map(|h| h.to_string()).unwrap_or_default(),
                default: takes_value.then(|| default_value(a)).flatten(),
            }
        })
        .collect();
    CommandSpec {
        name: cmd.get_name().to_owned(),
        about: cmd.get_about().map(|h| h.to_string()).unwrap_or_default(),
        args,
    }
}

/// The default value(s) of `arg`, joined by `,`, or `None` when it has none.
fn default_value(arg: &clap::Arg) -> Option<String> {
    let values: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    (!values.is_empty()).then(|| values.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_described() {
        let specs = command_specs();
        assert_eq!(specs.len(), 26);
        let nbm = specs.iter().find(|c| c.name == "normalize-by-median").unwrap();
        let arg = |id: &str| nbm.args.iter().find(|a| a.id == id).unwrap_or_else(|| panic!("{id}"));
        let inputs = arg("inputs");
        assert!(inputs.positional && inputs.repeatable && inputs.required && inputs.long.is_none());
        let cutoff = arg("cutoff");
        assert_eq!(cutoff.long.as_deref(), Some("cutoff"));
        assert!(cutoff.takes_value && !cutoff.repeatable && !cutoff.positional);
        assert!(!arg("paired").takes_value);
        assert!(arg("threads").takes_value && arg("metrics").takes_value);
        assert!(nbm.args.iter().all(|a| a.id != "help"));
        assert_eq!(arg("ksize").default.as_deref(), Some("32"));
        assert_eq!(arg("cutoff").default.as_deref(), Some("20"));
        assert_eq!(arg("paired").default, None);
    }
}

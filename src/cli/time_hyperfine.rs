//! hyperfine's options on `osbench time` that have no osbench option of the
//! same name: those that mean what an osbench option means are taken and
//! turned into it (`-S sh` is `--shell`, `--output inherit` is
//! `--show-output`, `--style nocolor` is `--color never`, `--reference CMD`
//! is a first, baseline command), the others are refused with a message
//! that names the hyperfine option and what osbench offers instead. The
//! short names hyperfine shares with osbench's options (`-p`, `-s`, `-c`,
//! `-m`, `-M`, …) are declared on those options in `time`. Left out:
//! hyperfine's behaviour beyond its options (its outlier warnings, its
//! shell-spawning overhead correction).

use clap::Args;

/// The hyperfine options of `time` that are not osbench's own.
#[derive(Args)]
pub struct HyperfineArgs {
    /// hyperfine's -S/--shell SHELL: `sh` (or /bin/sh) runs the commands with sh -c, as
    /// --shell does; `none` without a shell, the default
    #[arg(short = 'S', value_name = "SHELL")]
    shell_name: Option<String>,
    /// hyperfine's --reference CMD: CMD is timed first, as the baseline of the comparison
    #[arg(long, value_name = "CMD")]
    reference: Option<String>,
    /// hyperfine's --style: auto and full as osbench shows things, basic and nocolor
    /// without colour, color with it, none as --quiet
    #[arg(long, value_name = "TYPE",
          value_parser = ["auto", "basic", "full", "nocolor", "color", "none"])]
    style: Option<String>,
    /// hyperfine's --output: null (the default: /dev/null) or inherit (as --show-output)
    #[arg(long, value_name = "WHERE")]
    output: Option<String>,
    /// hyperfine's --input: null, the default (the commands' standard input is /dev/null)
    #[arg(long, value_name = "WHERE")]
    input: Option<String>,
    /// hyperfine options osbench does not offer, each refused with what to use instead
    #[command(flatten)]
    refused: Refused,
}

/// hyperfine's options with no osbench equivalent, taken only to be
/// refused with a useful message (clap's own would suggest `-- -u`).
#[derive(Args)]
struct Refused {
    #[arg(long = "export-asciidoc", hide = true, value_name = "FILE")]
    export_asciidoc: Option<String>,
    #[arg(long = "export-orgmode", hide = true, value_name = "FILE")]
    export_orgmode: Option<String>,
    #[arg(long, hide = true, value_name = "CMD")]
    conclude: Option<String>,
    #[arg(long, hide = true, value_name = "METHOD")]
    sort: Option<String>,
    #[arg(long = "time-unit", short = 'u', hide = true, value_name = "UNIT")]
    time_unit: Option<String>,
    #[arg(long = "min-benchmarking-time", hide = true, value_name = "SECS")]
    min_benchmarking_time: Option<String>,
}

/// What the hyperfine options set, in osbench's terms.
#[derive(Debug, Default, PartialEq)]
pub struct Taken {
    /// Run the commands with sh -c.
    pub shell: bool,
    /// A baseline command to time before the others.
    pub reference: Option<String>,
    /// Colour forced on or off.
    pub colour: Option<bool>,
    pub quiet: bool,
    pub show_output: bool,
}

impl HyperfineArgs {
    /// The options as osbench's, or an error naming the hyperfine option that
    /// osbench does not offer and what it offers instead.
    pub fn take(&self) -> anyhow::Result<Taken> {
        self.refused.refuse()?;
        let mut taken = Taken {
            reference: self.reference.clone(),
            ..Taken::default()
        };
        match self.shell_name.as_deref() {
            None | Some("none") => {}
            Some("sh" | "/bin/sh") => taken.shell = true,
            Some(other) => anyhow::bail!(
                "hyperfine's -S {other}: osbench runs commands through sh -c (-S sh, --shell) or \
                 without a shell (-S none, the default); for {other}, time `{other} -c '…'` as \
                 the command"
            ),
        }
        match self.style.as_deref() {
            Some("basic" | "nocolor") => taken.colour = Some(false),
            Some("color") => taken.colour = Some(true),
            Some("none") => taken.quiet = true,
            _ => {}
        }
        match self.output.as_deref() {
            None | Some("null") => {}
            Some("inherit") => taken.show_output = true,
            Some(other) => anyhow::bail!(
                "hyperfine's --output {other}: osbench sends the commands' output to /dev/null \
                 (--output null, the default) or lets it through (--output inherit, \
                 --show-output); to keep it in a file, redirect inside the command with --shell"
            ),
        }
        match self.input.as_deref() {
            None | Some("null") => {}
            Some(other) => anyhow::bail!(
                "hyperfine's --input {other}: osbench gives the commands /dev/null as standard \
                 input; to feed them a file, redirect inside the command with --shell \
                 (`--shell 'cmd < {other}'`)"
            ),
        }
        Ok(taken)
    }
}

impl Refused {
    fn refuse(&self) -> anyhow::Result<()> {
        let given = [
            (
                &self.export_asciidoc,
                "--export-asciidoc",
                "the Markdown table (--export-markdown FILE) or CSV (--export-csv FILE)",
            ),
            (
                &self.export_orgmode,
                "--export-orgmode",
                "the Markdown table (--export-markdown FILE) or CSV (--export-csv FILE)",
            ),
            (
                &self.conclude,
                "--conclude",
                "--prepare CMD before every run and --cleanup CMD once after all runs; nothing runs after every run",
            ),
            (
                &self.sort,
                "--sort",
                "commands in the order given, the first the baseline of the comparison",
            ),
            (
                &self.time_unit,
                "--time-unit (-u)",
                "one readable unit per table, chosen from the values",
            ),
            (
                &self.min_benchmarking_time,
                "--min-benchmarking-time",
                "--min-runs N, --max-time SECS and --target-ci PCT",
            ),
        ];
        for (value, option, instead) in given {
            if value.is_some() {
                anyhow::bail!(
                    "hyperfine's {option} is not an osbench option; osbench offers {instead}"
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    fn take(args: &[&str]) -> anyhow::Result<Taken> {
        let cmd = HyperfineArgs::augment_args(clap::Command::new("time"));
        let matches = cmd.try_get_matches_from(std::iter::once(&"time").chain(args))?;
        HyperfineArgs::from_arg_matches(&matches)?.take()
    }

    #[test]
    fn styles_outputs_and_shells_become_osbenchs_options() {
        assert_eq!(take(&["--style", "nocolor"]).unwrap().colour, Some(false));
        assert_eq!(take(&["--style", "basic"]).unwrap().colour, Some(false));
        assert_eq!(take(&["--style", "color"]).unwrap().colour, Some(true));
        assert!(take(&["--style", "none"]).unwrap().quiet);
        assert!(take(&["--style", "bogus"]).is_err());
        assert!(take(&["--output", "inherit"]).unwrap().show_output);
        assert!(take(&["-S", "/bin/sh"]).unwrap().shell);
        assert_eq!(
            take(&["-S", "none", "--style", "full"]).unwrap(),
            Taken::default()
        );
        let reference = take(&["--reference", "make old"]).unwrap().reference;
        assert_eq!(reference.as_deref(), Some("make old"));
    }
}

//! `osbench completions SHELL` and `osbench man [SUBCOMMAND]`: the shell
//! completion script (clap_complete) and the man page in roff (clap_mangen),
//! both generated at run time from the same clap definitions that parse the
//! command line ([`super::command`]), so they never fall behind it. Left out:
//! installing them (README.md's Installation and docs/guide/usage.md say where
//! they go) and a build step that
//! writes them to files.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use clap_complete::Shell;

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// A subcommand whose page to print (osbench-run(1), …); none: osbench(1)
    #[arg(value_name = "SUBCOMMAND")]
    subcommand: Option<String>,
}

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cli = super::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "osbench", &mut script);
    write_stdout(&script)
}

pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let mut cli = super::command();
    // Subcommands' usage lines say `osbench run …` only once built.
    cli.build();
    let page = match &args.subcommand {
        None => cli,
        Some(name) => {
            let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
            let sub = cli.find_subcommand(name).with_context(|| {
                format!(
                    "no subcommand '{name}'; man pages exist for: {}",
                    names.join(", ")
                )
            })?;
            // The page is osbench-run(1), as man(1) and git name subcommand pages.
            let title = format!("osbench-{}", sub.get_name());
            sub.clone()
                .name(title)
                .version(env!("OSBENCH_VERSION_LINE"))
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .context("rendering the man page")?;
    write_stdout(&roff)
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .context("writing to standard output")?;
    Ok(ExitCode::SUCCESS)
}

//! `osbench env`: the environment recorded with every result, as text or as
//! the JSON object documents store. Capturing it is `osbench::env`'s work,
//! the text layout `report::env_text`'s.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use osbench::report;

const DEBUG_WARNING: &str = "osbench: warning: this is a debug build; its timings are not representative \
                             (build with --release: cargo run --release -- ...)";

#[derive(Args)]
pub struct EnvArgs {
    /// Print the JSON object stored as `env` in result documents
    #[arg(long)]
    json: bool,
    /// Capture the system logs too, as `run` and `time` keep them (the text shows their
    /// summary; the JSON holds the compressed archive)
    #[arg(long)]
    logs: bool,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
}

pub fn show_env(args: &EnvArgs, console: super::Console) -> anyhow::Result<ExitCode> {
    let env = osbench::env::environment(args.logs.then(super::save::logs_tree).as_ref());
    if args.json {
        let text = serde_json::to_string_pretty(&env).context("serialising the environment")?;
        println!("{text}");
    } else {
        console.print(&report::env::env_text_within(&env, console.width));
    }
    if cfg!(debug_assertions) {
        super::eprint_wrapped(DEBUG_WARNING);
    }
    Ok(ExitCode::SUCCESS)
}

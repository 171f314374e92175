//! `osbench lava`: a plan file as a LAVA job definition
//! (`osbench::lab::lava`), written as JSON (which is YAML) to a file or
//! standard output, with the boots' order said on standard error. Left
//! out: submitting the job (`lavacli jobs submit FILE` does that).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use osbench::lab::lava::{self, Target};
use osbench::queue::parse_plan_file;

#[derive(Args)]
pub struct LavaArgs {
    /// The plan file (TOML, as `submit` takes it: select or time, args, and a [kernel] or
    /// [boot_rounds] table whose kernel files are URLs or paths the dispatcher can read)
    #[arg(value_name = "PLAN.toml", required_unless_present = "document")]
    plan: Option<PathBuf>,
    /// On a device, in a LAVA test shell (contrib/lava/osbench.yaml): print this result
    /// document between the markers `import --lava` reads, its cases first as `OSBENCH-CASE
    /// ID pass MEDIAN UNIT` lines, instead of writing a job
    #[arg(long, value_name = "FILE", conflicts_with_all = ["plan", "initramfs", "kernel", "output"])]
    document: Option<PathBuf>,
    /// LAVA's device type
    #[arg(long = "device-type", value_name = "NAME", default_value = "qemu")]
    device_type: String,
    /// osbench's initramfs (`osbench guest-image`) as the dispatcher reaches it: a URL or a path
    #[arg(long, value_name = "URL|PATH", required_unless_present = "document")]
    initramfs: Option<String>,
    /// The kernel to boot when the plan names none (a URL or a path)
    #[arg(long, value_name = "URL|PATH")]
    kernel: Option<String>,
    /// The seed of the boots' order (default: a random one, recorded in the job)
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Minutes a boot may take to reach osbench, and minutes a boot's run may take
    #[arg(long = "boot-minutes", value_name = "MIN", default_value_t = 5)]
    boot_minutes: u64,
    #[arg(long = "run-minutes", value_name = "MIN", default_value_t = 30)]
    run_minutes: u64,
    /// The job's name (default: osbench and the plan's id)
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Write the definition to FILE (default: standard output)
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn lava(args: LavaArgs) -> anyhow::Result<ExitCode> {
    if let Some(file) = &args.document {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the result document {}", file.display()))?;
        for line in osbench::lab::console::device_lines(&text)? {
            println!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (Some(plan_file), Some(initramfs)) = (&args.plan, args.initramfs) else {
        anyhow::bail!("give a plan file and --initramfs (or --document FILE on a device)");
    };
    let origin = plan_file.display().to_string();
    let text = std::fs::read_to_string(plan_file)
        .with_context(|| format!("cannot read the plan file {origin}"))?;
    let plan = parse_plan_file(&text, &origin)?;
    osbench::queue::job::refuse_worker_options(&plan.plan.args)?;
    super::submit::check(&plan.plan)?;
    let target = Target {
        device_type: args.device_type,
        kernel: args.kernel,
        initramfs,
        boot_minutes: args.boot_minutes,
        run_minutes: args.run_minutes,
        name: args.name,
    };
    let seed = args.seed.unwrap_or_else(super::seed_from_clock);
    let job = lava::job(&plan, &target, seed)?;
    let yaml = serde_json::to_string_pretty(&job.definition)? + "\n";
    match &args.output {
        Some(file) => std::fs::write(file, yaml)
            .with_context(|| format!("cannot write {}", file.display()))?,
        None => print!("{yaml}"),
    }
    eprintln!("osbench: {} boot(s), seed {seed}:", job.boots.len());
    for b in &job.boots {
        eprintln!(
            "  {}. round {} {}",
            b.step + 1,
            b.round + 1,
            b.names[b.kernel]
        );
    }
    Ok(ExitCode::SUCCESS)
}

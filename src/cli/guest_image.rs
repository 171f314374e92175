//! `osbench guest-image --initramfs OUT`: write the initramfs that boots a
//! virtual machine (QEMU) straight into `osbench agent --init` on its serial
//! console, and print the `--guest` option that runs it. The archive is
//! `osbench::guest::image`'s; this names the file and says how to use it.
//! Left out: the kernel (any stock x86-64 kernel with its serial console
//! built in; docs/guide/configurations-and-guests.md, "QEMU guests").

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use osbench::guest::image;

#[derive(Args)]
pub struct GuestImageArgs {
    /// Write the initramfs (uncompressed cpio) here: this osbench, its shared libraries,
    /// /init → `osbench agent --init`
    #[arg(long, value_name = "FILE")]
    initramfs: PathBuf,
}

pub fn guest_image(args: &GuestImageArgs) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("finding osbench's own executable")?;
    let written = image::write_initramfs(&exe, &args.initramfs)?;
    let out = std::path::absolute(&args.initramfs).unwrap_or(args.initramfs.clone());
    println!(
        "osbench: wrote {} ({:.1} MB: {}, {} shared libraries, /init runs `osbench agent --init`)",
        out.display(),
        written.bytes as f64 / 1e6,
        exe.display(),
        written.libraries.len()
    );
    println!(
        "Boot it as a configuration with its serial port as the channel (VMLINUZ: an x86-64 \
         kernel; -accel kvm where KVM runs stock kernels):"
    );
    println!(
        "  --guest 'vm=command:qemu-system-x86_64 -accel tcg -m 1G -nodefaults -display none \
         -serial stdio -no-reboot -kernel VMLINUZ -initrd {} -append \"console=ttyS0 quiet \
         panic=-1\"'",
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

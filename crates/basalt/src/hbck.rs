//! `basalt hbck`: checks a data directory offline and repairs what the flags ask for.

use std::path::PathBuf;

use basalt_node::env::Env;
use basalt_node::hbck::{self, Repairs};

/// The command's flags.
#[derive(clap::Args, Debug)]
pub struct HbckArgs {
    /// The data directory (no server or shell may have it open).
    #[arg(long, default_value = "./basalt-data")]
    data_dir: PathBuf,
    /// Rebuild a missing or damaged catalog from the tables' descriptor files and the
    /// regions' info files and manifests.
    #[arg(long)]
    fix_catalog: bool,
    /// Rebuild missing or damaged region manifests from the store files on disk.
    #[arg(long)]
    fix_manifests: bool,
    /// Take store files that do not open out of their manifests (the damaged ones are
    /// moved to hbck/ below the data directory), so their regions open without them.
    #[arg(long)]
    sideline_corrupt_files: bool,
    /// Cut a WAL segment damaged in the middle at the damage, keeping the cut bytes beside it.
    #[arg(long)]
    fix_wal: bool,
}

/// Runs the check; the exit code is 0 when nothing is left inconsistent, 1 otherwise.
///
/// # Errors
/// The directory is in use or unreadable.
pub fn run(args: &HbckArgs) -> anyhow::Result<i32> {
    let repairs = Repairs {
        fix_catalog: args.fix_catalog,
        fix_manifests: args.fix_manifests,
        sideline_corrupt_files: args.sideline_corrupt_files,
        fix_wal: args.fix_wal,
    };
    let report = hbck::run(&Env::default(), &args.data_dir, repairs)?;
    for f in &report.findings {
        let status = match (f.problem, f.fixed) {
            (true, true) => "REPAIRED",
            (true, false) => "ERROR",
            (false, _) => "INFO",
        };
        println!("{status} {}: {}", f.kind, f.detail);
    }
    let problems = report.findings.iter().filter(|f| f.problem).count();
    println!(
        "Checked {} tables, {} regions, {} store files, {} WAL segments: {problems} inconsistencies, {} repaired, {} remaining",
        report.tables,
        report.regions,
        report.store_files,
        report.wal_segments,
        problems - report.unresolved(),
        report.unresolved()
    );
    if report.unresolved() > 0 {
        println!("Run again with the --fix-* flags named in `basalt hbck --help` to repair them.");
    }
    Ok(i32::from(report.unresolved() > 0))
}

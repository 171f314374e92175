//! Energy from RAPL through the powercap sysfs interface:
//! `/sys/class/powercap/intel-rapl:*` zones (packages) and their sub-zones
//! (`core`, `uncore`, `dram`), read around each sample like the counters.
//!
//! Each zone's `energy_uj` is a cumulative microjoule counter that wraps to
//! zero after `max_energy_range_uj`; a reading lower than the previous one
//! is a wrap. RAPL energy is per package, not per process: everything the
//! machine does during a sample is in it. The powercap files are readable by
//! root only (since the 2020 PLATYPUS fix). Left out: the perf `power` PMU
//! (on this VM kind it opened but read 0 J) and AMD's `amd_energy` hwmon.

pub use crate::document::EnergyDomain;
use crate::env::probe::Sys;

/// The reason recorded when the machine has no powercap at all.
pub const NO_POWERCAP: &str = "unavailable: no powercap";

/// One RAPL zone.
#[derive(Debug, Clone, PartialEq)]
struct Zone {
    /// `package-0`, `package-0/core`, …
    name: String,
    /// Directory name under the powercap root (`intel-rapl:0:1`).
    dir: String,
    max_range_uj: u64,
}

/// The RAPL zones of a powercap tree.
#[derive(Debug, Clone)]
pub struct Rapl {
    sys: Sys,
    zones: Vec<Zone>,
}

impl Rapl {
    /// The zones under `sys`'s `/sys/class/powercap`, or why there are none usable.
    pub fn open(sys: &Sys) -> Result<Self, String> {
        const ROOT: &str = "/sys/class/powercap";
        let names = sys.list(ROOT).map_err(|_| NO_POWERCAP.to_string())?;
        let mut zones = Vec::new();
        for dir in names.iter().filter(|n| n.starts_with("intel-rapl:")) {
            let read = |f: &str| sys.read(&format!("{ROOT}/{dir}/{f}"));
            let Ok(own_name) = read("name") else {
                continue;
            };
            // intel-rapl:0:1 is a sub-zone of intel-rapl:0: prefix its parent's name.
            let name = match dir.rsplit_once(':') {
                Some((parent, _)) if parent.matches(':').count() >= 1 => {
                    let parent_name = sys
                        .read(&format!("{ROOT}/{parent}/name"))
                        .unwrap_or_else(|_| parent.to_string());
                    format!("{parent_name}/{own_name}")
                }
                _ => own_name,
            };
            read("energy_uj").map_err(|why| {
                format!("unavailable: {why} (RAPL energy is readable by root only)")
            })?;
            let max_range_uj = read("max_energy_range_uj")
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| format!("unavailable: no max_energy_range_uj for {dir}"))?;
            zones.push(Zone {
                name,
                dir: dir.clone(),
                max_range_uj,
            });
        }
        if zones.is_empty() {
            return Err(format!("unavailable: no intel-rapl zone under {ROOT}"));
        }
        zones.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self {
            sys: sys.clone(),
            zones,
        })
    }

    /// The zones' names, in the order readings list them.
    pub fn domains(&self) -> Vec<String> {
        self.zones.iter().map(|z| z.name.clone()).collect()
    }

    /// Every zone's `energy_uj` now; `None` if any could not be read.
    pub fn read(&self) -> Option<Vec<u64>> {
        self.zones
            .iter()
            .map(|z| {
                self.sys
                    .read(&format!("/sys/class/powercap/{}/energy_uj", z.dir))
                    .ok()?
                    .parse()
                    .ok()
            })
            .collect()
    }

    /// Joules per zone between two readings, wrap-around included.
    pub fn joules(&self, before: &[u64], after: &[u64]) -> Vec<f64> {
        self.zones
            .iter()
            .zip(before.iter().zip(after))
            .map(|(z, (&b, &a))| delta_uj(b, a, z.max_range_uj) as f64 / 1e6)
            .collect()
    }
}

/// Microjoules from `before` to `after` on a counter that wraps to 0 after `max_range_uj`.
pub fn delta_uj(before: u64, after: u64, max_range_uj: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        max_range_uj.saturating_sub(before) + after
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn zone(root: &Path, dir: &str, name: &str, energy: u64, max: u64) {
        let d = root.join("sys/class/powercap").join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
        std::fs::write(d.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
    }

    fn set(root: &Path, dir: &str, energy: u64) {
        let p = root.join("sys/class/powercap").join(dir).join("energy_uj");
        std::fs::write(p, format!("{energy}\n")).unwrap();
    }

    #[test]
    fn no_powercap_says_so() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Rapl::open(&Sys::at(dir.path())).unwrap_err(), NO_POWERCAP);
        std::fs::create_dir_all(dir.path().join("sys/class/powercap/intel-rapl")).unwrap();
        let err = Rapl::open(&Sys::at(dir.path())).unwrap_err();
        assert!(err.contains("no intel-rapl zone"), "{err}");
    }

    #[test]
    fn deltas_wrap_around_and_cover_several_domains() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        zone(
            root,
            "intel-rapl:0",
            "package-0",
            1_000_000,
            262_143_328_850,
        );
        zone(root, "intel-rapl:0:0", "core", 500, 262_143_328_850);
        zone(
            root,
            "intel-rapl:1",
            "package-1",
            262_143_000_000,
            262_143_328_850,
        );
        std::fs::create_dir_all(root.join("sys/class/powercap/intel-rapl")).unwrap(); // control type: skipped
        let rapl = Rapl::open(&Sys::at(root)).unwrap();
        assert_eq!(rapl.domains(), ["package-0", "package-0/core", "package-1"]);
        let before = rapl.read().unwrap();
        set(root, "intel-rapl:0", 3_500_000); // +2.5 J
        set(root, "intel-rapl:0:0", 1_000_500); // +1 J
        set(root, "intel-rapl:1", 671_150); // wrapped: 328 850 + 671 150 = 1 000 000 µJ
        let after = rapl.read().unwrap();
        let j = rapl.joules(&before, &after);
        assert_eq!(j, [2.5, 1.0, 1.0]);
    }

    #[test]
    fn delta_arithmetic() {
        assert_eq!(delta_uj(10, 25, 100), 15);
        assert_eq!(delta_uj(90, 5, 100), 15);
        assert_eq!(delta_uj(7, 7, 100), 0);
    }

    #[test]
    fn unreadable_energy_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("sys/class/powercap/intel-rapl:0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), "package-0\n").unwrap();
        let err = Rapl::open(&Sys::at(dir.path())).unwrap_err();
        assert!(
            err.starts_with("unavailable: no /sys/class/powercap/intel-rapl:0/energy_uj"),
            "{err}"
        );
    }
}

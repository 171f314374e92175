//! The PCI devices kept with the system logs, read from sysfs
//! (`/sys/bus/pci/devices/*/{vendor,device,subsystem_vendor,subsystem_device,class,revision}`
//! and the `driver` link's name), as `lspci -nk` shows them but with no
//! program run; and the devices that differ between environments (added,
//! removed, another driver bound). Left out: BARs, IRQs, link speeds, the
//! names of vendors and devices (`lspci`'s pci.ids database).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::probe::Sys;

/// Where sysfs lists the PCI devices.
const DEVICES: &str = "/sys/bus/pci/devices";

/// One PCI function as sysfs shows it; hex values without `0x`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciDevice {
    /// Domain:bus:device.function (`0000:00:01.0`).
    pub slot: String,
    /// Vendor:device (`1af4:1045`), as `lspci -n` shows it.
    pub id: String,
    /// Subsystem vendor:device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsystem: Option<String>,
    /// Class code (`020000`: an Ethernet controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The bound driver's name; absent: none is bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
}

/// The devices of the tree `sys`, by slot; why not when it has no PCI bus.
/// A device whose vendor or device cannot be read is left out.
pub fn capture(sys: &Sys) -> Result<Vec<PciDevice>, String> {
    let slots = sys.list(DEVICES).map_err(|why| {
        format!(
            "{why}: no PCI bus here (a Firecracker microVM or a UML guest has none) or /sys is \
             not mounted"
        )
    })?;
    Ok(slots.iter().filter_map(|slot| device(sys, slot)).collect())
}

fn device(sys: &Sys, slot: &str) -> Option<PciDevice> {
    let hex = |file: &str| {
        let text = sys.read(&format!("{DEVICES}/{slot}/{file}")).ok()?;
        Some(text.trim_start_matches("0x").to_string())
    };
    let pair = |a: &str, b: &str| Some(format!("{}:{}", hex(a)?, hex(b)?));
    let driver = std::fs::read_link(sys.path(&format!("{DEVICES}/{slot}/driver"))).ok();
    Some(PciDevice {
        slot: slot.to_string(),
        id: pair("vendor", "device")?,
        subsystem: pair("subsystem_vendor", "subsystem_device"),
        class: hex("class"),
        revision: hex("revision"),
        driver: driver.and_then(|d| Some(d.file_name()?.to_string_lossy().into_owned())),
    })
}

/// Slot → what the diff compares of a device: its id and driver
/// (`1af4:1045 virtio-pci`, `8086:0d57 no driver`).
pub fn by_slot(devices: &[PciDevice]) -> BTreeMap<String, String> {
    devices
        .iter()
        .map(|d| {
            let driver = d.driver.as_deref().unwrap_or("no driver");
            (d.slot.clone(), format!("{} {driver}", d.id))
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Puts device `slot` (`vendor`, `device` as sysfs writes them, `0x8086`)
    /// into the fake tree under `root`, its driver link when `driver` is given.
    pub(in crate::env) fn put_device(
        root: &std::path::Path,
        slot: &str,
        (vendor, device): (&str, &str),
        driver: Option<&str>,
    ) {
        let at = root.join(format!("sys/bus/pci/devices/{slot}"));
        std::fs::create_dir_all(&at).unwrap();
        for (file, value) in [
            ("vendor", vendor),
            ("device", device),
            ("subsystem_vendor", "0x1af4"),
            ("subsystem_device", "0x1100"),
            ("class", "0x020000"),
            ("revision", "0x01"),
        ] {
            std::fs::write(at.join(file), format!("{value}\n")).unwrap();
        }
        if let Some(driver) = driver {
            let target = format!("../../../../bus/pci/drivers/{driver}");
            std::os::unix::fs::symlink(target, at.join("driver")).unwrap();
        }
    }

    #[test]
    fn devices_are_read_from_sysfs_with_their_drivers() {
        let dir = tempfile::tempdir().unwrap();
        put_device(dir.path(), "0000:00:10.0", ("0x8086", "0x0d57"), None);
        let virtio = Some("virtio-pci");
        put_device(dir.path(), "0000:00:02.0", ("0x1af4", "0x1041"), virtio);
        let devices = capture(&Sys::at(dir.path())).unwrap();
        assert_eq!(
            devices[0],
            PciDevice {
                slot: "0000:00:02.0".into(),
                id: "1af4:1041".into(),
                subsystem: Some("1af4:1100".into()),
                class: Some("020000".into()),
                revision: Some("01".into()),
                driver: Some("virtio-pci".into()),
            }
        );
        assert_eq!(devices[1].driver, None);
        assert_eq!(
            by_slot(&devices).into_values().collect::<Vec<_>>(),
            ["1af4:1041 virtio-pci", "8086:0d57 no driver"]
        );
    }

    #[test]
    fn a_tree_without_a_pci_bus_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let why = capture(&Sys::at(dir.path())).unwrap_err();
        assert!(
            why.contains("no /sys/bus/pci/devices") && why.contains("no PCI bus"),
            "{why}"
        );
    }
}

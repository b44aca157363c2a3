//! Which GPUs render a job: `--devices` on the command line and `film { devices … }` in a
//! scene, as written; `gpu::context::resolve_devices` matches them against the adapters found.

/// The most entries a device list may name (a list is opened device by device, so its length
/// bounds the work and memory of opening it).
pub const MAX_DEVICE_ENTRIES: usize = 16;

/// The devices a job renders on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceList {
    /// Every discrete GPU on the backend of the first one found; with none, the one adapter
    /// that `--device` picks alone (which may be the CPU backend under `--device auto`).
    #[default]
    Auto,
    /// Every adapter found on the searched backends, software ones included.
    All,
    /// These adapters, in this order. An index may repeat: each entry opens a logical device
    /// of its own (two on one adapter is how the tests exercise several devices).
    List(Vec<DeviceChoice>),
}

/// One entry of a device list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The adapter with this index in `caustica info --gpu`.
    Index(usize),
    /// Every adapter whose name contains this text, ignoring case.
    Name(String),
}

impl DeviceList {
    /// Parses `auto`, `all`, or a comma-separated list of indices and name fragments
    /// (`0,1`, `H200`, `0,0`). The error says what was expected.
    pub fn parse(text: &str) -> Result<DeviceList, String> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("auto") {
            return Ok(DeviceList::Auto);
        }
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(DeviceList::All);
        }
        let entries: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        if entries.len() > MAX_DEVICE_ENTRIES {
            return Err(format!(
                "a device list names at most {MAX_DEVICE_ENTRIES} devices, this one {}",
                entries.len()
            ));
        }
        let mut list = Vec::with_capacity(entries.len());
        for entry in entries {
            if entry.is_empty() {
                return Err(format!(
                    "bad device list \"{text}\": expected auto, all, or indices and names \
                     separated by commas (see caustica info --gpu)"
                ));
            }
            list.push(match entry.parse::<usize>() {
                Ok(index) => DeviceChoice::Index(index),
                Err(_) => DeviceChoice::Name(entry.to_string()),
            });
        }
        Ok(DeviceList::List(list))
    }
}

impl std::fmt::Display for DeviceList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceList::Auto => write!(f, "auto"),
            DeviceList::All => write!(f, "all"),
            DeviceList::List(entries) => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|e| match e {
                        DeviceChoice::Index(i) => i.to_string(),
                        DeviceChoice::Name(n) => n.clone(),
                    })
                    .collect();
                write!(f, "{}", parts.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_take_auto_all_indices_and_names() {
        assert_eq!(DeviceList::parse(" AUTO ").unwrap(), DeviceList::Auto);
        assert_eq!(DeviceList::parse("all").unwrap(), DeviceList::All);
        assert_eq!(
            DeviceList::parse("0, 1,H200").unwrap(),
            DeviceList::List(vec![
                DeviceChoice::Index(0),
                DeviceChoice::Index(1),
                DeviceChoice::Name("H200".into())
            ])
        );
        assert_eq!(
            DeviceList::parse("0,0").unwrap().to_string(),
            "0,0",
            "an index may repeat"
        );
    }

    #[test]
    fn empty_entries_and_overlong_device_lists_are_refused() {
        assert!(DeviceList::parse("")
            .unwrap_err()
            .contains("expected auto, all"));
        assert!(DeviceList::parse("0,,1").is_err());
        let long = vec!["0"; MAX_DEVICE_ENTRIES + 1].join(",");
        assert!(DeviceList::parse(&long).unwrap_err().contains("at most 16"));
        let most = vec!["0"; MAX_DEVICE_ENTRIES].join(",");
        assert!(DeviceList::parse(&most).is_ok());
    }
}

//! The placement policy of `--pin` (and of a configuration's `pin`), as it
//! is typed once for the command line, experiment files, documents and the
//! agent protocol: "none", "same" or "spread". What each means, and placing
//! tasks by it, is `measure::placement`'s.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A placement policy, as given to `--pin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pin {
    /// The scheduler decides.
    #[default]
    None,
    /// Every task on one CPU.
    Same,
    /// Task i on the i-th allowed CPU, round robin.
    Spread,
}

impl Pin {
    pub const ALL: [Pin; 3] = [Pin::None, Pin::Same, Pin::Spread];

    pub fn as_str(self) -> &'static str {
        match self {
            Pin::None => "none",
            Pin::Same => "same",
            Pin::Spread => "spread",
        }
    }
}

impl FromStr for Pin {
    type Err = String;

    /// The policy called `name`, or an error naming the three there are.
    fn from_str(name: &str) -> Result<Pin, String> {
        Pin::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| format!("'{name}' is not one of none, same, spread"))
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy equals its name (`series.pin == "same"`).
impl PartialEq<&str> for Pin {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for pin in Pin::ALL {
            assert_eq!(pin.as_str().parse::<Pin>(), Ok(pin));
            let json = serde_json::to_string(&pin).unwrap();
            assert_eq!(json, format!("\"{pin}\""));
            assert_eq!(serde_json::from_str::<Pin>(&json).unwrap(), pin);
        }
        assert_eq!(
            "both".parse::<Pin>(),
            Err("'both' is not one of none, same, spread".to_string())
        );
    }
}

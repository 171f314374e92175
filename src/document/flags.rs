//! The words a series and a change are flagged with, typed once: a series'
//! noise flags ([`NoiseFlag`], written `high-cv`, `bimodal`, `interrupted`,
//! `failed` as documents always had them) and the direction of a change
//! ([`Direction`], written `slower` or `faster` in the store's change points).
//! A flag this osbench does not know (from another version's document) is
//! kept as it was written. Left out: what is flagged when (the round loop's
//! and the sweep's) and how a flag is shown (the reports').

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a series' median may not tell the whole story.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum NoiseFlag {
    /// Coefficient of variation above 10 %.
    HighCv,
    /// Two clusters of samples.
    Bimodal,
    /// Fewer samples than asked for: a stop signal cut the case short.
    Interrupted,
    /// An error stopped the case after these samples.
    Failed,
    /// A background load did not run throughout the case (it could not
    /// start, or it ended early): some samples may have been taken unloaded.
    LoadFailed,
    /// Written by another osbench: kept as it was.
    Other(String),
}

impl NoiseFlag {
    pub fn as_str(&self) -> &str {
        match self {
            Self::HighCv => "high-cv",
            Self::Bimodal => "bimodal",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
            Self::LoadFailed => "load-failed",
            Self::Other(word) => word,
        }
    }

    /// Whether the case was cut short (interrupted, or failed part-way).
    pub fn cut_short(&self) -> bool {
        matches!(self, Self::Interrupted | Self::Failed)
    }
}

impl From<String> for NoiseFlag {
    fn from(word: String) -> Self {
        match word.as_str() {
            "high-cv" => Self::HighCv,
            "bimodal" => Self::Bimodal,
            "interrupted" => Self::Interrupted,
            "failed" => Self::Failed,
            "load-failed" => Self::LoadFailed,
            _ => Self::Other(word),
        }
    }
}

impl From<&str> for NoiseFlag {
    fn from(word: &str) -> Self {
        Self::from(word.to_string())
    }
}

impl From<NoiseFlag> for String {
    fn from(flag: NoiseFlag) -> Self {
        flag.as_str().to_string()
    }
}

impl fmt::Display for NoiseFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which way a change went, for a time-like quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Slower,
    Faster,
}

impl Direction {
    /// The direction of a change that is `slower` or not.
    pub fn of(slower: bool) -> Self {
        if slower { Self::Slower } else { Self::Faster }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Slower => "slower",
            Self::Faster => "faster",
        }
    }

    /// The direction a stored word names; `None` for any other word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "slower" => Some(Self::Slower),
            "faster" => Some(Self::Faster),
            _ => None,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_written_as_documents_always_had_them_and_unknown_ones_are_kept() {
        let flags: Vec<NoiseFlag> =
            serde_json::from_str(r#"["high-cv","bimodal","interrupted","failed","drift"]"#)
                .unwrap();
        assert_eq!(
            flags,
            [
                NoiseFlag::HighCv,
                NoiseFlag::Bimodal,
                NoiseFlag::Interrupted,
                NoiseFlag::Failed,
                NoiseFlag::Other("drift".into())
            ]
        );
        let back = serde_json::to_string(&flags).unwrap();
        assert_eq!(
            back,
            r#"["high-cv","bimodal","interrupted","failed","drift"]"#
        );
        assert!(flags[2].cut_short() && flags[3].cut_short() && !flags[0].cut_short());
    }

    #[test]
    fn a_direction_reads_back_what_it_writes() {
        for d in [Direction::Slower, Direction::Faster] {
            assert_eq!(Direction::parse(d.as_str()), Some(d));
        }
        assert_eq!(Direction::of(true), Direction::Slower);
        assert_eq!(Direction::parse("sideways"), None);
    }
}

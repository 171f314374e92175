//! The rows a stored document is indexed by, derived from the document
//! itself: its series (one row per case), its `--meta` pairs, the key of
//! its experiment (the configurations' names and a digest) and the
//! fingerprint of its text. Both the insert path ([`super::queries`]) and the
//! schema's upgrades ([`super::migrations`], which re-index stored documents)
//! write them; neither owns the other. Left out: the SQL dialects (`super::sql`).

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::document::DEFAULT_CONFIG;
use crate::error::Result;

use super::sql::{Conn, Param};

/// Most series rows one statement inserts (8 parameters each, far below
/// either back end's limit).
const SERIES_PER_INSERT: usize = 100;

/// Adds the `series` rows of run `id` from its document (several rows per
/// statement: one round trip to a server for a document's series).
pub(super) fn index_series<C: Conn + ?Sized>(conn: &mut C, id: i64, doc: &Value) -> Result<()> {
    let series = doc["series"].as_array().map_or(&[][..], Vec::as_slice);
    let rows: Vec<[Param; 8]> = series
        .iter()
        .enumerate()
        .map(|(position, s)| {
            let text = |key: &str| Param::Text(Some(s[key].as_str().unwrap_or("").to_string()));
            [
                Param::Int(id),
                Param::Int(position as i64),
                text("bench"),
                text("case"),
                s["config"].as_str().unwrap_or(DEFAULT_CONFIG).into(),
                text("unit"),
                Param::Int(s["summary"]["n"].as_i64().unwrap_or(0)),
                Param::Float(s["summary"]["median"].as_f64().unwrap_or(f64::NAN)),
            ]
        })
        .collect();
    for chunk in rows.chunks(SERIES_PER_INSERT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|r| {
                let n: Vec<String> = (1..=8).map(|c| format!("${}", r * 8 + c)).collect();
                format!("({})", n.join(", "))
            })
            .collect();
        conn.execute(
            &format!(
                "INSERT INTO series (run_id, position, bench, case_name, config, unit, n, median)
                 VALUES {}",
                values.join(", ")
            ),
            &chunk.concat(),
        )?;
    }
    Ok(())
}

/// The experiment of a document (JSON) with configurations: their names in
/// order and a digest of everything that defines them (set-up, tear-down,
/// environment, parameters, placement, guest), e.g. `a,b #1f0c3a9e`; empty
/// without configurations. Runs of one experiment share it; a configuration
/// `a` of another experiment has another.
pub fn experiment_key(doc: &Value) -> String {
    let Some(configs) = doc["run"]["configs"].as_array().filter(|c| !c.is_empty()) else {
        return String::new();
    };
    let names: Vec<&str> = configs.iter().filter_map(|c| c["name"].as_str()).collect();
    let digest = Sha256::digest(Value::Array(configs.clone()).to_string().as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{} #{hex}", names.join(","))
}

/// Adds the `run_meta` rows of run `id` from its document's `run.meta`.
pub(super) fn index_meta<C: Conn + ?Sized>(conn: &mut C, id: i64, doc: &Value) -> Result<()> {
    let Some(meta) = doc["run"]["meta"].as_object() else {
        return Ok(());
    };
    for (name, value) in meta {
        let Some(value) = value.as_str() else {
            continue;
        };
        conn.execute(
            "INSERT INTO run_meta (run_id, name, value) VALUES ($1, $2, $3)",
            &[Param::Int(id), name.as_str().into(), value.into()],
        )?;
    }
    Ok(())
}

/// The SHA-256 (hex) of the JSON `text` with keys sorted and no spaces, so
/// equal documents have equal fingerprints however they were written.
pub(super) fn fingerprint(text: &str) -> String {
    let canonical =
        serde_json::from_str::<Value>(text).map_or_else(|_| text.to_string(), |v| v.to_string());
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

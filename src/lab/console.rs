//! A lab boot's result document on the device's serial console, both ways:
//! what the guest prints after its run (marker lines, the document gzipped
//! and base64-encoded in numbered chunks, then its digest) and what
//! `osbench import --lava` cuts back out of a LAVA job's log (`log.yaml`,
//! or a console captured as plain text). Each boot is named by a
//! [`LabBoot`]: the plan's id, the boot's step, round and kernel, and the
//! schedule's seed, so that a resubmitted job is recognised and a boot
//! that never printed is named.
//!
//! Left out: LAVA's results API and attachments (the console is the one
//! channel every device type has), and any repair of a damaged chunk: a
//! document cut short or garbled is missing, and said so.

use std::io::{Read, Write};

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::document::Document;
use crate::error::{Error, Result};

/// The kernel command line's word (`osbench_lava=…`) that hands a boot to
/// the guest's init: a word with `=` and no `.` reaches init as this
/// environment variable.
pub const ENV: &str = "osbench_lava";

/// Marker words (each starts a console line).
const START: &str = "OSBENCH-LAVA-START";
const END: &str = "OSBENCH-LAVA-END";
const BOOT: &str = "OSBENCH-BOOT";
const CASE: &str = "OSBENCH-CASE";
const CHUNK: &str = "OSBENCH-DOC";
const DIGEST: &str = "OSBENCH-DOC-END";
const FAILED: &str = "OSBENCH-FAILED";

/// Base64 characters per chunk line (well under any console's line limit).
const CHUNK_CHARS: usize = 512;

/// One boot of a lab job: what the guest runs and how its document is named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabBoot {
    /// The plan's id (a digest of the plan, its kernels and the seed).
    pub plan: String,
    /// Boot number in the job (0-based), its round (0-based) and kernel (an index into `names`).
    pub step: usize,
    pub round: usize,
    pub kernel: usize,
    /// The kernels' names (their configurations in the merged document).
    pub names: Vec<String>,
    /// Rounds and the schedule's seed: every boot of the job follows from them.
    pub rounds: usize,
    pub seed: u64,
    /// `osbench` arguments of the run (`run …` or `time …`).
    pub argv: Vec<String>,
}

impl LabBoot {
    /// The boot's id, stored with its run (`lava_boot`): the same boot of a
    /// resubmitted job has the same id.
    pub fn id(&self) -> String {
        format!(
            "{}-s{}-r{}-{}",
            self.plan,
            self.step + 1,
            self.round + 1,
            self.names[self.kernel]
        )
    }

    /// The value of the [`ENV`] word: the boot as base64url JSON (no spaces, quotes or braces).
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("a lab boot always serialises");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// The boot from an [`ENV`] value.
    pub fn decode(word: &str) -> Result<Self> {
        let bad = |why: String| {
            Error::Lab(format!(
                "{ENV}={}…: not a boot osbench lava made ({why}); generate the job again with \
                 this osbench",
                word.chars().take(16).collect::<String>()
            ))
        };
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(word.trim())
            .map_err(|e| bad(e.to_string()))?;
        let boot: Self = serde_json::from_slice(&json).map_err(|e| bad(e.to_string()))?;
        if boot.kernel >= boot.names.len() || boot.argv.is_empty() {
            return Err(bad("its kernel or its command is missing".into()));
        }
        Ok(boot)
    }
}

/// The console lines a guest prints for `boot` after its run: `document`
/// (its JSON text) or, on an error, the error; the test cases LAVA
/// records (each series' median and unit) come first.
pub fn lines(boot: &LabBoot, document: std::result::Result<&str, String>) -> Vec<String> {
    let id = boot.id();
    let mut out = vec![format!("{START} {id}"), format!("{BOOT} {}", boot.encode())];
    match document {
        Ok(text) => {
            if let Ok(doc) = serde_json::from_str::<Document>(text) {
                out.extend(doc.series.iter().map(|s| {
                    let mut name = format!("{}.{}", s.key.bench, s.key.case);
                    if s.key.config != crate::document::DEFAULT_CONFIG {
                        name = format!("{name}.{}", s.key.config);
                    }
                    format!(
                        "{CASE} {} pass {} {}",
                        case_id(&name),
                        s.summary.median,
                        s.unit
                    )
                }));
            }
            let packed = pack(text);
            let chunks: Vec<&str> = packed
                .as_bytes()
                .chunks(CHUNK_CHARS)
                .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
                .collect();
            for (i, c) in chunks.iter().enumerate() {
                out.push(format!("{CHUNK} {id} {i} {c}"));
            }
            out.push(format!(
                "{DIGEST} {id} {} {}",
                chunks.len(),
                digest(&packed)
            ));
        }
        Err(why) => out.push(format!("{FAILED} {id} {}", why.replace(['\n', '\r'], " "))),
    }
    out.push(format!("{END} {id}"));
    out
}

/// The console lines of a document measured on a device by a LAVA test
/// shell (contrib/lava/osbench.yaml): one boot of one kernel (named by the
/// document's kernel release), its id a digest of the document, so that
/// the same log imported twice is stored once.
pub fn device_lines(text: &str) -> Result<Vec<String>> {
    let doc = crate::store::parse_document(text, "the result document")?;
    let hash = Sha256::digest(text.as_bytes());
    let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let boot = LabBoot {
        plan: format!("dev{hex}"),
        step: 0,
        round: 0,
        kernel: 0,
        names: vec![case_id(&doc.env.kernel)],
        rounds: 1,
        seed: doc.run.seed,
        argv: vec![
            if doc.run.time.is_some() {
                "time"
            } else {
                "run"
            }
            .into(),
        ],
    };
    Ok(lines(&boot, Ok(text)))
}

/// A LAVA test case id: letters, digits, `-`, `_` and `.` (anything else becomes `_`).
pub fn case_id(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn pack(text: &str) -> String {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(text.as_bytes()).expect("writing to memory");
    let bytes = gz.finish().expect("writing to memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn digest(packed: &str) -> String {
    let hash = Sha256::digest(packed.as_bytes());
    hash.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// What a log says of one boot.
#[derive(Debug, Clone)]
pub struct Found {
    pub boot: LabBoot,
    /// The document's JSON text, or why there is none.
    pub document: std::result::Result<String, String>,
}

/// Every boot whose `OSBENCH-BOOT` line `log` holds, in the order they appear
/// (a boot printed twice, as by a console replayed, counts once: its
/// complete copy if one is).
pub fn cut(log: &str) -> Vec<Found> {
    let mut boots: Vec<(LabBoot, Chunks)> = Vec::new();
    for words in log.lines().filter_map(marker_words) {
        match words.as_slice() {
            [BOOT, word] => {
                if let Ok(boot) = LabBoot::decode(word)
                    && !boots.iter().any(|(b, _)| b.id() == boot.id())
                {
                    boots.push((boot, Chunks::default()));
                }
            }
            [CHUNK, id, i, data] => {
                if let (Some(c), Ok(i)) = (chunks_of(&mut boots, id), i.parse::<usize>()) {
                    c.parts.push((i, (*data).to_string()));
                }
            }
            [DIGEST, id, n, hash] => {
                if let (Some(c), Ok(n)) = (chunks_of(&mut boots, id), n.parse::<usize>()) {
                    c.end = Some((n, (*hash).to_string()));
                }
            }
            [FAILED, id, ..] => {
                let why = words[2..].join(" ");
                if let Some(c) = chunks_of(&mut boots, id) {
                    c.failed = Some(why);
                }
            }
            _ => {}
        }
    }
    boots
        .into_iter()
        .map(|(boot, chunks)| Found {
            document: chunks.document(),
            boot,
        })
        .collect()
}

/// The chunks of one boot seen so far.
#[derive(Default)]
struct Chunks {
    parts: Vec<(usize, String)>,
    end: Option<(usize, String)>,
    failed: Option<String>,
}

impl Chunks {
    fn document(mut self) -> std::result::Result<String, String> {
        if let Some(why) = self.failed {
            return Err(format!("the run failed on the device: {why}"));
        }
        self.parts.sort_by_key(|p| p.0);
        self.parts.dedup_by_key(|p| p.0);
        let Some((n, hash)) = self.end else {
            return Err(format!(
                "its document was cut short on the console ({} chunk(s) arrived, then nothing: \
                 the job was cancelled, timed out or the device stopped answering); run the job \
                 again",
                self.parts.len()
            ));
        };
        let whole = self.parts.len() == n && self.parts.iter().enumerate().all(|(i, p)| p.0 == i);
        let packed: String = self.parts.into_iter().map(|p| p.1).collect();
        if !whole || digest(&packed) != hash {
            return Err(
                "its document arrived damaged (chunks missing or garbled on the console); run \
                 the job again"
                    .into(),
            );
        }
        unpack(&packed).ok_or_else(|| "its document cannot be decoded".to_string())
    }
}

fn unpack(packed: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(packed)
        .ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

fn chunks_of<'a>(boots: &'a mut [(LabBoot, Chunks)], id: &str) -> Option<&'a mut Chunks> {
    boots.iter_mut().find(|(b, _)| b.id() == id).map(|(_, c)| c)
}

/// The words of a marker line, from where its marker starts: a console
/// line as printed, or a `log.yaml` entry (`- {"dt": …, "msg": "OSBENCH-…"}`,
/// whose closing quote and brace are dropped).
fn marker_words(line: &str) -> Option<Vec<&str>> {
    let at = line.find("OSBENCH-")?;
    let rest = line[at..]
        .trim_end()
        .trim_end_matches(['}', '"', '\'', '\r']);
    Some(rest.split_whitespace().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(step: usize) -> LabBoot {
        LabBoot {
            plan: "p1".into(),
            step,
            round: step / 2,
            kernel: step % 2,
            names: vec!["base".into(), "patched".into()],
            rounds: 2,
            seed: 7,
            argv: vec!["run".into(), "syscall".into()],
        }
    }

    #[test]
    fn a_document_goes_through_the_console_and_back() {
        let text = "{\"not\": \"a document, but text all the same\"}".repeat(100);
        let printed = lines(&boot(1), Ok(&text)).join("\n");
        // As LAVA's log.yaml carries each line.
        let log: String = printed
            .lines()
            .map(|l| format!("- {{\"dt\": \"x\", \"lvl\": \"target\", \"msg\": \"{l}\"}}\n"))
            .collect();
        for log in [printed, log] {
            let found = cut(&log);
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].boot, boot(1));
            assert_eq!(found[0].document.as_deref(), Ok(text.as_str()));
        }
    }

    #[test]
    fn a_document_cut_short_or_failed_is_missing_and_says_why() {
        let text = "x".repeat(20_000);
        let printed = lines(&boot(0), Ok(&text));
        let short = printed[..printed.len() - 3].join("\n");
        let found = cut(&short);
        assert!(
            found[0]
                .document
                .as_ref()
                .unwrap_err()
                .contains("cut short")
        );
        let mut garbled = printed.clone();
        garbled[2] = garbled[3].clone();
        let found = cut(&garbled.join("\n"));
        assert!(found[0].document.as_ref().unwrap_err().contains("damaged"));
        let failed = lines(&boot(0), Err("no such benchmark\nat all".into())).join("\n");
        let found = cut(&failed);
        assert!(
            found[0]
                .document
                .as_ref()
                .unwrap_err()
                .contains("failed on the device: no such benchmark at all")
        );
    }

    #[test]
    fn a_boot_word_is_refused_unless_osbench_made_it() {
        assert_eq!(LabBoot::decode(&boot(3).encode()).unwrap(), boot(3));
        let e = LabBoot::decode("bm90IGEgYm9vdA").unwrap_err().to_string();
        assert!(e.contains("generate the job again"), "{e}");
        assert_eq!(case_id("ctx.2p/0K x"), "ctx.2p_0K_x");
    }
}

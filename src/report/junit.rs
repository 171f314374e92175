//! A comparison as JUnit XML (the Ant/Jenkins report format that Jenkins,
//! GitLab's test reports and most CI systems read): one `testsuite`, one
//! `testcase` per case and candidate, named `CASE [CONFIG]: CANDIDATE vs
//! BASELINE` with class `osbench.BENCH`. A case is a `failure` when
//! [`Change::trips_gate`](crate::compare::Change::trips_gate) says so (slower
//! beyond `--gate`, or beyond the margin without one), `skipped` when the
//! test could not decide (too few replicates), and passes otherwise; the
//! verdict in words is its `system-out`. Left out: durations (`time` is
//! omitted; the tests are measurements, not timed steps).

use std::fmt::Write;

use crate::compare::Comparison;
use crate::stats::verdict::Verdict;

/// The JUnit XML of `c`, in a suite named `suite`, failing on slowdowns
/// beyond `gate_pct` % (0 without `--gate`).
pub fn comparison(c: &Comparison, suite: &str, gate_pct: f64) -> String {
    let mut cases = String::new();
    let (mut tests, mut failures, mut skipped) = (0, 0, 0);
    for row in &c.rows {
        for (k, (ch, candidate)) in row.changes.iter().zip(&c.labels[1..]).enumerate() {
            tests += 1;
            let name = format!("{}: {candidate} vs {}", row.key.short(), c.labels[0]);
            let words = c.verdict_words(k, ch);
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\">",
                attr(&format!("osbench.{}", row.key.bench)),
                attr(&name)
            );
            if ch.trips_gate(gate_pct) {
                failures += 1;
                let _ = writeln!(
                    cases,
                    "      <failure type=\"slower\" message=\"{}\">ratio {:.4} (95% interval, Holm-adjusted, {:.4} to {:.4}), p = {:.3e}</failure>",
                    attr(&words),
                    ch.ci.ratio,
                    ch.judged().0,
                    ch.judged().1,
                    ch.p_adjusted
                );
            } else if ch.verdict == Verdict::TooFew {
                skipped += 1;
                let _ = writeln!(cases, "      <skipped message=\"{}\"/>", attr(&words));
            }
            let _ = writeln!(cases, "      <system-out>{}</system-out>", attr(&words));
            cases.push_str("    </testcase>\n");
        }
    }
    let counts =
        format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\"");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"osbench\" {counts}>\n\
         \x20 <testsuite name=\"{}\" {counts}>\n\
         \x20   <properties>\n\
         \x20     <property name=\"method\" value=\"{}\"/>\n\
         \x20     <property name=\"gate_pct\" value=\"{gate_pct}\"/>\n\
         \x20     <property name=\"equivalence_pct\" value=\"{}\"/>\n\
         \x20   </properties>\n\
         {cases}\
         \x20 </testsuite>\n\
         </testsuites>\n",
        attr(suite),
        attr(&c.method),
        c.options.equivalence * 100.0,
    )
}

/// Text escaped for XML, in character data and in double-quoted attributes
/// alike (HTML's escaping, which XML reads the same); line breaks and tabs as
/// character references (attribute normalisation would drop them), other
/// control characters, which XML 1.0 cannot hold, as U+FFFD.
fn attr(s: &str) -> String {
    super::html::escape(s)
        .chars()
        .map(|c| match c {
            '\n' => "&#10;".to_string(),
            '\t' => "&#9;".to_string(),
            c if c.is_control() => '\u{FFFD}'.to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(attr("a<b & \"c\"\n"), "a&lt;b &amp; &quot;c&quot;&#10;");
        assert_eq!(attr("x\u{1}y"), "x\u{FFFD}y");
    }
}

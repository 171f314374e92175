//! How a number is written wherever text carries it: about four significant
//! digits, never `0.000000` for a value too small for its decimals. The
//! document's own words (a warning that names two clusters' centres) and
//! every report write numbers this one way; which unit a table shows is the
//! reports' ([`crate::report::readable_scale`]). Left out: units, widths, colours.

/// `x` with about four significant digits (at most six decimals; a value
/// too small for them in scientific notation, never `0.000000`).
pub fn fmt_sig(x: f64) -> String {
    fmt_fixed(x, decimals_for(x))
}

/// `x` with `decimals` decimals, or in scientific notation (four
/// significant digits) when those would show none of its digits.
pub fn fmt_fixed(x: f64, decimals: usize) -> String {
    let smallest = 0.5 * 10f64.powi(-(decimals.min(300) as i32));
    if x != 0.0 && x.is_finite() && x.abs() < smallest {
        format!("{x:.3e}")
    } else {
        format!("{x:.decimals$}")
    }
}

/// Decimals that give `x` about four significant digits.
pub fn decimals_for(x: f64) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 1;
    }
    (3 - x.abs().log10().floor() as i64).clamp(0, 6) as usize
}

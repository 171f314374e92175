//! Scaling over task counts (`run --tasks`), as will-it-scale reports it:
//! per-task and total throughput at each count N, the linear line
//! (N × the one-task total), the scaling efficiency total(N) / (N × total(1))
//! and where scaling stops: the first count whose efficiency falls below
//! [`STOP_EFFICIENCY`]. Pure arithmetic on (N, per-task ns per op) pairs;
//! left out: which series they come from (`report`'s).

/// Efficiency below which a count is where scaling stops: 80 %, i.e. a
/// fifth of the added tasks' throughput lost (will-it-scale prints only the
/// numbers; the threshold is ours, named wherever it is used).
pub const STOP_EFFICIENCY: f64 = 0.8;

/// One count of a ladder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rung {
    pub tasks: usize,
    /// Operations per second of one task (10^9 / its ns per op).
    pub per_task: f64,
    /// Operations per second of all tasks together.
    pub total: f64,
    /// N × the base rung's per-task throughput (will-it-scale's `linear`).
    pub linear: f64,
    /// total / linear.
    pub efficiency: f64,
}

/// A ladder's scaling.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaling {
    /// By task count, ascending.
    pub rungs: Vec<Rung>,
    /// The first count whose efficiency is below [`STOP_EFFICIENCY`].
    pub stops_at: Option<usize>,
}

/// The scaling of `points` (task count, per-task ns per op), the base being
/// the smallest count (1 in a full ladder: with another base, linear is
/// N / base × its total). `None` without a finite positive point.
pub fn scaling(points: &[(usize, f64)]) -> Option<Scaling> {
    let mut pts: Vec<(usize, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, ns)| n > 0 && ns.is_finite() && ns > 0.0)
        .collect();
    pts.sort_by_key(|p| p.0);
    pts.dedup_by_key(|p| p.0);
    let &(_, base_ns) = pts.first()?;
    let base_per_task = 1e9 / base_ns;
    let rungs: Vec<Rung> = pts
        .iter()
        .map(|&(n, ns)| {
            let per_task = 1e9 / ns;
            let total = per_task * n as f64;
            let linear = base_per_task * n as f64;
            Rung {
                tasks: n,
                per_task,
                total,
                linear,
                efficiency: total / linear,
            }
        })
        .collect();
    let stops_at = rungs
        .iter()
        .find(|r| r.efficiency < STOP_EFFICIENCY)
        .map(|r| r.tasks);
    Some(Scaling { rungs, stops_at })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_scaling_to_512_never_stops() {
        let pts: Vec<(usize, f64)> = (1..=512).map(|n| (n, 100.0)).collect();
        let s = scaling(&pts).unwrap();
        assert_eq!(s.rungs.len(), 512);
        let last = s.rungs[511];
        assert_eq!(last.tasks, 512);
        assert!((last.total - 512.0 * 1e7).abs() < 1e-3 * last.total);
        assert!((last.efficiency - 1.0).abs() < 1e-12);
        assert_eq!(s.stops_at, None);
    }

    #[test]
    fn a_shared_lock_stops_scaling_where_efficiency_falls_below_80_percent() {
        // Per-task time grows with the count: a lock taken by every task.
        let pts: Vec<(usize, f64)> = (1..=512)
            .map(|n| (n, 100.0 * (1.0 + 0.1 * (n - 1) as f64)))
            .collect();
        let s = scaling(&pts).unwrap();
        // efficiency(N) = 1 / (1 + 0.1 (N - 1)) < 0.8 from N = 4 (1/1.3 ≈ 0.77).
        assert_eq!(s.stops_at, Some(4));
        assert!((s.rungs[1].efficiency - 1.0 / 1.1).abs() < 1e-12);
        assert!((s.rungs[511].linear - 512.0 * 1e7).abs() < 1.0);
    }

    #[test]
    fn unusable_points_are_dropped_and_none_is_no_scaling() {
        assert_eq!(scaling(&[(0, 1.0), (2, f64::NAN), (3, -1.0)]), None);
        let s = scaling(&[(2, 50.0), (4, 50.0)]).unwrap();
        assert_eq!(s.rungs[0].tasks, 2);
        assert!((s.rungs[1].efficiency - 1.0).abs() < 1e-12);
    }
}

//! The change points `osbench regressions` found, kept in the store's
//! `change_points` table with what people said of each ([`PointState`]), so
//! that the next sweep does not announce an acknowledged one again. Left out:
//! finding them (`compare::regressions`) and deciding what to announce.

use crate::document::{CaseKey, Direction, utc_now};
use crate::error::{Error, Result};

use super::queries::Store;
use super::sql::{Param, Row, bad_row, transaction};

/// What has been said of a change point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointState {
    /// Found, nobody has looked at it yet: announced by every sweep.
    New,
    /// Someone looked (`--ack`): no longer announced.
    Acknowledged,
    /// Meant to happen (`--expect`): no longer announced.
    Expected,
    /// Mended (`--fixed`): no longer announced.
    Fixed,
}

impl PointState {
    /// The word the table stores.
    pub fn as_str(self) -> &'static str {
        match self {
            PointState::New => "new",
            PointState::Acknowledged => "acknowledged",
            PointState::Expected => "expected",
            PointState::Fixed => "fixed",
        }
    }

    fn parse(word: &str) -> std::result::Result<Self, String> {
        match word {
            "new" => Ok(PointState::New),
            "acknowledged" => Ok(PointState::Acknowledged),
            "expected" => Ok(PointState::Expected),
            "fixed" => Ok(PointState::Fixed),
            other => Err(format!("unknown change point state '{other}'")),
        }
    }
}

/// A change point as a sweep found it.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundPoint {
    pub key: CaseKey,
    pub host: String,
    /// The medians' unit as documents name it.
    pub unit: String,
    /// The first run of the new level.
    pub run_id: i64,
    /// The last run of the old level.
    pub before_run_id: i64,
    pub before_median: f64,
    pub after_median: f64,
    /// `after / before − 1`.
    pub relative: f64,
    pub p_value: f64,
    /// "slower" or "faster".
    pub direction: Direction,
}

/// A change point as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPoint {
    pub id: i64,
    pub state: PointState,
    /// UTC, RFC 3339: when a sweep first found it.
    pub found: String,
    pub point: FoundPoint,
}

const COLUMNS: &str = "id, state, found, bench, case_name, config, host, unit, run_id,
     before_run_id, before_median, after_median, relative, p_value, direction";

fn stored_point(r: &Row) -> std::result::Result<StoredPoint, String> {
    Ok(StoredPoint {
        id: r.int(0)?,
        state: PointState::parse(&r.text(1)?)?,
        found: r.text(2)?,
        point: FoundPoint {
            key: CaseKey::new(r.text(3)?, r.text(4)?, r.text(5)?),
            host: r.text(6)?,
            unit: r.text(7)?,
            run_id: r.int(8)?,
            before_run_id: r.int(9)?,
            before_median: r.float(10)?,
            after_median: r.float(11)?,
            relative: r.float(12)?,
            p_value: r.float(13)?,
            direction: {
                let word = r.text(14)?;
                Direction::parse(&word).ok_or_else(|| format!("direction '{word}'"))?
            },
        },
    })
}

impl Store {
    /// Records `point` unless the same change (same history, same first run
    /// of the new level) is stored already; either way, the stored record.
    pub fn record_change_point(&self, point: &FoundPoint) -> Result<StoredPoint> {
        let mut conn = self.conn();
        let name = conn.name();
        let p = point.clone();
        transaction(conn.as_mut(), |conn| {
            let key = [
                p.key.bench.as_str().into(),
                p.key.case.as_str().into(),
                p.key.config.as_str().into(),
                p.host.as_str().into(),
                Param::Int(p.run_id),
            ];
            conn.execute(
                "INSERT INTO change_points (bench, case_name, config, host, run_id, unit,
                     before_run_id, before_median, after_median, relative, p_value, direction,
                     state, found)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'new', $13)
                 ON CONFLICT (bench, case_name, config, host, run_id) DO NOTHING",
                &[
                    key.to_vec(),
                    vec![
                        p.unit.as_str().into(),
                        Param::Int(p.before_run_id),
                        Param::Float(p.before_median),
                        Param::Float(p.after_median),
                        Param::Float(p.relative),
                        Param::Float(p.p_value),
                        p.direction.as_str().into(),
                        utc_now().as_str().into(),
                    ],
                ]
                .concat(),
            )?;
            let rows = conn.query(
                &format!(
                    "SELECT {COLUMNS} FROM change_points WHERE bench = $1 AND case_name = $2
                     AND config = $3 AND host = $4 AND run_id = $5"
                ),
                &key,
            )?;
            rows.first()
                .ok_or_else(|| "the change point was neither stored nor found".to_string())
                .and_then(stored_point)
                .map_err(|m| bad_row(&name, m))
        })
    }

    /// Moves change point `id` to where a sweep now finds the same change
    /// (`point`: its first run, medians, change and p), keeping its id, its
    /// state and when it was first found; unmoved where another record
    /// holds that place already. Either way, the stored record.
    pub fn move_change_point(&self, id: i64, point: &FoundPoint) -> Result<StoredPoint> {
        let mut conn = self.conn();
        let name = conn.name();
        let p = point.clone();
        transaction(conn.as_mut(), |conn| {
            conn.execute(
                "UPDATE change_points SET run_id = $1, before_run_id = $2, before_median = $3,
                     after_median = $4, relative = $5, p_value = $6
                 WHERE id = $7 AND NOT EXISTS (SELECT 1 FROM change_points other
                     WHERE other.id <> $7 AND other.bench = $8 AND other.case_name = $9
                     AND other.config = $10 AND other.host = $11 AND other.run_id = $1)",
                &[
                    Param::Int(p.run_id),
                    Param::Int(p.before_run_id),
                    Param::Float(p.before_median),
                    Param::Float(p.after_median),
                    Param::Float(p.relative),
                    Param::Float(p.p_value),
                    Param::Int(id),
                    p.key.bench.as_str().into(),
                    p.key.case.as_str().into(),
                    p.key.config.as_str().into(),
                    p.host.as_str().into(),
                ],
            )?;
            let rows = conn.query(
                &format!("SELECT {COLUMNS} FROM change_points WHERE id = $1"),
                &[Param::Int(id)],
            )?;
            rows.first()
                .ok_or_else(|| format!("change point {id} is not recorded"))
                .and_then(stored_point)
                .map_err(|m| bad_row(&name, m))
        })
    }

    /// Every recorded change point, oldest first.
    pub fn change_points(&self) -> Result<Vec<StoredPoint>> {
        let mut conn = self.conn();
        let rows = conn.query(
            &format!("SELECT {COLUMNS} FROM change_points ORDER BY id"),
            &[],
        )?;
        let name = conn.name();
        rows.iter()
            .map(stored_point)
            .collect::<std::result::Result<_, String>>()
            .map_err(|m| bad_row(&name, m))
    }

    /// Sets the state of change point `id`; an error when there is none.
    pub fn set_change_point_state(&self, id: i64, state: PointState) -> Result<()> {
        let mut conn = self.conn();
        let changed = conn.execute(
            "UPDATE change_points SET state = $1, state_changed = $2 WHERE id = $3",
            &[
                state.as_str().into(),
                utc_now().as_str().into(),
                Param::Int(id),
            ],
        )?;
        if changed == 0 {
            return Err(Error::Store {
                path: conn.name(),
                message: format!(
                    "no change point {id} is recorded (osbench regressions lists them with \
                     their ids)"
                ),
            });
        }
        Ok(())
    }
}

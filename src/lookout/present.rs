//! `watch`'s read of Lookout's present (docs/watch.md "Retries while others wait"): the
//! requests of the jobs queued now, by queue, and of the jobs whose run holding capacity now
//! (leased, pending or running) is not their first run, by pool and queue. What coincides
//! now, not what a policy would change.
//!
//! Owns: [`present`] and its statements, [`Present`], [`Requests`]. Must not: keep what it
//! read between polls (that is `watch`'s), or name a metric.

use super::db::{Db, RawText};
use super::mapping::state;
use crate::error::CliError;
use crate::model::failure_history::{Resources, DEFAULT_POOL};

/// Lookout's `job.state` of a job waiting to be scheduled (contract/lookout/README.md).
pub const QUEUED: i16 = 1;

/// The `job_run_state`s of a run that holds capacity now.
pub const HOLDING: [i16; 3] = [state::LEASED, state::PENDING, state::RUNNING];

/// The requests of some jobs, summed: GPUs (devices) and CPUs (cores).
#[derive(Debug, Clone, PartialEq)]
pub struct Requests {
    /// The pool of the run (retries only; a run with no pool is in `default`).
    pub pool: Option<String>,
    pub queue: String,
    pub gpu: f64,
    pub cpu: f64,
}

/// What Lookout holds now, of the queues asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Present {
    /// The jobs in state QUEUED, by queue.
    pub waiting: Vec<Requests>,
    /// The jobs whose run holding capacity now is not their first, by pool and queue.
    pub retrying: Vec<Requests>,
}

/// The jobs of `queues` queued now, their requests by queue (`job.gpu` in devices, `job.cpu`
/// in millicores: read in cores). A request the export cannot read (negative, or past what
/// `simulate --history` reads: `$3` GPUs, `$4` millicores) leaves its job out, as the export
/// leaves it out: no gauge carries a negative or saturated number. Sums as floating point:
/// many jobs near the bound make no integer sum overflow and fail the poll.
const WAITING: &str = "SELECT queue, sum(gpu)::float8, sum(cpu)::float8 / 1000 FROM job \
     WHERE queue = ANY($1) AND state = $2 AND gpu BETWEEN 0 AND $3 AND cpu BETWEEN 0 AND $4 \
     GROUP BY queue ORDER BY queue";

/// The runs holding capacity now that are not their job's first, in the order the export
/// reads a job's runs (`lookout::mapping`: by `leased`, else `pending`, else `started`, a run
/// with none last, ties by `run_id`'s bytes), their jobs' requests by pool and queue. Only the
/// jobs with such a run are ranked (the index on `job_run_state` finds them).
const RETRYING: &str =
    "SELECT coalesce(nullif(r.pool, ''), $3), j.queue, sum(j.gpu)::float8, sum(j.cpu)::float8 / 1000 \
     FROM (SELECT job_id, pool, job_run_state, row_number() OVER (PARTITION BY job_id \
         ORDER BY coalesce(leased, pending, started) NULLS LAST, run_id COLLATE \"C\") AS k \
       FROM job_run WHERE job_id IN (SELECT job_id FROM job_run WHERE job_run_state = ANY($2))) r \
     JOIN job j ON j.job_id = r.job_id \
     WHERE j.queue = ANY($1) AND r.job_run_state = ANY($2) AND r.k > 1 \
       AND j.gpu BETWEEN 0 AND $4 AND j.cpu BETWEEN 0 AND $5 \
     GROUP BY 1, 2 ORDER BY 1, 2";

/// [`Present`] of `queues`, in two statements on `db`. A pool whose bytes are not UTF-8 (a
/// `SQL_ASCII` database) is left out, as the export leaves its run out: decoded with `�`,
/// two such pools would be one label twice.
pub fn present(db: &Db, queues: &[String]) -> Result<Present, CliError> {
    let text = |r: &tokio_postgres::Row, i: usize| String::from_utf8(r.get::<_, RawText>(i).0).ok();
    let (gpu_max, cpu_max) = (
        i64::try_from(Resources::MILLI_MAX / 1000).unwrap_or(i64::MAX),
        i64::try_from(Resources::MILLI_MAX).unwrap_or(i64::MAX),
    );
    let waiting = db
        .wait(db.client.query(WAITING, &[&queues, &QUEUED, &gpu_max, &cpu_max]))?
        .iter()
        .filter_map(|r| {
            Some(Requests {
                pool: None,
                queue: text(r, 0)?,
                gpu: r.get::<_, Option<f64>>(1).unwrap_or(0.0),
                cpu: r.get::<_, Option<f64>>(2).unwrap_or(0.0),
            })
        })
        .collect();
    let holding = HOLDING.to_vec();
    let retrying = db
        .wait(
            db.client
                .query(RETRYING, &[&queues, &holding, &DEFAULT_POOL, &gpu_max, &cpu_max]),
        )?
        .iter()
        .filter_map(|r| {
            Some(Requests {
                pool: Some(text(r, 0)?),
                queue: text(r, 1)?,
                gpu: r.get::<_, Option<f64>>(2).unwrap_or(0.0),
                cpu: r.get::<_, Option<f64>>(3).unwrap_or(0.0),
            })
        })
        .collect();
    Ok(Present { waiting, retrying })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookout::mapping::job_state;

    #[test]
    fn the_states_are_lookouts() {
        assert_eq!(job_state::NAMES[usize::try_from(QUEUED - 1).unwrap()], "QUEUED");
        let names: Vec<&str> = HOLDING
            .iter()
            .map(|s| state::NAMES[usize::try_from(s - 1).unwrap()])
            .collect();
        assert_eq!(names, ["RUN_LEASED", "RUN_PENDING", "RUN_RUNNING"]);
    }
}

//! The record's own totals (docs/estimates.md "Recorded and replayed"): every run of every
//! job replayed, whatever a side makes of it — their number, their run time, their GPU and
//! CPU time. A side starts the runs up to its job's end (`replayed`: the summary's and the
//! comparison's own sums); a history may record more (a run after the job ended, a
//! resubmission under the same id), and those are the record's all the same.
//!
//! Owns: [`Recorded`], counted per job by the replay's workers beside the trials
//! (`run::TrialCount`, which every replay verb counts: simulate, tune's sweep, suggest's
//! passes) and added in input order, the same whatever the split into units or shards; its
//! sums exact (128 bits), the first past 128 bits named ([`Overflow`]). Must not: replay,
//! decide or format anything.

use crate::engine::is_pod_name_part;
use crate::model::duration::TotalDuration;
use crate::model::failure_history::{FailureHistory, Resources};

use super::device_time::{add_device_time, request_time, Overflow};

/// What the record holds, over the jobs replayed (a line that cannot be read counts nowhere).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Recorded {
    /// Jobs counted (the same as the replay's).
    pub jobs: u64,
    pub runs: u64,
    /// Σ `runFor` of every run.
    pub compute: TotalDuration,
    /// The same × the job's GPU and CPU requests, in nanoseconds × thousandths.
    pub gpu: u128,
    pub cpu: u128,
    /// Jobs with run time that request neither CPU nor GPU (their hours count 0).
    pub without_resources: u64,
    /// The first job whose GPU or CPU time took a sum past 128 bits: the command refuses
    /// the history (exit 3), as for any such sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<Overflow>,
    /// Jobs whose id cannot be part of a pod name (`engine::is_pod_name_part`), and the
    /// first of them in input order: the collisions and anti-affinity replayed for them
    /// are approximate (said once, [`Recorded::pod_name_warning`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_pod_names: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_not_pod_name: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The figures a [`Recorded`] sum past 128 bits is named by.
const GPU: &str = "GPU time recorded";
const CPU: &str = "CPU time recorded";

impl Recorded {
    /// Counts one job's runs. Run by run into the 128-bit sums: a job's own runs may add up
    /// past 64 bits of nanoseconds (two runs of Go's longest duration).
    pub fn add(&mut self, history: &FailureHistory) {
        self.jobs += 1;
        if !is_pod_name_part(&history.job.id) {
            self.not_pod_names += 1;
            if self.first_not_pod_name.is_none() {
                self.first_not_pod_name = Some(history.job.id.clone());
            }
        }
        self.runs += history.runs.len() as u64;
        let r = history.job.resources.as_ref();
        let (gpu, cpu) = (r.and_then(|r| r.gpu_milli), r.and_then(|r| r.cpu_milli));
        let mut ran = false;
        let job = history.job.id.as_str();
        for run in &history.runs {
            ran |= run.run_for.0 > 0;
            self.compute.add(run.run_for);
            add_device_time(
                &mut self.gpu,
                request_time(run.run_for, gpu),
                &mut self.overflow,
                GPU,
                job,
            );
            add_device_time(
                &mut self.cpu,
                request_time(run.run_for, cpu),
                &mut self.overflow,
                CPU,
                job,
            );
        }
        if ran && Resources::is_none(r) {
            self.without_resources += 1;
        }
    }

    /// Adds the record of the jobs that follow (a later unit, another shard).
    pub fn merge(&mut self, o: &Recorded) {
        self.jobs += o.jobs;
        self.runs += o.runs;
        self.compute.add_total(o.compute);
        if self.overflow.is_none() {
            self.overflow.clone_from(&o.overflow);
        }
        // Two parts' sums that fit apart and not together: no one job took them there.
        add_device_time(&mut self.gpu, o.gpu, &mut self.overflow, GPU, "");
        add_device_time(&mut self.cpu, o.cpu, &mut self.overflow, CPU, "");
        self.without_resources += o.without_resources;
        self.not_pod_names += o.not_pod_names;
        if self.first_not_pod_name.is_none() {
            self.first_not_pod_name.clone_from(&o.first_not_pod_name);
        }
    }

    /// The warning, once, when some job's id cannot be part of a pod name: `3000 job ids
    /// of the history cannot be part of a pod name (…), the first `application_…`: …`.
    pub fn pod_name_warning(&self) -> Option<String> {
        let first = self.first_not_pod_name.as_deref()?;
        let (ids, which) = match self.not_pod_names {
            1 => ("1 job id".to_string(), ""),
            n => (format!("{n} job ids"), ", the first"),
        };
        Some(format!(
            "{ids} of the history cannot be part of a pod name (`armada-<id>-0` must be a lowercase RFC 1123 name){which} `{first}`: \
             read all the same, the pod-name collisions and node anti-affinity replayed for them are approximate"
        ))
    }

    /// Nothing counted (a partial's per-unit totals leave it out).
    pub fn is_empty(&self) -> bool {
        *self == Recorded::default()
    }

    /// Whether a side whose own sums are `runs` and `compute` replayed fewer runs, or less
    /// run time, than the record holds: then both are said.
    pub fn differs(&self, runs: u64, compute: TotalDuration) -> bool {
        self.runs != runs || self.compute != compute
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::duration::GoDuration;
    use crate::model::failure_history::{Resources, Run};

    fn job(id: &str, runs: &[u64], gpu: Option<u64>) -> FailureHistory {
        let mut h = FailureHistory::default();
        h.job.id = id.to_string();
        h.job.resources = gpu.map(|g| Resources {
            gpu_milli: Some(g),
            ..Resources::default()
        });
        h.runs = runs
            .iter()
            .map(|&ns| Run {
                run_for: GoDuration(ns),
                ..Run::default()
            })
            .collect();
        h
    }

    /// Two runs of Go's longest duration add up past 64 bits, exactly; the device time of
    /// jobs past 128 bits names the figure and the job that took it there.
    #[test]
    fn the_record_adds_up_exactly_and_names_a_sum_past_128_bits() {
        let mut r = Recorded::default();
        r.add(&job("long", &[u64::MAX, u64::MAX], None));
        assert_eq!(r.compute.0, 2 * u128::from(u64::MAX));
        assert_eq!((r.jobs, r.runs, r.without_resources), (1, 2, 1));
        let mut big = Recorded::default();
        let mut n = 0;
        while big.overflow.is_none() {
            n += 1;
            big.add(&job(&format!("j{n}"), &[u64::MAX], Some(u64::MAX)));
        }
        assert_eq!(
            big.overflow,
            Some(Overflow {
                figure: GPU.to_string(),
                job: "j2".to_string()
            })
        );
        let (mut a, mut b) = (Recorded::default(), Recorded::default());
        a.add(&job("a", &[u64::MAX], Some(u64::MAX)));
        b.add(&job("b", &[u64::MAX], Some(u64::MAX)));
        a.merge(&b);
        assert_eq!(
            a.overflow.map(|o| (o.figure, o.job)),
            Some((GPU.to_string(), String::new()))
        );
    }
}

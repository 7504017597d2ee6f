//! Device time: nanoseconds × thousandths of a device's request, summed exactly in 128 bits,
//! and the figure that would pass them (docs/estimates.md).
//!
//! Owns: [`Overflow`], [`add_device_time`], [`request_time`], [`hours`]. Must not: know a
//! comparison or a record (both add up with it).

use crate::model::duration::GoDuration;

/// A sum of device time past 128 bits of nanoseconds × thousandths: which figure, and the
/// job that took it there. No history of real jobs comes near (a billion runs of a day on
/// 1,024 GPUs is 2^96); a history that does is refused rather than printed wrong.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Overflow {
    pub figure: String,
    pub job: String,
}

/// The figure of an [`Overflow`] of the contention section's requests at once (docs/contention.md):
/// a pool's waiting or retrying requests are kept in 64 bits, not its device time in 128.
pub const REQUESTS_AT_ONCE: &str = "requests waiting or retrying at once in a pool";

impl Overflow {
    /// The error a command gives for it (exit 3).
    pub fn message(&self) -> String {
        let at = if self.job.is_empty() {
            String::new()
        } else {
            format!("job `{}`: ", self.job)
        };
        if self.figure == REQUESTS_AT_ONCE {
            // The bound checked is the whole history's, not one pool's at one time (which is
            // known only in the sweep): said as what was added up, not as what a pool held.
            return format!(
                "{at}the history's requests, each × twice its job's runs and one, add up past {} \
                 thousandths of a device (2^64 − 1), the most the contention section adds up in a \
                 pool at once; check the history's `resources`, or pass --contention off",
                u64::MAX
            );
        }
        format!(
            "{at}the {} passes {} nanoseconds × thousandths of a device (2^128 − 1), the most retryctl can add up; \
             check the history's `runFor` and `resources`",
            self.figure,
            u128::MAX
        )
    }
}

/// `sum += n`, saturating; the first sum it takes past 128 bits sets `overflow` to `figure`
/// and `job`.
pub fn add_device_time(sum: &mut u128, n: u128, overflow: &mut Option<Overflow>, figure: &str, job: &str) {
    match sum.checked_add(n) {
        Some(s) => *sum = s,
        None => {
            *sum = u128::MAX;
            overflow.get_or_insert_with(|| Overflow {
                figure: figure.to_string(),
                job: job.to_string(),
            });
        }
    }
}

/// Nanoseconds × thousandths of a request, exactly (u128 holds 584 years × 10^20 devices).
pub fn request_time(ns: GoDuration, milli: Option<u64>) -> u128 {
    u128::from(ns.0) * u128::from(milli.unwrap_or(0))
}

/// Nanoseconds × thousandths → hours of one device.
pub fn hours(ns_milli: u128) -> f64 {
    ns_milli as f64 / 1000.0 / 1e9 / 3600.0
}

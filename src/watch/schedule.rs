//! When `watch` polls again and what `/healthz` says (docs/watch.md "When the database goes
//! away").
//!
//! Owns: the wait after a poll ([`next_wait`]: `--poll`, doubling per consecutive failure up
//! to [`MAX_BACKOFF`] times it) and [`Health`]. Must not: sleep or read a clock.

use std::time::Duration;

/// The longest wait after failed polls, in `--poll`s.
pub const MAX_BACKOFF: u32 = 8;

/// Failed polls in a row after which `/healthz` answers 503.
pub const UNHEALTHY_AFTER: u32 = 3;

/// The wait before the next poll, after `failures` failed polls in a row (0: the last one
/// succeeded): `poll`, then 2×, 4×, then 8× `poll` for as long as they fail.
pub fn next_wait(poll: Duration, failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(MAX_BACKOFF.trailing_zeros());
    poll.saturating_mul(factor)
}

/// What `/healthz` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// No poll has succeeded yet.
    Starting,
    /// The last poll succeeded, or fewer than [`UNHEALTHY_AFTER`] have failed since one did.
    Ok,
    /// [`UNHEALTHY_AFTER`] or more polls failed in a row; the last one's error.
    Failing { failures: u32, error: String },
}

impl Health {
    /// After a poll: `Ok(())`, or its error.
    pub fn after(&self, polled: Result<(), &str>, failures: u32) -> Health {
        match (polled, self) {
            (Ok(()), _) => Health::Ok,
            (Err(e), _) if failures >= UNHEALTHY_AFTER => Health::Failing {
                failures,
                error: e.to_string(),
            },
            (Err(_), Health::Starting) => Health::Starting,
            (Err(_), _) => Health::Ok,
        }
    }

    /// The HTTP status of `/healthz`.
    pub fn status(&self) -> u16 {
        match self {
            Health::Ok => 200,
            Health::Starting | Health::Failing { .. } => 503,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_double_the_wait_up_to_eight_polls() {
        let poll = Duration::from_secs(30);
        let waits: Vec<u64> = (0..7).map(|f| next_wait(poll, f).as_secs()).collect();
        assert_eq!(waits, [30, 30, 60, 120, 240, 240, 240]);
        assert_eq!(next_wait(poll, u32::MAX), Duration::from_secs(240));
    }

    #[test]
    fn healthz_waits_for_the_first_poll_and_fails_after_three() {
        let mut h = Health::Starting;
        assert_eq!(h.status(), 503);
        h = h.after(Err("refused"), 1);
        assert_eq!(h, Health::Starting);
        h = h.after(Ok(()), 0);
        assert_eq!(h.status(), 200);
        h = h.after(Err("refused"), 1);
        h = h.after(Err("refused"), 2);
        assert_eq!(h.status(), 200);
        h = h.after(Err("gone"), 3);
        assert_eq!(
            h,
            Health::Failing {
                failures: 3,
                error: "gone".into()
            }
        );
        assert_eq!(h.status(), 503);
        assert_eq!(h.after(Ok(()), 0).status(), 200);
    }
}

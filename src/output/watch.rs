//! `retryctl watch`'s `GET /metrics`: the counters in Prometheus' text format 0.0.4
//! (docs/watch.md "What each metric counts").
//!
//! Owns: each family's HELP words and TYPE, the order of the families and of their series,
//! label values escaped as the format asks, and each integer as the number it stands for
//! (device time in seconds, timestamps in seconds). Every family's HELP and TYPE lines are
//! written whether or not it has a series yet, so that the first scrape names them all. Must
//! not: count (the numbers are `watch`'s) or hold a series whose labels `watch` did not bound.

use std::fmt::Write as _;

use crate::watch::metrics::{Counters, Family, Unit};

/// The format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a family counts, for its HELP line.
fn help(f: Family) -> &'static str {
    match f {
        Family::Jobs => {
            "Jobs that reached a terminal state with a run to replay, by their outcome as Lookout recorded it."
        }
        Family::Retries => "Retries today's policy granted, by the rule that granted them.",
        Family::FutileRetries => "Retries today's policy granted to jobs it failed in the end, by rule.",
        Family::FutileRetryGpuSeconds => {
            "GPU-seconds of the runs those futile retries started (run time times GPUs requested), by rule."
        }
        Family::FutileRetryCpuSeconds => {
            "CPU-seconds of the runs those futile retries started (run time times CPUs requested), by rule."
        }
        Family::ShadowJobs => {
            "Jobs by what a candidate policy would have done to them against today's (as simulate --baseline)."
        }
        Family::ShadowGpuSeconds => {
            "GPU-seconds of the runs a candidate would have saved (today starts them, it does not) or added."
        }
        Family::Contradictions => "Jobs whose record contradicts today's policy (is it what the cluster runs?).",
        Family::UnreadableRows => "Lookout rows left out because they could not be read (each said on stderr).",
        Family::CursorTimestamp => "last_transition_time of the last job counted (seconds since the Unix epoch).",
        Family::LastPollSuccessTimestamp => "When a poll of Lookout last succeeded (seconds since the Unix epoch).",
        Family::PollErrors => "Polls that failed, and jobs a side could not replay, by reason.",
    }
}

/// `/metrics`' body: every family, its series, then the gauges of the cursor (`cursor`:
/// microseconds since the Unix epoch) and of the last successful poll (milliseconds), each
/// absent until there is one.
pub fn metrics(counters: &Counters, cursor: Option<i64>, last_success: Option<i64>) -> String {
    let mut out = String::with_capacity(8 * 1024);
    for family in Family::ALL {
        let name = family.name();
        let kind = if family.is_counter() { "counter" } else { "gauge" };
        let _ = writeln!(out, "# HELP {name} {}", help(family));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let gauge = match family {
            Family::CursorTimestamp => cursor.map(|c| c as i128),
            Family::LastPollSuccessTimestamp => last_success.map(|t| t as i128),
            _ => None,
        };
        if let Some(v) = gauge {
            let _ = writeln!(out, "{name} {}", number_of(family.unit(), v));
            continue;
        }
        for (_, labels, n) in counters.iter().filter(|(f, _, _)| *f == family) {
            out.push_str(name);
            if !labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in family.labels().iter().zip(labels).enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{k}=\"{}\"", escaped(v));
                }
                out.push('}');
            }
            let _ = writeln!(
                out,
                " {}",
                number_of(family.unit(), i128::try_from(n).unwrap_or(i128::MAX))
            );
        }
    }
    out
}

/// An integer of `unit` as the number it stands for: counts as they are, device time and
/// timestamps in seconds (a decimal the format's parser reads, never an exponent).
fn number_of(unit: Unit, n: i128) -> String {
    let per_second = match unit {
        Unit::Count => return n.to_string(),
        Unit::DeviceTime => 1e12,
        Unit::Micros => 1e6,
        Unit::Millis => 1e3,
    };
    format!("{}", n as f64 / per_second)
}

/// A label value as the format quotes it: `\`, `"` and line feeds escaped.
fn escaped(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_named_before_any_series() {
        let text = metrics(&Counters::default(), None, None);
        for f in Family::ALL {
            assert!(text.contains(&format!("# HELP {} ", f.name())), "{}", f.name());
            assert!(text.contains(&format!("# TYPE {} ", f.name())), "{}", f.name());
        }
        assert!(text.lines().all(|l| l.starts_with('#')), "{text}");
    }

    #[test]
    fn series_are_quoted_and_scaled() {
        let mut c = Counters::default();
        c.add(
            Family::ShadowGpuSeconds,
            &["m\"l\\", "c.yaml", "saved"],
            1_500_000_000_000,
        );
        c.add(Family::Jobs, &["ml", "failed"], 3);
        let text = metrics(&c, Some(1_700_000_000_500_000), Some(1_700_000_001_250));
        assert!(
            text.contains("retryctl_watch_jobs_total{queue=\"ml\",outcome=\"failed\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "retryctl_watch_shadow_gpu_seconds_total{queue=\"m\\\"l\\\\\",candidate=\"c.yaml\",direction=\"saved\"} 1.5\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("retryctl_watch_cursor_timestamp_seconds 1700000000.5\n"),
            "{text}"
        );
        assert!(text.contains("retryctl_watch_last_poll_success_timestamp_seconds 1700000001.25\n"));
    }
}

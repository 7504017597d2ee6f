//! `retryctl watch`'s `GET /metrics`: the counters in Prometheus' text format 0.0.4
//! (docs/watch.md "What each metric counts").
//!
//! Owns: the text of each family (its HELP and TYPE lines from `watch::metrics::FAMILIES`)
//! and of its series in order, label values escaped as the format asks, and each integer as the number it stands for
//! (device time in seconds, timestamps in seconds). Every family's HELP and TYPE lines are
//! written whether or not it has a series yet, so that the first scrape names them all. Also
//! the words of the log's warnings of a start or cursor moved within the database's clock
//! ([`moved_words`]) and of jobs written behind the re-read span ([`late_words`]). Must not:
//! count (the numbers are `watch`'s) or hold a series whose labels `watch` did not bound.

use std::fmt::Write as _;

use crate::lookout::present::Present;
use crate::model::failure_history::Timestamp;
use crate::output::html::esc;
use crate::watch::cursor::Moved;
use crate::watch::late::Late;
use crate::watch::metrics::{Busy, Counters, Family, Unit, FAMILIES, RESOURCES, VERDICTS};

/// The format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a scrape shows besides the counters: the gauges.
#[derive(Debug, Clone, Default)]
pub struct Gauges<'a> {
    /// The cursor (microseconds since the Unix epoch).
    pub cursor: Option<i64>,
    /// The last successful poll (milliseconds since the Unix epoch).
    pub last_success: Option<i64>,
    /// Each candidate's verdict (one of `watch::metrics::VERDICTS`).
    pub verdicts: &'a [(String, &'static str)],
    /// Whether the last hour of failures counted is an incident window.
    pub incident: bool,
    /// Else, whether it is a burst or a surge (`None`: neither).
    pub busy: Option<Busy>,
    /// What waits and retries now, as the last poll read Lookout (`None`: not read yet).
    pub present: Option<&'a Present>,
}

/// A time of Lookout's (microseconds since the Unix epoch), as the log says it.
fn at(us: i64) -> Timestamp {
    Timestamp(us.saturating_mul(1000))
}

/// The warning for a cursor or start of `state` moved within the database's clock `now`
/// (`start`: where it reads from now; `lookback`: `--lookback` as given).
pub fn moved_words(moved: Moved, state: &str, now: i64, start: i64, lookback: &str) -> String {
    let db = at(now);
    match moved {
        Moved::Cursor { was } => format!(
            "warning: `--state` `{state}`'s cursor {} lies past the database's clock {db}: reading from --lookback ({lookback}) before the database's now",
            at(was)
        ),
        Moved::Start { was } => format!(
            "warning: `--state` `{state}` starts at {}, past the database's clock {db}: reading from --lookback ({lookback}) before the database's now",
            at(was)
        ),
        Moved::Counted { machine } => format!(
            "warning: the machine's clock ({}) runs ahead of the database's ({db}): reading from {}, counted back from the database's now",
            at(machine),
            at(start)
        ),
    }
}

/// The warning for jobs Lookout wrote behind the re-read span (`lookback`: `--lookback` as
/// given).
pub fn late_words(l: &Late, lookback: &str) -> String {
    format!(
        "warning: {} of queue `{}` written more than --lookback ({lookback}) behind the cursor, the oldest ending between {} and {}: never counted (retryctl_watch_late_jobs_total); raise --lookback",
        match l.jobs {
            1 => "1 job".to_string(),
            n => format!("{n} jobs"),
        },
        crate::output::text::shown(&l.queue),
        at(l.oldest.0),
        at(l.oldest.1)
    )
}

/// `/metrics`' body: every family, its series and its gauges (the cursor's and the last
/// successful poll's absent until there is one; each candidate's verdict as 1 for the one it
/// has and 0 for the others).
pub fn metrics(counters: &Counters, g: &Gauges<'_>) -> String {
    let mut out = String::with_capacity(8 * 1024);
    for spec in &FAMILIES {
        let (family, name) = (spec.family, spec.name);
        let _ = writeln!(out, "# HELP {name} {}", spec.help);
        let _ = writeln!(out, "# TYPE {name} {}", spec.kind.as_str());
        let gauge = match family {
            Family::CursorTimestamp => g.cursor.map(|c| c as i128),
            Family::LastPollSuccessTimestamp => g.last_success.map(|t| t as i128),
            Family::IncidentsActive => Some(i128::from(g.incident)),
            _ => None,
        };
        if let Some(v) = gauge {
            let _ = writeln!(out, "{name} {}", number_of(family.unit(), v));
            continue;
        }
        if let (Family::WaitingRequests | Family::RetryRequests, Some(p)) = (family, g.present) {
            present(&mut out, family, p);
            continue;
        }
        if family == Family::BusyActive {
            for kind in Busy::ALL {
                let one = u8::from(g.busy == Some(kind));
                let _ = writeln!(out, "{name}{{kind=\"{}\"}} {one}", kind.as_str());
            }
            continue;
        }
        if family == Family::ShadowVerdict {
            for (candidate, verdict) in g.verdicts {
                for v in VERDICTS {
                    let one = u8::from(v == *verdict);
                    let _ = writeln!(
                        out,
                        "{name}{{candidate=\"{}\",verdict=\"{v}\"}} {one}",
                        escaped(candidate)
                    );
                }
            }
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

/// The present's series of `family`: one per queue (and pool) and resource.
fn present(out: &mut String, family: Family, p: &Present) {
    let name = family.name();
    let rows = match family {
        Family::WaitingRequests => &p.waiting,
        _ => &p.retrying,
    };
    for r in rows {
        for (resource, v) in RESOURCES.iter().zip([r.gpu, r.cpu]) {
            let pool = r
                .pool
                .as_deref()
                .map(|p| format!("pool=\"{}\",", escaped(p)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{name}{{{pool}queue=\"{}\",resource=\"{resource}\"}} {v}",
                escaped(&r.queue)
            );
        }
    }
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

/// `/report`'s page with the candidate's verdict over the last `window` (its words, as
/// `/metrics` judges it) under its headline.
pub fn headline(page: &mut Vec<u8>, window: &str, words: &str) {
    let line = format!(
        "<p class=\"sub\"><strong>Verdict over the last {}: {}</strong></p>",
        esc(window),
        esc(words)
    );
    let at = page.windows(5).position(|w| w == b"</h1>").map_or(0, |i| i + 5);
    page.splice(at..at, line.into_bytes());
}

/// A label value as the format quotes it: `\`, `"` and line feeds escaped.
fn escaped(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookout::present::Requests;

    #[test]
    fn every_family_is_named_before_any_series() {
        let text = metrics(&Counters::default(), &Gauges::default());
        for f in Family::all() {
            assert!(text.contains(&format!("# HELP {} ", f.name())), "{}", f.name());
            assert!(text.contains(&format!("# TYPE {} ", f.name())), "{}", f.name());
        }
        // Only the incident and busy gauges have a sample before anything is counted.
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "retryctl_watch_incidents_active 0",
                "retryctl_watch_busy_active{kind=\"burst\"} 0",
                "retryctl_watch_busy_active{kind=\"surge\"} 0",
            ],
            "{text}"
        );
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
        let verdicts = [("c.yaml".to_string(), "reject")];
        let g = Gauges {
            cursor: Some(1_700_000_000_500_000),
            last_success: Some(1_700_000_001_250),
            verdicts: &verdicts,
            incident: false,
            busy: Some(Busy::Surge),
            present: Some(&Present {
                waiting: vec![Requests {
                    pool: None,
                    queue: "ml".into(),
                    gpu: 7.0,
                    cpu: 5.5,
                }],
                retrying: vec![Requests {
                    pool: Some("a100".into()),
                    queue: "m\"l".into(),
                    gpu: 4.0,
                    cpu: 0.25,
                }],
            }),
        };
        let text = metrics(&c, &g);
        for line in [
            "retryctl_watch_waiting_requests{queue=\"ml\",resource=\"gpu\"} 7\n",
            "retryctl_watch_waiting_requests{queue=\"ml\",resource=\"cpu\"} 5.5\n",
            "retryctl_watch_retry_requests{pool=\"a100\",queue=\"m\\\"l\",resource=\"gpu\"} 4\n",
            "retryctl_watch_retry_requests{pool=\"a100\",queue=\"m\\\"l\",resource=\"cpu\"} 0.25\n",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        for (v, one) in [("adopt", 0), ("keep", 0), ("reject", 1), ("inconclusive", 0)] {
            let line = format!("retryctl_watch_shadow_verdict{{candidate=\"c.yaml\",verdict=\"{v}\"}} {one}\n");
            assert!(text.contains(&line), "{text}");
        }
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
        for line in [
            "retryctl_watch_incidents_active 0\n",
            "retryctl_watch_busy_active{kind=\"burst\"} 0\n",
            "retryctl_watch_busy_active{kind=\"surge\"} 1\n",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
    }
}

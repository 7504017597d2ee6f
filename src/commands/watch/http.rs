//! `watch`'s HTTP routes (docs/watch.md "What it serves"): `GET /metrics` (the counters in
//! Prometheus' text format), `GET /report` (the plan of the last `--window` of jobs, as
//! `simulate --baseline -o html` writes it; `?candidate=NAME` picks among several) and
//! `GET /healthz` (200 once a poll succeeded, 503 before and after 3 failed in a row).
//!
//! Owns: the router and its handlers; `/report`'s replay, on a blocking thread with its own
//! connection to Lookout, one at a time and kept for `--poll` (the window's jobs are read
//! again for each, a week of a queue is seconds to minutes). Must not: count (the poller
//! does) or render (`output::watch`, `output`'s html sink).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::lookout::export_source::ExportSource;
use crate::lookout::Export;
use crate::lookout::{db, terminal};
use crate::output::mode::{Baseline, Mode};
use crate::output::sinks::sink;
use crate::output::stderr::Stderr;
use crate::output::watch::Gauges;
use crate::output::{Format, Style};
use crate::replay::run::{compare, replay, Options, Out};
use crate::watch::schedule::Health;

use super::listen::MAX_HEADER_BYTES;
use super::shared::{now_micros, waiting_words, Shared, Watched, PAGE};

/// A report made: for which candidate (`None`: today's policy alone), when, and its page.
type Made = (Option<usize>, Instant, Arc<Vec<u8>>);

/// What the handlers share.
#[derive(Clone)]
struct App {
    shared: Arc<Shared>,
    watched: Arc<Watched>,
    /// The last report of each candidate (`None`: today's policy alone), and when it was made;
    /// the lock makes reports one at a time (a report's replay holds it until it ends).
    reports: Arc<tokio::sync::Mutex<Vec<Made>>>,
}

pub(super) fn router(shared: Arc<Shared>, watched: Arc<Watched>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/report", get(report))
        .layer(axum::middleware::from_fn(header_bound))
        .with_state(App {
            shared,
            watched,
            reports: Arc::default(),
        })
}

/// 431 for a request whose header passes [`MAX_HEADER_BYTES`] (the connection's read buffer is
/// bounded by it too, `listen`: this says so to a client that sent it whole at once).
async fn header_bound(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let bytes: usize = req.uri().to_string().len()
        + req
            .headers()
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum::<usize>();
    if bytes > MAX_HEADER_BYTES {
        return (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            [(header::CONNECTION, "close")],
            format!("a request header is at most {MAX_HEADER_BYTES} bytes\n"),
        )
            .into_response();
    }
    next.run(req).await
}

async fn metrics(State(app): State<App>) -> Response {
    // What the last `--state` written holds: a count is served once the file holds it.
    let body = {
        let p = app.shared.published.lock().unwrap_or_else(|e| e.into_inner());
        let verdicts: Vec<(String, &'static str)> =
            p.verdicts.iter().map(|(n, v, _)| (n.clone(), v.as_str())).collect();
        let gauges = Gauges {
            cursor: Some(p.cursor),
            last_success: p.last_success,
            verdicts: &verdicts,
            incident: p.active.is_incident(),
            busy: p.active.busy(),
            present: p.present.as_ref(),
        };
        crate::output::watch::metrics(&p.counters, &gauges)
    };
    ([(header::CONTENT_TYPE, crate::output::watch::CONTENT_TYPE)], body).into_response()
}

async fn healthz(State(app): State<App>) -> Response {
    let health = app.shared.health.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let waiting = waiting_words(app.shared.published.lock().unwrap_or_else(|e| e.into_inner()).waiting);
    let text = match &health {
        Health::Ok => format!("ok; {waiting}\n"),
        Health::Starting => "waiting for the first poll of Lookout to succeed\n".to_string(),
        Health::Failing { failures, error } => {
            format!("{failures} polls failed in a row; the last: {error}; {waiting}\n")
        }
    };
    let status = StatusCode::from_u16(health.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

#[derive(serde::Deserialize)]
struct ReportQuery {
    candidate: Option<String>,
}

async fn report(State(app): State<App>, Query(q): Query<ReportQuery>) -> Response {
    let names = app.watched.sets.names();
    let which = match q.candidate.as_deref() {
        Some(name) => match names.iter().position(|n| n == name) {
            Some(i) => Some(i),
            None => {
                let known = if names.is_empty() {
                    "none is watched".to_string()
                } else {
                    format!("watched: {}", names.join(", "))
                };
                let text = format!("no candidate `{name}` ({known})\n");
                return (StatusCode::NOT_FOUND, text).into_response();
            }
        },
        // The first candidate, or today's policy alone when there is none.
        None => (!names.is_empty()).then_some(0),
    };
    // Waiting for the lock ends with the request: nothing is started for a client that left.
    let mut reports = app.reports.clone().lock_owned().await;
    let fresh = |made: &Instant| made.elapsed() < app.watched.flags.poll;
    if let Some((_, _, page)) = reports.iter().find(|(c, made, _)| *c == which && fresh(made)) {
        return html(page.clone());
    }
    let watched = app.watched.clone();
    // The candidate's verdict over the window as published (what `/metrics` says of it).
    let verdict = which.and_then(|i| {
        let p = app.shared.published.lock().unwrap_or_else(|e| e.into_inner());
        p.verdicts.get(i).map(|(_, _, words)| words.clone())
    });
    // The replay once started is the server's, not the request's: it holds the lock until it
    // ends and keeps its page, whether or not its client is still there. Tied to the request,
    // a client that closed its connection (or was closed as the oldest) dropped the lock with
    // the replay still running and its page thrown away: each such request started one more
    // replay with its own connection to Lookout, until the descriptors ran out and the poller
    // could no longer reach the database.
    let made = tokio::spawn(async move {
        let made = tokio::task::spawn_blocking(move || {
            report_of(&watched, which).map(|mut page| {
                if let Some(words) = verdict {
                    crate::output::watch::headline(&mut page, &watched.window_words, &words);
                }
                Arc::new(page)
            })
        })
        .await;
        if let Ok(Ok(page)) = &made {
            reports.retain(|(c, _, _)| *c != which);
            reports.push((which, Instant::now(), page.clone()));
        }
        made
    })
    .await;
    match made {
        Ok(Ok(Ok(page))) => html(page),
        Ok(Ok(Err(e))) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the report could not be made: {e:#}\n"),
        )
            .into_response(),
        Ok(Err(e)) | Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("the report failed: {e}\n")).into_response(),
    }
}

fn html(page: Arc<Vec<u8>>) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], Vec::clone(&page)).into_response()
}

/// The report of the jobs that reached a terminal state within `--window`: the plan of
/// candidate `which` against today's policy (`simulate --baseline -o html`), or today's
/// replay alone (`simulate -o html`). What the replay says on stderr (rows left out, jobs
/// it could not replay) is the poller's to say: not repeated here.
fn report_of(w: &Watched, which: Option<usize>) -> anyhow::Result<Vec<u8>> {
    let db = Arc::new(db::connect(&w.dsn, w.timeout)?);
    let from = now_micros().saturating_sub(w.flags.window);
    let stream = terminal::terminal_jobs(db, w.queues.clone(), from, PAGE);
    let source = ExportSource::new(Export::new(stream), w.settings.clone(), "lookout-db");
    let export = source.state();
    let mut page = Vec::new();
    let mut said = Vec::new();
    {
        let stderr = Stderr::new(&mut said, Style::default(), None, false);
        // A plan counts the jobs whose record contradicts today's policy, as `simulate
        // --baseline` does: today's is a policy the cluster runs.
        let options = Options {
            explain: which.is_some(),
            ..Options::default()
        };
        match which {
            Some(i) => {
                let mode = Mode::Compare {
                    all_changes: false,
                    baseline: Baseline::Files,
                };
                let mut sink = sink(Format::Html, mode, &mut page, stderr);
                let sets = w.sets.only(i).expect("a watched candidate");
                compare(source, &sets, &options, Out::Sink(&mut *sink))?;
            }
            None => {
                let mut sink = sink(Format::Html, Mode::Replay { bulk: true }, &mut page, stderr);
                replay(source, &w.sets.baseline, &options, Out::Sink(&mut *sink))?;
            }
        }
    }
    if let Some(e) = export.lock().unwrap_or_else(|e| e.into_inner()).error.take() {
        return Err(e);
    }
    Ok(page)
}

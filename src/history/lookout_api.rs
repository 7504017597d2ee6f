//! Lookout's REST API (`--lookout-url`, `contract/lookout/swagger.yaml`) as a stream of jobs.
//!
//! Owns: `POST /api/v1/jobs` with the filters of [`Filter`], ordered by `jobId`, paged with
//! skip/take ([`PAGE`] jobs a page, one page held at a time), and `POST /api/v1/jobRunError`
//! for each failed or preempted run (Lookout answers the error text already decompressed).
//! Statuses: connection failure or timeout → exit 4 with the URL (credentials masked),
//! 401/403 → exit 5, any other non-2xx or a body that is not the swagger shape → exit 4.
//! Must not: map rows (`mapping`), or print. Auth comes from the client's own resolution
//! (`settings` → `client::Auth`), read only, and so does TLS (`client::ClientTls`: the CA
//! file and skip-verify of the Armada connection apply to Lookout's too).

use std::collections::VecDeque;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::mapping::{state, ErrorText, JobRow, LookoutJob, RowError, RunRow};
use super::{Filter, Item};
use crate::client::{redact_url, Auth, ClientTls};
use crate::error::{CliError, ExitCode};
use crate::model::history::Timestamp;

/// Jobs per page.
pub const PAGE: usize = 500;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobsResponse {
    jobs: Vec<ApiJob>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiJob {
    job_id: String,
    queue: String,
    job_set: String,
    memory: i64,
    submitted: String,
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default)]
    runs: Vec<ApiRun>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiRun {
    run_id: String,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    leased: Option<String>,
    #[serde(default)]
    pending: Option<String>,
    #[serde(default)]
    started: Option<String>,
    #[serde(default)]
    finished: Option<String>,
    job_run_state: String,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    failure_category: Option<String>,
    #[serde(default)]
    failure_subcategory: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunErrorResponse {
    #[serde(default)]
    error_string: String,
}

pub struct Api {
    http: reqwest::blocking::Client,
    base: String,
    auth: Auth,
}

impl Api {
    pub fn new(base: &str, auth: Auth, tls: &ClientTls, timeout: Duration) -> Result<Api, CliError> {
        let builder = tls
            .apply(reqwest::blocking::Client::builder(), base)
            .map_err(|e| CliError::new(ExitCode::Unreachable, format!("cannot set up TLS: {e}")))?;
        let http = builder
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .map_err(|e| CliError::new(ExitCode::Unreachable, format!("cannot build an HTTP client: {e}")))?;
        Ok(Api {
            http,
            base: base.trim_end_matches('/').to_string(),
            auth,
        })
    }

    fn post(&self, path: &str, body: &Value) -> Result<String, CliError> {
        let url = format!("{}{path}", self.base);
        let shown = redact_url(&url);
        let mut req = self.http.post(&url).json(body);
        req = match &self.auth {
            Auth::None => req,
            Auth::Basic { username, password } => req.basic_auth(username, Some(password)),
            Auth::Bearer(t) => req.bearer_auth(t),
        };
        let resp = req.send().map_err(|e| {
            let what = if e.is_timeout() { "timed out" } else { "unreachable" };
            CliError::new(
                ExitCode::Unreachable,
                format!("Lookout at `{shown}` is {what}: {}", root_cause(&e)),
            )
        })?;
        let status = resp.status();
        let text = resp.text().unwrap_or_default();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(CliError::new(
                ExitCode::Auth,
                format!("Lookout at `{shown}` refused the credentials ({status})"),
            ));
        }
        if !status.is_success() {
            let msg = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(String::from))
                .unwrap_or_else(|| text.chars().take(200).collect());
            return Err(CliError::new(
                ExitCode::Unreachable,
                format!("Lookout at `{shown}` answered {status}: {msg}"),
            ));
        }
        Ok(text)
    }

    fn page(&self, filter: &Filter, skip: usize) -> Result<Vec<ApiJob>, CliError> {
        let mut filters = vec![json!({"field": "queue", "value": filter.queue, "match": "exact"})];
        if let Some(js) = &filter.jobset {
            filters.push(json!({"field": "jobSet", "value": js, "match": "exact"}));
        }
        if !filter.jobs.is_empty() {
            filters.push(json!({"field": "jobId", "value": filter.jobs, "match": "anyOf"}));
        }
        if let Some(t) = filter.from {
            filters.push(json!({"field": "submitted", "value": t.to_string(), "match": "greaterThanOrEqualTo"}));
        }
        if let Some(t) = filter.to {
            filters.push(json!({"field": "submitted", "value": t.to_string(), "match": "lessThan"}));
        }
        let body = json!({
            "filters": filters,
            "order": {"field": "jobId", "direction": "ASC"},
            "skip": skip,
            "take": PAGE,
        });
        let text = self.post("/api/v1/jobs", &body)?;
        serde_json::from_str::<JobsResponse>(&text)
            .map(|r| r.jobs)
            .map_err(|e| {
                CliError::new(
                    ExitCode::Unreachable,
                    format!(
                        "Lookout at `{}` answered `/api/v1/jobs` with an unexpected body: {e}",
                        redact_url(&self.base)
                    ),
                )
            })
    }

    fn run_error(&self, run_id: &str) -> Result<String, CliError> {
        let text = self.post("/api/v1/jobRunError", &json!({"runId": run_id}))?;
        serde_json::from_str::<RunErrorResponse>(&text)
            .map(|r| r.error_string)
            .map_err(|e| {
                CliError::new(
                    ExitCode::Unreachable,
                    format!(
                        "Lookout at `{}` answered `/api/v1/jobRunError` with an unexpected body: {e}",
                        redact_url(&self.base)
                    ),
                )
            })
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(s) = cur.source() {
        cur = s;
    }
    cur.to_string()
}

/// The jobs of `filter`, page by page.
pub fn jobs<'a>(api: Api, filter: &'a Filter) -> super::Source<'a> {
    Box::new(ApiJobs {
        api,
        filter,
        skip: 0,
        buffered: VecDeque::new(),
        done: false,
    })
}

struct ApiJobs<'a> {
    api: Api,
    filter: &'a Filter,
    skip: usize,
    buffered: VecDeque<ApiJob>,
    done: bool,
}

impl Iterator for ApiJobs<'_> {
    type Item = anyhow::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffered.is_empty() && !self.done {
            match self.api.page(self.filter, self.skip) {
                Ok(jobs) => {
                    self.done = jobs.len() < PAGE;
                    self.skip += jobs.len();
                    self.buffered.extend(jobs);
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.into()));
                }
            }
        }
        let job = self.buffered.pop_front()?;
        Some(self.convert(job))
    }
}

impl ApiJobs<'_> {
    fn convert(&self, j: ApiJob) -> anyhow::Result<Item> {
        let bad = |run_id: Option<&str>, message: String| {
            Ok(Item::Bad(RowError {
                job_id: j.job_id.clone(),
                run_id: run_id.map(String::from),
                message,
            }))
        };
        let time = |field: &str, v: &Option<String>| -> Result<Option<Timestamp>, String> {
            match v.as_deref() {
                None | Some("") => Ok(None),
                Some(s) => Timestamp::parse(s)
                    .map(Some)
                    .ok_or_else(|| format!("`{field}` is not an RFC 3339 time: `{s}`")),
            }
        };
        let submitted = match time("submitted", &Some(j.submitted.clone())) {
            Ok(t) => t,
            Err(m) => return bad(None, m),
        };
        let mut runs = Vec::with_capacity(j.runs.len());
        for r in &j.runs {
            let Some(st) = state::from_name(&r.job_run_state) else {
                // Unknown names map to an out-of-table value: counted as an unknown state.
                runs.push(RunRow {
                    run_id: r.run_id.clone(),
                    state: 0,
                    ..RunRow::default()
                });
                continue;
            };
            let times = (|| {
                Ok::<_, String>((
                    time("leased", &r.leased)?,
                    time("pending", &r.pending)?,
                    time("started", &r.started)?,
                    time("finished", &r.finished)?,
                ))
            })();
            let (leased, pending, started, finished) = match times {
                Ok(t) => t,
                Err(m) => return bad(Some(&r.run_id), m),
            };
            let error = if st == state::FAILED || st == state::PREEMPTED {
                ErrorText::Text(self.api.run_error(&r.run_id)?)
            } else {
                ErrorText::None
            };
            runs.push(RunRow {
                run_id: r.run_id.clone(),
                node: r.node.clone(),
                state: st,
                leased,
                pending,
                started,
                finished,
                exit_code: r.exit_code,
                error,
                category: r.failure_category.clone(),
                subcategory: r.failure_subcategory.clone(),
            });
        }
        Ok(Item::Job(LookoutJob {
            job: JobRow {
                job_id: j.job_id.clone(),
                queue: j.queue.clone(),
                jobset: j.job_set.clone(),
                memory: Some(j.memory),
                submitted,
                annotations: j.annotations.clone(),
            },
            runs,
        }))
    }
}

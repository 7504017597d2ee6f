//! Lookout's REST API (`--lookout-url`, `contract/lookout/swagger.yaml`) as a stream of jobs.
//!
//! Owns: `POST /api/v1/jobs` with the filters of [`Filter`], ordered by `jobId`, paged with
//! skip/take ([`PAGE`] jobs a page, one page held at a time, at most [`PAGE_BYTES_MAX`]), and
//! `POST /api/v1/jobRunError` for each failed, preempted or returned run (Lookout answers the
//! error text already inflated: it is read as a stream, at most [`ERROR_TEXT_MAX`] bytes of
//! text, and the rest of the body is not read, so a bomb costs what the cap costs).
//! Statuses: connection failure or timeout → exit 4 with the URL (credentials masked),
//! 401/403 → exit 5, any other non-2xx or a body that is not the swagger shape → exit 4.
//! A job or run in a page that does not decode (a time that is not RFC 3339, a missing
//! field, annotations that are not strings) is an [`Item::Bad`]: left out and reported.
//! Must not: map rows (`mapping`), or print. Auth comes from the client's own resolution
//! (`settings` → `client::Auth`), read only, and so does TLS (`client::ClientTls`: the CA
//! file and skip-verify of the Armada connection apply to Lookout's too).

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::mapping::{self, error_text, job_state, state, JobRow, LookoutJob, Place, RowError, RunRow, ERROR_TEXT_MAX};
use super::{Filter, Item};
use crate::client::{redact_url, root_cause, Auth, ClientTls};
use crate::error::{CliError, ExitCode};
use crate::model::failure_history::Timestamp;

/// Jobs per page.
pub const PAGE: usize = 500;

/// Bytes of one page's answer read at most: a page of [`PAGE`] jobs is a few hundred KiB.
pub const PAGE_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// Bytes of any other answer read at most (errors, and the error text's body past the text).
const OTHER_BYTES_MAX: u64 = 64 * 1024;

/// The page as JSON values: each job decodes on its own, so one bad job is one report.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobsResponse {
    jobs: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiJob {
    job_id: String,
    queue: String,
    /// An older Lookout that leaves it out: no job set.
    #[serde(default)]
    job_set: Option<String>,
    memory: i64,
    /// Millicores; an older Lookout that leaves it out requests none.
    #[serde(default)]
    cpu: i64,
    #[serde(default)]
    gpu: i64,
    submitted: String,
    #[serde(default)]
    annotations: Option<Value>,
    /// `QUEUED` … `REJECTED`; a name Lookout may add later leaves the job's end unsaid.
    #[serde(default)]
    state: Option<String>,
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
    #[serde(default)]
    pool: Option<String>,
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

    /// The answer to `POST path`, when it is a 2xx.
    fn post(&self, path: &str, body: &Value) -> Result<reqwest::blocking::Response, CliError> {
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
        if status.is_success() {
            return Ok(resp);
        }
        let text = read_capped(resp, OTHER_BYTES_MAX).map(|(t, _)| t).unwrap_or_default();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(CliError::new(
                ExitCode::Auth,
                format!("Lookout at `{shown}` refused the credentials ({status})"),
            ));
        }
        let msg = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(String::from))
            .unwrap_or_else(|| text.chars().take(200).collect());
        Err(CliError::new(
            ExitCode::Unreachable,
            format!("Lookout at `{shown}` answered {status}: {msg}"),
        ))
    }

    fn unexpected(&self, path: &str, why: impl std::fmt::Display) -> CliError {
        CliError::new(
            ExitCode::Unreachable,
            format!(
                "Lookout at `{}` answered `{path}` with an unexpected body: {why}",
                redact_url(&self.base)
            ),
        )
    }

    /// The page of jobs from `skip`, and a digest of its body (to know a page Lookout sends
    /// again).
    fn page(&self, filter: &Filter, skip: usize) -> Result<(Vec<Value>, u64), CliError> {
        let mut filters: Vec<serde_json::Value> = filter
            .queue
            .iter()
            .map(|q| json!({"field": "queue", "value": q, "match": "exact"}))
            .collect();
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
        let path = "/api/v1/jobs";
        let resp = self.post(path, &body)?;
        let (text, cut) = read_capped(resp, PAGE_BYTES_MAX).map_err(|e| self.unexpected(path, e))?;
        if cut {
            return Err(self.unexpected(
                path,
                format!("more than {} MiB for a page of {PAGE} jobs", PAGE_BYTES_MAX >> 20),
            ));
        }
        let digest = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        serde_json::from_str::<JobsResponse>(&text)
            .map(|r| (r.jobs, digest))
            .map_err(|e| self.unexpected(path, e))
    }

    /// The run's error text and whether it was cut at [`ERROR_TEXT_MAX`].
    fn run_error(&self, run_id: &str) -> Result<(String, bool), CliError> {
        let path = "/api/v1/jobRunError";
        let resp = self.post(path, &json!({"runId": run_id}))?;
        error_string(BufReader::new(resp)).map_err(|e| self.unexpected(path, format!("for run `{run_id}`: {e}")))
    }
}

/// At most `cap` bytes of `body` as text, and whether there was more (left unread).
fn read_capped(body: impl Read, cap: u64) -> Result<(String, bool), String> {
    let mut bytes = Vec::new();
    body.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading it failed: {}", root_cause(&e)))?;
    let cut = bytes.len() as u64 > cap;
    bytes.truncate(cap as usize);
    if cut {
        // The cap can fall inside a character: that character is cut, not the text "not
        // UTF-8" (the caller says the body was too long).
        if let Err(e) = std::str::from_utf8(&bytes) {
            if e.error_len().is_none() {
                bytes.truncate(e.valid_up_to());
            }
        }
    }
    String::from_utf8(bytes)
        .map(|t| (t, cut))
        .map_err(|_| "not UTF-8".to_string())
}

/// `{"errorString": "…"}` read as a stream: the string is decoded until [`ERROR_TEXT_MAX`]
/// bytes of text and the rest of the body is not read. Other members are skipped (at most
/// [`OTHER_BYTES_MAX`] bytes of them); a missing `errorString` is an empty text.
fn error_string(body: impl BufRead) -> Result<(String, bool), String> {
    let mut r = Scanner {
        bytes: body.bytes(),
        peeked: None,
        skipped: 0,
    };
    r.expect(b'{')?;
    if r.peek_ws()? == b'}' {
        return Ok((String::new(), false));
    }
    loop {
        r.expect(b'"')?;
        let mut key = Vec::new();
        if !r.string(&mut key, 64)? {
            return Err("a member name longer than 64 bytes".into());
        }
        r.expect(b':')?;
        if key == b"errorString" {
            r.expect(b'"')?;
            let mut text = Vec::new();
            let whole = r.string(&mut text, ERROR_TEXT_MAX)?;
            return Ok((error_text(&text, !whole), !whole));
        }
        r.skip_value()?;
        match r.next_ws()? {
            b',' => {}
            b'}' => return Ok((String::new(), false)),
            c => return Err(format!("`{}` where `,` or `}}` was expected", c as char)),
        }
    }
}

/// A byte-at-a-time JSON reader with one byte of lookahead, for [`error_string`] (over a
/// buffered body).
struct Scanner<R: BufRead> {
    bytes: std::io::Bytes<R>,
    peeked: Option<u8>,
    /// Bytes of members other than `errorString` read so far.
    skipped: u64,
}

impl<R: BufRead> Scanner<R> {
    fn byte(&mut self) -> Result<u8, String> {
        if let Some(b) = self.peeked.take() {
            return Ok(b);
        }
        match self.bytes.next() {
            Some(Ok(b)) => Ok(b),
            Some(Err(e)) => Err(format!("reading it failed: {}", root_cause(&e))),
            None => Err("it ends early".into()),
        }
    }

    fn next_ws(&mut self) -> Result<u8, String> {
        loop {
            let b = self.byte()?;
            if !b.is_ascii_whitespace() {
                return Ok(b);
            }
        }
    }

    /// The next non-space byte, left to be read again.
    fn peek_ws(&mut self) -> Result<u8, String> {
        let b = self.next_ws()?;
        self.peeked = Some(b);
        Ok(b)
    }

    fn expect(&mut self, want: u8) -> Result<(), String> {
        match self.next_ws()? {
            b if b == want => Ok(()),
            b => Err(format!("`{}` where `{}` was expected", b as char, want as char)),
        }
    }

    /// The rest of a string (its `"` read) into `out`, until more than `cap` bytes: `true`
    /// when it ended within them, `false` when it was cut (the rest is not read).
    fn string(&mut self, out: &mut Vec<u8>, cap: usize) -> Result<bool, String> {
        loop {
            if out.len() > cap {
                return Ok(false);
            }
            match self.byte()? {
                b'"' => return Ok(true),
                b'\\' => match self.byte()? {
                    b'"' => out.push(b'"'),
                    b'\\' => out.push(b'\\'),
                    b'/' => out.push(b'/'),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'u' => {
                        let mut c = u32::from(self.hex4()?);
                        if (0xD800..0xDC00).contains(&c) {
                            // A surrogate pair: `\uD83D\uDE00`.
                            if self.byte()? != b'\\' || self.byte()? != b'u' {
                                return Err("a lone surrogate in a string".into());
                            }
                            let low = u32::from(self.hex4()?);
                            if !(0xDC00..0xE000).contains(&low) {
                                return Err("a lone surrogate in a string".into());
                            }
                            c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
                        }
                        let ch = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    b => return Err(format!("`\\{}` in a string", b as char)),
                },
                b => out.push(b),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, String> {
        let mut v = 0u16;
        for _ in 0..4 {
            let d = (self.byte()? as char)
                .to_digit(16)
                .ok_or_else(|| "a `\\u` escape that is not hex".to_string())?;
            v = v * 16 + d as u16;
        }
        Ok(v)
    }

    fn count(&mut self, n: u64) -> Result<(), String> {
        self.skipped += n;
        if self.skipped > OTHER_BYTES_MAX {
            return Err(format!("more than {OTHER_BYTES_MAX} bytes besides `errorString`"));
        }
        Ok(())
    }

    /// Skips the value of another member (strings, numbers, literals, nested containers).
    fn skip_value(&mut self) -> Result<(), String> {
        let mut depth = 0u32;
        let mut b = self.next_ws()?;
        loop {
            self.count(1)?;
            match b {
                b'"' => {
                    let mut sink = Vec::new();
                    if !self.string(&mut sink, OTHER_BYTES_MAX as usize)? {
                        return Err(format!("more than {OTHER_BYTES_MAX} bytes besides `errorString`"));
                    }
                    self.count(sink.len() as u64)?;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| format!("`{}` where a value was expected", b as char))?;
                }
                b',' | b':' if depth > 0 => {}
                c if c.is_ascii_whitespace() => {}
                _ => {
                    // A number or literal: read to its end, leaving the byte after it.
                    loop {
                        let n = self.byte()?;
                        if matches!(n, b',' | b'}' | b']') || n.is_ascii_whitespace() {
                            self.peeked = Some(n);
                            break;
                        }
                        self.count(1)?;
                    }
                }
            }
            if depth == 0 {
                return Ok(());
            }
            b = self.byte()?;
        }
    }
}

/// The jobs of `filter`, page by page.
pub fn jobs<'a>(api: Api, filter: &'a Filter) -> super::JobStream<'a> {
    Box::new(ApiJobs {
        api,
        filter,
        skip: 0,
        buffered: VecDeque::new(),
        pending: VecDeque::new(),
        done: false,
        paging: Paging::default(),
    })
}

struct ApiJobs<'a> {
    api: Api,
    filter: &'a Filter,
    skip: usize,
    buffered: VecDeque<Value>,
    /// What the last job converted yielded: its bad runs, then the job.
    pending: VecDeque<Item>,
    done: bool,
    paging: Paging,
}

/// What the pages so far say about the next: asked in `jobId` order with `skip`, each page
/// starts past the last, so a page sent again (a Lookout, or a proxy, that ignores `skip`),
/// a job id that does not come after the one before, or a job id met again, means the
/// export would never end or would repeat jobs: it stops instead (docs/lookout.md).
#[derive(Default)]
struct Paging {
    /// The last page's offset and the digest of its body.
    last_page: Option<(usize, u64)>,
    /// The last job id and its offset.
    last_id: Option<(String, usize)>,
    /// The last page's job ids and their offsets: what a job met again names (ids that
    /// increase cannot come back from further).
    previous: HashMap<String, usize>,
}

impl Paging {
    /// Checks the page at offset `skip` (its jobs and digest); `Err` says why the export stops.
    fn check(&mut self, skip: usize, jobs: &[Value], digest: u64) -> Result<(), String> {
        if let Some((at, last)) = self.last_page {
            if last == digest && !jobs.is_empty() {
                return Err(format!(
                    "the page at offset {skip} is the page at offset {at} again (Lookout ignores `skip`?); stopped rather than loop"
                ));
            }
        }
        self.last_page = Some((skip, digest));
        let mut current = HashMap::with_capacity(jobs.len());
        for (i, job) in jobs.iter().enumerate() {
            // A job without an id is reported on its own (`not a Lookout job`).
            let Some(id) = job.get("jobId").and_then(Value::as_str) else {
                continue;
            };
            let at = skip + i;
            if let Some(first) = current.get(id).or_else(|| self.previous.get(id)) {
                return Err(format!(
                    "job `{id}` at offset {at} (the page at offset {skip}) was met already at offset {first} (Lookout ignores `skip`?); stopped rather than repeat jobs"
                ));
            }
            if let Some((last, last_at)) = &self.last_id {
                if id <= last.as_str() {
                    return Err(format!(
                        "job `{id}` at offset {at} (the page at offset {skip}) comes after `{last}` at offset {last_at}, though the jobs were asked in `jobId` order; stopped rather than miss or repeat jobs"
                    ));
                }
            }
            current.insert(id.to_string(), at);
            self.last_id = Some((id.to_string(), at));
        }
        self.previous = current;
        Ok(())
    }
}

impl Iterator for ApiJobs<'_> {
    type Item = anyhow::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(Ok(item));
            }
            if self.buffered.is_empty() && !self.done {
                let page = self.api.page(self.filter, self.skip).and_then(|(jobs, digest)| {
                    self.paging
                        .check(self.skip, &jobs, digest)
                        .map(|()| jobs)
                        .map_err(|why| self.api.unexpected("/api/v1/jobs", why))
                });
                match page {
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
            if let Err(e) = self.convert(job) {
                self.done = true;
                self.buffered.clear();
                return Some(Err(e.into()));
            }
        }
    }
}

/// A swagger time: absent or empty is none.
fn time(v: &Option<String>) -> Result<Option<Timestamp>, String> {
    match v.as_deref() {
        None | Some("") => Ok(None),
        Some(s) => Timestamp::parse(s)
            .map(Some)
            .ok_or_else(|| format!("`{s}` is not an RFC 3339 time retryctl can represent")),
    }
}

impl ApiJobs<'_> {
    /// One job of a page into `pending`: its bad runs as [`Item::Bad`], then the job (or the
    /// job as one [`Item::Bad`]). `Err` only when Lookout's answers fail (`jobRunError`).
    fn convert(&mut self, mut v: Value) -> Result<(), CliError> {
        let id = v.get("jobId").and_then(Value::as_str).unwrap_or("").to_string();
        let runs = v.as_object_mut().and_then(|o| o.remove("runs"));
        let j: ApiJob = match serde_json::from_value(v) {
            Ok(j) => j,
            Err(e) => {
                let e = RowError::job(&id, Place::Row, format!("not a Lookout job ({e})"));
                self.pending.push_back(Item::Bad(e));
                return Ok(());
            }
        };
        let job_bad =
            |place: &'static str, message: String| Item::Bad(RowError::job(&j.job_id, Place::Field(place), message));
        let submitted = match time(&Some(j.submitted.clone())) {
            Ok(t) => t,
            Err(m) => {
                self.pending.push_back(job_bad("submitted", m));
                return Ok(());
            }
        };
        let annotations = match j.annotations.as_ref().map(mapping::annotations).transpose() {
            Ok(a) => a.unwrap_or_default(),
            Err(m) => {
                self.pending.push_back(job_bad("annotations", m));
                return Ok(());
            }
        };
        let runs: Vec<Value> = match runs {
            Some(Value::Array(runs)) => runs,
            _ => Vec::new(),
        };
        let mut rows = Vec::with_capacity(runs.len());
        let mut unreadable_runs = 0;
        for r in runs {
            let run_id = r.get("runId").and_then(Value::as_str).unwrap_or("").to_string();
            let run_bad = |place: Place, message: String| Item::Bad(RowError::run(&j.job_id, &run_id, place, message));
            let r: ApiRun = match serde_json::from_value(r) {
                Ok(r) => r,
                Err(e) => {
                    unreadable_runs += 1;
                    self.pending
                        .push_back(run_bad(Place::Row, format!("not a Lookout run ({e})")));
                    continue;
                }
            };
            let Some(st) = state::from_name(&r.job_run_state) else {
                // Unknown names map to an out-of-table value: counted as an unknown state.
                rows.push(RunRow {
                    run_id: r.run_id.clone(),
                    state: 0,
                    ..RunRow::default()
                });
                continue;
            };
            let times = [
                ("leased", &r.leased),
                ("pending", &r.pending),
                ("started", &r.started),
                ("finished", &r.finished),
            ]
            .map(|(field, v)| time(v).map_err(|m| (field, m)));
            let [leased, pending, started, finished] = match times {
                [Ok(a), Ok(b), Ok(c), Ok(d)] => [a, b, c, d],
                bad => {
                    let (field, m) = bad.into_iter().find_map(Result::err).unwrap_or_default();
                    unreadable_runs += 1;
                    self.pending.push_back(run_bad(Place::Field(field), m));
                    continue;
                }
            };
            // A returned lease's text too: a stuck pod's or a failed-pod check's, with its
            // category (docs/lookout.md).
            let (error, error_truncated) = if matches!(st, state::FAILED | state::PREEMPTED | state::LEASE_RETURNED) {
                let (text, cut) = self.api.run_error(&r.run_id)?;
                (Some(text), cut)
            } else {
                (None, false)
            };
            rows.push(RunRow {
                run_id: r.run_id,
                node: r.node,
                state: st,
                leased,
                pending,
                started,
                finished,
                exit_code: r.exit_code,
                error,
                error_truncated,
                category: r.failure_category,
                subcategory: r.failure_subcategory,
                // The REST source does not ask `jobRunDebugMessage` per run (yet): no events.
                debug: None,
                pool: r.pool,
            });
        }
        self.pending.push_back(Item::Job(LookoutJob {
            job: JobRow {
                job_id: j.job_id,
                queue: j.queue,
                job_set: j.job_set,
                memory: j.memory,
                cpu: j.cpu,
                gpu: j.gpu,
                submitted,
                annotations,
                state: j.state.as_deref().and_then(job_state::from_name),
            },
            runs: rows,
            unreadable_runs,
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages that go on in `jobId` order pass; a page sent again, a job met again (within
    /// the page or from the last one) and an id that does not increase stop the export,
    /// naming the offsets.
    #[test]
    fn pages_that_do_not_go_on_stop_the_export() {
        let page = |ids: &[&str]| -> Vec<Value> { ids.iter().map(|id| json!({"jobId": id})).collect() };
        let mut p = Paging::default();
        assert_eq!(p.check(0, &page(&["a", "b"]), 1), Ok(()));
        assert_eq!(p.check(2, &page(&["c", "d"]), 2), Ok(()));
        // A job without an id is no evidence either way.
        assert_eq!(p.check(4, &[json!({}), json!({"jobId": "e"})], 3), Ok(()));
        assert_eq!(
            p.check(6, &page(&["x"]), 3),
            Err("the page at offset 6 is the page at offset 4 again (Lookout ignores `skip`?); stopped rather than loop".into())
        );
        let mut p = Paging::default();
        assert_eq!(p.check(0, &page(&["a", "b"]), 1), Ok(()));
        assert_eq!(
            p.check(2, &page(&["b", "c"]), 2),
            Err("job `b` at offset 2 (the page at offset 2) was met already at offset 1 (Lookout ignores `skip`?); stopped rather than repeat jobs".into())
        );
        let mut p = Paging::default();
        assert_eq!(
            p.check(0, &page(&["a", "c", "a"]), 1),
            Err("job `a` at offset 2 (the page at offset 0) was met already at offset 0 (Lookout ignores `skip`?); stopped rather than repeat jobs".into())
        );
        let mut p = Paging::default();
        assert_eq!(p.check(0, &page(&["a", "c"]), 1), Ok(()));
        assert_eq!(
            p.check(2, &page(&["b"]), 2),
            Err("job `b` at offset 2 (the page at offset 2) comes after `c` at offset 1, though the jobs were asked in `jobId` order; stopped rather than miss or repeat jobs".into())
        );
    }

    fn read(body: &str) -> Result<(String, bool), String> {
        error_string(body.as_bytes())
    }

    /// A body cut at its cap inside a character is that much text, cut (the caller says it
    /// was too long), not "not UTF-8"; bytes that are not UTF-8 before the cap still are.
    #[test]
    fn a_body_cut_inside_a_character_is_cut_text() {
        assert_eq!(read_capped("abé".as_bytes(), 3), Ok(("ab".into(), true)));
        assert_eq!(read_capped("ab€x".as_bytes(), 4), Ok(("ab".into(), true)));
        assert_eq!(read_capped("abé".as_bytes(), 4), Ok(("abé".into(), false)));
        assert_eq!(read_capped(&b"a\xffbcd"[..], 3), Err("not UTF-8".into()));
        assert_eq!(read_capped(&b"abc\xff"[..], 4), Err("not UTF-8".into()));
    }

    #[test]
    fn the_error_string_is_read_as_a_stream_and_cut() {
        assert_eq!(read(r#"{"errorString": "OOMKilled"}"#), Ok(("OOMKilled".into(), false)));
        assert_eq!(read(r#" { } "#), Ok((String::new(), false)));
        assert_eq!(
            read(
                r#"{"other": {"a": [1, -2.5e3, true, null, "x\"}"]}, "n": 12, "errorString": "a\nb\u00e9\ud83d\ude00\\"}"#
            ),
            Ok(("a\nbé😀\\".into(), false))
        );
        assert_eq!(read(r#"{"other": 1}"#), Ok((String::new(), false)));
        // A bomb: the body is not read past the cap (an endless reader would never end).
        let endless = std::io::repeat(b'x');
        let (text, cut) = error_string(BufReader::new(std::io::Read::chain(
            &b"{\"errorString\": \""[..],
            endless,
        )))
        .unwrap();
        assert!(cut);
        assert_eq!(text, format!("{}… [truncated]", "x".repeat(ERROR_TEXT_MAX)));
        // So is another member's: its cost is bounded too.
        let endless = std::io::repeat(b'x');
        let e = error_string(BufReader::new(std::io::Read::chain(&b"{\"other\": \""[..], endless))).unwrap_err();
        assert_eq!(e, "more than 65536 bytes besides `errorString`");
        for (body, want) in [
            ("", "it ends early"),
            ("[]", "`[` where `{` was expected"),
            (r#"{"errorString": 3}"#, "`3` where `\"` was expected"),
            (r#"{"errorString": "\q"}"#, "`\\q` in a string"),
            (r#"{"errorString": "\ud800x"}"#, "a lone surrogate in a string"),
            (r#"{"a": 1 "b": 2}"#, "`\"` where `,` or `}` was expected"),
        ] {
            assert_eq!(read(body).unwrap_err(), want, "{body}");
        }
    }
}

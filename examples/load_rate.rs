//! An open-loop load generator for `retryctl serve` (scripts/bench-post-rate.sh): requests
//! are sent at a fixed offered rate, whatever the server's answers do, and each request's
//! latency is measured from the time it was *due*, not from when it went out.
//!
//! Why not wrk: wrk is closed-loop (each connection sends its next request when the last
//! answer arrives), so under a flood its latency is mostly time spent queueing behind its own
//! requests, and a server stall holds back the requests that would have measured it
//! (coordinated omission). The bar (docs/reference/bars.md) is "p99 under 10 ms at >= 10,000 writes/s": a
//! latency at a given rate, which only a fixed-rate load measures.
//!
//! How: request `i` is due at `start + i / rate`. `--connections` keep-alive HTTP/1.1
//! connections form a pool; a connection that is free takes the next due request, waits
//! until it is due, sends it and reads the whole answer. If every connection is busy when a
//! request falls due, it waits for the first free one, and that wait counts in its latency,
//! as it would for a real client with that many connections. One thread (a current-thread
//! tokio runtime), so `taskset` can pin the generator to one core.
//!
//! Latency "from due" includes the timer's granularity (tokio's timer wheel is 1 ms: a request
//! can go out up to 1 ms after it was due), so it errs on the high side; "from send" is the
//! plain time from write to full answer.
//!
//!     cargo build --release --example load_rate
//!     target/release/examples/load_rate http://127.0.0.1:8080 --rate 10000 --duration 10 \
//!         --connections 64 --route post
//!
//! `--timeline` adds the percentiles of each second of the run.
//!
//! Routes: `post` (POST /v1/retry-policy, a new name per request: one write each), `get`
//! (GET /v1/retry-policy/bench, which must exist, or `--path`: `/` of examples/hello_axum), `put` (PUT /v1/retry-policy/put-<conn>
//! with the `If-Match` of that connection's previous answer; the policies are created first).
//! Prints the offered and achieved rates, latency percentiles, and errors (an answer that is
//! not 2xx, a socket error, or an answer not complete 5 s after the run). Exit status 1 on
//! any error.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

#[derive(Clone, Copy, PartialEq)]
enum Route {
    Post,
    Get,
    Put,
}

struct Args {
    addr: String,
    rate: f64,
    duration: f64,
    connections: usize,
    route: Route,
    prefix: String,
    timeline: bool,
    /// The path of `--route get`.
    get_path: String,
}

/// Says what was wrong with the command line, then how it goes, and exits 2.
fn usage(problem: &str) -> ! {
    eprintln!("load_rate: {problem}");
    eprintln!(
        "usage: load_rate http://HOST:PORT [--rate PER_SECOND] [--duration SECONDS] [--connections N] [--route post|get|put] [--prefix NAME_PREFIX] [--path GET_PATH] [--timeline]"
    );
    std::process::exit(2)
}

/// `value` of `flag` as a number greater than zero.
fn positive<T: std::str::FromStr + PartialOrd + Default>(flag: &str, value: &str) -> T {
    match value.parse::<T>() {
        Ok(n) if n > T::default() => n,
        _ => usage(&format!("`{flag}` takes a number greater than 0, not `{value}`")),
    }
}

fn parse_args() -> Args {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| usage("missing the server's URL"));
    let addr = url
        .strip_prefix("http://")
        .unwrap_or_else(|| usage(&format!("the URL must start with `http://`, not `{url}`")))
        .trim_end_matches('/');
    let mut parsed = Args {
        addr: addr.to_string(),
        rate: 10_000.0,
        duration: 10.0,
        connections: 64,
        route: Route::Post,
        timeline: false,
        get_path: "/v1/retry-policy/bench".into(),
        // Names unique to this run, so several runs can post to one server.
        prefix: format!(
            "lr{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() % 100_000_000)
                .unwrap_or(0)
        ),
    };
    while let Some(flag) = args.next() {
        if flag == "--timeline" {
            parsed.timeline = true;
            continue;
        }
        let known = ["--rate", "--duration", "--connections", "--prefix", "--path", "--route"];
        if !known.contains(&flag.as_str()) {
            usage(&format!("unknown argument `{flag}`"));
        }
        let value = args.next().unwrap_or_else(|| usage(&format!("`{flag}` needs a value")));
        match flag.as_str() {
            "--rate" => parsed.rate = positive(&flag, &value),
            "--duration" => parsed.duration = positive(&flag, &value),
            "--connections" => parsed.connections = positive(&flag, &value),
            "--prefix" => parsed.prefix = value,
            "--path" => parsed.get_path = value,
            "--route" => {
                parsed.route = match value.as_str() {
                    "post" => Route::Post,
                    "get" => Route::Get,
                    "put" => Route::Put,
                    _ => usage(&format!("`--route` is `post`, `get` or `put`, not `{value}`")),
                }
            }
            _ => unreachable!("checked against `known` above"),
        }
    }
    parsed
}

/// What the connections share: the next request to send, and what was measured.
struct Run {
    start: Instant,
    interval: Duration,
    total: u64,
    next: Cell<u64>,
    /// Microseconds from due time to full answer, one per answered request.
    from_due: RefCell<Vec<u32>>,
    /// Microseconds from the write to the full answer.
    from_send: RefCell<Vec<u32>>,
    /// Microseconds from due time to the write: the generator's own lateness (its 1 ms
    /// timer, a busy pool, its core being taken), part of "from due" but not the server's.
    send_lag: RefCell<Vec<u32>>,
    /// (second of the run the request was due in, latency from due), for `--timeline`.
    by_second: RefCell<Vec<(u32, u32)>>,
    /// When the last answer arrived: the achieved rate is answers over the time to it.
    last_answer: Cell<Instant>,
    non_2xx: Cell<u64>,
    socket_errors: Cell<u64>,
    /// Status and body of the first non-2xx answer, to say what went wrong.
    first_failure: RefCell<Option<String>>,
}

fn main() {
    let args = parse_args();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let failed = runtime.block_on(tokio::task::LocalSet::new().run_until(run(args)));
    std::process::exit(i32::from(failed));
}

async fn run(args: Args) -> bool {
    let args = Rc::new(args);
    // Connect every connection (and, for PUT, create its policy) before the clock starts.
    let mut conns = Vec::with_capacity(args.connections);
    for c in 0..args.connections {
        let mut conn = Conn::connect(&args.addr).await.unwrap_or_else(|e| {
            eprintln!("load_rate: cannot connect to {}: {e}", args.addr);
            std::process::exit(1)
        });
        if args.route == Route::Put {
            let name = format!("put-{}-{c}", args.prefix);
            let body = policy_body(&name, 1);
            let req = request("POST", "/v1/retry-policy", &args.addr, Some(&body), None);
            match conn.exchange(&req).await {
                Ok(answer) if answer.status / 100 == 2 => conn.etag = answer.etag,
                Ok(answer) => {
                    eprintln!("load_rate: creating {name}: {} {}", answer.status, answer.body);
                    std::process::exit(1)
                }
                Err(e) => {
                    eprintln!("load_rate: creating {name}: {e}");
                    std::process::exit(1)
                }
            }
        }
        conns.push(conn);
    }
    let total = (args.rate * args.duration).round() as u64;
    let start = Instant::now();
    let shared = Rc::new(Run {
        start,
        last_answer: Cell::new(start),
        interval: Duration::from_secs_f64(1.0 / args.rate),
        total,
        next: Cell::new(0),
        from_due: RefCell::new(Vec::with_capacity(total as usize)),
        from_send: RefCell::new(Vec::with_capacity(total as usize)),
        send_lag: RefCell::new(Vec::with_capacity(total as usize)),
        by_second: RefCell::new(Vec::with_capacity(total as usize)),
        non_2xx: Cell::new(0),
        socket_errors: Cell::new(0),
        first_failure: RefCell::new(None),
    });
    let mut tasks = Vec::new();
    for (c, conn) in conns.into_iter().enumerate() {
        tasks.push(tokio::task::spawn_local(connection(
            c,
            conn,
            args.clone(),
            shared.clone(),
        )));
    }
    // Answers still missing 5 s after the last request was due are counted as errors.
    let deadline = shared.start + Duration::from_secs_f64(args.duration) + Duration::from_secs(5);
    let mut unfinished = 0u64;
    for task in tasks {
        match tokio::time::timeout_at(deadline.into(), task).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => unfinished += 1,
        }
    }
    let elapsed = (shared.last_answer.get() - shared.start).as_secs_f64();
    report(&args, &shared, unfinished, elapsed)
}

/// One connection's loop: take the next due request, wait for its time, send, read.
async fn connection(c: usize, mut conn: Conn, args: Rc<Args>, run: Rc<Run>) {
    let put_name = format!("put-{}-{c}", args.prefix);
    loop {
        let i = run.next.get();
        if i >= run.total {
            return;
        }
        run.next.set(i + 1);
        let due = run.start + run.interval.mul_f64(i as f64);
        tokio::time::sleep_until(due.into()).await;
        let req = match args.route {
            Route::Post => {
                let name = format!("{}-{i}", args.prefix);
                request(
                    "POST",
                    "/v1/retry-policy",
                    &args.addr,
                    Some(&policy_body(&name, 2)),
                    None,
                )
            }
            Route::Get => request("GET", &args.get_path, &args.addr, None, None),
            Route::Put => {
                let body = policy_body(&put_name, i % 7 + 1);
                let path = format!("/v1/retry-policy/{put_name}");
                request("PUT", &path, &args.addr, Some(&body), conn.etag.as_deref())
            }
        };
        let sent = Instant::now();
        match conn.exchange(&req).await {
            Ok(answer) => {
                let done = Instant::now();
                run.last_answer.set(done);
                run.from_due.borrow_mut().push(micros(done - due));
                run.from_send.borrow_mut().push(micros(done - sent));
                run.send_lag
                    .borrow_mut()
                    .push(micros(sent.saturating_duration_since(due)));
                let second = (due - run.start).as_secs() as u32;
                run.by_second.borrow_mut().push((second, micros(done - due)));
                if answer.status / 100 == 2 {
                    conn.etag = answer.etag;
                } else {
                    run.non_2xx.set(run.non_2xx.get() + 1);
                    run.first_failure
                        .borrow_mut()
                        .get_or_insert_with(|| format!("{} {}", answer.status, answer.body));
                }
            }
            Err(e) => {
                run.socket_errors.set(run.socket_errors.get() + 1);
                run.first_failure
                    .borrow_mut()
                    .get_or_insert_with(|| format!("socket: {e}"));
                // A broken connection is replaced; if that fails too, this connection stops
                // and the pool carries on with one fewer.
                match Conn::connect(&args.addr).await {
                    Ok(fresh) => conn = fresh,
                    Err(_) => return,
                }
            }
        }
    }
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

fn policy_body(name: &str, limit: u64) -> String {
    format!(
        r#"{{"name":"{name}","retryLimit":{limit},"defaultAction":"Retry","rules":[{{"action":"Retry","onCategory":"oom"}}]}}"#
    )
}

fn request(method: &str, path: &str, host: &str, body: Option<&str>, if_match: Option<&str>) -> Vec<u8> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
    if let Some(tag) = if_match {
        req.push_str(&format!("If-Match: {tag}\r\n"));
    }
    match body {
        Some(body) => {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ));
        }
        None => req.push_str("\r\n"),
    }
    req.into_bytes()
}

struct Answer {
    status: u16,
    etag: Option<String>,
    body: String,
}

/// A keep-alive HTTP/1.1 connection that reads answers framed by `Content-Length` (all of
/// serve's answers to these routes are).
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    etag: Option<String>,
}

impl Conn {
    async fn connect(addr: &str) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::with_capacity(4096),
            etag: None,
        })
    }

    async fn exchange(&mut self, req: &[u8]) -> std::io::Result<Answer> {
        // readiness plus try_write/try_read: tokio's `net` feature, which serve already
        // enables (the AsyncRead/Write helpers would need `io-util` too).
        let mut written = 0;
        while written < req.len() {
            self.stream.writable().await?;
            match self.stream.try_write(&req[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        self.buf.clear();
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at + 4;
            }
            self.read_more().await?;
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).map_err(|_| invalid("a head that is not UTF-8"))?;
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| invalid("no status line"))?;
        let mut length = None;
        let mut etag = None;
        for line in lines {
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                } else if name.eq_ignore_ascii_case("etag") {
                    etag = Some(value.trim().to_string());
                }
            }
        }
        let length = length.ok_or_else(|| invalid("an answer without Content-Length"))?;
        while self.buf.len() < head_end + length {
            self.read_more().await?;
        }
        if self.buf.len() > head_end + length {
            return Err(invalid("bytes after the answer (nothing was pipelined)"));
        }
        let body = String::from_utf8_lossy(&self.buf[head_end..]).into_owned();
        Ok(Answer { status, etag, body })
    }

    async fn read_more(&mut self) -> std::io::Result<()> {
        let len = self.buf.len();
        self.buf.resize(len + 4096, 0);
        let n = loop {
            self.stream.readable().await?;
            match self.stream.try_read(&mut self.buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(len + n);
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        Ok(())
    }
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Prints the run's numbers; true when any request failed.
fn report(args: &Args, run: &Run, unfinished: u64, elapsed: f64) -> bool {
    let route = match args.route {
        Route::Post => "POST /v1/retry-policy (a new name each)".to_string(),
        Route::Get => format!("GET {}", args.get_path),
        Route::Put => "PUT /v1/retry-policy/{name} with If-Match".to_string(),
    };
    let mut from_due = run.from_due.borrow_mut();
    let mut from_send = run.from_send.borrow_mut();
    let mut send_lag = run.send_lag.borrow_mut();
    let answered = from_due.len() as u64;
    let never_sent = run.total - run.next.get().min(run.total);
    let missing = run.total - answered - run.socket_errors.get() - never_sent;
    from_due.sort_unstable();
    from_send.sort_unstable();
    send_lag.sort_unstable();
    let over_10ms = from_due.iter().filter(|&&us| us >= 10_000).count();
    println!(
        "{route}: offered {:.0}/s for {:.1} s over {} connections",
        args.rate, args.duration, args.connections
    );
    println!(
        "  answered {answered} of {} in {elapsed:.2} s: achieved {:.0}/s",
        run.total,
        answered as f64 / elapsed.max(f64::MIN_POSITIVE)
    );
    println!("  latency from due (corrected)  {}", percentiles(&from_due));
    println!("  latency from send             {}", percentiles(&from_send));
    println!("  send lag (due to write)       {}", percentiles(&send_lag));
    if args.timeline {
        // Per second of due time: where in the run the slow requests were.
        let mut by_second = run.by_second.borrow_mut();
        by_second.sort_unstable();
        for second in by_second.chunk_by(|a, b| a.0 == b.0) {
            let mut lat: Vec<u32> = second.iter().map(|&(_, l)| l).collect();
            lat.sort_unstable();
            println!(
                "    second {:>3}: {:>6} answers  {}",
                second[0].0,
                lat.len(),
                percentiles(&lat)
            );
        }
    }
    println!(
        "  >= 10 ms from due: {over_10ms} ({:.3}%)",
        100.0 * over_10ms as f64 / answered.max(1) as f64
    );
    let errors = run.non_2xx.get() + run.socket_errors.get() + missing + never_sent;
    println!(
        "  errors: {errors} (non-2xx {}, socket {}, unanswered {}, never sent {never_sent}; {unfinished} connections unfinished)",
        run.non_2xx.get(),
        run.socket_errors.get(),
        missing
    );
    if let Some(first) = run.first_failure.borrow().as_ref() {
        println!("  first failure: {first}");
    }
    errors > 0
}

fn percentiles(sorted: &[u32]) -> String {
    if sorted.is_empty() {
        return "no answers".into();
    }
    let at = |q: f64| {
        let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[i] as f64 / 1000.0
    };
    format!(
        "p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2} ms",
        at(0.50),
        at(0.90),
        at(0.99),
        at(0.999),
        sorted[sorted.len() - 1] as f64 / 1000.0
    )
}

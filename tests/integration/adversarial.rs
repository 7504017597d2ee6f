//! What an adversarial pass found holding, kept holding: text from a history is inert in the
//! reports (`simulate -o html` and `-o markdown`), and a compressed gRPC message that
//! inflates far past the limit is refused without serve's memory following it.

use std::fs;

use crate::support::{chromium, format_output, retryctl, temp_home};

const QUEUE: &str = "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q\nretryPolicies: [p]\n";
/// Old: one retry on preemption; new: three. A job preempted twice, then successful, is
/// rescued: it is listed among the changed jobs, with its failure class.
const OLD: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n";
const NEW: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n";

/// Each would set `data-pwned="42"` on the page's body if a browser ran it.
const PAYLOADS: [&str; 3] = [
    r#""><script>document.body.setAttribute('data-pwned', 6*7)</script>"#,
    r#"<img src=x onerror="document.body.setAttribute('data-pwned', 6*7)">"#,
    r#"</style><svg onload="document.body.setAttribute('data-pwned', 6*7)">"#,
];

/// A job preempted twice on `node` with failure category `category`, then successful.
fn rescued_job(id: &str, node: &str, category: &str) -> String {
    let failed = serde_json::json!({"node": node, "category": category, "conditions": ["Preempted"], "runFor": "10m"});
    serde_json::json!({
        "job": {"id": id, "queue": "q"},
        "runs": [failed, failed, {"outcome": "succeeded", "runFor": "1h"}],
    })
    .to_string()
}

/// `simulate -f new --baseline old --history h.jsonl ARGS` over `jobs` (JSON lines), in a
/// fresh directory.
fn plan(jobs: &[String], args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    crate::support::write_what_if(dir.path(), OLD, NEW, QUEUE, &(jobs.join("\n") + "\n"));
    let home = temp_home();
    retryctl(home.path())
        .current_dir(dir.path())
        .args(["simulate", "-f", "new", "--baseline", "old", "--history", "h.jsonl"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn markup_in_a_job_id_node_or_category_is_inert_text_in_the_html_report() {
    // Every payload as a job id, as a node and as a failure category.
    let jobs: Vec<String> = (0..3)
        .map(|i| rescued_job(PAYLOADS[i], PAYLOADS[(i + 1) % 3], PAYLOADS[(i + 2) % 3]))
        .collect();
    let out = plan(&jobs, &["-o", "html"]);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let html = String::from_utf8(out.stdout).unwrap();
    // The page has no script, image or event handler of its own: none came in with the data.
    for tag in ["<script", "<img", "<svg onload", "</style><svg"] {
        assert!(!html.contains(tag), "the page has `{tag}`");
    }
    // The three jobs are listed, their ids and classes as text.
    assert!(html.contains("<td><code>&quot;&gt;&lt;script&gt;document.body.setAttribute(&#39;data-pwned&#39;, 6*7)&lt;/script&gt;</code></td>"), "{html}");
    assert!(html.contains("<td><code>&lt;img src=x onerror=&quot;document.body.setAttribute(&#39;data-pwned&#39;, 6*7)&quot;&gt;</code></td>"), "{html}");
    assert!(html.contains("<td><code>&lt;/style&gt;&lt;svg onload=&quot;document.body.setAttribute(&#39;data-pwned&#39;, 6*7)&quot;&gt;</code></td>"), "{html}");

    // In a browser (scripts on): nothing ran, and the markup is the page's text.
    let Some(browser) = chromium::chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("plan.html");
    fs::write(&page, &html).unwrap();
    let dom = chromium::dump_dom(&browser, &page);
    assert!(!dom.contains("data-pwned=\"42\""), "a payload ran:\n{dom}");
    for tag in ["<script", "<img", "<svg onload"] {
        assert!(!dom.contains(tag), "the browser made a `{tag}` element:\n{dom}");
    }
    assert!(
        dom.contains("&lt;img src=x onerror=\"document.body.setAttribute('data-pwned', 6*7)\"&gt;"),
        "{dom}"
    );
}

#[test]
fn a_pipe_or_newline_in_a_job_id_neither_breaks_the_markdown_table_nor_starts_a_heading() {
    // Each id stays one code span: its line breaks shown (`\x0a`), a backtick inside it
    // fenced by two.
    let ids = ["a|b", "x\n# heading", "y\r\n| z | w |", "`c|d`"];
    let jobs: Vec<String> = ids.iter().map(|id| rescued_job(id, "n", "c")).collect();
    let out = plan(&jobs, &["-o", "markdown"]);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("after 2 retries")).collect();
    assert_eq!(
        rows,
        [
            r"| `a\|b` | Failed after 1 retry | Succeeded after 2 retries | rescued |  |",
            r"| `x\x0a# heading` | Failed after 1 retry | Succeeded after 2 retries | rescued |  |",
            r"| `y\x0d\x0a\| z \| w \|` | Failed after 1 retry | Succeeded after 2 retries | rescued |  |",
            r"| `` `c\|d` `` | Failed after 1 retry | Succeeded after 2 retries | rescued |  |",
        ],
        "{text}"
    );
    // Headings are the report's own, and every row of the table has the header's columns.
    let headings: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with('#')).collect();
    assert_eq!(
        headings,
        [
            "## retryctl simulate: what the candidate policies change",
            "### Changed jobs (4 of 4)"
        ],
        "{text}"
    );
    let cells = |line: &str| line.replace(r"\|", "").matches('|').count();
    for row in rows {
        assert_eq!(
            cells(row),
            cells("| job | baseline | candidate | transition | estimate (next run succeeds) |"),
            "{row}"
        );
    }
}

/// Peak resident memory of process `pid` in KiB (`VmHWM` of /proc/PID/status).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in:\n{status}"))
}

/// One gRPC call of `method` on a new HTTP/2 connection to `addr` whose request message is
/// `compressed` as it is (the gzip flag set): the answer's `grpc-status` and `grpc-message`
/// (percent-encoded, as on the wire).
fn call_compressed(addr: &str, method: &str, compressed: &[u8]) -> (String, String) {
    use axum::http::Request;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (client, connection) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut client = client.ready().await.unwrap();
        let request = Request::post(format!("http://{addr}{method}"))
            .header("content-type", "application/grpc")
            .header("grpc-encoding", "gzip")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let (answer, mut send) = client.send_request(request, false).unwrap();
        let mut frame = vec![1u8];
        frame.extend_from_slice(&u32::try_from(compressed.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(compressed);
        // h2 queues what the flow-control window does not take yet; the server may answer
        // (and reset the stream) before reading it all.
        let _ = send.send_data(frame.into(), true);
        let answer = answer.await.unwrap();
        let (head, mut body) = answer.into_parts();
        let mut fields = head.headers;
        if !fields.contains_key("grpc-status") {
            while let Some(chunk) = body.data().await {
                chunk.unwrap();
            }
            fields = body.trailers().await.unwrap().unwrap_or_default();
        }
        let field = |k: &str| fields.get(k).map_or(String::new(), |v| v.to_str().unwrap().to_string());
        (field("grpc-status"), field("grpc-message"))
    })
}

/// A gzip-compressed request of 256 KiB that inflates to 256 MiB: refused as grpc-go refuses
/// a message over its 4 MiB (ResourceExhausted), inflated no further than the limit, so
/// serve's memory stays near where it started, and serve keeps answering.
#[test]
fn a_compressed_grpc_message_inflating_to_256_mib_is_refused_at_4_mib() {
    use std::io::Write;
    let serve = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory"]);
    let addr = serve.url.trim_start_matches("http://").to_string();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        gz.write_all(&zeros).unwrap();
    }
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    let before = peak_rss_kib(serve.pid());
    for method in [
        "/api.RetryPolicyService/CreateRetryPolicy",
        "/api.RetryPolicyService/GetRetryPolicy",
        "/api.QueueService/CreateQueue",
    ] {
        assert_eq!(
            call_compressed(&addr, method, &bomb),
            (
                "8".to_string(),
                "Error%20decompressing:%20size%20limit,%20of%204194304%20bytes,%20exceeded%20while%20decompressing%20message"
                    .to_string()
            ),
            "{method}"
        );
    }
    let after = peak_rss_kib(serve.pid());
    // Not one inflated message held whole (256 MiB), nor the 4 MiB limit many times over:
    // the peak grew by 11 MiB here (16 → 27 MiB, a debug build), under half of this bound.
    assert!(
        after < before + 24 * 1024,
        "peak RSS went from {before} KiB to {after} KiB"
    );
    // Still answering, over gRPC and REST.
    let home = temp_home();
    for url in [serve.url.replace("http://", "grpc://"), serve.url.clone()] {
        let out = retryctl(home.path())
            .args(["--armada-url", &url, "get", "rp", "-o", "name"])
            .output()
            .unwrap();
        assert_eq!(format_output(&out), "exit: 0\n--- stdout\n--- stderr\n", "{url}");
    }
}

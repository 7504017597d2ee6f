//! A tiny scripted HTTP server on 127.0.0.1:0 for what a real server cannot produce:
//! connection refused, a hang, an HTML 500, a plain-text 404, 401/403, and an upstream-style
//! Armada that silently drops the fields it does not know.
//!
//! One thread accepts connections; each request is answered by the script and recorded.
//! `Connection: close` on every answer keeps the parser trivial.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub headers: Vec<(String, String)>,
    /// Sleep this long before answering (a hung server).
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: body.to_string(),
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn text(status: u16, content_type: &'static str, body: &str) -> Reply {
        Reply {
            status,
            content_type,
            body: body.to_string(),
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// The error body (docs/reference/wire.md).
    pub fn error(status: u16, code: i64, message: &str) -> Reply {
        Reply::json(status, json!({"error": message, "code": code, "message": message}))
    }

    pub fn v1(mut self) -> Reply {
        self.headers.push(("Armada-Retry-Policy-Dialect".into(), "v1".into()));
        self
    }

    pub fn delayed(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

type Script = Box<dyn FnMut(&Request) -> Reply + Send>;

pub struct Stub {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

impl Stub {
    /// A server answering every request with `script`.
    pub fn start(script: impl FnMut(&Request) -> Reply + Send + 'static) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let script: Arc<Mutex<Script>> = Arc::new(Mutex::new(Box::new(script)));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                let script = script.clone();
                std::thread::spawn(move || serve(stream, &log, &script));
            }
        });
        Stub { url, requests }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// An upstream-style Armada (no dialect header) that stores only the fields upstream
    /// knows: policies lose every design-dialect field, and, with `old_queues`, rules lose
    /// `mutate` and queues lose `retryPolicies` (an older Armada).
    pub fn upstream(old_queues: bool) -> Stub {
        let mut policies: BTreeMap<String, Value> = BTreeMap::new();
        let mut queues: BTreeMap<String, Value> = BTreeMap::new();
        Stub::start(move |r| {
            let body: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
            let segs: Vec<&str> = r.path.trim_start_matches('/').split('/').collect();
            match (r.method.as_str(), segs.as_slice()) {
                ("GET", ["health"]) => Reply::text(200, "text/plain", "ok"),
                ("POST", ["v1", "retry-policy"]) | ("PUT", ["v1", "retry-policy", _]) => {
                    let kept = keep_upstream_policy(&body, old_queues);
                    policies.insert(kept["name"].as_str().unwrap_or("").to_string(), kept);
                    Reply::json(200, json!({}))
                }
                ("GET", ["v1", "retry-policy", name]) => match policies.get(*name) {
                    Some(p) => Reply::json(200, p.clone()),
                    None => Reply::error(404, 5, &format!("retry policy \"{name}\" not found")),
                },
                ("GET", ["v1", "retry-policies"]) => {
                    Reply::json(200, json!({"retryPolicies": policies.values().collect::<Vec<_>>()}))
                }
                ("POST", ["v1", "queue"]) | ("PUT", ["v1", "queue", _]) => {
                    let mut q = body.clone();
                    if old_queues {
                        q.as_object_mut().unwrap().remove("retryPolicies");
                    }
                    queues.insert(q["name"].as_str().unwrap_or("").to_string(), q);
                    Reply::json(200, json!({}))
                }
                ("GET", ["v1", "queue", name]) => match queues.get(*name) {
                    Some(q) => Reply::json(200, q.clone()),
                    None => Reply::error(404, 5, &format!("could not find queue \"{name}\"")),
                },
                _ => Reply::text(404, "text/plain", "Not Found\n"),
            }
        })
    }
}

/// What upstream's proto keeps of a policy (encoding/json drops unknown keys silently).
fn keep_upstream_policy(p: &Value, old: bool) -> Value {
    let mut out = serde_json::Map::new();
    for k in ["name", "retryLimit", "defaultAction"] {
        if let Some(v) = p.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    if let Some(Value::Array(rules)) = p.get("rules") {
        let kept: Vec<Value> = rules
            .iter()
            .map(|r| {
                let mut m = serde_json::Map::new();
                let keys: &[&str] = if old {
                    &["action", "onCategory", "onSubcategory"]
                } else {
                    &["action", "onCategory", "onSubcategory", "mutate"]
                };
                for k in keys {
                    if let Some(v) = r.get(k) {
                        m.insert(k.to_string(), v.clone());
                    }
                }
                Value::Object(m)
            })
            .collect();
        out.insert("rules".into(), Value::Array(kept));
    }
    Value::Object(out)
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Request>>, script: &Mutex<Script>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.to_string(), v.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let request = Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    log.lock().unwrap().push(request.clone());
    let reply = (script.lock().unwrap())(&request);
    std::thread::sleep(reply.delay);
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(reply.body.as_bytes());
    let _ = out.flush();
}

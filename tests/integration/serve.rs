//! `retryctl serve` against the real server on 127.0.0.1:0: every route's happy path and
//! error paths, asserting status, the dialect header and the exact body.

use reqwest::blocking::Client;

use crate::support::server::TestServer;

/// One exchange: status, body. Asserts the dialect header on every answer.
pub fn call(method: &str, url: &str, body: Option<&str>) -> (u16, String) {
    call_with(method, url, body, None)
}

pub fn call_with(method: &str, url: &str, body: Option<&str>, auth: Option<&str>) -> (u16, String) {
    let client = Client::new();
    let mut req = client.request(method.parse().unwrap(), url);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let resp = req.send().unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    assert_eq!(
        resp.headers()
            .get("armada-retry-policy-dialect")
            .map(|v| v.to_str().unwrap()),
        Some("v1"),
        "{method} {url} carries the dialect header"
    );
    let status = resp.status().as_u16();
    (status, resp.text().unwrap())
}

/// The error body for `message` with gRPC `code`.
pub fn err(code: u8, message: &str) -> String {
    let m = serde_json::to_string(message).unwrap();
    format!(r#"{{"error":{m},"code":{code},"message":{m}}}"#)
}

const ML: &str = r#"{"name":"ml-training-retries","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Fail","onCategory":"user-error"},{"action":"Retry","onCategory":"gpu","onSubcategory":"transient","mutate":{"affinity":{"avoidSameNode":true}}},{"action":"Retry","onCategory":"oom","mutate":{"resources":{"memory":{"factor":1.5}}}},{"action":"Retry","onCategory":"oom","onSubcategory":"small","mutate":{"resources":{"memory":{"static":"512Mi"}}}}]}"#;

#[test]
fn upstream_policy_round_trips_byte_for_byte() {
    let s = TestServer::start();
    let u = &s.url;
    assert_eq!(call("GET", &format!("{u}/v1/retry-policies"), None), (200, "{}".into()));
    assert_eq!(
        call("POST", &format!("{u}/v1/retry-policy"), Some(ML)),
        (200, "{}".into())
    );
    assert_eq!(
        call("GET", &format!("{u}/v1/retry-policy/ml-training-retries"), None),
        (200, ML.into())
    );
    // Upstream's omitted zero values: no retryLimit stays unset (the v1 dialect).
    let p0 = r#"{"name":"p0","defaultAction":"Retry"}"#;
    assert_eq!(
        call("POST", &format!("{u}/v1/retry-policy"), Some(p0)),
        (200, "{}".into())
    );
    assert_eq!(
        call("GET", &format!("{u}/v1/retry-policies"), None),
        (200, format!(r#"{{"retryPolicies":[{ML},{p0}]}}"#))
    );
}

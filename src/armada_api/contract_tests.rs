//! `proto/submit.proto` keeps upstream's contract: every message and enum it declares is
//! upstream's text block, unchanged (comments included), and every service method has
//! upstream's name, request, response and streaming, in upstream's order.

use std::collections::BTreeMap;

fn read(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Top-level `message`, `enum` and `service` blocks by `kind name`, from the keyword to the
/// brace that closes it (braces in comments do not occur in these files; checked below).
fn blocks(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let head = ["message ", "enum ", "service "]
            .iter()
            .find(|k| line.starts_with(**k))
            .map(|k| k.trim().to_string());
        let Some(kind) = head else {
            i += 1;
            continue;
        };
        let name: String = line[kind.len()..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let mut depth = 0i32;
        let mut block = Vec::new();
        loop {
            let l = lines[i];
            let code = l.split("//").next().unwrap_or("");
            depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
            block.push(l);
            i += 1;
            if depth == 0 && code.contains('}') || i == lines.len() {
                break;
            }
        }
        out.insert(format!("{kind} {name}"), block.join("\n"));
    }
    out
}

/// `rpc Name(In) returns (stream Out)` of each method of a service block, whitespace and
/// options dropped.
fn methods(block: &str) -> Vec<String> {
    let flat: String = block.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.split("rpc ")
        .skip(1)
        .map(|m| {
            let sig = m.split(['{', ';']).next().unwrap_or("");
            sig.replace(' ', "")
        })
        .collect()
}

#[test]
fn every_kept_message_enum_and_service_is_upstreams() {
    let ours = blocks(&read("proto/submit.proto"));
    let upstream = blocks(&read("proto/upstream/submit.proto"));
    // What the trimmed file must keep: what retry policies and queues need.
    for needed in [
        "message RetryPolicy",
        "enum RetryAction",
        "message RetryRule",
        "message Queue",
        "message StreamingQueueMessage",
        "message EndMarker",
        "service RetryPolicyService",
        "service QueueService",
        "service Submit",
    ] {
        assert!(ours.contains_key(needed), "proto/submit.proto lacks {needed}");
    }
    assert_eq!(ours.len(), 32, "blocks: {:?}", ours.keys().collect::<Vec<_>>());
    for (key, block) in &ours {
        let theirs = upstream
            .get(key)
            .unwrap_or_else(|| panic!("{key} is not in upstream's submit.proto"));
        if key.starts_with("service ") {
            let mine = methods(block);
            let all = methods(theirs);
            let kept: Vec<&String> = all.iter().filter(|m| mine.contains(m)).collect();
            assert_eq!(
                mine.iter().collect::<Vec<_>>(),
                kept,
                "{key}: every method must be upstream's (same name, types, streaming), in upstream's order"
            );
        } else {
            assert_eq!(block, theirs, "{key} differs from upstream's block");
        }
    }
    // Whole services where nothing was removed.
    assert_eq!(
        methods(&ours["service QueueService"]),
        methods(&upstream["service QueueService"])
    );
    assert_eq!(
        methods(&ours["service RetryPolicyService"]),
        methods(&upstream["service RetryPolicyService"])
    );
    assert_eq!(
        methods(&ours["service Submit"]),
        [
            "CreateQueue(Queue)returns(google.protobuf.Empty)",
            "CreateQueues(QueueList)returns(BatchQueueCreateResponse)",
            "UpdateQueue(Queue)returns(google.protobuf.Empty)",
            "UpdateQueues(QueueList)returns(BatchQueueUpdateResponse)",
            "DeleteQueue(QueueDeleteRequest)returns(google.protobuf.Empty)",
            "GetQueue(QueueGetRequest)returns(Queue)",
            "GetQueues(StreamingQueueGetRequest)returns(streamStreamingQueueMessage)",
            "Health(google.protobuf.Empty)returns(HealthCheckResponse)",
        ]
    );
}

#[test]
fn the_block_reader_sees_a_nested_block_whole() {
    let b = blocks("message A {\n  message B {\n    string x = 1;\n  }\n  B b = 1; // {x}\n}\nenum E {\n  Z = 0;\n}\n");
    assert_eq!(b.len(), 2);
    assert!(b["message A"].ends_with("B b = 1; // {x}\n}"));
}

/// The generated code (src/armada_api/generated/, checked in) is written from the protos as
/// they are: scripts/gen-grpc.sh records their digest when it writes the code, and `.ci/run`
/// checks that the code is what the generator writes from them.
#[test]
fn the_generated_code_is_from_the_protos_checked_in() {
    use sha2::Digest;
    let mut digest = sha2::Sha256::new();
    for proto in ["proto/submit.proto", "proto/upstream/health.proto"] {
        digest.update(read(proto));
    }
    let hex: String = digest.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let recorded = read("src/armada_api/generated/PROTOS.sha256");
    assert_eq!(
        recorded.split_whitespace().next(),
        Some(hex.as_str()),
        "proto/ changed since src/armada_api/generated/ was written: run scripts/gen-grpc.sh"
    );
}

#[test]
fn health_is_upstreams_file_unchanged() {
    // build.rs compiles it from proto/upstream/ directly (`--features grpc-codegen`): nothing
    // to compare but that it is the file the trimmed contract imports.
    assert!(read("proto/submit.proto").contains("import \"health.proto\";"));
    assert!(read("proto/upstream/health.proto").contains("message HealthCheckResponse {"));
}

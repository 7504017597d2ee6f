//! Fuzz target: the evaluator, through `simulate`'s own path. Any text is parsed as a stream
//! of RetryPolicy, Queue and FailureHistory documents; every valid history is replayed
//! against the valid policies and queues, under scheduler settings taken from the first two
//! bytes (global limit 0–15; retry engine on or off; which engine decides, the design or
//! upstream's, docs/engines.md). Properties beyond "does not panic": the replay is deterministic
//! (same input, same report), and with retries on no job is granted more retries than the
//! global limit allows, under either engine.
//!
//! Seed it with testdata, one policy set and one history per file, e.g.:
//!   mkdir -p corpus/simulate && for h in ../testdata/histories/*.yaml; do
//!     cat ../testdata/policies/valid/*.yaml ../testdata/histories/policies/*.yaml "$h" \
//!       | sed '1s/^/\x08\x01/' > corpus/simulate/$(basename "$h"); done

#![no_main]

use libfuzzer_sys::fuzz_target;
use retryctl::engine::simulator::Simulator;
use retryctl::engine::{EngineKind, Settings};
use retryctl::model::{parse_documents, Kind, Resource};

fuzz_target!(|data: &[u8]| {
    let (settings_bytes, rest) = data.split_at(data.len().min(2));
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let global = settings_bytes.first().map_or(20, |b| u32::from(b & 0x0f));
    let settings = Settings {
        enabled: settings_bytes.get(1).is_none_or(|b| b & 1 == 1),
        global_max_retries: global,
        ..Settings::default()
    };
    let parsed = parse_documents(text, Some(&[Kind::RetryPolicy, Kind::Queue, Kind::FailureHistory]));
    let (mut policies, mut queues, mut histories) = (Vec::new(), Vec::new(), Vec::new());
    for doc in parsed.documents.into_iter().filter(|d| d.is_valid()) {
        match doc.resource {
            Some(Resource::RetryPolicy(p)) => policies.push(p),
            Some(Resource::Queue(q)) => queues.push(q),
            Some(Resource::FailureHistory(h)) => histories.push(*h),
            _ => {}
        }
    }
    let engine = match settings_bytes.get(1) {
        Some(b) if b & 2 == 2 => EngineKind::Upstream,
        _ => EngineKind::Design,
    };
    let Ok(simulator) = Simulator::new(policies, queues, None) else {
        return;
    };
    let simulator = simulator.with_engine(engine);
    for history in &histories {
        let first = simulator.simulate(history, &settings);
        let second = simulator.simulate(history, &settings);
        assert_eq!(first, second, "replay is not deterministic");
        if let Ok(report) = first {
            let lowered_later = history.runs.iter().any(|r| r.global_max_retries.is_some());
            if settings.enabled && !lowered_later {
                assert!(
                    report.retries <= global,
                    "{} retries under a global limit of {global}",
                    report.retries
                );
            }
        }
    }
});

//! Drawn test material (tests only): a fixed generator, policies whose fields a test draws,
//! and JSON Lines histories drawn to exercise what decides a job — limits reached, memory
//! bumps, returned leases, `globalMaxRetries` reloaded by runs, policy lists in other
//! orders, annotations, `failFast`, Pending endings. Shared by the sweep's and the replay's
//! property tests. Must not: be compiled outside tests.

use crate::engine::simulator::Simulator;
use crate::model::queue::Queue;
use crate::model::test_policies;

/// A fixed generator (xorshift).
pub struct Draw(pub u64);

impl Draw {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    /// Unset, or 0 to 3.
    fn limit(&mut self) -> Option<u64> {
        self.below(5).checked_sub(1)
    }

    fn action(&mut self) -> &'static str {
        if self.below(4) == 0 {
            "Fail"
        } else {
            "Retry"
        }
    }
}

/// What the candidates of a test differ in: each policy's limit and default action,
/// each rule's action and limit (`None`: unset).
#[derive(Clone)]
pub struct Fields {
    policies: [(Option<u64>, &'static str); 3],
    rules: [(&'static str, Option<u64>); 4],
}

impl Fields {
    pub fn drawn(d: &mut Draw) -> Fields {
        Fields {
            policies: [0; 3].map(|_| (d.limit(), d.action())),
            rules: [0; 4].map(|_| (d.action(), d.limit())),
        }
    }

    /// These fields with two of them drawn again, as a search varies a few fields.
    pub fn varied(&self, d: &mut Draw) -> Fields {
        let mut f = self.clone();
        for _ in 0..2 {
            match d.below(14) {
                i @ 0..3 => f.policies[i as usize].0 = d.limit(),
                i @ 3..6 => f.policies[i as usize - 3].1 = d.action(),
                i @ 6..10 => f.rules[i as usize - 6].0 = d.action(),
                i => f.rules[i as usize - 10].1 = d.limit(),
            }
        }
        f
    }

    /// Three policies: `a` takes preemptions, exit code 137 (bumping memory) and fails
    /// exit code 2; `b` evictions; `c` exit code 3. Queue `q` lists `b` before `a`; a
    /// job without a queue here gets `a, b`.
    pub fn sim(&self) -> Simulator {
        let matches = [
            "onConditions: [Preempted]",
            "onExitCodes: {operator: In, values: [137]}, mutate: {resources: {memory: {factor: 1.5}}}",
            "onConditions: [Evicted]",
            "onExitCodes: {operator: In, values: [3]}",
        ];
        let rule = |i: usize| {
            let (action, limit) = self.rules[i];
            let limit = limit.map(|l| format!(", retryLimit: {l}")).unwrap_or_default();
            format!("    - {{action: {action}, {}{limit}}}\n", matches[i])
        };
        let mut yaml = String::new();
        for (p, (name, rules)) in [("a", 0..2), ("b", 2..3), ("c", 3..4)].into_iter().enumerate() {
            let (limit, default) = self.policies[p];
            let limit = limit.map(|l| format!("  retryLimit: {l}\n")).unwrap_or_default();
            yaml.push_str(&format!(
                "---\napiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {{name: {name}}}\nspec:\n  defaultAction: {default}\n{limit}  rules:\n"
            ));
            for i in rules {
                yaml.push_str(&rule(i));
            }
            if name == "a" {
                yaml.push_str("    - {action: Fail, onExitCodes: {operator: In, values: [2]}}\n");
            }
        }
        let queue = Queue {
            name: "q".into(),
            retry_policies: vec!["b".into(), "a".into()],
            ..Queue::default()
        };
        Simulator::new(test_policies(&yaml), vec![queue], Some(vec!["a".into(), "b".into()])).unwrap()
    }
}

/// `jobs` jobs of 1 to 10 runs: most fail one way again and again (so that limits
/// matter), the last succeeds, is cancelled or fails (then the job is Pending wherever
/// it is retried); returned leases, runs that reload `globalMaxRetries`, queues `q`, an
/// unknown one and none, policies named by annotation, `failFast`.
pub fn history(d: &mut Draw, jobs: usize) -> String {
    let mut out = String::new();
    for j in 0..jobs {
        let runs = 1 + d.below(10);
        let usual = d.below(8);
        let mut list = Vec::new();
        for k in 0..runs {
            let kind = if d.below(3) == 0 { d.below(8) } else { usual };
            let global = match d.below(6) {
                0 => format!(r#","globalMaxRetries":{}"#, d.below(5)),
                _ => String::new(),
            };
            let run = match (k + 1 == runs, d.below(4)) {
                (true, 0) => r#""runFor":"1h","outcome":"succeeded""#,
                (true, 1) => r#""outcome":"cancelled""#,
                _ => match kind {
                    0 => r#""runFor":"10m","conditions":["Preempted"]"#,
                    1 => r#""runFor":"11m","conditions":["Evicted"]"#,
                    2 => r#""runFor":"12m","containers":[{"name":"main","exitCode":137}]"#,
                    3 => r#""runFor":"13m","containers":[{"name":"main","exitCode":2}]"#,
                    4 => r#""runFor":"14m","containers":[{"name":"main","exitCode":1}]"#,
                    5 => r#""runFor":"15m","containers":[{"name":"main","exitCode":3}]"#,
                    _ => r#""outcome":"leaseReturned""#,
                },
            };
            list.push(format!("{{{run}{global}}}"));
        }
        let mut annotations = Vec::new();
        match d.below(5) {
            0 => annotations.push(r#""armadaproject.io/retry-policy":"c""#),
            1 => annotations.push(r#""armadaproject.io/retry-policy":"a,c""#),
            _ => {}
        }
        if d.below(8) == 0 {
            annotations.push(r#""armadaproject.io/failFast":"true""#);
        }
        let queue = [r#","queue":"q""#, r#","queue":"unknown""#, ""][d.below(3) as usize];
        out.push_str(&format!(
            r#"{{"job":{{"id":"j{j}","memory":"8Gi","annotations":{{{}}}{queue}}},"runs":[{}]}}"#,
            annotations.join(","),
            list.join(",")
        ));
        out.push('\n');
    }
    out
}

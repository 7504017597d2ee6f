//! The RetryPolicy resource model: one internal type for both dialects (`armadaproject.io/v1`
//! and upstream's flat `armadaproject.io/v1beta1`).
//!
//! Owns: the types. `None` always means "not set, inherit" (docs/engines.md), which is why limits
//! and backoff fields are options. Must not: parse text, validate, or do I/O.

use serde::{Deserialize, Serialize};

use super::duration::GoDuration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub enum Action {
    #[default]
    Fail,
    Retry,
}

impl Action {
    pub const NAMES: [&'static str; 2] = ["Retry", "Fail"];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Fail => "Fail",
            Action::Retry => "Retry",
        }
    }

    /// An action given by name, as upstream's decoder reads a string (`pkg/api/deserialize.go`,
    /// `RetryAction.UnmarshalJSON`): `RETRY_ACTION_RETRY` / `RETRY_ACTION_FAIL` exactly, or a
    /// name that upper-cased (rune by rune, as Go's `strings.ToUpper`) is `RETRY` / `FAIL`.
    /// Nothing else: `retry_action_fail`, ` Fail` and the text `"1"` are refused, as
    /// armadactl refuses them. `RETRY_ACTION_UNSPECIFIED` decodes upstream and is refused by
    /// its validation; here it is no action either.
    pub fn parse(text: &str) -> Option<Action> {
        match text {
            "RETRY_ACTION_FAIL" => return Some(Action::Fail),
            "RETRY_ACTION_RETRY" => return Some(Action::Retry),
            _ => {}
        }
        match go_upper(text).as_str() {
            "FAIL" => Some(Action::Fail),
            "RETRY" => Some(Action::Retry),
            _ => None,
        }
    }

    /// An action given as a number, as upstream's decoder reads one: its enum's values,
    /// 1 (Fail) and 2 (Retry); 0 is `RETRY_ACTION_UNSPECIFIED`, which is no action.
    pub fn from_number(n: i64) -> Option<Action> {
        match n {
            1 => Some(Action::Fail),
            2 => Some(Action::Retry),
            _ => None,
        }
    }

    /// Whether upstream's decoder reads `text` as `RETRY_ACTION_UNSPECIFIED` (a name it
    /// accepts, whose value 0 its validation then refuses).
    pub fn is_unspecified_name(text: &str) -> bool {
        text == "RETRY_ACTION_UNSPECIFIED" || go_upper(text) == "UNSPECIFIED"
    }

    /// The enum value upstream's `RetryAction` gives it (`from_number`'s inverse).
    pub fn number(self) -> i32 {
        match self {
            Action::Fail => 1,
            Action::Retry => 2,
        }
    }

    /// Why `text` is no action, in upstream's words (`no RetryAction of name "…"`, `no
    /// RetryAction of value N`), then what is accepted. `number`: the value was a number
    /// (a plain YAML integer, a JSON number), not a string.
    pub fn refusal(text: &str, number: bool) -> String {
        const ACCEPTED: &str = "expected `Retry` or `Fail`";
        let unspecified = if number {
            text.parse::<i64>().is_ok_and(|n| n == 0)
        } else {
            Action::is_unspecified_name(text)
        };
        if unspecified {
            let named = if text == "RETRY_ACTION_UNSPECIFIED" {
                String::new()
            } else {
                format!(" (`{text}` is `RETRY_ACTION_UNSPECIFIED`)")
            };
            return format!("the action is not set{named}: {ACCEPTED}");
        }
        if number {
            format!("no RetryAction of value {text}: {ACCEPTED}")
        } else {
            format!("no RetryAction of name {}: {ACCEPTED}", go_quote(text))
        }
    }
}

/// `text` upper-cased as Go's `strings.ToUpper` does: `unicode.ToUpper` maps a rune to one rune
/// (simple case mapping), so a rune whose full mapping is several (`ß`, `ﬁ`) stays as it is.
fn go_upper(text: &str) -> String {
    text.chars()
        .map(|c| {
            let mut up = c.to_uppercase();
            match (up.next(), up.next()) {
                (Some(u), None) => u,
                _ => c,
            }
        })
        .collect()
}

/// `v` as Go's `%v` writes a `float64` (`fmt`'s `%g` with the shortest digits that read back,
/// `strconv.FormatFloat(v, 'g', -1, 64)`): an exponent (`1e-05`, `1.5e+07`, at least two
/// digits) below 1e-4 and from 1e6 on (the shortest form decides with precision 6), plain
/// digits between (`0.0001`, `123456`); `+Inf`, `-Inf`, `NaN`. Upstream's messages print a
/// memory bump's `factor` so (`internal/server/retrypolicy/validation.go`).
pub fn go_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v == 0.0 {
        return format!("{sign}0");
    }
    // Rust's `{:e}` writes the same shortest digits that read back: `1.2345e-7`.
    let shortest = format!("{:e}", v.abs());
    let (mantissa, exp) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let mut out = format!("{sign}{}", &digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        ));
        return out;
    }
    // The decimal point's place among the digits.
    let point = exp + 1;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{sign}{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

/// `text` as Go's `%q` writes it: in double quotes, `"` and `\\` escaped, control characters
/// as escapes, printable Unicode as it is.
pub fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                if (c as u32) < 0x80 {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                } else {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Pod and container conditions a rule can match (`onConditions`). Case-sensitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Condition {
    OOMKilled,
    Evicted,
    Preempted,
    DeadlineExceeded,
    Unschedulable,
}

impl Condition {
    pub const ALL: [Condition; 5] = [
        Condition::OOMKilled,
        Condition::Evicted,
        Condition::Preempted,
        Condition::DeadlineExceeded,
        Condition::Unschedulable,
    ];
    pub const NAMES: [&'static str; 5] = ["OOMKilled", "Evicted", "Preempted", "DeadlineExceeded", "Unschedulable"];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(text: &str) -> Option<Condition> {
        Self::NAMES.iter().position(|n| *n == text).map(|i| Self::ALL[i])
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Operator {
    In,
    NotIn,
}

impl Operator {
    pub const NAMES: [&'static str; 2] = ["In", "NotIn"];

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
        }
    }

    pub fn parse(text: &str) -> Option<Operator> {
        match text {
            "In" => Some(Operator::In),
            "NotIn" => Some(Operator::NotIn),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitCodes {
    pub operator: Operator,
    pub values: Vec<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AntiAffinityMode {
    #[default]
    None,
    Node,
}

impl AntiAffinityMode {
    pub const NAMES: [&'static str; 2] = ["none", "node"];

    pub fn as_str(self) -> &'static str {
        match self {
            AntiAffinityMode::None => "none",
            AntiAffinityMode::Node => "node",
        }
    }

    pub fn parse(text: &str) -> Option<AntiAffinityMode> {
        match text {
            "none" => Some(AntiAffinityMode::None),
            "node" => Some(AntiAffinityMode::Node),
            _ => None,
        }
    }
}

/// Every field optional: each resolves on its own, rule → policy → scheduler → built-in.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Backoff {
    pub initial_delay: Option<GoDuration>,
    pub max_delay: Option<GoDuration>,
    pub multiplier: Option<f64>,
    pub jitter: Option<f64>,
}

impl Backoff {
    pub fn is_empty(&self) -> bool {
        *self == Backoff::default()
    }
}

/// `mutate`, shaped exactly like upstream's `RetryMutation` so that it round-trips.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mutation {
    pub affinity: Option<AffinityMutation>,
    pub resources: Option<ResourceMutation>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AffinityMutation {
    pub avoid_same_node: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMutation {
    pub memory: Option<MemoryBump>,
}

/// Exactly one of the two must be set; the validator checks it, the type does not, so that a
/// document with both still decodes and gets a precise error.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryBump {
    pub factor: Option<f64>,
    #[serde(rename = "static")]
    pub fixed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub action: Action,
    pub container_name: Option<String>,
    pub include_init_containers: bool,
    /// `Some(empty)` is kept so that the validator can say "must not be empty".
    pub on_conditions: Option<Vec<Condition>>,
    pub on_exit_codes: Option<ExitCodes>,
    /// The regular expression of `onTerminationMessage.pattern`.
    pub on_termination_message: Option<String>,
    pub on_failure_category: Option<Vec<String>>,
    pub on_failure_subcategory: Option<Vec<String>>,
    pub retry_limit: Option<u32>,
    pub backoff: Backoff,
    pub anti_affinity: Option<AntiAffinityMode>,
    pub mutate: Option<Mutation>,
}

impl Rule {
    /// The rule's first matcher in a few words, to name the rule where its index alone says
    /// little (tune's column `rules[2] (exit 139)`): `exit 139`, `exit not 0`, `OOMKilled`,
    /// `category cuda_error`, `category internal/lease-expired`, `subcategory x`, `message
    /// "CUDA error…"`; exit codes, then conditions, then category, then message, at most
    /// three values. `None` without a matcher.
    pub fn first_matcher(&self) -> Option<String> {
        fn few<T: AsRef<str>>(items: &[T]) -> String {
            let mut s: Vec<&str> = items.iter().take(3).map(AsRef::as_ref).collect();
            if items.len() > 3 {
                s.push("…");
            }
            s.join(",")
        }
        if let Some(e) = &self.on_exit_codes {
            let codes: Vec<String> = e.values.iter().map(i64::to_string).collect();
            let not = if e.operator == Operator::NotIn { "not " } else { "" };
            return Some(format!("exit {not}{}", few(&codes)));
        }
        if let Some(c) = &self.on_conditions {
            let names: Vec<&str> = c.iter().map(|c| c.as_str()).collect();
            return Some(few(&names));
        }
        match (&self.on_failure_category, &self.on_failure_subcategory) {
            (Some(c), Some(sub)) if c.len() == 1 && sub.len() == 1 => {
                return Some(format!("category {}/{}", c[0], sub[0]))
            }
            (Some(c), _) => return Some(format!("category {}", few(c))),
            (None, Some(sub)) => return Some(format!("subcategory {}", few(sub))),
            (None, None) => {}
        }
        self.on_termination_message.as_ref().map(|p| {
            let mut short: String = p.chars().take(16).collect();
            if p.chars().count() > 16 {
                short.push('…');
            }
            format!("message \"{short}\"")
        })
    }

    /// Whether any `on*` matcher is set.
    pub fn has_matcher(&self) -> bool {
        self.on_conditions.is_some()
            || self.on_exit_codes.is_some()
            || self.on_termination_message.is_some()
            || self.on_failure_category.is_some()
            || self.on_failure_subcategory.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    pub name: String,
    /// `None`: each rule's limit falls back to `globalMaxRetries` (v1 only; v1beta1 reads an
    /// absent limit as 0).
    pub retry_limit: Option<u32>,
    /// `None`: not written. The design dialect reads it as `Fail` ([`Self::default_action`]);
    /// upstream refuses a policy without one (docs/cli.md), so v1beta1 requires it and
    /// [`Self::upstream_incompatibilities`] names it.
    pub default_action: Option<Action>,
    pub backoff: Backoff,
    pub anti_affinity: Option<AntiAffinityMode>,
    pub rules: Vec<Rule>,
}

impl RetryPolicy {
    /// What happens when no rule matches: the `defaultAction` written, else `Fail` (the
    /// design dialect's documented default).
    pub fn default_action(&self) -> Action {
        self.default_action.unwrap_or(Action::Fail)
    }

    /// The design-dialect fields this policy uses that upstream Armada cannot store, as
    /// field paths (`rules[0].onExitCodes`). Empty when the policy fits upstream's
    /// category-only model. An unset `retryLimit` counts: upstream would read it as 0; so
    /// does an unset `defaultAction`: upstream refuses to store it and its engine refuses to
    /// default it.
    pub fn upstream_incompatibilities(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.retry_limit.is_none() {
            out.push("retryLimit".to_string());
        }
        if self.default_action.is_none() {
            out.push("defaultAction (unset: upstream refuses a policy without one)".to_string());
        }
        if !self.backoff.is_empty() {
            out.push("backoff".to_string());
        }
        if self.anti_affinity.is_some() {
            out.push("antiAffinity".to_string());
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let p = |f: &str| format!("rules[{i}].{f}");
            if rule.container_name.is_some() {
                out.push(p("containerName"));
            }
            if rule.include_init_containers {
                out.push(p("includeInitContainers"));
            }
            if rule.on_conditions.is_some() {
                out.push(p("onConditions"));
            }
            if rule.on_exit_codes.is_some() {
                out.push(p("onExitCodes"));
            }
            if rule.on_termination_message.is_some() {
                out.push(p("onTerminationMessage"));
            }
            match &rule.on_failure_category {
                // Named by the rule: there is no category field to name.
                None => out.push(format!("rules[{i}] (no category: upstream stores only category rules)")),
                Some(c) if c.len() != 1 => out.push(p("onFailureCategory (more than one category)")),
                _ => {}
            }
            if let Some(s) = &rule.on_failure_subcategory {
                if s.len() > 1 {
                    out.push(p("onFailureSubcategory (more than one subcategory)"));
                }
            }
            if rule.retry_limit.is_some() {
                out.push(p("retryLimit"));
            }
            if !rule.backoff.is_empty() {
                out.push(p("backoff"));
            }
            if rule.anti_affinity.is_some() {
                out.push(p("antiAffinity"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Go's `fmt.Sprintf("%v", x)` prints for a `float64` (its `strconv` tests'
    /// `FormatFloat(x, 'g', -1, 64)` rows, and the threshold at 1e-4 and 1e6 around them).
    #[test]
    fn floats_print_as_gos_percent_v() {
        let rows: [(f64, &str); 20] = [
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (0.000012345, "1.2345e-05"),
            (0.5, "0.5"),
            (1.0, "1"),
            (-2.0, "-2"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (123456.0, "123456"),
            (999999.0, "999999"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (0.1 + 0.2, "0.30000000000000004"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-0.0, "-0"),
            (0.0, "0"),
        ];
        for (v, want) in rows {
            assert_eq!(go_float(v), want, "{v:e}");
        }
        assert_eq!(go_float(f64::INFINITY), "+Inf");
        assert_eq!(go_float(f64::NEG_INFINITY), "-Inf");
        assert_eq!(go_float(f64::NAN), "NaN");
    }

    /// What upstream's `RetryAction.UnmarshalJSON` accepts, and nothing more, in its words.
    #[test]
    fn actions_are_what_upstreams_decoder_reads() {
        for (text, want) in [
            ("Fail", Some(Action::Fail)),
            ("retry", Some(Action::Retry)),
            ("RETRY_ACTION_FAIL", Some(Action::Fail)),
            ("faıl", Some(Action::Fail)),
            ("retry_action_fail", None),
            ("Retry_Action_Retry", None),
            (" Fail", None),
            ("1", None),
            ("RETRY_ACTION_UNSPECIFIED", None),
        ] {
            assert_eq!(Action::parse(text), want, "{text:?}");
        }
        assert_eq!(Action::from_number(2), Some(Action::Retry));
        assert_eq!(Action::from_number(0), None);
        assert_eq!(
            Action::refusal("1", false),
            r#"no RetryAction of name "1": expected `Retry` or `Fail`"#
        );
        assert_eq!(
            Action::refusal("99", true),
            "no RetryAction of value 99: expected `Retry` or `Fail`"
        );
        assert_eq!(
            Action::refusal("0", true),
            "the action is not set (`0` is `RETRY_ACTION_UNSPECIFIED`): expected `Retry` or `Fail`"
        );
        assert_eq!(
            Action::refusal("RETRY_ACTION_UNSPECIFIED", false),
            "the action is not set: expected `Retry` or `Fail`"
        );
        assert_eq!(go_quote("a\"b\\\n\u{1}é"), r#""a\"b\\\n\x01é""#);
    }
}

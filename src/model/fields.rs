//! The one definition of the fields of the RetryPolicy (both dialects), Queue and
//! FailureHistory documents, and of the scheduler config's retry settings: names, types,
//! bounds and documentation.
//!
//! Owns: the field tables. The strict decoder (`document`) takes the fields it accepts at
//! each level from here, `explain` prints them, and `schema` turns them into JSON Schema, so
//! a field added here is accepted, documented and completed in editors at once, and a field
//! missing here is refused by all three. The scheduler config's tables are read by its decoder
//! and by `tune`, which resolves `--vary` paths here. Must not: decode, validate values or do
//! I/O (the bounds here are copied into the schema for editors; the validator enforces them
//! with precise messages).

use super::policy::Condition;
use super::vocabulary::{
    API_V1, API_V1BETA1, DECISION_KINDS, EXECUTOR_PATHS, FINAL_STATES, JOB_ENDS, OUTCOMES, POD_CONDITIONS,
};

/// The type of a field's value.
#[derive(Debug)]
pub enum Ty {
    Str,
    /// A string with a pattern an editor can check (`None`: no pattern).
    Pattern(&'static str),
    Int {
        min: i64,
        max: i64,
    },
    Num {
        min: Option<f64>,
        max: Option<f64>,
    },
    Bool,
    /// A Go-style duration string (`10s`, `1h30m`).
    Duration,
    Enum(&'static [&'static str]),
    /// `Retry` or `Fail` as the decoder reads them (`Action::parse`): any case, upstream's
    /// `RETRY_ACTION_*` names and its enum numbers 1 and 2.
    Action,
    Array {
        items: &'static Ty,
        max_items: Option<u64>,
        unique: bool,
    },
    /// A list that must not be empty.
    NonEmpty(&'static Ty),
    /// A number greater than this (`factor`: above 1.0).
    Above(f64),
    /// A positive Kubernetes quantity (`512Mi`, `1.5G`, or plain bytes).
    Quantity,
    /// A regular expression (RE2 syntax, at most 1024 bytes).
    Regex,
    /// A map of strings to strings (`labels`).
    StringMap,
    Object(&'static [Field]),
    /// An object with cross-field rules the validator enforces (a rule's matchers, a
    /// memory bump's one kind), stated in the schema too.
    Checked(&'static [Field], &'static [Constraint]),
}

/// A rule between an object's fields (a field given as null counts as not set).
#[derive(Debug)]
pub enum Constraint {
    /// At least one of these is set.
    AnyOf(&'static [&'static str]),
    /// Exactly one of these is set.
    ExactlyOne(&'static [&'static str]),
    /// When `field` is set, one of `needs` is set too.
    Requires {
        field: &'static str,
        needs: &'static [&'static str],
    },
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub doc: &'static str,
}

const fn f(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field {
        name,
        ty,
        required: false,
        doc,
    }
}

const fn req(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field {
        name,
        ty,
        required: true,
        doc,
    }
}

const NAME: Ty = Ty::Pattern("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$");
const LIMIT: Ty = Ty::Int { min: 0, max: 10_000 };
const CATEGORY: Ty = Ty::Pattern("^\\S{1,63}$");

pub const BACKOFF: &[Field] = &[
    f("initialDelay", Ty::Duration, "Delay before the first retry (`0s` retries at once). Inherited from the policy, then the scheduler's defaultBackoff, then `0s`."),
    f("maxDelay", Ty::Duration, "Ceiling of every delay, at most `24h`. Inherited like initialDelay; built-in `10m`."),
    f("multiplier", Ty::Num { min: Some(1.0), max: Some(100.0) }, "Each retry's delay is the previous one times this (1.0..=100). Built-in 2.0."),
    f("jitter", Ty::Num { min: Some(0.0), max: Some(1.0) }, "Extension: adds up to this fraction of the delay, deterministic per job and run (0..=1). Built-in 0."),
];

pub const ANTI_AFFINITY: &[Field] = &[f(
    "mode",
    Ty::Enum(&["none", "node"]),
    "`node`: the next run avoids the node of the failed run (that node only). `none` (default): no constraint.",
)];

pub const EXIT_CODES: &[Field] = &[
    req(
        "operator",
        Ty::Enum(&["In", "NotIn"]),
        "`In`: matches when the exit code is one of `values`; `NotIn`: when it is none of them.",
    ),
    req(
        "values",
        Ty::NonEmpty(&Ty::Array {
            items: &Ty::Int { min: 1, max: 255 },
            max_items: Some(255),
            unique: true,
        }),
        "Exit codes 1..=255, unique, non-empty. `0` means not set and never matches.",
    ),
];

pub const TERMINATION_MESSAGE: &[Field] = &[req(
    "pattern",
    Ty::Regex,
    "A regular expression (RE2 syntax, at most 1024 bytes) searched in the container's termination message.",
)];

pub const MEMORY: &[Field] = &[
    f("factor", Ty::Above(1.0), "Multiply the job's memory by this (> 1.0) at each retry, compounding. Exactly one of factor and static."),
    f("static", Ty::Quantity, "Add this Kubernetes quantity (`512Mi`, `1Gi`) to the job's memory at each retry. Exactly one of factor and static."),
];

pub const MUTATE: &[Field] = &[
    f(
        "affinity",
        Ty::Object(&[f(
            "avoidSameNode",
            Ty::Bool,
            "Avoid every node any earlier run of the job used (upstream semantics).",
        )]),
        "Node affinity changes for the retry.",
    ),
    f(
        "resources",
        Ty::Object(&[f(
            "memory",
            Ty::Checked(MEMORY, &[Constraint::ExactlyOne(&["factor", "static"])]),
            "Grow the job's memory for the next run.",
        )]),
        "Resource changes for the retry.",
    ),
];

pub const RULE: &[Field] = &[
    req(
        "action",
        Ty::Action,
        "`Retry` or `Fail`: what happens to a failure this rule matches.",
    ),
    f(
        "containerName",
        Ty::Str,
        "Only this container's signals are considered by the matchers.",
    ),
    f(
        "includeInitContainers",
        Ty::Bool,
        "Also consider init containers (default false).",
    ),
    f(
        "onConditions",
        Ty::NonEmpty(&Ty::Array {
            items: &Ty::Enum(&Condition::NAMES),
            max_items: None,
            unique: true,
        }),
        "Matches when the run failed with one of these conditions (case-sensitive).",
    ),
    f(
        "onExitCodes",
        Ty::Object(EXIT_CODES),
        "Matches on a container's exit code.",
    ),
    f(
        "onTerminationMessage",
        Ty::Object(TERMINATION_MESSAGE),
        "Matches on the termination message.",
    ),
    f(
        "onFailureCategory",
        Ty::NonEmpty(&Ty::Array {
            items: &CATEGORY,
            max_items: None,
            unique: false,
        }),
        "Matches when the executor assigned one of these failure categories.",
    ),
    f(
        "onFailureSubcategory",
        Ty::NonEmpty(&Ty::Array {
            items: &CATEGORY,
            max_items: None,
            unique: false,
        }),
        "Narrows onFailureCategory to these subcategories (requires onFailureCategory).",
    ),
    f(
        "retryLimit",
        LIMIT,
        "Retries this rule allows (0..=10000); default: the policy's retryLimit, then globalMaxRetries.",
    ),
    f(
        "backoff",
        Ty::Object(BACKOFF),
        "Overrides the policy's backoff for this rule, field by field.",
    ),
    f(
        "antiAffinity",
        Ty::Object(ANTI_AFFINITY),
        "Overrides the policy's anti-affinity for this rule.",
    ),
    f(
        "mutate",
        Ty::Object(MUTATE),
        "Changes to the job for the retry (Retry rules only), as upstream Armada.",
    ),
    f(
        "onCategory",
        CATEGORY,
        "Upstream's single-category spelling of onFailureCategory, accepted for migration.",
    ),
];

/// A v1 rule needs a matcher (`onCategory` is upstream's spelling of one), and a
/// subcategory narrows a category.
const RULE_CONSTRAINTS: &[Constraint] = &[
    Constraint::AnyOf(&[
        "onConditions",
        "onExitCodes",
        "onTerminationMessage",
        "onFailureCategory",
        "onCategory",
        "onFailureSubcategory",
    ]),
    Constraint::Requires {
        field: "onFailureSubcategory",
        needs: &["onFailureCategory", "onCategory"],
    },
];

const RULE_V1BETA1_CONSTRAINTS: &[Constraint] = &[
    Constraint::AnyOf(&["onCategory", "onSubcategory"]),
    Constraint::Requires {
        field: "onSubcategory",
        needs: &["onCategory"],
    },
];

pub const SPEC_FIELDS: &[Field] = &[
    f(
        "retryLimit",
        LIMIT,
        "The default limit of each rule (0..=10000). Unset: globalMaxRetries (an upstream server reads unset as 0).",
    ),
    f(
        "defaultAction",
        Ty::Action,
        "What happens when no rule matches: `Fail` (default) or `Retry`.",
    ),
    f(
        "backoff",
        Ty::Object(BACKOFF),
        "Delay before each retry; each field inherits on its own.",
    ),
    f("antiAffinity", Ty::Object(ANTI_AFFINITY), "Where retries may run."),
    f(
        "rules",
        Ty::Array {
            items: &Ty::Checked(RULE, RULE_CONSTRAINTS),
            max_items: Some(100),
            unique: false,
        },
        "Ordered rules; the first whose matchers all match a failure decides. At most 100.",
    ),
];

pub const METADATA: &[Field] = &[req(
    "name",
    NAME,
    "RFC 1123 label: lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters.",
)];

/// A v1 RetryPolicy document.
pub const RETRY_POLICY: &[Field] = &[
    req(
        "apiVersion",
        Ty::Enum(&[API_V1]),
        "`armadaproject.io/v1` (upstream's flat `armadaproject.io/v1beta1` is accepted too, with its own layout).",
    ),
    req("kind", Ty::Enum(&["RetryPolicy"]), "`RetryPolicy`."),
    req("metadata", Ty::Object(METADATA), "The policy's name."),
    req("spec", Ty::Object(SPEC_FIELDS), "What is retried, how often and how."),
];

/// A rule of upstream's flat dialect (v1beta1): one category, as upstream stores it.
pub const RULE_V1BETA1: &[Field] = &[
    req(
        "action",
        Ty::Action,
        "`Retry` or `Fail`: what happens to a failure this rule matches.",
    ),
    f(
        "onCategory",
        CATEGORY,
        "Matches when the executor assigned this failure category (exact, case-sensitive).",
    ),
    f(
        "onSubcategory",
        CATEGORY,
        "Narrows onCategory to this subcategory (requires onCategory).",
    ),
    f(
        "mutate",
        Ty::Object(MUTATE),
        "Changes to the job for the retry (Retry rules only).",
    ),
];

/// A RetryPolicy in upstream's flat dialect (`armadaproject.io/v1beta1`), exactly as
/// upstream armadactl accepts it.
pub const RETRY_POLICY_V1BETA1: &[Field] = &[
    req(
        "apiVersion",
        Ty::Enum(&[API_V1BETA1]),
        "`armadaproject.io/v1beta1`: upstream Armada's flat layout (the design's is `armadaproject.io/v1`).",
    ),
    req("kind", Ty::Enum(&["RetryPolicy"]), "`RetryPolicy`."),
    req("name", NAME, "RFC 1123 label, at most 63 characters."),
    f(
        "retryLimit",
        LIMIT,
        "Retries the policy allows (0..=10000). Absent means 0, never retry, as upstream reads it.",
    ),
    req(
        "defaultAction",
        Ty::Action,
        "What happens when no rule matches: `Fail` or `Retry`. Required: upstream refuses a policy without one.",
    ),
    f(
        "rules",
        Ty::Array {
            items: &Ty::Checked(RULE_V1BETA1, RULE_V1BETA1_CONSTRAINTS),
            max_items: Some(100),
            unique: false,
        },
        "Ordered rules; the first whose category (and subcategory) matches a failure decides. At most 100.",
    ),
];

pub const PERMISSION: &[Field] = &[
    f(
        "subjects",
        Ty::Array {
            items: &Ty::Object(&[
                req("kind", Ty::Enum(&["User", "Group"]), "`User` or `Group`."),
                req("name", Ty::Str, "The user or group name."),
            ]),
            max_items: None,
            unique: false,
        },
        "Who the verbs are granted to.",
    ),
    f(
        "verbs",
        Ty::Array {
            items: &Ty::Str,
            max_items: None,
            unique: false,
        },
        "What they may do (`submit`, `cancel`, ...).",
    ),
];

const STRINGS: Ty = Ty::Array {
    items: &Ty::Str,
    max_items: None,
    unique: false,
};

pub const GANG: &[Field] = &[req(
    "cardinality",
    Ty::Int {
        min: 0,
        max: 4_294_967_295,
    },
    "How many jobs the gang has; upstream's engine never retries a gang of more than one.",
)];

pub const HISTORY_JOB: &[Field] = &[
    f(
        "id",
        Ty::Str,
        "The job id (pod names are `armada-<id>-0...`). Default: the file stem.",
    ),
    f(
        "queue",
        Ty::Str,
        "The job's queue: its Queue document gives the job's policies.",
    ),
    f(
        "annotations",
        Ty::StringMap,
        "The job's annotations (`armadaproject.io/retry-policy`, `armadaproject.io/failFast`).",
    ),
    f(
        "terminationGracePeriod",
        Ty::Duration,
        "The pod's grace period, a floor for a preempted run's delay. Default `1s`.",
    ),
    f(
        "memory",
        Ty::Quantity,
        "The job's memory request (`8Gi`, or bytes), for memory mutations.",
    ),
    f(
        "submittedAt",
        Ty::Str,
        "RFC 3339 submission time; times print relative (`T+90s`) without it.",
    ),
    f("jobSet", Ty::Str, "The job set, with the queue (one job set's burst of failures; no effect on decisions)."),
    f("gang", Ty::Object(GANG), "Gang scheduling of the job."),
    f(
        "resources",
        Ty::Object(HISTORY_RESOURCES),
        "The job's resource requests, for its cost in GPU- and CPU-hours (no effect on decisions).",
    ),
    f(
        "state",
        Ty::Enum(&JOB_ENDS),
        "How the record ends the job (Lookout's `job.state`, written by `history` for a complete record): a replay that would run a job ended `succeeded` or `failed` again is contradicted by it. Default: the history does not say.",
    ),
];

pub const HISTORY_RESOURCES: &[Field] = &[
    f("cpu", Ty::Quantity, "CPUs requested (`4`, `500m`)."),
    f("memory", Ty::Quantity, "Memory requested (`8Gi`, or bytes)."),
    f("gpu", Ty::Quantity, "GPUs requested (`1`)."),
];

pub const HISTORY_CONTAINER: &[Field] = &[
    f("name", Ty::Str, "The container's name; leave it out for an unnamed container (a Lookout import), matched only by rules without `containerName`."),
    f("init", Ty::Bool, "An init container."),
    f("exitCode", Ty::Int { min: -2_147_483_648, max: 2_147_483_647 }, "The exit code (0: not failed)."),
    f("reason", Ty::Str, "The termination reason (`OOMKilled`, `Error`)."),
    f("message", Ty::Str, "The termination message."),
];

pub const HISTORY_EVENT: &[Field] = &[
    f("type", Ty::Str, "The event's type: `Normal` or `Warning`."),
    f(
        "reason",
        Ty::Str,
        "The event's reason (`UnexpectedAdmissionError`, `FailedMount`).",
    ),
    f("message", Ty::Str, "The event's message."),
];

pub const RUN_EXPECT: &[Field] = &[
    f("action", Ty::Action, "The expected action."),
    f("decision", Ty::Enum(&DECISION_KINDS), "The expected decision kind."),
    f("rule", Ty::Str, "The expected `policy/rule` (`infra/0`, `p/default`)."),
    f("delay", Ty::Duration, "The expected delay before the next run."),
    f(
        "retries",
        Ty::Int {
            min: 0,
            max: 4_294_967_295,
        },
        "The expected total of retries after this decision.",
    ),
    f("podName", Ty::Str, "The expected pod name of the next run."),
    f("avoidNodes", STRINGS, "The expected nodes the next run avoids."),
];

pub const JOB_EXPECT: &[Field] = &[
    f("final", Ty::Enum(&FINAL_STATES), "The expected final state."),
    f(
        "retries",
        Ty::Int {
            min: 0,
            max: 4_294_967_295,
        },
        "The expected retries in all.",
    ),
    f(
        "decision",
        Ty::Enum(&DECISION_KINDS),
        "The expected last decision kind.",
    ),
];

pub const HISTORY_RUN: &[Field] = &[
    f("node", Ty::Str, "The node the run was on."),
    f(
        "pool",
        Ty::Str,
        "The pool it was scheduled in (Lookout's `job_run.pool`). Default `default` (also when empty).",
    ),
    f(
        "queuedFor",
        Ty::Duration,
        "How long it waited for capacity after becoming eligible. Default `0s`.",
    ),
    f(
        "startedAt",
        Ty::Str,
        "When it started: a duration since submission or an RFC 3339 time (instead of queuedFor).",
    ),
    f("runFor", Ty::Duration, "How long it ran before it ended. Default `0s`."),
    f(
        "conditions",
        Ty::Array {
            items: &Ty::Enum(&POD_CONDITIONS),
            max_items: None,
            unique: true,
        },
        "Pod-level conditions.",
    ),
    f(
        "terminationConfirmedAfter",
        Ty::Duration,
        "When a preempted pod's termination was confirmed.",
    ),
    f(
        "containers",
        Ty::Array {
            items: &Ty::Object(HISTORY_CONTAINER),
            max_items: None,
            unique: false,
        },
        "The pod's containers.",
    ),
    f("category", CATEGORY, "The executor's failure category."),
    f("subcategory", CATEGORY, "The executor's failure subcategory."),
    f(
        "outcome",
        Ty::Enum(&OUTCOMES),
        "`failed` (default), `succeeded`, `leaseReturned` or `cancelled`.",
    ),
    f(
        "globalMaxRetries",
        Ty::Int {
            min: 0,
            max: 4_294_967_295,
        },
        "The scheduler's globalMaxRetries from this run on (a reload).",
    ),
    f(
        "executorPath",
        Ty::Enum(&EXECUTOR_PATHS),
        "Which executor path ended the run, and so what its categorizer saw: `stuckPod`, `failedPodCheck`, `failedPod` or `unclassified`.",
    ),
    f(
        "podError",
        Ty::Str,
        "The pod-error text the executor's categorizer was given (a stuck pod's `Unable to start pod…`, a failed-pod check's message), matched by `onPodError`.",
    ),
    f(
        "events",
        Ty::Array {
            items: &Ty::Object(HISTORY_EVENT),
            max_items: None,
            unique: false,
        },
        "The pod's Kubernetes events, matched by a categorizer's `onPodEvents`.",
    ),
    f(
        "expect",
        Ty::Object(RUN_EXPECT),
        "Assertions on this run's decision (simulate exits 1 when one fails).",
    ),
];

/// A FailureHistory document (simulate's input).
pub const FAILURE_HISTORY: &[Field] = &[
    f(
        "apiVersion",
        Ty::Enum(&[API_V1]),
        "`armadaproject.io/v1` (may be left out on JSON lines).",
    ),
    f(
        "kind",
        Ty::Enum(&["FailureHistory"]),
        "`FailureHistory` (may be left out on JSON lines).",
    ),
    f("job", Ty::Object(HISTORY_JOB), "The job."),
    req(
        "runs",
        Ty::Array {
            items: &Ty::Object(HISTORY_RUN),
            max_items: None,
            unique: false,
        },
        "The job's runs, in order.",
    ),
    f("expect", Ty::Object(JOB_EXPECT), "Assertions on the job's outcome."),
];

/// A Queue document.
pub const QUEUE: &[Field] = &[
    req(
        "apiVersion",
        Ty::Enum(&[API_V1BETA1, API_V1]),
        "`armadaproject.io/v1beta1` (upstream's only queue version); v1 is accepted too.",
    ),
    req("kind", Ty::Enum(&["Queue"]), "`Queue`."),
    req("name", NAME, "RFC 1123 label, at most 63 characters."),
    f(
        "priorityFactor",
        Ty::Num {
            min: Some(1.0),
            max: None,
        },
        "Priority factor, at least 1.0.",
    ),
    f(
        "userOwners",
        Ty::Array {
            items: &Ty::Str,
            max_items: None,
            unique: false,
        },
        "Users who own the queue.",
    ),
    f(
        "groupOwners",
        Ty::Array {
            items: &Ty::Str,
            max_items: None,
            unique: false,
        },
        "Groups that own the queue.",
    ),
    f("labels", Ty::StringMap, "Labels; no empty key or value."),
    f("cordoned", Ty::Bool, "A cordoned queue accepts no new jobs."),
    f(
        "retryPolicies",
        Ty::Array {
            items: &NAME,
            max_items: None,
            unique: true,
        },
        "Retry policies of the queue's jobs, in precedence order (their rules are tried in this order).",
    ),
    f(
        "permissions",
        Ty::Array {
            items: &Ty::Object(PERMISSION),
            max_items: None,
            unique: false,
        },
        "Upstream's permissions, as the server returns them.",
    ),
];

// The executor's categorizer config (`errorCategories`, `model::categorizer`). Keys are read
// in any case, as the executor's loader reads them; these are their canonical spellings.

const CATEGORY_NAME: Ty = Ty::Pattern("^.{0,63}$");

pub const CATEGORY_EXIT_CODES: &[Field] = &[
    req(
        "operator",
        Ty::Enum(&["In", "NotIn"]),
        "`In`: a considered container's exit code is one of `values`; `NotIn`: none of them. Exit code 0 never matches.",
    ),
    req(
        "values",
        Ty::NonEmpty(&Ty::Array {
            items: &Ty::Int {
                min: -2_147_483_648,
                max: 2_147_483_647,
            },
            max_items: None,
            unique: false,
        }),
        "Exit codes (32-bit integers), at least one.",
    ),
];

pub const CATEGORY_PATTERN: &[Field] = &[f(
    "pattern",
    Ty::Regex,
    "A Go regular expression, searched (unanchored) in the text; an empty text never matches.",
)];

pub const CATEGORY_POD_EVENTS: &[Field] = &[
    f(
        "regexp",
        Ty::Regex,
        "A Go regular expression searched in the event's message; an empty message never matches.",
    ),
    f(
        "reason",
        Ty::Str,
        "When set, the event's reason must equal it (`UnexpectedAdmissionError`).",
    ),
    req(
        "type",
        Ty::Enum(&["Normal", "Warning"]),
        "The event's type must equal it: `Normal` or `Warning`.",
    ),
];

pub const CATEGORY_RULE: &[Field] = &[
    f(
        "containerName",
        Ty::Str,
        "Scopes onConditions, onExitCodes and onTerminationMessage to this container (onPodError and onPodEvents ignore it).",
    ),
    f(
        "onConditions",
        Ty::Array {
            items: &Ty::Enum(&["OOMKilled", "Evicted", "DeadlineExceeded"]),
            max_items: None,
            unique: false,
        },
        "`OOMKilled` (a considered container's reason), `Evicted`, `DeadlineExceeded` (the pod's): matches when one holds.",
    ),
    f(
        "onExitCodes",
        Ty::Object(CATEGORY_EXIT_CODES),
        "Matches a considered container's exit code.",
    ),
    f(
        "onTerminationMessage",
        Ty::Object(CATEGORY_PATTERN),
        "Matches a considered container's termination message.",
    ),
    f(
        "onPodError",
        Ty::Object(CATEGORY_PATTERN),
        "Matches the pod error the executor captured (a run's `podError`).",
    ),
    f(
        "onPodEvents",
        Ty::Object(CATEGORY_POD_EVENTS),
        "Matches one of the pod's Kubernetes events (a run's `events`).",
    ),
    f(
        "subcategory",
        CATEGORY_NAME,
        "The subcategory a run this rule matches gets (at most 63 bytes).",
    ),
    f(
        "hint",
        Ty::Str,
        "Guidance the executor appends to the failure message (no effect on the category).",
    ),
];

pub const ERROR_CATEGORY: &[Field] = &[
    req(
        "name",
        CATEGORY_NAME,
        "The category a run one of its rules matches gets: unique, at most 63 bytes.",
    ),
    f(
        "action",
        Ty::Enum(&["Retain", "Delete"]),
        "What the executor does with the failed pod: `Retain` (default; its name stays taken) or `Delete` (a retry can reuse the name).",
    ),
    req(
        "rules",
        Ty::NonEmpty(&Ty::Array {
            items: &Ty::Checked(
                CATEGORY_RULE,
                &[Constraint::ExactlyOne(&[
                    "onConditions",
                    "onExitCodes",
                    "onTerminationMessage",
                    "onPodError",
                    "onPodEvents",
                ])],
            ),
            max_items: None,
            unique: false,
        }),
        "At least one rule, exactly one matcher each. Rules are tried in config order across all categories; the first match wins.",
    ),
];

/// The `errorCategories` mapping: `explain errorcategories` starts here.
pub const ERROR_CATEGORIES: &[Field] = &[
    f(
        "enabled",
        Ty::Bool,
        "Whether the executor categorizes failed runs; default `false`: no run gets a category.",
    ),
    f(
        "defaultCategory",
        CATEGORY_NAME,
        "The category of a run no rule matches; empty: none.",
    ),
    f(
        "defaultSubcategory",
        CATEGORY_NAME,
        "The subcategory of a run no rule matches; empty: none.",
    ),
    f(
        "categories",
        Ty::Array {
            items: &Ty::Object(ERROR_CATEGORY),
            max_items: None,
            unique: false,
        },
        "The categories, in order: their rules are tried in this order.",
    ),
];

/// A categorizer file's top as `tune --vary 'categorizer:PATH=…'` names it: `errorCategories`
/// whatever the file's shape (`application.errorCategories` in an executor config).
pub const CATEGORIZER_TOP: &[Field] = &[f(
    "errorCategories",
    Ty::Object(ERROR_CATEGORIES),
    "The executor's error categorizer.",
)];

const COUNT: Ty = Ty::Int {
    min: 0,
    max: 4_294_967_295,
};

/// `scheduling.retryPolicy` of a scheduler config, decoded strictly (`model::scheduler`).
pub const SCHEDULER_RETRY_POLICY: &[Field] = &[
    f(
        "enabled",
        Ty::Bool,
        "Whether the retry engine runs; unset, simulate assumes `true`.",
    ),
    f(
        "globalMaxRetries",
        COUNT,
        "Retries a job may have in all, and the limit of a policy without one. Unset: 20.",
    ),
    f("defaultPolicyName", NAME, "The policy of a job whose queue names none."),
    f(
        "defaultBackoff",
        Ty::Object(BACKOFF),
        "The backoff a policy inherits, field by field, where it sets none.",
    ),
];

/// `scheduling` of a scheduler config: only these keys are read, the others are Armada's.
pub const SCHEDULING: &[Field] = &[
    f(
        "retryPolicy",
        Ty::Object(SCHEDULER_RETRY_POLICY),
        "The retry engine's settings.",
    ),
    f(
        "maxAttemptedRuns",
        COUNT,
        "Runs a job may have on the paths that bypass the policies (default 5).",
    ),
    f(
        "maxRetries",
        COUNT,
        "Upstream's legacy bound: `maxRetries + 1` runs, read when `maxAttemptedRuns` is not set.",
    ),
];

/// An Armada scheduler config file (`--scheduler-config`), as far as retryctl reads it: the
/// `apiVersion`/`kind` envelope is optional and every key outside `scheduling` is ignored.
pub const SCHEDULER_CONFIG: &[Field] = &[f(
    "scheduling",
    Ty::Object(SCHEDULING),
    "The scheduler's settings; retryctl reads the retry ones.",
)];

/// The shortest full path under `root` that ends with `path` (`rules.action` →
/// `spec.rules.action`), searched breadth first over the objects of the layout; `None` when
/// `path` is nowhere in it. (`explain` has its own copy of this search.)
pub fn find_path(root: &'static [Field], path: &str) -> Option<String> {
    let mut level: Vec<(String, &'static [Field])> = vec![(String::new(), root)];
    while !level.is_empty() {
        let mut next = Vec::new();
        for (prefix, fields_here) in level {
            for f in fields_here {
                let Some(children) = object_of(&f.ty) else {
                    continue;
                };
                let under = if prefix.is_empty() {
                    f.name.to_string()
                } else {
                    format!("{prefix}.{}", f.name)
                };
                let candidate = format!("{under}.{path}");
                if field_at(root, &candidate).is_some() {
                    return Some(candidate);
                }
                next.push((under, children));
            }
        }
        level = next;
    }
    None
}

/// The field names accepted by an object.
pub fn names(fields: &[Field]) -> Vec<&'static str> {
    fields.iter().map(|f| f.name).collect()
}

/// The fields of the object at `path` (`spec.rules.onExitCodes`; arrays are passed through)
/// under `root`.
pub fn object_at(root: &'static [Field], path: &str) -> Option<&'static [Field]> {
    let mut fields = root;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let field = fields.iter().find(|f| f.name == part)?;
        fields = object_of(&field.ty)?;
    }
    Some(fields)
}

/// The object fields of a type, looking through arrays.
pub fn object_of(ty: &'static Ty) -> Option<&'static [Field]> {
    match ty {
        Ty::Object(f) | Ty::Checked(f, _) => Some(f),
        Ty::Array { items, .. } | Ty::NonEmpty(items) => object_of(items),
        _ => None,
    }
}

/// The field at `path` under `root`.
pub fn field_at(root: &'static [Field], path: &str) -> Option<&'static Field> {
    let (parent, last) = match path.rsplit_once('.') {
        Some((p, l)) => (p, l),
        None => ("", path),
    };
    object_at(root, parent)?.iter().find(|f| f.name == last)
}

/// Allowed field names at `path`; panics on a path not in the table (a programming error,
/// caught by every decoding test).
pub fn allowed(root: &'static [Field], path: &str) -> Vec<&'static str> {
    names(object_at(root, path).unwrap_or_else(|| panic!("no object `{path}` in the field table")))
}

/// A short type name for `explain`.
pub fn type_name(ty: &Ty) -> String {
    match ty {
        Ty::Str | Ty::Pattern(_) => "string".into(),
        Ty::Int { .. } => "integer".into(),
        Ty::Num { .. } | Ty::Above(_) => "number".into(),
        Ty::Quantity => "quantity".into(),
        Ty::Regex => "string".into(),
        Ty::NonEmpty(items) => type_name(items),
        Ty::Bool => "boolean".into(),
        Ty::Duration => "duration".into(),
        Ty::Enum(_) | Ty::Action => "enum".into(),
        Ty::Array { items, .. } => format!("[]{}", type_name(items)),
        Ty::StringMap => "map[string]string".into(),
        Ty::Object(_) | Ty::Checked(..) => "object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::document::parse_documents;
    use serde_json::{json, Value};

    /// Every (document path, JSON pointer parts) under `fields`, arrays entered at index 0.
    fn walk(fields: &'static [Field], doc_path: &str, out: &mut Vec<(String, Vec<String>)>, parts: &[String]) {
        for f in fields {
            let dp = if doc_path.is_empty() {
                f.name.to_string()
            } else {
                format!("{doc_path}.{}", f.name)
            };
            let mut p = parts.to_vec();
            p.push(f.name.to_string());
            out.push((dp.clone(), p.clone()));
            let (inner, dp, p) = match &f.ty {
                Ty::Array { items, .. } => {
                    let mut p = p.clone();
                    p.push("0".into());
                    (object_of(items), format!("{dp}[0]"), p)
                }
                ty => (object_of_ty(ty), dp, p),
            };
            if let Some(children) = inner {
                walk(children, &dp, out, &p);
            }
        }
    }

    fn object_of_ty(ty: &'static Ty) -> Option<&'static [Field]> {
        match ty {
            Ty::Object(f) | Ty::Checked(f, _) => Some(f),
            _ => None,
        }
    }

    fn set(doc: &mut Value, parts: &[String], value: Value) {
        let mut cur = doc;
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            if let Ok(idx) = part.parse::<usize>() {
                if !cur.is_array() {
                    *cur = json!([]);
                }
                let arr = cur.as_array_mut().unwrap();
                while arr.len() <= idx {
                    arr.push(json!({}));
                }
                cur = &mut arr[idx];
            } else {
                if !cur.is_object() {
                    *cur = json!({});
                }
                let obj = cur.as_object_mut().unwrap();
                if last {
                    obj.insert(part.clone(), value);
                    return;
                }
                cur = obj.entry(part.clone()).or_insert(json!({}));
            }
        }
    }

    /// The table never declares a field the decoder then ignores: a wrong value at every
    /// field the table lists is reported at that field (or under it). A field in the table
    /// that no decoder reads would be accepted silently: the `retry_limit` trap again.
    #[test]
    fn the_decoder_reads_every_field_of_the_table() {
        for (root, base) in [
            (
                RETRY_POLICY,
                json!({"apiVersion": API_V1, "kind": "RetryPolicy", "metadata": {"name": "x"},
                       "spec": {"retryLimit": 1, "rules": [{"action": "Retry", "onConditions": ["OOMKilled"]}]}}),
            ),
            (QUEUE, json!({"apiVersion": API_V1BETA1, "kind": "Queue", "name": "q"})),
        ] {
            let mut paths = Vec::new();
            walk(root, "", &mut paths, &[]);
            for (doc_path, parts) in paths {
                if ["apiVersion", "kind"].contains(&doc_path.as_str()) {
                    continue;
                }
                let mut doc = base.clone();
                // A list where a scalar or mapping is expected, a mapping with an unknown key
                // where a list or scalar is: wrong for every type in the table.
                let field = field_at(root, &doc_path.replace("[0]", "")).unwrap();
                let wrong = match field.ty {
                    Ty::Object(_) | Ty::StringMap => json!([[1]]),
                    _ => json!({"zz": [1]}),
                };
                set(&mut doc, &parts, wrong);
                let parsed = parse_documents(&doc.to_string(), None);
                let diags = &parsed.documents[0].diagnostics;
                assert!(
                    diags.iter().any(|d| d.is_error() && d.path.starts_with(&doc_path)),
                    "{doc_path}: no error for a wrong value in {doc}: {diags:?}"
                );
            }
        }
    }
}

//! `retryctl tune` (docs/tune.md): parse each `--vary NAME:PATH=VALUES`, check the varies against
//! the template, count the candidates and build each candidate's documents (this module and
//! `vary`, `candidates`: pure); replay the history once for all of them (`sweep`); score and
//! rank them (`rank`: pure).
//!
//! Owns: the [`Vary`] syntax (`vary`), the [`Template`] (the `-f` documents and the scheduler
//! config's tree) and its [`Template::check`], the numbering of candidates ([`count`], the
//! product of the varies, the first varying slowest, from 1) and each candidate's documents
//! ([`CandidateDocuments`]), edited and decoded again exactly as `validate` decodes them
//! (`candidates`).
//! Must not: do I/O, read the clock or the environment, or print: the `tune` command reads
//! the files and writes the output; only `sweep` drives a replay (of a source it is given).
//!
//! Decisions: `scheduler` as NAME always means the scheduler config, and `categorizer` the
//! `--categorizer` file, whose paths start at `errorCategories` whatever its shape (an
//! executor config's `application.` is added when the candidate is built, and each key
//! takes the file's own spelling, since the executor reads keys in any case; the check
//! itself follows the canonical spellings). A path names a scalar:
//! a field, or an item of a list of scalars (`onConditions[0]`, set but never `unset`); the
//! identity fields (`apiVersion`, `kind`, `metadata.name`, v1beta1's `name`) cannot be
//! varied. [`Template::check`] refuses a value of the wrong type and a value outside the
//! field table's own bounds (`retryLimit` 0..=10000, `multiplier` 1..=100, durations up to
//! `24h`), since no candidate could pass with it; what depends on other fields
//! (`maxDelay ≥ initialDelay`), string patterns and regexes are each candidate's validation,
//! and a candidate that fails it is skipped with `validate`'s errors. It reports the first
//! problem found, varies in order.

mod candidates;
pub mod rank;
pub mod sweep;
mod template;
mod vary;

pub use candidates::{CandidateDocuments, CandidateError, NO_SCHEDULER_FILE};
pub use template::{count, Template, Values};
pub use vary::{parse_vary, Setting, Target, Vary, MAX_VALUES};

/// Templates and varies for the tests of this module.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;
    use crate::input::{SchedulerSource, SourceFile};
    use crate::model::parse_documents;

    /// A v1 policy with two rules and no backoff.
    pub const ML: &str = "\
apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: ml
spec:
  retryLimit: 5
  defaultAction: Fail
  rules:
    - action: Retry
      onConditions: [OOMKilled]
      retryLimit: 2
    - action: Retry
      onExitCodes: {operator: In, values: [137, 143]}
";

    /// A v1beta1 (flat, upstream's) policy.
    pub const INFRA: &str = "\
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: infra
retryLimit: 3
defaultAction: Fail
rules:
  - action: Retry
    onCategory: gpu
";

    pub const QUEUE: &str = "\
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: q
retryPolicies: [infra, ml]
";

    pub fn file(name: &str, text: &str) -> SourceFile {
        let parsed = parse_documents(text, None);
        assert!(parsed.syntax_error.is_none(), "{name}: {:?}", parsed.syntax_error);
        SourceFile {
            name: name.to_string(),
            documents: parsed.documents,
            heads: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// `policies.yaml` (ml, then infra) and `queue.yaml`, with a scheduler config if given.
    pub fn template(scheduler: Option<&str>) -> Template {
        let files = vec![
            file("policies.yaml", &format!("{ML}---\n{INFRA}")),
            file("queue.yaml", QUEUE),
        ];
        let scheduler =
            scheduler.map(|text| SchedulerSource::parse("scheduler.yaml".into(), text).expect("a valid config"));
        Template::new(files, scheduler)
    }

    pub fn varies(args: &[&str]) -> Vec<Vary> {
        args.iter().map(|a| parse_vary(a).unwrap()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    /// The check's error for `args`, on the template with no scheduler config.
    fn error(args: &[&str]) -> String {
        template(None).check(&varies(args)).unwrap_err()
    }

    #[test]
    fn the_examples_pass() {
        let t = template(None);
        let v = varies(&[
            "ml:spec.retryLimit=0..10",
            "ml:spec.rules[1].action=Retry,Fail",
            "ml:spec.backoff.initialDelay=0s,30s,5m",
            "ml:spec.rules[0].retryLimit=unset,1,3",
            "infra:retryLimit=1..5/2",
            "scheduler:scheduling.retryPolicy.globalMaxRetries=5,10,20",
            "ml:spec.rules[0].onConditions[0]=OOMKilled,Evicted",
            "ml:spec.defaultAction=unset,Retry",
            "ml:spec.rules[0].backoff.multiplier=1.5,2",
            "infra:rules[0].action=Retry,Fail",
            "scheduler:scheduling.retryPolicy.enabled=true,false",
            "scheduler:scheduling.retryPolicy.defaultBackoff.maxDelay=10m",
            "scheduler:scheduling.maxAttemptedRuns=3,5",
        ]);
        assert_eq!(t.check(&v), Ok(()));
        assert_eq!(count(&v), 11 * 2 * 3 * 3 * 3 * 3 * 2 * 2 * 2 * 2 * 2 * 2);
    }

    #[test]
    fn the_template_s_own_candidate_has_its_values_as_written() {
        let t = template(None);
        let own = |args: &[&str]| t.own_candidate(&varies(args));
        assert_eq!(own(&[]), Ok(1));
        assert_eq!(own(&["ml:spec.retryLimit=1..5"]), Ok(5));
        assert_eq!(own(&["ml:spec.retryLimit=5,1"]), Ok(1));
        // The first vary varies slowest: (ml 5, infra 3) is the 4th × 5 + 3rd.
        assert_eq!(own(&["ml:spec.retryLimit=1..5", "infra:retryLimit=1..5"]), Ok(23));
        // Values as the field reads them; a field left out is `unset`.
        assert_eq!(own(&["ml:spec.retryLimit=+05,3"]), Ok(1));
        assert_eq!(own(&["ml:spec.rules[0].retryLimit=unset,1,2"]), Ok(3));
        assert_eq!(own(&["ml:spec.backoff.initialDelay=30s,unset"]), Ok(2));
        assert_eq!(own(&["infra:rules[0].action=Fail,Retry"]), Ok(2));
        assert_eq!(
            own(&["ml:spec.retryLimit=1..4"]),
            Err(
                "no candidate has the template's own values: the template sets `ml:spec.retryLimit` to `5`, a value \
                 its `--vary` does not list (add it, or pick a candidate by its id)"
                    .into()
            )
        );
        assert_eq!(
            own(&["ml:spec.retryLimit=1..5", "ml:spec.backoff.initialDelay=0s,30s"]),
            Err(
                "no candidate has the template's own values: the template leaves `ml:spec.backoff.initialDelay` \
                 unset, a value its `--vary` does not list (add it, or pick a candidate by its id)"
                    .into()
            )
        );
    }

    #[test]
    fn count_is_the_saturating_product() {
        assert_eq!(count(&[]), 1);
        assert_eq!(count(&varies(&["ml:spec.retryLimit=1,2", "infra:retryLimit=0..9"])), 20);
        let big: Vec<Vary> = (0..7)
            .map(|i| parse_vary(&format!("ml:spec.rules[{i}].retryLimit=0..99999")).unwrap())
            .collect();
        assert_eq!(count(&big), 100_000u128.pow(7));
        let bigger: Vec<Vary> = (0..2).flat_map(|_| big.clone()).collect();
        assert_eq!(count(&bigger), u128::MAX);
    }

    #[test]
    fn unknown_policies_list_the_template_s() {
        assert_eq!(
            error(&["mll:spec.retryLimit=1"]),
            "invalid `--vary` `mll:spec.retryLimit`: no RetryPolicy named `mll` in the template; \
             its policies are `ml`, `infra`; did you mean `ml`?"
        );
        assert_eq!(
            error(&["schedular:scheduling.maxAttemptedRuns=1"]),
            "invalid `--vary` `schedular:scheduling.maxAttemptedRuns`: no RetryPolicy named `schedular` in the \
             template; its policies are `ml`, `infra`; did you mean `scheduler`?"
        );
        let empty = Template::new(vec![file("queue.yaml", QUEUE)], None);
        assert_eq!(
            empty.check(&varies(&["ml:spec.retryLimit=1"])).unwrap_err(),
            "invalid `--vary` `ml:spec.retryLimit`: no RetryPolicy named `ml` in the template, which has none"
        );
        let twice = Template::new(
            vec![file("a.yaml", &format!("{QUEUE}---\n{ML}")), file("b.yaml", ML)],
            None,
        );
        assert_eq!(
            twice.check(&varies(&["ml:spec.retryLimit=1"])).unwrap_err(),
            "invalid `--vary` `ml:spec.retryLimit`: 2 RetryPolicy documents are named `ml` in the template \
             (`a.yaml` document 2, `b.yaml` document 1); `--vary` cannot tell which to vary"
        );
    }

    #[test]
    fn unknown_paths_name_the_fields_there() {
        assert_eq!(
            error(&["ml:spec.retryLimt=1"]),
            "invalid `--vary` `ml:spec.retryLimt`: field `retryLimt` does not exist in `spec` of policy `ml`; \
             its fields are `retryLimit`, `defaultAction`, `backoff`, `antiAffinity`, `rules`; did you mean \
             `retryLimit`?"
        );
        // A part left out, or the other dialect's layout.
        assert_eq!(
            error(&["ml:retryLimit=1"]),
            "invalid `--vary` `ml:retryLimit`: field `retryLimit` does not exist in policy `ml` \
             (`armadaproject.io/v1`); its fields are `apiVersion`, `kind`, `metadata`, `spec`; did you mean \
             `spec.retryLimit`?"
        );
        assert_eq!(
            error(&["ml:rules[1].action=Fail"]),
            "invalid `--vary` `ml:rules[1].action`: field `rules` does not exist in policy `ml` \
             (`armadaproject.io/v1`); its fields are `apiVersion`, `kind`, `metadata`, `spec`; did you mean \
             `spec.rules[1].action`?"
        );
        assert_eq!(
            error(&["infra:spec.retryLimit=1"]),
            "invalid `--vary` `infra:spec.retryLimit`: field `spec` does not exist in policy `infra` \
             (`armadaproject.io/v1beta1`); its fields are `apiVersion`, `kind`, `name`, `retryLimit`, \
             `defaultAction`, `rules`; did you mean `retryLimit`?"
        );
        assert_eq!(
            error(&["infra:rules[0].retryLimit=1"]),
            "invalid `--vary` `infra:rules[0].retryLimit`: field `retryLimit` does not exist in `rules[0]` of \
             policy `infra`; its fields are `action`, `onCategory`, `onSubcategory`, `mutate`; \
             `spec.rules[0].retryLimit` is a field of the `armadaproject.io/v1` layout, and policy `infra` is \
             `armadaproject.io/v1beta1`"
        );
        assert_eq!(
            error(&["infra:backoff.initialDelay=1s"]),
            "invalid `--vary` `infra:backoff.initialDelay`: field `backoff` does not exist in policy `infra` \
             (`armadaproject.io/v1beta1`); its fields are `apiVersion`, `kind`, `name`, `retryLimit`, \
             `defaultAction`, `rules`; `spec.backoff.initialDelay` is a field of the `armadaproject.io/v1` \
             layout, and policy `infra` is `armadaproject.io/v1beta1`"
        );
        assert_eq!(
            error(&["scheduler:scheduling.retryPolicy.globalMaxRetry=5"]),
            "invalid `--vary` `scheduler:scheduling.retryPolicy.globalMaxRetry`: field `globalMaxRetry` does not \
             exist in `scheduling.retryPolicy` of the scheduler config; its fields are `enabled`, \
             `globalMaxRetries`, `defaultPolicyName`, `defaultBackoff`; did you mean `globalMaxRetries`?"
        );
        assert_eq!(
            error(&["scheduler:globalMaxRetries=5"]),
            "invalid `--vary` `scheduler:globalMaxRetries`: field `globalMaxRetries` does not exist in the \
             scheduler config; its fields are `scheduling`; did you mean \
             `scheduling.retryPolicy.globalMaxRetries`?"
        );
        assert_eq!(
            error(&["ml:spec.retryLimit.max=1"]),
            "invalid `--vary` `ml:spec.retryLimit.max`: `spec.retryLimit` is an integer, it has no field `max`"
        );
    }

    #[test]
    fn a_path_must_end_at_a_scalar() {
        assert_eq!(
            error(&["ml:spec.rules=1"]),
            "invalid `--vary` `ml:spec.rules`: `spec.rules` is a list, not a scalar field; vary a field of one \
             of its items, e.g. `spec.rules[0].action`"
        );
        assert_eq!(
            error(&["ml:spec.backoff=1"]),
            "invalid `--vary` `ml:spec.backoff`: `spec.backoff` is an object, not a scalar field; vary one of \
             its fields: `spec.backoff.initialDelay`, `spec.backoff.maxDelay`, `spec.backoff.multiplier`, \
             `spec.backoff.jitter`"
        );
        assert_eq!(
            error(&["ml:spec.rules[0].onConditions=Evicted"]),
            "invalid `--vary` `ml:spec.rules[0].onConditions`: `spec.rules[0].onConditions` is a list, not a \
             scalar field; vary one of its items, e.g. `spec.rules[0].onConditions[0]`"
        );
        assert_eq!(
            error(&["ml:spec.rules.action=Fail"]),
            "invalid `--vary` `ml:spec.rules.action`: `spec.rules` is a list: name one of its items, e.g. \
             `spec.rules[0].action`"
        );
        assert_eq!(
            error(&["ml:spec.retryLimit[0]=1"]),
            "invalid `--vary` `ml:spec.retryLimit[0]`: `spec.retryLimit` is not a list: remove `[0]`"
        );
        assert_eq!(
            error(&["ml:metadata.name=other"]),
            "invalid `--vary` `ml:metadata.name`: `metadata.name` cannot be varied: it names the policy"
        );
        assert_eq!(
            error(&["infra:apiVersion=armadaproject.io/v1"]),
            "invalid `--vary` `infra:apiVersion`: `apiVersion` cannot be varied: it says what the document is"
        );
    }

    #[test]
    fn an_index_must_be_in_the_template_s_list() {
        assert_eq!(
            error(&["ml:spec.rules[5].action=Retry"]),
            "invalid `--vary` `ml:spec.rules[5].action`: `spec.rules[5]` does not exist: policy `ml` has 2 \
             rules, `spec.rules[0]`..`spec.rules[1]`"
        );
        assert_eq!(
            error(&["infra:rules[1].action=Retry"]),
            "invalid `--vary` `infra:rules[1].action`: `rules[1]` does not exist: policy `infra` has 1 rule, \
             `rules[0]`"
        );
        assert_eq!(
            error(&["ml:spec.rules[1].onExitCodes.values[2]=1"]),
            "invalid `--vary` `ml:spec.rules[1].onExitCodes.values[2]`: `spec.rules[1].onExitCodes.values[2]` \
             does not exist: `spec.rules[1].onExitCodes.values` of policy `ml` has 2 items, \
             `spec.rules[1].onExitCodes.values[0]`..`spec.rules[1].onExitCodes.values[1]`"
        );
        assert_eq!(
            error(&["ml:spec.rules[0].onExitCodes.values[0]=1"]),
            "invalid `--vary` `ml:spec.rules[0].onExitCodes.values[0]`: `spec.rules[0].onExitCodes.values[0]` \
             does not exist: `spec.rules[0].onExitCodes.values` of policy `ml` has no items"
        );
        let bare = Template::new(
            vec![file(
                "p.yaml",
                "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec: {}\n",
            )],
            None,
        );
        assert_eq!(
            bare.check(&varies(&["p:spec.rules[0].action=Retry"])).unwrap_err(),
            "invalid `--vary` `p:spec.rules[0].action`: `spec.rules[0]` does not exist: policy `p` has no rules"
        );
    }

    #[test]
    fn values_must_fit_the_field() {
        for (arg, message) in [
            (
                "ml:spec.retryLimit=1,abc",
                "invalid `--vary` `ml:spec.retryLimit`: `abc` is not an integer (expected an integer 0..=10000)",
            ),
            (
                "ml:spec.retryLimit=10001",
                "invalid `--vary` `ml:spec.retryLimit`: `10001` is out of range (expected an integer 0..=10000)",
            ),
            (
                "ml:spec.retryLimit=-1..2",
                "invalid `--vary` `ml:spec.retryLimit`: `-1` is out of range (expected an integer 0..=10000)",
            ),
            (
                "ml:spec.rules[1].action=Retri",
                "invalid `--vary` `ml:spec.rules[1].action`: `Retri` is not an action (expected `Retry` or \
                 `Fail`); did you mean `Retry`?",
            ),
            (
                "ml:spec.backoff.initialDelay=5x",
                "invalid `--vary` `ml:spec.backoff.initialDelay`: `5x` is not a duration: unknown unit `x`; \
                 expected one of `ns`, `us`, `ms`, `s`, `m`, `h`",
            ),
            (
                "ml:spec.backoff.initialDelay=10",
                "invalid `--vary` `ml:spec.backoff.initialDelay`: `10` is not a duration: missing unit; expected \
                 a duration such as `10s` (units: `ns`, `us`, `ms`, `s`, `m`, `h`)",
            ),
            (
                "ml:spec.backoff.maxDelay=25h",
                "invalid `--vary` `ml:spec.backoff.maxDelay`: `25h` is out of range (expected a duration from \
                 `0s` to `24h`)",
            ),
            (
                "ml:spec.backoff.multiplier=0.5",
                "invalid `--vary` `ml:spec.backoff.multiplier`: `0.5` is out of range (expected a number \
                 1..=100)",
            ),
            (
                "ml:spec.backoff.jitter=x",
                "invalid `--vary` `ml:spec.backoff.jitter`: `x` is not a number (expected a number 0..=1)",
            ),
            (
                "ml:spec.antiAffinity.mode=nod",
                "invalid `--vary` `ml:spec.antiAffinity.mode`: `nod` is not a valid value (expected `none` or \
                 `node`); did you mean `node`?",
            ),
            (
                "ml:spec.rules[0].onConditions[0]=OOM",
                "invalid `--vary` `ml:spec.rules[0].onConditions[0]`: `OOM` is not a valid value (expected one of \
                 `OOMKilled`, `Evicted`, `Preempted`, `DeadlineExceeded`, `Unschedulable`)",
            ),
            (
                "ml:spec.rules[0].mutate.resources.memory.static=lots",
                "invalid `--vary` `ml:spec.rules[0].mutate.resources.memory.static`: `lots` is not a quantity \
                 (expected a Kubernetes quantity such as `512Mi` or `1Gi`)",
            ),
            (
                "ml:spec.rules[0].mutate.resources.memory.factor=1",
                "invalid `--vary` `ml:spec.rules[0].mutate.resources.memory.factor`: `1` is out of range \
                 (expected a number above 1)",
            ),
            (
                "scheduler:scheduling.retryPolicy.enabled=yes",
                "invalid `--vary` `scheduler:scheduling.retryPolicy.enabled`: `yes` is not a boolean (expected \
                 `true` or `false`)",
            ),
            (
                "scheduler:scheduling.retryPolicy.globalMaxRetries=5000000000",
                "invalid `--vary` `scheduler:scheduling.retryPolicy.globalMaxRetries`: `5000000000` is out of \
                 range (expected an integer 0..=4294967295)",
            ),
            (
                "ml:spec.retryLimit=99999999999999999999",
                "invalid `--vary` `ml:spec.retryLimit`: `99999999999999999999` is out of range (expected an \
                 integer 0..=10000)",
            ),
        ] {
            assert_eq!(error(&[arg]), message, "{arg}");
        }
    }

    #[test]
    fn unset_only_where_a_field_may_be_absent() {
        assert_eq!(
            error(&["ml:spec.rules[0].action=Retry,unset"]),
            "invalid `--vary` `ml:spec.rules[0].action`: `spec.rules[0].action` is required: it cannot be \
             `unset`"
        );
        assert_eq!(
            error(&["infra:defaultAction=unset"]),
            "invalid `--vary` `infra:defaultAction`: `defaultAction` is required: it cannot be `unset`"
        );
        assert_eq!(
            error(&["ml:spec.rules[0].onConditions[0]=unset"]),
            "invalid `--vary` `ml:spec.rules[0].onConditions[0]`: `unset` cannot remove \
             `spec.rules[0].onConditions[0]`, an item of a list (`unset` removes a field)"
        );
        // Optional fields, present or not in the template.
        let t = template(None);
        let ok = varies(&[
            "ml:spec.defaultAction=unset",
            "ml:spec.backoff.initialDelay=unset,1s",
            "infra:retryLimit=unset",
            "scheduler:scheduling.retryPolicy.globalMaxRetries=unset,3",
        ]);
        assert_eq!(t.check(&ok), Ok(()));
    }

    #[test]
    fn one_field_is_varied_once_whatever_its_spelling() {
        assert_eq!(
            error(&["ml:spec.rules[1].action=Retry", "ml:spec.rules[ 01 ].action=Fail"]),
            "invalid `--vary` `ml:spec.rules[ 01 ].action`: it varies the same field as `--vary` \
             `ml:spec.rules[1].action` (`spec.rules[1].action` of policy `ml`); vary each field once"
        );
        assert_eq!(
            error(&["ml: spec . retryLimit=1", "ml:spec.retryLimit=2"]),
            "invalid `--vary` `ml:spec.retryLimit`: it varies the same field as `--vary` `ml: spec . retryLimit` \
             (`spec.retryLimit` of policy `ml`); vary each field once"
        );
        // The same path in two policies, or a policy and the scheduler, are two fields.
        let t = template(None);
        assert_eq!(
            t.check(&varies(&[
                "ml:spec.rules[0].action=Retry",
                "ml:spec.rules[1].action=Fail"
            ])),
            Ok(())
        );
        // One value written two ways.
        assert_eq!(
            error(&["ml:spec.retryLimit=1,01"]),
            "invalid `--vary` `ml:spec.retryLimit`: `1` and `01` are the same value of `spec.retryLimit` (list \
             each value once)"
        );
        assert_eq!(
            error(&["ml:spec.defaultAction=Retry,retry"]),
            "invalid `--vary` `ml:spec.defaultAction`: `Retry` and `retry` are the same value of \
             `spec.defaultAction` (list each value once)"
        );
        assert_eq!(
            error(&["ml:spec.backoff.initialDelay=60s,1m"]),
            "invalid `--vary` `ml:spec.backoff.initialDelay`: `60s` and `1m` are the same value of \
             `spec.backoff.initialDelay` (list each value once)"
        );
    }

    #[test]
    fn the_first_problem_is_reported() {
        assert_eq!(
            error(&["ml:spec.retryLimit=1", "ml:spec.nope=1", "nope:spec.retryLimit=1"]),
            "invalid `--vary` `ml:spec.nope`: field `nope` does not exist in `spec` of policy `ml`; its fields \
             are `retryLimit`, `defaultAction`, `backoff`, `antiAffinity`, `rules`"
        );
    }
}

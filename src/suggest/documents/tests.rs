use super::*;
use crate::model::policy::Action;
use crate::model::signature::Signature;
use crate::suggest::propose::Proposed;

#[test]
fn a_deployed_file_written_as_it_is_loses_only_an_earlier_proposals_comment_lines() {
    let earlier = "# verdict: reject (do not adopt): loses 2 jobs\n\
                   # --keep-categorizer: today's executor config as it is; nothing to roll out.\n\
                   # Proposed by `retryctl suggest` from 9 jobs (9 failed runs); --min-trials 5.\n\
                   # edited by bob\n\
                   errorCategories:\n  # verdict: reject (a value's comment, not the head's)\n  enabled: true\n";
    assert_eq!(
        without_suggests_head(earlier),
        "# edited by bob\nerrorCategories:\n  # verdict: reject (a value's comment, not the head's)\n  enabled: true\n"
    );
    assert_eq!(
        kept_head(1),
        "# --keep-categorizer: today's categories as they are, then 1 new category for failures none of them takes; roll it out before the policy.\n"
    );
}

#[test]
fn comments_escape_every_line_break_a_yaml_reader_knows() {
    assert_eq!(
        comment("a\nb\rc\u{85}d\u{2028}e\u{2029}f\u{1b}[Ag\u{7}é"),
        "a\\x0ab\\x0dc\\u0085d\\u2028e\\u2029f\\x1b[Ag\\x07é"
    );
}

#[test]
fn quoted_scalars_escape_everything_but_printable_ascii() {
    assert_eq!(
        quoted("a\"b\\c\nd\u{85}é😀"),
        "\"a\\\"b\\\\c\\u000Ad\\u0085\\u00E9\\U0001F600\""
    );
}

/// A learned Retry default's limit is one more in upstream's one `retryLimit`: it raises
/// it past today's where nothing blocks the raise, and is cut with the rules where a kept
/// rule would retry further; its evidence heads the policy's settings.
#[test]
fn a_learned_default_joins_the_one_retry_limit() {
    let rule = Proposed::for_test(
        "category:gpu",
        Signature::Category {
            category: "gpu".into(),
            subcategory: None,
        },
        Action::Retry,
        Some(3),
    );
    let documented = [Documented {
        rule: &rule,
        evidence: String::new(),
        mutate: None,
        place: None,
        unsplit: None,
    }];
    let settings = PolicySettings {
        name: "suggested".into(),
        default_action: Some(Action::Retry),
        retry_limit: Some(2),
        default_limit: Some(4),
        default_note: Some("(default): learned from 1 signature".into()),
        ..PolicySettings::default()
    };
    let u = upstream_documents(&settings, &documented, &[], None, None, "h", &[]);
    assert_eq!((u.policy_retry_limit, u.written_retry_limit), (Some(4), 4));
    assert_eq!(
        (u.raises.as_slice(), u.cut.as_slice()),
        (&["category:gpu".to_string()][..], &[][..])
    );
    assert!(
        u.policy
            .contains("name: suggested\n# (default): learned from 1 signature\nretryLimit: 4\ndefaultAction: Retry\n"),
        "{}",
        u.policy
    );
    let u = upstream_documents(&settings, &documented, &[], Some("today/0"), None, "h", &[]);
    assert_eq!(u.written_retry_limit, 2);
    assert_eq!(u.cut, ["category:gpu", "(default)"]);
    assert_eq!(u.cut_by.as_deref(), Some("today/0"));
}

#[test]
fn category_names_are_short_slugs_with_a_hash() {
    let rule = |text: &str, signature: Signature| Proposed::for_test(text, signature, Action::Retry, Some(1));
    let container = |exit, name: &str, template: &str| Signature::Container {
        exit,
        name: name.into(),
        init: false,
        template: template.into(),
        cut: false,
    };
    let n = short_category_name(&rule(
        "exit:139@main \"CUDA error: an illegal memory access was encountered\"",
        container(
            Some(139),
            "main",
            "CUDA error: an illegal memory access was encountered",
        ),
    ));
    assert!(n.starts_with("s-cuda-error-an-illegal-memory-access-was-"), "{n}");
    assert!(n.len() <= 2 + 40 + 1 + 8, "{n}");
    let oom = short_category_name(&rule("oom@loader", container(None, "loader", "")));
    assert!(oom.starts_with("s-oom-loader-"), "{oom}");
    let exit = short_category_name(&rule("exit:2@main", container(Some(2), "main", "")));
    assert!(exit.starts_with("s-exit-2-main-"), "{exit}");
    // With a message, the exit code is no part of the name.
    let split = short_category_name(&rule(
        "exit:4@main \"Lost connection to parameter server <n>\"",
        container(Some(4), "main", "Lost connection to parameter server <n>"),
    ));
    assert!(split.starts_with("s-lost-connection-to-parameter-server-n-"), "{split}");
    assert_ne!(
        short_category_name(&rule("oom@a", container(None, "a", ""))),
        short_category_name(&rule("oom@A", container(None, "A", "")))
    );
}

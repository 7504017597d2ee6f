//! Where each proposed rule goes among today's Armada's categories ([`Placement`]): a
//! deployed category reused, joined, split by exit code, or a new one; and the one
//! `retryLimit` the rules share ([`Limits`]).
//!
//! Owns: those decisions. Must not: write text (that is `written`).

use crate::model::policy::Action;
use crate::model::signature::Signature;
use crate::suggest::today::Place;

use super::categories::{matcher, short_category_name, Matcher, NewCategory};
use super::rules::{Documented, PolicySettings};
use super::upstream::{deployed_rule, Merged, PolicyRule};

/// Where the proposed rules go upstream ([`Placement::of`]): the new categories and the
/// v1beta1 rules that match them, in the order they are written.
pub(super) struct Placement {
    /// The new categories (those of one signature's exit code first).
    pub(super) categories: Vec<NewCategory>,
    /// The policy's own rules.
    pub(super) policy_rules: Vec<PolicyRule>,
    /// Per proposed rule that has one: the index of the v1beta1 rule that decides it.
    pub(super) rule_index: Vec<usize>,
    /// Deployed categories made `Delete`.
    pub(super) delete_existing: Vec<String>,
    /// New categories holding signatures whose proposals differ.
    pub(super) merged: Vec<Merged>,
}

impl Placement {
    /// Each of `rules` on its category, in order. Deployed categories whose kept pods today's
    /// retries collide with (`collide`: no trial of theirs ever ran) are deleted so that
    /// they can.
    pub(super) fn of(
        rules: &[Documented<'_>],
        deployed: Option<&crate::model::categorizer::ErrorCategories>,
        collide: &[String],
    ) -> Placement {
        let mut placed = Placement {
            categories: Vec::new(),
            policy_rules: Vec::new(),
            rule_index: Vec::with_capacity(rules.len()),
            delete_existing: collide.to_vec(),
            merged: Vec::new(),
        };
        for d in rules {
            placed.place(d, deployed);
        }
        placed.say_why_unsplit(rules);
        placed
    }

    /// One proposed rule: on the deployed category its signature has (or reuses), on the
    /// new category of its matcher that another signature made, or on a category of its own.
    fn place(&mut self, d: &Documented<'_>, deployed: Option<&crate::model::categorizer::ErrorCategories>) {
        let r = d.rule;
        let reuse = match (&r.signature, &d.place) {
            (Signature::Category { category, subcategory }, _) => Some((category.clone(), subcategory.clone())),
            (_, Some(Place::Reuse { category, subcategory })) => Some((category.clone(), subcategory.clone())),
            _ => None,
        };
        // A signature whose exit code is its alone: a category of that code in its container.
        let exit = match &d.place {
            Some(Place::Exit { container, code, .. }) => Some(Matcher::ExitCode {
                container: container.clone(),
                code: *code,
            }),
            _ => None,
        };
        let (category, sub) = match (reuse, exit.clone().or_else(|| matcher(r))) {
            (Some((category, subcategory)), _) => match self.reuse(d, category, subcategory) {
                Some(own) => own,
                None => return,
            },
            (None, Some(m)) => match self.categories.iter().position(|c| c.matcher == m) {
                Some(at) => return self.join(d, at),
                None => (self.new_category(d, m, exit.is_some(), deployed), None),
            },
            // `propose` gives no rule to signatures without a matcher.
            (None, None) => return,
        };
        self.rule_index.push(self.policy_rules.len());
        self.policy_rules.push((
            vec![format!("{}: {}", r.text, d.evidence)],
            r.action,
            category,
            sub,
            d.mutate(),
        ));
    }

    /// A rule on a deployed category (made `Delete` for a Retry rule): its category and
    /// subcategory, or `None` when a rule of the same action on it takes the signature
    /// already (signatures proposing alike on one deployed category share its rule).
    fn reuse(
        &mut self,
        d: &Documented<'_>,
        category: String,
        subcategory: Option<String>,
    ) -> Option<(String, Option<String>)> {
        let r = d.rule;
        if r.action == Action::Retry && !self.delete_existing.contains(&category) {
            self.delete_existing.push(category.clone());
        }
        if let Some(at) = self
            .policy_rules
            .iter()
            .position(|p| p.2 == category && p.3 == subcategory && p.1 == r.action)
        {
            self.policy_rules[at].0.push(format!("{}: {}", r.text, d.evidence));
            self.rule_index.push(at);
            return None;
        }
        Some((category, subcategory))
    }

    /// A rule whose matcher new category `at` has already: the signature joins it and its
    /// rule.
    fn join(&mut self, d: &Documented<'_>, at: usize) {
        let r = d.rule;
        let retry = r.action == Action::Retry;
        let c = &mut self.categories[at];
        c.signatures.push(r.text.clone());
        c.delete |= retry;
        let at = self
            .policy_rules
            .iter()
            .position(|p| p.2 == c.name && p.3.is_none())
            .expect("a category's rule is made with it");
        self.policy_rules[at].0.push(format!("{}: {}", r.text, d.evidence));
        // One matcher for signatures whose proposals differ (a message with two
        // exit codes: a rule has one matcher): no category tells them apart, so
        // the one they share takes the decision that loses no job, Retry (the one
        // `retryLimit` is every Retry rule's), with the Retry signature's mutate.
        if self.policy_rules[at].1 != r.action {
            if retry {
                self.policy_rules[at].1 = Action::Retry;
                self.policy_rules[at].4 = d.mutate();
            }
            match self.merged.iter_mut().find(|g: &&mut Merged| g.category == c.name) {
                Some(g) => g.signatures.push(r.text.clone()),
                None => self.merged.push(Merged {
                    category: c.name.clone(),
                    signatures: c.signatures.clone(),
                    unsplit: Vec::new(),
                }),
            }
        } else if let Some(g) = self.merged.iter_mut().find(|g| g.category == c.name) {
            g.signatures.push(r.text.clone());
        }
        self.rule_index.push(at);
    }

    /// A new category of matcher `m` for the rule (`exit`: of its signature's exit code,
    /// written before the message's category, which would take its runs first), with the
    /// subcategory and hint of the deployed rule it splits; its name.
    fn new_category(
        &mut self,
        d: &Documented<'_>,
        m: Matcher,
        exit: bool,
        deployed: Option<&crate::model::categorizer::ErrorCategories>,
    ) -> String {
        let r = d.rule;
        let name = short_category_name(r);
        let of = match &d.place {
            Some(Place::Split { of } | Place::Exit { of, .. }) => of.clone(),
            _ => None,
        };
        let (subcategory, hint) = of
            .as_ref()
            .and_then(|(c, s)| deployed_rule(deployed, c, s.as_deref()))
            .map_or((None, None), |r| {
                (
                    (!r.subcategory.is_empty()).then(|| r.subcategory.clone()),
                    (!r.hint.is_empty()).then(|| r.hint.clone()),
                )
            });
        // Before the message's category, which would take its runs first.
        let at = if exit {
            self.categories.iter().take_while(|c| c.exit_split).count()
        } else {
            self.categories.len()
        };
        self.categories.insert(
            at,
            NewCategory {
                exit_split: exit,
                name: name.clone(),
                delete: r.action == Action::Retry,
                matcher: m,
                splits: of.map(|(c, s)| match s {
                    Some(s) => format!("{c}/{s}"),
                    None => c,
                }),
                subcategory,
                hint,
                signatures: vec![r.text.clone()],
            },
        );
        name
    }

    /// Each merged category's signatures that say why no `onExitCodes` rule splits them.
    fn say_why_unsplit(&mut self, rules: &[Documented<'_>]) {
        for g in &mut self.merged {
            g.unsplit = g
                .signatures
                .iter()
                .filter_map(|s| {
                    let d = rules.iter().find(|d| d.rule.text == *s)?;
                    Some((s.clone(), d.unsplit.clone()?))
                })
                .collect();
        }
    }
}

/// The policy's one `retryLimit`, and the Retry signatures whose own limit it raises or
/// cuts (the fields of [`Upstream`](super::Upstream) of the same names).
pub(super) struct Limits {
    pub(super) policy_retry_limit: Option<u32>,
    pub(super) written_retry_limit: u32,
    pub(super) raises: Vec<String>,
    pub(super) cut: Vec<String>,
    pub(super) cut_by: Option<String>,
}

impl Limits {
    pub(super) fn of(settings: &PolicySettings, rules: &[Documented<'_>], raise_blocked: Option<&str>) -> Limits {
        let policy_retry_limit = rules
            .iter()
            .filter_map(|d| d.rule.limit)
            .chain(settings.default_limit)
            .max();
        // Today's limit, raised to the proposal's only where no rule of today's would retry
        // further for it.
        let (written_retry_limit, cut_by) = match (policy_retry_limit, settings.retry_limit) {
            (Some(l), Some(today)) if l > today => match raise_blocked {
                Some(by) => (today, Some(by.to_string())),
                None => (l, None),
            },
            (l, today) => (today.or(l).unwrap_or(0), None),
        };
        // The learned default's limit is one more (docs/reference/suggest.md "The policy's
        // defaults").
        let limits = || {
            rules
                .iter()
                .map(|d| (d.rule.limit, d.rule.text.as_str()))
                .chain(std::iter::once((
                    settings.default_limit,
                    crate::suggest::propose::DEFAULT,
                )))
        };
        let raises = limits()
            .filter(|(l, _)| l.is_some_and(|l| l < written_retry_limit))
            .map(|(_, t)| t.to_string())
            .collect();
        let cut = limits()
            .filter(|(l, _)| l.is_some_and(|l| l > written_retry_limit))
            .map(|(_, t)| t.to_string())
            .collect();
        Limits {
            policy_retry_limit,
            written_retry_limit,
            raises,
            cut,
            cut_by,
        }
    }
}

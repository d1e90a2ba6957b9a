//! The open differences of docs/validation.md, read from open.toml beside
//! this file: figures outside tolerance that no measured setting has
//! brought within it yet, each with what is known of it. They stay
//! unexplained (validate fails on them); an entry that matches no
//! unexplained figure of a run that checked its policy and experiment is
//! stale, and an error.

use serde::Deserialize;
use std::sync::OnceLock;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    open: Vec<Entry>,
}

/// One difference and the figures it is seen in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    figures: Vec<Open>,
    known: String,
}

/// A figure of one policy in one experiment, by its key exactly
/// (`switches`, `share:hog`, `run:child`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Open {
    pub(super) policy: String,
    pub(super) experiment: String,
    pub(super) figure: String,
}

fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        // Compiled in and checked by a test: a malformed file never ships.
        toml::from_str::<File>(include_str!("open.toml")).expect("open.toml is checked by its test").open
    })
}

/// Every open figure.
pub(super) fn all() -> impl Iterator<Item = &'static Open> {
    entries().iter().flat_map(|e| &e.figures)
}

/// What is known of `policy`'s figure `key` in experiment `exp`, if it is open.
pub(super) fn note(policy: &str, exp: &str, key: &str) -> Option<&'static str> {
    entries()
        .iter()
        .find(|e| e.figures.iter().any(|o| o.policy == policy && o.experiment == exp && o.figure == key))
        .map(|e| e.known.as_str())
}

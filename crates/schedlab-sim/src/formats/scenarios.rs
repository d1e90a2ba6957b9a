//! The built-in scenarios (scenarios/*.toml), compiled into the binary so
//! `schedlab compare thread-test` works from anywhere.

pub const SCENARIOS: &[(&str, &str)] = &[
    ("thread-test", include_str!("../../../../scenarios/thread-test.toml")),
    ("smp-fairness", include_str!("../../../../scenarios/smp-fairness.toml")),
    ("jitter-under-load", include_str!("../../../../scenarios/jitter-under-load.toml")),
    ("lat-ctx", include_str!("../../../../scenarios/lat-ctx.toml")),
    ("group-isolation", include_str!("../../../../scenarios/group-isolation.toml")),
    ("group-isolation-flat", include_str!("../../../../scenarios/group-isolation-flat.toml")),
    ("container-quota", include_str!("../../../../scenarios/container-quota.toml")),
    ("mixed-64", include_str!("../../../../scenarios/mixed-64.toml")),
    ("make-j", include_str!("../../../../scenarios/make-j.toml")),
    ("encoder", include_str!("../../../../scenarios/encoder.toml")),
    ("nice-hog", include_str!("../../../../scenarios/nice-hog.toml")),
    ("nice-ladder", include_str!("../../../../scenarios/nice-ladder.toml")),
    ("nice-sleepers", include_str!("../../../../scenarios/nice-sleepers.toml")),
    ("sleeper-hog", include_str!("../../../../scenarios/sleeper-hog.toml")),
    ("yield-hog", include_str!("../../../../scenarios/yield-hog.toml")),
    ("wakeup-preemption", include_str!("../../../../scenarios/wakeup-preemption.toml")),
    ("fork-burst", include_str!("../../../../scenarios/fork-burst.toml")),
    ("cgroup-split", include_str!("../../../../scenarios/cgroup-split.toml")),
];

pub fn builtin(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// First line of a scenario's description, for `schedlab list`.
pub fn summary(text: &str) -> String {
    let desc = text.split("description = \"\"\"").nth(1).and_then(|d| d.split("\"\"\"").next()).unwrap_or("");
    let flat: String = desc.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.find(". ") {
        Some(i) => flat[..=i].to_string(),
        None => flat,
    }
}

//! "Did you mean": the nearest of the names a command knows to one it was
//! given (a scheduler, a scenario, a tunable), for its error message.

/// The choice nearest to `given`: one it begins (`base_slice` for
/// `base_slice_ns`), or one within an edit or two (a transposition counts
/// one: `eevfd` for `eevdf`), scaled to the name's length.
pub fn nearest<'a>(given: &str, choices: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let given_lower = given.to_ascii_lowercase();
    let limit = (given.chars().count() / 4).clamp(1, 3);
    choices
        .into_iter()
        .filter(|c| !c.is_empty() && *c != given)
        .filter_map(|c| {
            let lower = c.to_ascii_lowercase();
            let d = if lower == given_lower {
                0
            } else if given.len() >= 3 && lower.starts_with(&given_lower) {
                1
            } else {
                strsim::osa_distance(&given_lower, &lower)
            };
            (d <= limit).then_some((d, c))
        })
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// " (did you mean 'X'?)" when a choice is near `given`, else "".
pub fn did_you_mean<'a>(given: &str, choices: impl IntoIterator<Item = &'a str>) -> String {
    nearest(given, choices).map_or(String::new(), |c| format!(" (did you mean '{c}'?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_the_name_and_a_stranger_finds_none() {
        let scheds = ["cfs", "eevdf", "bore", "bmq", "pds", "muqss"];
        assert_eq!(nearest("eevfd", scheds), Some("eevdf"));
        assert_eq!(nearest("EEVDF", scheds), Some("eevdf"));
        assert_eq!(nearest("smp-fairnes", ["smp-fairness", "sleeper-hog"]), Some("smp-fairness"));
        assert_eq!(nearest("base_slice", ["base_slice_ns", "sched_rr_timeslice_ms"]), Some("base_slice_ns"));
        assert_eq!(nearest("linux", scheds), None);
        assert_eq!(nearest("cfs", scheds), None, "the name itself is no suggestion");
        assert_eq!(did_you_mean("bfq", scheds), " (did you mean 'bmq'?)");
    }
}

//! The open differences of docs/validation.md, read from open.toml beside
//! this file: figures outside tolerance that no measured setting has
//! brought within it yet, each with what is known of it and the values it
//! was measured at (the band). They stay unexplained on the page; validate
//! passes over one only while its figures stay in their band, so a model
//! or a kernel that moves an open figure is caught as surely as a new
//! flag. An entry that matches no unexplained figure of a run that checked
//! its policy and experiment is stale, and an error.

use super::judge::{Figure, Verdict, judge, show};
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
/// (`switches`, `share:hog`, `run:child`), and its band: where the
/// simulation with the default costs (`sim`), the one with the guest's
/// (`guest`) and the real runs (`real`) put it when the difference was
/// measured, by whom (`measured`). Each is a value (the figure stays
/// within its own tolerance of it) or a `[low, high]` range (for a real
/// figure whose boots disagree), in the figure's units (ns, /s, %).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Open {
    pub(super) policy: String,
    pub(super) experiment: String,
    pub(super) figure: String,
    #[serde(default)]
    sim: Option<Band>,
    #[serde(default)]
    guest: Option<Band>,
    #[serde(default)]
    real: Option<Band>,
    #[serde(default)]
    pub(super) measured: Option<String>,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(untagged)]
enum Band {
    Value(f64),
    Range([f64; 2]),
}

impl Open {
    /// Why the figure (its simulated, re-simulated and real medians) is
    /// not where this entry measured it, if it is not; `secs` is the
    /// length of a run, for a rate's counting noise.
    pub(super) fn band_miss(
        &self,
        sim: Option<&Figure>,
        guest: Option<&Figure>,
        real: Option<&Figure>,
        secs: f64,
    ) -> Option<String> {
        let sides =
            [("simulated", self.sim, sim), ("with the guest's costs", self.guest, guest), ("real", self.real, real)];
        if sides.iter().all(|(_, band, _)| band.is_none()) {
            return Some("no band recorded".into());
        }
        let mut misses = Vec::new();
        for (side, band, now) in sides {
            let (Some(band), Some(now)) = (band, now) else { continue };
            let inside = match band {
                Band::Value(v) => {
                    let then = Figure { value: v, ..now.clone() };
                    judge(now.kind, Some(now), Some(&then), secs).1 != Verdict::Outside
                }
                Band::Range([lo, hi]) => (lo..=hi).contains(&now.value),
            };
            if !inside {
                let was = match band {
                    Band::Value(v) => show(now.kind, v),
                    Band::Range([lo, hi]) => format!("{}-{}", show(now.kind, lo), show(now.kind, hi)),
                };
                misses.push(format!("{side} {} where it was {was}", show(now.kind, now.value)));
            }
        }
        let by = self.measured.as_ref().map(|m| format!(" (measured by {m})")).unwrap_or_default();
        (!misses.is_empty()).then(|| format!("out of its band{by}: {}", misses.join(", ")))
    }
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

/// What is known of `policy`'s figure `key` in experiment `exp`, and its
/// entry, if it is open.
pub(super) fn find(policy: &str, exp: &str, key: &str) -> Option<(&'static str, &'static Open)> {
    entries().iter().find_map(|e| {
        let o = e.figures.iter().find(|o| o.policy == policy && o.experiment == exp && o.figure == key)?;
        Some((e.known.as_str(), o))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::validate::judge::{Kind, fig};

    fn open(text: &str) -> Open {
        toml::from_str(&format!("policy = \"bmq\"\nexperiment = \"e\"\nfigure = \"k\"\n{text}")).unwrap()
    }

    #[test]
    fn an_open_figure_holds_while_it_stays_where_it_was_measured() {
        let o = open("sim = 500\nguest = 480.0\nreal = [150.0, 330.0]\nmeasured = \"0.1.0 (abc)\"");
        let (sim, guest, real) = (fig(Kind::Rate, 520.0), fig(Kind::Rate, 470.0), fig(Kind::Rate, 300.0));
        assert_eq!(o.band_miss(Some(&sim), Some(&guest), Some(&real), 3.0), None);
        // The model moved by more than a rate's 10%.
        let moved = fig(Kind::Rate, 600.0);
        assert_eq!(
            o.band_miss(Some(&moved), Some(&guest), Some(&real), 3.0).unwrap(),
            "out of its band (measured by 0.1.0 (abc)): simulated 600 where it was 500"
        );
        // The kernel left its range.
        let real = fig(Kind::Rate, 400.0);
        assert!(
            o.band_miss(Some(&sim), Some(&guest), Some(&real), 3.0).unwrap().contains("real 400 where it was 150-330")
        );
        // An entry without a band holds nothing.
        assert_eq!(open("").band_miss(Some(&sim), None, None, 3.0).unwrap(), "no band recorded");
    }
}

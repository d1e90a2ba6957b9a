//! Which model matches which kernel: every model judged against every
//! kernel's real runs with the page's tolerances. A model that matches its
//! own kernel no better than another model does says nothing about its
//! scheduler, and most figures (a 1/N share, a tick-long run, a sleeper
//! getting what it asks for) every scheduler gets right. A kernel's
//! *discriminating* figures are those where another kernel's real runs are
//! outside its tolerance: the figures that tell the schedulers apart, and
//! the ones the matrix counts apart.
//!
//! Used by the experiments' page and by the presets' section (`--tools`);
//! each gives its kernels' real figures and how a row is simulated on a
//! model with the default costs and with that kernel's.

use super::*;
use std::fmt::Write;

/// One kernel's real rows as the matrix reads them.
pub(super) struct KernelRows<'a> {
    pub(super) name: &'static str,
    pub(super) rows: Vec<RealRow<'a>>,
}

pub(super) struct RealRow<'a> {
    /// The experiment (or check): rows of two kernels with the same id are
    /// the same runs, compared figure by figure.
    pub(super) id: &'a str,
    pub(super) real: &'a [Figure],
    /// Seconds of a run, for the counting noise of a rate.
    pub(super) secs: f64,
}

pub(super) struct Matrix {
    /// The policies, as models and as kernels, in order.
    pub(super) names: Vec<&'static str>,
    /// Per kernel: all of its real figures, "id figure".
    pub(super) figures: Vec<Vec<String>>,
    /// [model][kernel][figure of the kernel]: whether the model's figure is
    /// within or explained (None: not compared).
    agree: Vec<Vec<Vec<Option<bool>>>>,
    /// [kernel][other kernel][figure of the kernel]: whether the other
    /// kernel's real figure is outside this kernel's tolerance.
    differs: Vec<Vec<Vec<bool>>>,
}

/// Whether a kernel's real figure `f` tells it apart: another kernel's
/// real figure is outside its tolerance (or that kernel lacks it).
pub(super) fn discriminates(f: &Figure, theirs: Option<&Figure>, secs: f64) -> bool {
    judge(f.kind, theirs, Some(f), secs).1 == Verdict::Outside
}

fn agrees(o: Outcome) -> Option<bool> {
    match o {
        Outcome::Within | Outcome::Explained => Some(true),
        Outcome::Unexplained => Some(false),
        Outcome::NotCompared => None,
    }
}

/// Kernel `k`'s own model against model `m` on the figures where kernels
/// `k` and `m` differ and both models' figures are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Duel {
    pub(super) figures: usize,
    pub(super) own: usize,
    pub(super) other: usize,
}

impl Matrix {
    /// The matrix of `kernels`; `simulate(model, kernel, row)` gives that
    /// row simulated on `model` with the default costs and with the
    /// kernel's (the figures its verdicts are taken from).
    pub(super) fn new<F>(kernels: &[KernelRows], simulate: F) -> Result<Matrix>
    where
        F: Fn(&'static str, usize, usize) -> Result<(Vec<Figure>, Vec<Figure>)> + Sync,
    {
        let names: Vec<&'static str> = kernels.iter().map(|k| k.name).collect();
        let figures: Vec<Vec<String>> = kernels
            .iter()
            .map(|k| k.rows.iter().flat_map(|r| r.real.iter().map(|f| format!("{} {}", r.id, f.key))).collect())
            .collect();
        let differs = kernels
            .iter()
            .map(|kernel| {
                kernels
                    .iter()
                    .map(|other| {
                        let real = |id: &str, key: &str| {
                            other.rows.iter().find(|r| r.id == id)?.real.iter().find(|x| x.key == key)
                        };
                        kernel
                            .rows
                            .iter()
                            .flat_map(|row| row.real.iter().map(move |f| (row, f)))
                            .map(|(row, f)| discriminates(f, real(row.id, &f.key), row.secs))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let pairs: Vec<(usize, usize)> = (0..names.len()).flat_map(|m| (0..names.len()).map(move |k| (m, k))).collect();
        let computed: Vec<Vec<Option<bool>>> = pairs
            .par_iter()
            .map(|&(m, k)| {
                let mut out = Vec::new();
                for (r, row) in kernels[k].rows.iter().enumerate() {
                    let (sim, guest) = simulate(names[m], k, r)?;
                    out.extend(row.real.iter().map(|f| agrees(outcome_of(&sim, &guest, row.real, row.secs, &f.key))));
                }
                Ok(out)
            })
            .collect::<Result<_>>()?;
        let mut agree = vec![vec![Vec::new(); names.len()]; names.len()];
        for (&(m, k), a) in pairs.iter().zip(computed) {
            agree[m][k] = a;
        }
        Ok(Matrix { names, figures, agree, differs })
    }

    /// Kernel `k`'s discriminating figures: those some other kernel
    /// differs on.
    pub(super) fn discriminating(&self, k: usize) -> Vec<bool> {
        (0..self.figures[k].len()).map(|i| (0..self.names.len()).any(|o| o != k && self.differs[k][o][i])).collect()
    }

    /// Model `m`'s figures on kernel `k` that agree, of those compared,
    /// among the figures `among` marks.
    fn count(&self, m: usize, k: usize, among: &[bool]) -> (usize, usize) {
        let marked = self.agree[m][k].iter().zip(among).filter(|&(_, &d)| d).filter_map(|(a, _)| *a);
        marked.fold((0, 0), |(ok, n), a| (ok + a as usize, n + 1))
    }

    /// Kernel `k`'s own model against model `m` (m != k) on what tells
    /// kernels `k` and `m` apart: a model that follows its scheduler must
    /// get those figures of its kernel, and the other model, if it follows
    /// its own, cannot.
    pub(super) fn duel(&self, k: usize, m: usize) -> Duel {
        let mut d = Duel { figures: 0, own: 0, other: 0 };
        for (i, &differs) in self.differs[k][m].iter().enumerate() {
            if let (true, Some(own), Some(other)) = (differs, self.agree[k][k][i], self.agree[m][k][i]) {
                d.figures += 1;
                d.own += own as usize;
                d.other += other as usize;
            }
        }
        d
    }

    /// The other model closest to kernel `k`'s own: the smallest lead of
    /// the own model on the figures that tell the two kernels apart.
    fn closest(&self, k: usize) -> Option<(usize, Duel)> {
        (0..self.names.len())
            .filter(|&m| m != k)
            .map(|m| (m, self.duel(k, m)))
            .min_by_key(|(_, d)| (d.own as i64 - d.other as i64, std::cmp::Reverse(d.figures)))
    }

    /// The kernels another model matches better than their own on the
    /// figures that tell those two kernels apart.
    pub(super) fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (k, name) in self.names.iter().enumerate() {
            for (m, other) in self.names.iter().enumerate() {
                let d = self.duel(k, m);
                if m != k && d.other > d.own {
                    out.push(format!(
                        "{name}'s kernel: of the {} figures where it differs from {other}'s kernel, the {other} model \
                         matches {}, its own {}",
                        d.figures, d.other, d.own
                    ));
                }
            }
        }
        out
    }

    /// The matrix as Markdown under `heading`, after `intro`: a row per
    /// model, a column per kernel, then each kernel's headline.
    pub(super) fn text(&self, heading: &str, intro: &str) -> String {
        let mut t = format!("\n{heading}\n\n{intro}\n\n| model \\ kernel |");
        for n in &self.names {
            let _ = write!(t, " {n} |");
        }
        t.push_str("\n|---|");
        t.push_str(&"---:|".repeat(self.names.len()));
        t.push('\n');
        for (m, model) in self.names.iter().enumerate() {
            let _ = write!(t, "| {model} |");
            for k in 0..self.names.len() {
                let (a, n) = self.count(m, k, &vec![true; self.figures[k].len()]);
                if m == k {
                    let (da, dn) = self.count(m, k, &self.discriminating(k));
                    let _ = write!(t, " **{a}/{n} ({da}/{dn})** |");
                } else {
                    let (da, dn) = self.count(m, k, &self.differs[k][m]);
                    let _ = write!(t, " {a}/{n} ({da}/{dn}) |");
                }
            }
            t.push('\n');
        }
        t.push_str(
            "\n| kernel | own model, discriminating | closest other model | own against it | margin | \
             discriminating figures |\n|---|---:|---|---:|---:|---|\n",
        );
        for (k, name) in self.names.iter().enumerate() {
            let disc = self.discriminating(k);
            let (a, n) = self.count(k, k, &disc);
            // The lead the own model should have: a quarter of the figures
            // that tell the two kernels apart.
            let (closest, duel, margin) = match self.closest(k) {
                Some((m, d)) => {
                    let lead = d.own as i64 - d.other as i64;
                    let short = if lead * 4 < d.figures as i64 { " (under a quarter)" } else { "" };
                    (
                        self.names[m],
                        format!("{}/{} against {}/{}", d.own, d.figures, d.other, d.figures),
                        format!("{lead:+}{short}"),
                    )
                }
                None => ("-", "-".into(), "-".into()),
            };
            let listed: Vec<String> =
                self.figures[k].iter().zip(&disc).filter(|&(_, &d)| d).map(|(f, _)| f.clone()).collect();
            let _ = writeln!(
                t,
                "| {name} | {a}/{n} | {closest} | {duel} | {margin} | {} |",
                discriminating_text(&listed, &self.figures[k])
            );
        }
        t
    }
}

/// A kernel's discriminating figures among all of its figures, named by
/// the shorter list.
pub(super) fn discriminating_text(disc: &[String], all: &[String]) -> String {
    let rest: Vec<&str> = all.iter().filter(|f| !disc.contains(f)).map(String::as_str).collect();
    match (disc.len(), rest.len()) {
        (0, _) => "none".into(),
        (n, 0) => format!("all {n}"),
        (n, r) if r < n => format!("{n} of {}, all but {}", all.len(), rest.join(", ")),
        (n, _) => format!("{n} of {}: {}", all.len(), disc.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(key: &str, value: f64) -> Figure {
        Figure { key: key.into(), ..rate(value) }
    }

    fn rate(value: f64) -> Figure {
        Figure { key: "switches".into(), label: "switches/s".into(), ..fig(Kind::Rate, value) }
    }

    #[test]
    fn a_figure_discriminates_where_another_kernel_is_outside_its_tolerance() {
        // 1000/s against 1050/s: within 10%, alike; 1500/s tells it
        // apart, and so does a kernel that lacks the figure.
        assert!(!discriminates(&rate(1000.0), Some(&rate(1050.0)), 3.0));
        assert!(discriminates(&rate(1000.0), Some(&rate(1500.0)), 3.0));
        assert!(discriminates(&rate(1000.0), None, 3.0));
    }

    #[test]
    fn each_model_is_judged_on_what_tells_its_kernel_from_each_other() {
        // Kernels a and b differ on x (1000/s against 2000/s), agree on y.
        let (ra, rb) = ([rate(1000.0), named("y", 50.0)], [rate(2000.0), named("y", 50.0)]);
        let kernels = [
            KernelRows { name: "a", rows: vec![RealRow { id: "x", real: &ra, secs: 3.0 }] },
            KernelRows { name: "b", rows: vec![RealRow { id: "x", real: &rb, secs: 3.0 }] },
        ];
        // Model a makes 1000/s, model b 1900/s; both get y.
        let m = Matrix::new(&kernels, |model, _, _| {
            let v = if model == "a" { 1000.0 } else { 1900.0 };
            Ok((vec![rate(v), named("y", 50.0)], vec![rate(v), named("y", 50.0)]))
        })
        .unwrap();
        assert_eq!(m.discriminating(0), [true, false]);
        assert_eq!(m.duel(0, 1), Duel { figures: 1, own: 1, other: 0 });
        assert_eq!(m.duel(1, 0), Duel { figures: 1, own: 1, other: 0 });
        assert!(m.failures().is_empty());
        let text = m.text("### M", "intro");
        assert!(text.starts_with("\n### M\n\nintro\n\n| model \\ kernel | a | b |"), "{text}");
        assert!(text.contains("| a | **2/2 (1/1)** | 1/2 (0/1) |"), "{text}");
        assert!(text.contains("| a | 1/1 | b | 1/1 against 0/1 | +1 | 1 of 2: x switches |"), "{text}");
        // The models swapped: each kernel is matched by the other's model.
        let m = Matrix::new(&kernels, |model, _, _| {
            let v = if model == "a" { 2000.0 } else { 1000.0 };
            Ok((vec![rate(v), named("y", 50.0)], vec![rate(v), named("y", 50.0)]))
        })
        .unwrap();
        assert_eq!(
            m.failures(),
            [
                "a's kernel: of the 1 figures where it differs from b's kernel, the b model matches 1, its own 0",
                "b's kernel: of the 1 figures where it differs from a's kernel, the a model matches 1, its own 0"
            ]
        );
        let all: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(discriminating_text(&all[..2], &all), "2 of 3, all but c");
        assert_eq!(discriminating_text(&all, &all), "all 3");
    }
}

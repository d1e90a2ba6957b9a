//! A grid of runs over a workload, as `schedlab sweep --vary` and the
//! Python package's `sweep` both take it: which parameter a name varies
//! (cpus, seed, duration, a \[params\] entry, `tasks`, else a tunable), the
//! `1,2,4,...,4096` value syntax, and every combination in one order (the
//! first axis outermost), so that any backend runs the same rows.

use crate::Overrides;
use crate::time::parse_duration;

/// What a `--vary NAME=...` changes.
#[derive(Clone, Debug, PartialEq)]
pub enum Dim {
    Cpus,
    Seed,
    Duration,
    /// A \[params\] entry of the workload.
    Param(String),
    /// A scheduler tunable, as `--set` takes it.
    Tunable(String),
}

/// One varied parameter: the name the user gave, what it changes, values.
#[derive(Clone, Debug)]
pub struct Axis {
    pub name: String,
    pub dim: Dim,
    pub values: Vec<i64>,
}

/// Values as `1,2,4,...,4096` (geometric when the first two have a whole
/// ratio that lands on the end, else arithmetic) or a plain list;
/// durations may carry units (`1ms,2ms`).
pub fn parse_values(name: &str, text: &str) -> Result<Vec<i64>, String> {
    parse_series(name, text, true)
}

/// As [`parse_values`]; a `...` series is arithmetic only unless
/// `geometric` (seeds are labels, not magnitudes: `seed=1,2,...,64` is 64
/// seeds).
pub fn parse_series(name: &str, text: &str, geometric: bool) -> Result<Vec<i64>, String> {
    let parse_one = |v: &str| -> Result<i64, String> {
        let v = v.trim();
        if v.ends_with('s') {
            return parse_duration(v).map(|ns| ns as i64).map_err(|e| format!("--vary {name}: {e}"));
        }
        v.parse::<i64>().map_err(|_| format!("--vary {name}: '{v}' is not an integer"))
    };
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        if parts[i] == "..." {
            let (&[.., a, b], Some(end)) = (out.as_slice(), parts.get(i + 1)) else {
                return Err(format!(
                    "--vary {name}: '...' needs two values before it and one after, e.g. 1,2,4,...,4096"
                ));
            };
            let end = parse_one(end)?;
            if a == b {
                return Err(format!("--vary {name}: '...' needs two different values before it"));
            }
            // The values after b that `next` makes, up to the end.
            let series = |next: &dyn Fn(i64) -> Option<i64>| -> Result<Vec<i64>, String> {
                let mut vals = Vec::new();
                let mut v = b;
                while let Some(n) = next(v).filter(|n| if b > a { *n <= end } else { *n >= end }) {
                    if vals.len() == 100_000 {
                        return Err(format!("--vary {name}: '{text}' makes more than 100,000 values"));
                    }
                    vals.push(n);
                    v = n;
                }
                Ok(vals)
            };
            // Geometric when the ratio is whole and the series lands on the
            // end (1,2,4,...,4096), else arithmetic (10,20,...,50).
            let geometric = (geometric && a > 0 && b > a && b % a == 0)
                .then(|| series(&|v| v.checked_mul(b / a)))
                .transpose()?
                .filter(|vals| vals.last() == Some(&end));
            let more = match geometric {
                Some(vals) => vals,
                None => series(&|v| v.checked_add(b - a))?,
            };
            if more.last() != Some(&end) && b != end {
                return Err(format!("--vary {name}: the series {a},{b},... does not reach {end}"));
            }
            out.extend(more);
            i += 2;
        } else {
            out.push(parse_one(parts[i])?);
            i += 1;
        }
    }
    if out.is_empty() {
        return Err(format!("--vary {name}: no values"));
    }
    Ok(out)
}

/// Reads `NAME=VALUES` against the workload: cpus, seed, duration, one of
/// its \[params\], `tasks` for its only task-count parameter, or else a
/// scheduler tunable.
pub fn parse_axis(spec: &str, params: &[String], count_params: &[String]) -> Result<Axis, String> {
    let Some((name, values)) = spec.split_once('=') else {
        return Err(format!("--vary '{spec}' is not NAME=VALUES, e.g. --vary threads=1,2,4,...,4096"));
    };
    let name = name.trim();
    let dim = match name {
        "cpus" => Dim::Cpus,
        "seed" => Dim::Seed,
        "duration" => Dim::Duration,
        p if params.iter().any(|x| x == p) => Dim::Param(p.to_string()),
        "tasks" => match count_params {
            [one] => Dim::Param(one.clone()),
            [] => {
                return Err(
                    "--vary tasks: no [[task]] of this workload takes its count from a [params] entry".to_string()
                );
            }
            many => {
                return Err(format!(
                    "--vary tasks: the workload has several task-count parameters ({}); name one",
                    many.join(", ")
                ));
            }
        },
        t => Dim::Tunable(t.to_string()),
    };
    let values = parse_series(name, values, dim != Dim::Seed)?;
    if matches!(dim, Dim::Cpus | Dim::Duration) && values.iter().any(|v| *v <= 0) {
        return Err(format!("--vary {name}: values must be above zero"));
    }
    Ok(Axis { name: name.to_string(), dim, values })
}

pub fn apply(ov: &mut Overrides, dim: &Dim, v: i64) {
    match dim {
        Dim::Cpus => ov.cpus = Some(v as u32),
        Dim::Seed => ov.seed = Some(v as u64),
        Dim::Duration => ov.duration = Some(v as u64),
        Dim::Param(p) => {
            ov.params.insert(p.clone(), v);
        }
        Dim::Tunable(t) => {
            ov.tunables.insert(t.clone(), v);
        }
    }
}

/// Every combination of the axes' values, row-major (the first axis
/// outermost).
pub fn combinations(axes: &[Axis]) -> Vec<Vec<i64>> {
    let mut grid: Vec<Vec<i64>> = vec![Vec::new()];
    for a in axes {
        grid = grid.into_iter().flat_map(|g| a.values.iter().map(move |v| [g.clone(), vec![*v]].concat())).collect();
    }
    grid
}

/// `base` with the axes set to `values`.
pub fn overrides_at(base: &Overrides, axes: &[Axis], values: &[i64]) -> Overrides {
    let mut ov = base.clone();
    for (a, v) in axes.iter().zip(values) {
        apply(&mut ov, &a.dim, *v);
    }
    ov
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_lists_expand_geometric_and_arithmetic_series() {
        assert_eq!(parse_values("t", "1,2,4,...,64").unwrap(), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(parse_values("t", "10,20,...,50").unwrap(), vec![10, 20, 30, 40, 50]);
        assert_eq!(parse_values("t", "3,1,7").unwrap(), vec![3, 1, 7]);
        assert_eq!(parse_values("d", "1ms,2ms").unwrap(), vec![1_000_000, 2_000_000]);
        assert!(parse_values("t", "1,2,4,...,99").unwrap_err().to_string().contains("does not reach 99"));
        assert!(parse_values("t", "1,...,8").is_err());
        let long = parse_values("t", "1,2,...,1000000").unwrap_err().to_string();
        assert!(long.contains("more than 100,000 values"), "{long}");
        assert_eq!(parse_axis("seed=1,2,...,64", &[], &[]).unwrap().values, (1..=64).collect::<Vec<_>>());
        assert!(parse_values("t", "1,x").unwrap_err().to_string().contains("'x' is not an integer"));
    }

    #[test]
    fn axis_names_resolve_against_the_workload() {
        let params = vec!["threads".to_string()];
        let a = parse_axis("tasks=1,2", &params, &params).unwrap();
        assert_eq!(a.dim, Dim::Param("threads".into()));
        assert_eq!(parse_axis("cpus=1,2", &params, &params).unwrap().dim, Dim::Cpus);
        assert_eq!(
            parse_axis("base_slice_ns=1,2", &params, &params).unwrap().dim,
            Dim::Tunable("base_slice_ns".into())
        );
        assert!(parse_axis("tasks=1", &[], &[]).unwrap_err().to_string().contains("no [[task]]"));
        assert!(parse_axis("cpus=0,1", &params, &params).is_err());
        assert!(parse_axis("threads", &params, &params).unwrap_err().to_string().contains("NAME=VALUES"));
    }
}

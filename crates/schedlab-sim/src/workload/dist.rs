//! Durations that are constants or seeded random distributions, written in
//! workload files as "3ms", "exp(1ms)", "uniform(1ms,3ms)",
//! "lognormal(1ms,0.5)" (median and sigma of the underlying normal) or
//! "quantiles(p0=30us,p50=50us,p99=1.9ms,p100=5ms)": a measured
//! distribution given by its quantiles, linear between them (a machine's
//! timer lateness, as a trace gives it).

use crate::time::{Nanos, format_duration, parse_duration};
use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    Const(Nanos),
    Exp {
        mean: Nanos,
    },
    Uniform {
        lo: Nanos,
        hi: Nanos,
    },
    LogNormal {
        median: Nanos,
        sigma: f64,
    },
    /// (percentile, duration) points of the inverse CDF, from p0 to p100,
    /// both rising.
    Quantiles(Box<[(f64, Nanos)]>),
}

impl Dist {
    pub fn parse(text: &str) -> Result<Dist, String> {
        let s = text.trim();
        let Some(open) = s.find('(') else {
            return parse_duration(s).map(Dist::Const);
        };
        let Some(args) = s[open + 1..].strip_suffix(')') else {
            return Err(format!("'{text}' is missing its closing ')'"));
        };
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        let name = s[..open].trim();
        let want = |n: usize, usage: &str| {
            if args.len() == n { Ok(()) } else { Err(format!("'{text}': {name} takes {n} argument(s): {usage}")) }
        };
        match name {
            "exp" => {
                want(1, "exp(MEAN), e.g. exp(1ms)")?;
                Ok(Dist::Exp { mean: parse_duration(args[0])? })
            }
            "uniform" => {
                want(2, "uniform(LO,HI), e.g. uniform(1ms,3ms)")?;
                let (lo, hi) = (parse_duration(args[0])?, parse_duration(args[1])?);
                if lo > hi {
                    return Err(format!("'{text}': LO must not exceed HI"));
                }
                Ok(Dist::Uniform { lo, hi })
            }
            "lognormal" => {
                want(2, "lognormal(MEDIAN,SIGMA), e.g. lognormal(1ms,0.5)")?;
                let sigma: f64 =
                    args[1].parse().map_err(|_| format!("'{text}': SIGMA '{}' is not a number", args[1]))?;
                if !(0.0..=10.0).contains(&sigma) {
                    return Err(format!("'{text}': SIGMA must be between 0 and 10"));
                }
                Ok(Dist::LogNormal { median: parse_duration(args[0])?, sigma })
            }
            "quantiles" => parse_quantiles(text, &args),
            other => Err(format!(
                "unknown distribution '{other}' in '{text}': use exp(MEAN), uniform(LO,HI), lognormal(MEDIAN,SIGMA) \
                 or quantiles(p0=LO,...,p100=HI)"
            )),
        }
    }

    pub fn sample<R: Rng>(&self, rng: &mut R) -> Nanos {
        match *self {
            Dist::Const(v) => v,
            Dist::Quantiles(ref points) => {
                let u: f64 = rng.random::<f64>() * 100.0;
                let i = points.partition_point(|&(p, _)| p <= u).clamp(1, points.len() - 1);
                let ((p0, d0), (p1, d1)) = (points[i - 1], points[i]);
                let f = if p1 > p0 { ((u - p0) / (p1 - p0)).clamp(0.0, 1.0) } else { 0.0 };
                d0 + ((d1 - d0) as f64 * f).round() as Nanos
            }
            Dist::Exp { mean } => {
                let u: f64 = rng.random::<f64>();
                (-(1.0 - u).ln() * mean as f64).round() as Nanos
            }
            Dist::Uniform { lo, hi } => {
                if lo == hi {
                    lo
                } else {
                    rng.random_range(lo..=hi)
                }
            }
            Dist::LogNormal { median, sigma } => {
                // Box-Muller: one normal sample from two uniforms.
                let u1: f64 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random::<f64>();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (median as f64 * (sigma * z).exp()).round().min(1e15) as Nanos
            }
        }
    }

    /// The mean, for sizing and reports.
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Const(v) => v as f64,
            Dist::Exp { mean } => mean as f64,
            Dist::Uniform { lo, hi } => (lo as f64 + hi as f64) / 2.0,
            Dist::LogNormal { median, sigma } => median as f64 * (sigma * sigma / 2.0).exp(),
            // Each segment between two quantiles holds its probability
            // spread evenly.
            Dist::Quantiles(ref points) => {
                points.windows(2).map(|w| (w[1].0 - w[0].0) / 100.0 * (w[0].1 as f64 + w[1].1 as f64) / 2.0).sum()
            }
        }
    }
}

/// quantiles(pP=DURATION, ...): from p0 to p100, both rising (a
/// percentile may have decimals: p99.9).
fn parse_quantiles(text: &str, args: &[&str]) -> Result<Dist, String> {
    let usage = "quantiles(p0=LO, p50=MEDIAN, ..., p100=HI), e.g. quantiles(p0=30us,p50=50us,p99=2ms,p100=5ms)";
    let mut points: Vec<(f64, Nanos)> = Vec::with_capacity(args.len());
    for arg in args {
        let (p, d) = arg
            .split_once('=')
            .and_then(|(p, d)| Some((p.trim().strip_prefix('p')?, d.trim())))
            .ok_or_else(|| format!("'{text}': '{arg}' is not pP=DURATION: {usage}"))?;
        let pct: f64 = p.parse().map_err(|_| format!("'{text}': 'p{p}' is not a percentile: {usage}"))?;
        if !(0.0..=100.0).contains(&pct) {
            return Err(format!("'{text}': p{p} is not between p0 and p100"));
        }
        if d.ends_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("'{text}': '{d}' has no time unit: write e.g. p{p}={d}us"));
        }
        let d = parse_duration(d).map_err(|m| format!("'{text}': {m}"))?;
        if let Some(&(last_p, last_d)) = points.last() {
            if pct <= last_p {
                return Err(format!("'{text}': the percentiles must rise: p{p} comes after p{last_p}"));
            }
            if d < last_d {
                return Err(format!(
                    "'{text}': the durations must not fall: p{p}={} is below the one before it",
                    format_duration(d)
                ));
            }
        }
        points.push((pct, d));
    }
    match (points.first(), points.last()) {
        (Some(&(first, _)), Some(&(last, _))) if first == 0.0 && last == 100.0 && points.len() >= 2 => {
            Ok(Dist::Quantiles(points.into_boxed_slice()))
        }
        _ => Err(format!("'{text}': give p0 and p100 (the least and the most) and any between: {usage}")),
    }
}

impl std::fmt::Display for Dist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dist::Const(v) => write!(f, "{}", format_duration(*v)),
            Dist::Exp { mean } => write!(f, "exp({})", format_duration(*mean)),
            Dist::Uniform { lo, hi } => {
                write!(f, "uniform({},{})", format_duration(*lo), format_duration(*hi))
            }
            Dist::LogNormal { median, sigma } => {
                write!(f, "lognormal({},{sigma})", format_duration(*median))
            }
            Dist::Quantiles(points) => {
                let parts: Vec<String> = points.iter().map(|&(p, d)| format!("p{p}={}", format_duration(d))).collect();
                write!(f, "quantiles({})", parts.join(","))
            }
        }
    }
}

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            // A bare number would be nanoseconds, which nobody means by
            // `run = 5`: the CLI and Python refuse it too.
            Raw::Int(n) => Err(serde::de::Error::custom(format!(
                "{n} has no unit: write a duration with its unit, e.g. \"{n}ms\" (or \"{n}ns\")"
            ))),
            Raw::Text(s) => Dist::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for Dist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_every_form() {
        assert_eq!(Dist::parse("3ms").unwrap(), Dist::Const(3_000_000));
        assert_eq!(Dist::parse("exp(1ms)").unwrap(), Dist::Exp { mean: 1_000_000 });
        assert_eq!(Dist::parse("uniform(1ms, 3ms)").unwrap(), Dist::Uniform { lo: 1_000_000, hi: 3_000_000 });
        assert!(matches!(Dist::parse("lognormal(1ms,0.5)").unwrap(), Dist::LogNormal { .. }));
        assert!(Dist::parse("gauss(1ms)").unwrap_err().contains("unknown distribution"));
        assert!(Dist::parse("uniform(3ms,1ms)").is_err());
        assert!(Dist::parse("exp(1ms").is_err());
        assert_eq!(
            Dist::parse("quantiles(p0=10us, p50=20us, p99.9=1ms, p100=2ms)").unwrap(),
            Dist::Quantiles(vec![(0.0, 10_000), (50.0, 20_000), (99.9, 1_000_000), (100.0, 2_000_000)].into())
        );
    }

    #[test]
    fn quantiles_refuse_what_is_no_distribution() {
        for (text, says) in [
            ("quantiles(p50=1ms,p100=2ms)", "give p0 and p100"),
            ("quantiles(p0=1ms)", "give p0 and p100"),
            ("quantiles(p0=1ms,p50=3ms,p40=4ms,p100=5ms)", "must rise"),
            ("quantiles(p0=2ms,p50=1ms,p100=5ms)", "must not fall"),
            ("quantiles(p0=1ms,p101=2ms)", "between p0 and p100"),
            ("quantiles(0=1ms,p100=2ms)", "not pP=DURATION"),
            ("quantiles(p0=1,p100=2ms)", "unit"),
        ] {
            let e = Dist::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn quantile_samples_fall_where_their_quantiles_say() {
        let d = Dist::parse("quantiles(p0=0us,p50=100us,p90=200us,p100=10ms)").unwrap();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut s: Vec<Nanos> = (0..20_000).map(|_| d.sample(&mut rng)).collect();
        s.sort_unstable();
        let at = |q: f64| s[(q * s.len() as f64) as usize] as f64;
        assert!((at(0.5) / 100_000.0 - 1.0).abs() < 0.03, "median {}", at(0.5));
        assert!((at(0.9) / 200_000.0 - 1.0).abs() < 0.03, "p90 {}", at(0.9));
        assert!(at(0.25) > 40_000.0 && at(0.25) < 60_000.0, "linear below the median: {}", at(0.25));
        assert!(*s.last().unwrap() <= 10_000_000 && s[0] < 1_000);
        assert_eq!(Dist::parse(&d.to_string()).unwrap(), d, "{d} reads back");
    }

    #[test]
    fn sample_means_are_close() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for d in ["exp(1ms)", "uniform(1ms,3ms)", "lognormal(1ms,0.5)", "quantiles(p0=0ms,p90=1ms,p100=11ms)"] {
            let d = Dist::parse(d).unwrap();
            let n = 20_000;
            let sum: f64 = (0..n).map(|_| d.sample(&mut rng) as f64).sum();
            let mean = sum / n as f64;
            assert!((mean / d.mean() - 1.0).abs() < 0.05, "{d}: {mean} vs {}", d.mean());
        }
    }
}

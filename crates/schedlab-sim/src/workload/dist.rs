//! Durations that are constants or seeded random distributions, written in
//! workload files as "3ms", "exp(1ms)", "uniform(1ms,3ms)" or
//! "lognormal(1ms,0.5)" (median and sigma of the underlying normal).

use crate::time::{Nanos, format_duration, parse_duration};
use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    Const(Nanos),
    Exp { mean: Nanos },
    Uniform { lo: Nanos, hi: Nanos },
    LogNormal { median: Nanos, sigma: f64 },
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
            other => Err(format!(
                "unknown distribution '{other}' in '{text}': use exp(MEAN), uniform(LO,HI) or lognormal(MEDIAN,SIGMA)"
            )),
        }
    }

    pub fn sample<R: Rng>(&self, rng: &mut R) -> Nanos {
        match *self {
            Dist::Const(v) => v,
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
        }
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
    }

    #[test]
    fn sample_means_are_close() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for d in ["exp(1ms)", "uniform(1ms,3ms)", "lognormal(1ms,0.5)"] {
            let d = Dist::parse(d).unwrap();
            let n = 20_000;
            let sum: f64 = (0..n).map(|_| d.sample(&mut rng) as f64).sum();
            let mean = sum / n as f64;
            assert!((mean / d.mean() - 1.0).abs() < 0.05, "{d}: {mean} vs {}", d.mean());
        }
    }
}

//! `schedlab._native`: the simulator's crates for the Python package (the
//! pure-Python `schedlab` module beside it builds the API people use).
//! No second implementation: workloads are read by `schedlab_sim::formats::input`,
//! grids expanded by `schedlab_sim::grid`, runs simulated by the policies
//! of `schedlab_policies`, and reports come back as the JSON and CSV rows
//! the CLI prints. The GIL is released while simulations run, and a batch
//! runs on every core.

mod policy;
mod scx;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use schedlab_sim::report::{SUMMARY_COLUMNS, TASK_COLUMNS};
use schedlab_sim::time::parse_duration;
use schedlab_sim::workload::dist::Dist;
use schedlab_sim::{Engine, EngineOptions, Overrides, Policy, Workload};
use serde_json::Value;

/// The overrides of a run from the keyword arguments, as JSON:
/// `{"cpus": 2, "duration": "1s", "seed": 7, "params": {..}, "set": {..},
/// "cost": {..}}`. Durations are strings with a unit or integer ns.
fn overrides(json: &str) -> Result<Overrides, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("overrides: {e}"))?;
    let mut ov = Overrides::default();
    // A count (cpus, seed): a whole number, not a flag or a duration.
    let count = |v: &Value, what: &str| -> Result<i64, String> {
        match v {
            Value::Number(n) => n.as_i64().ok_or_else(|| format!("{what} = {n} is not a whole number")),
            Value::String(s) => s.trim().parse().map_err(|_| format!("{what} = '{s}' is not a whole number")),
            other => Err(format!("{what} = {other} is not a whole number")),
        }
    };
    let int = |v: &Value, what: &str| -> Result<i64, String> {
        match v {
            Value::Bool(b) => Ok(*b as i64),
            Value::Number(n) => n.as_i64().ok_or_else(|| format!("{what} = {n} is not an integer")),
            Value::String(s) if s.ends_with('s') => parse_duration(s).map(|ns| ns as i64),
            Value::String(s) => s.parse().map_err(|_| format!("{what} = '{s}' is not an integer")),
            other => Err(format!("{what} = {other} is not an integer")),
        }
    };
    let duration = |v: &Value, what: &str| -> Result<u64, String> {
        match v {
            Value::String(s) if s.trim().ends_with(|c: char| c.is_ascii_digit()) => {
                Err(format!("{what} = '{s}' has no unit: write e.g. '{s}s' or '{s}ms'"))
            }
            Value::String(s) => parse_duration(s),
            // Integer ns: how the grid passes durations back; the Python
            // layer refuses a bare number from a user.
            Value::Number(n) => n.as_u64().ok_or_else(|| format!("{what} = {n} is not a whole number of ns")),
            other => Err(format!("{what} = {other} is not a duration such as '2s'")),
        }
    };
    let Value::Object(map) = v else { return Err("overrides must be a mapping".into()) };
    for (key, value) in &map {
        match key.as_str() {
            "cpus" => ov.cpus = Some(u32::try_from(count(value, "cpus")?).map_err(|_| "cpus must be 1 to 4096")?),
            "seed" => ov.seed = Some(u64::try_from(count(value, "seed")?).map_err(|_| "seed must be 0 or more")?),
            "duration" => match duration(value, "duration")? {
                0 => return Err("duration must be more than zero".into()),
                d if d > schedlab_sim::MAX_TIME => return Err("duration is beyond the simulator's 78 hours".into()),
                d => ov.duration = Some(d),
            },
            "params" | "set" | "cost" => {
                let Value::Object(entries) = value else { return Err(format!("{key} must be a mapping")) };
                for (name, v) in entries {
                    let what = format!("{key} {name}");
                    match key.as_str() {
                        "params" => drop(ov.params.insert(name.clone(), int(v, &what)?)),
                        "set" => drop(ov.tunables.insert(name.clone(), int(v, &what)?)),
                        // A cost is a duration, or for timer_latency a
                        // distribution written as the CLI takes it.
                        _ => drop(ov.costs.insert(
                            name.clone(),
                            match v {
                                Value::String(s) if s.contains('(') => Dist::parse(s)?,
                                _ => Dist::Const(duration(v, &what)?),
                            },
                        )),
                    }
                }
            }
            other => return Err(format!("unknown option '{other}': use cpus, duration, seed, params, set, cost")),
        }
    }
    Ok(ov)
}

/// A workload: a spec (file, built-in scenario, tool command line) or,
/// with `inline`, the JSON of a Python dict in the TOML file's shape.
fn workload(spec: &str, inline: bool, ov: &Overrides) -> Result<Workload, String> {
    if !inline {
        return Ok(schedlab_sim::formats::input::load(spec, ov)?.workload);
    }
    let value: Value = serde_json::from_str(spec).map_err(|e| format!("workload dict: {e}"))?;
    let table = toml::Value::try_from(value).map_err(|e| format!("workload dict: {e}"))?;
    let text = toml::to_string(&table).map_err(|e| format!("workload dict: {e}"))?;
    Workload::from_toml(&text, "dict", ov).map_err(|e| e.to_string())
}

/// One run's result: the report as JSON, its summary CSV record and its
/// per-task records (the columns of `summary_columns` / `task_columns`).
type RunResult = (String, Vec<String>, Vec<Vec<String>>);

fn run_one(
    spec: &str,
    inline: bool,
    sched: &str,
    overrides_json: &str,
    summary_only: bool,
) -> Result<RunResult, String> {
    let ov = overrides(overrides_json)?;
    let w = workload(spec, inline, &ov)?;
    let report = schedlab_policies::simulate(&w, sched)?;
    result_of(&report, summary_only)
}

/// A run's result as Python takes it; with only its summary record when
/// `summary_only`: a sweep keeps one row per run (a grid of 1,300 runs
/// held 798 MB as whole reports and task lists).
fn result_of(report: &schedlab_sim::Report, summary_only: bool) -> Result<RunResult, String> {
    if summary_only {
        return Ok((String::new(), report.summary_record(), Vec::new()));
    }
    let json = serde_json::to_string(report).map_err(|e| e.to_string())?;
    Ok((json, report.summary_record(), report.task_records()))
}

/// Runs the workload on a policy written in Python: `class(cpus, tick_ns)`
/// is made for the run, and the engine runs with the GIL released, taking
/// it for each hook the class defines; with only the summary record when
/// `summary_only` (a sweep's rows, as for `run_batch`).
#[pyfunction]
#[pyo3(signature = (spec, inline, class, overrides_json, summary_only = false))]
fn run_policy(
    py: Python<'_>,
    spec: &str,
    inline: bool,
    class: Bound<'_, PyAny>,
    overrides_json: &str,
    summary_only: bool,
) -> PyResult<RunResult> {
    let ov = overrides(overrides_json).map_err(PyValueError::new_err)?;
    if !ov.tunables.is_empty() {
        return Err(PyValueError::new_err(
            "set= names tunables of the built-in policies; a Python policy takes its settings in its own class",
        ));
    }
    let w = workload(spec, inline, &ov).map_err(PyValueError::new_err)?;
    // A schedlab.ScxPolicy runs on the sched_ext core, a schedlab.Policy
    // on the engine's hooks.
    let (policy, interrupt): (Box<dyn Policy + Send>, _) = if class.hasattr("_sched_ext")? {
        let core = scx::PyScxOps::policy(py, &class, &w)?;
        let interrupt = core.ops().interrupt.clone();
        (Box::new(core), interrupt)
    } else {
        let policy = policy::PyPolicy::new(py, &class, &w)?;
        let interrupt = policy.interrupt.clone();
        (Box::new(policy), interrupt)
    };
    let name = policy.name();
    let run = py.detach(|| Engine::new(&w, policy, EngineOptions::default()).run());
    // Ctrl-C (or sys.exit) in a hook ends the call as itself.
    if let Some(e) = interrupt.lock().ok().and_then(|mut slot| slot.take()) {
        return Err(e);
    }
    let report = run.map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?;
    result_of(&report, summary_only).map_err(PyValueError::new_err)
}

/// Runs the jobs `(spec, inline, sched, overrides_json)` on `threads`
/// threads (0: every core) with the GIL released; results in job order,
/// with only the summary record when `summary_only`. The first failure
/// raises ValueError naming the job.
#[pyfunction]
#[pyo3(signature = (jobs, threads = 0, summary_only = false))]
fn run_batch(
    py: Python<'_>,
    jobs: Vec<(String, bool, String, String)>,
    threads: usize,
    summary_only: bool,
) -> PyResult<Vec<RunResult>> {
    let run = || -> Result<Vec<RunResult>, String> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
        pool.install(|| {
            jobs.par_iter()
                .map(|(spec, inline, sched, ov)| run_one(spec, *inline, sched, ov, summary_only))
                .collect::<Result<Vec<_>, String>>()
        })
    };
    py.detach(run).map_err(PyValueError::new_err)
}

/// One point of a grid: its values, the overrides JSON of the point, and
/// the CPUs of its machine (a real-kernel run's CPU budget).
type GridPoint = (Vec<i64>, String, u32);

/// The grid of `vary` (name, values as `schedlab sweep --vary` takes them:
/// "1,2,4,...,64") over the workload: the points in row-major order.
#[pyfunction]
fn grid(spec: &str, inline: bool, base_json: &str, vary: Vec<(String, String)>) -> PyResult<Vec<GridPoint>> {
    let go = || -> Result<Vec<GridPoint>, String> {
        let base = overrides(base_json)?;
        let w = workload(spec, inline, &base)?;
        let params: Vec<String> = w.params.keys().cloned().collect();
        let axes = vary
            .iter()
            .map(|(name, values)| schedlab_sim::grid::parse_axis(&format!("{name}={values}"), &params, &w.count_params))
            .collect::<Result<Vec<_>, _>>()?;
        let base_json: Value = serde_json::from_str(base_json).map_err(|e| e.to_string())?;
        Ok(schedlab_sim::grid::combinations(&axes)
            .into_iter()
            .map(|values| {
                let ov = schedlab_sim::grid::overrides_at(&base, &axes, &values);
                // The point's overrides as the keyword arguments say them.
                let obj = base_json.as_object().expect("overrides parsed as a mapping");
                let entries = |m: &std::collections::BTreeMap<String, i64>| {
                    Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect())
                };
                let mut o = obj.clone();
                if let Some(c) = ov.cpus {
                    o.insert("cpus".into(), c.into());
                }
                if let Some(s) = ov.seed {
                    o.insert("seed".into(), s.into());
                }
                if let Some(d) = ov.duration {
                    o.insert("duration".into(), d.into());
                }
                o.insert("params".into(), entries(&ov.params));
                o.insert("set".into(), entries(&ov.tunables));
                let cpus = ov.cpus.unwrap_or(w.nr_cpus());
                (values, Value::Object(o).to_string(), cpus)
            })
            .collect())
    };
    go().map_err(PyValueError::new_err)
}

/// The summary and per-task records of a report given as JSON (one that
/// `schedlab vm --json` printed).
#[pyfunction]
fn records(report_json: &str) -> PyResult<(Vec<String>, Vec<Vec<String>>)> {
    let report: schedlab_sim::Report =
        serde_json::from_str(report_json).map_err(|e| PyValueError::new_err(format!("not a schedlab report: {e}")))?;
    Ok((report.summary_record(), report.task_records()))
}

/// A workload dict as the TOML file it stands for (for the CLI).
#[pyfunction]
fn dict_to_toml(workload_json: &str) -> PyResult<String> {
    let value: Value = serde_json::from_str(workload_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let table = toml::Value::try_from(value).map_err(|e| PyValueError::new_err(format!("workload dict: {e}")))?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(format!("workload dict: {e}")))
}

/// The schedulers, as `schedlab list` names them.
#[pyfunction]
fn schedulers() -> Vec<&'static str> {
    schedlab_policies::POLICIES.iter().map(|p| p.name).collect()
}

#[pyfunction]
fn summary_columns() -> Vec<&'static str> {
    SUMMARY_COLUMNS.to_vec()
}

#[pyfunction]
fn task_columns() -> Vec<&'static str> {
    TASK_COLUMNS.to_vec()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_batch, m)?)?;
    m.add_function(wrap_pyfunction!(run_policy, m)?)?;
    m.add_class::<policy::PySys>()?;
    m.add_class::<scx::PyScx>()?;
    scx::add_constants(m)?;
    m.add_function(wrap_pyfunction!(grid, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(records, m)?)?;
    m.add_function(wrap_pyfunction!(dict_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(summary_columns, m)?)?;
    m.add_function(wrap_pyfunction!(task_columns, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

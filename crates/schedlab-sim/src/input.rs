//! Where a workload comes from, for every front end (the CLI, the Python
//! package): a file (schedlab TOML or rt-app JSON), the name of a built-in
//! scenario, or a benchmark's command line (see `presets`). rt-app files
//! and command lines run on the whole machine as their tools do, so
//! without a CPU count of their own they get this machine's.

use crate::{Overrides, Workload, presets, rtapp, scenarios};

/// A workload read, and what the reader should know about how.
pub struct Loaded {
    pub workload: Workload,
    /// How the machine was chosen when the input does not say.
    pub note: Option<String>,
}

fn machine_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Reads `spec` with `ov` applied. Errors are one line naming the input
/// and the fix.
pub fn load(spec: &str, ov: &Overrides) -> Result<Loaded, String> {
    let path = std::path::Path::new(spec);
    let (text, origin) = if path.exists() {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read workload file {spec}: {e}"))?;
        (text, spec.to_string())
    } else if let Some(text) = scenarios::builtin(spec) {
        (text.to_string(), format!("scenarios/{spec}.toml"))
    } else if presets::is_preset(spec) {
        let text = presets::toml(spec, ov.cpus.unwrap_or_else(machine_cpus))?;
        (text, spec.to_string())
    } else {
        return Err(format!(
            "no file, built-in scenario or tool command named '{spec}': give a path to a workload (TOML, or rt-app \
             JSON), one of {}, or a command of {} (e.g. 'stress-ng --cpu 4')",
            scenarios::SCENARIOS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
            presets::TOOLS.join(", ")
        ));
    };
    let is_json = path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
    if is_json {
        if let Some(name) = ov.params.keys().next() {
            return Err(format!("--param {name}: rt-app files have no parameters; edit the JSON instead"));
        }
        let mut ov = ov.clone();
        let mut chosen = None;
        if ov.cpus.is_none() {
            // rt-app runs on the whole machine: so does its simulation,
            // unless the file pins tasks to more CPUs than this one has.
            let (here, named) = (machine_cpus(), rtapp::cpus_named(&text).unwrap_or(0));
            ov.cpus = Some(here.max(named));
            chosen = Some(if named > here { "as many as its cpus lists name" } else { "this machine's count" });
        }
        let workload = rtapp::from_rtapp_json(&text, &origin, &ov).map_err(|e| e.to_string())?;
        let note = chosen.map(|why| {
            format!("{spec}: {} CPUs, {why} (rt-app runs on the whole machine); --cpus N to choose", workload.nr_cpus())
        });
        return Ok(Loaded { workload, note });
    }
    let workload = Workload::from_toml(&text, &origin, ov).map_err(|e| e.to_string())?;
    if let Some(name) = ov.params.keys().find(|n| !workload.params.contains_key(*n)) {
        return Err(format!("--param {name}: the workload has no parameter named '{name}' (see its [params])"));
    }
    Ok(Loaded { workload, note: None })
}

//! A bounded fuzz campaign from input to report: every built-in scenario,
//! rt-app example and trace fixture, mutated (cut, spliced, structural
//! characters and hostile numbers inserted), read and, when it reads,
//! simulated on schedulers of each family. A case fails on a panic, on a
//! peak allocation above its bound (BASE_ALLOCATION plus BYTES_PER_TASK
//! for every task it started), or on a hang (no case may take WATCHDOG of
//! wall time: the watchdog aborts the test binary, naming it). Errors are
//! fine: bad input is allowed to be refused, not to crash.
//!
//! Runs in CI with the rest of the suite: FUZZ_CASES cases per input from
//! a fixed seed, so a CI run is reproducible and a finding is a change in
//! the code, not luck of the draw. A longer campaign draws other cases:
//! `SCHEDLAB_FUZZ_CASES=5000 SCHEDLAB_FUZZ_SEED=$RANDOM cargo test -p
//! schedlab-policies --test fuzz_end_to_end`.

use proptest::prelude::*;
use schedlab_sim::{Overrides, Workload};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Peak heap a case may take beyond what its tasks need: a workload file
/// that reads must not be able to make a 20 ms simulation take memory
/// that its tasks do not account for (a number sizing a table, a loop
/// filling one).
const BASE_ALLOCATION: usize = 64 << 20;
/// What one task may cost at the peak of a run: its program state, the
/// kernel's view of it (TaskInfo), the policy's entity, its start event
/// and its report row. `schedlab bench` measures 500-800 bytes per task;
/// a workload of MAX_TASKS (a million) hogs takes about 600 MB on eevdf.
const BYTES_PER_TASK: usize = 1024;
const WATCHDOG: Duration = Duration::from_secs(60);
const FUZZ_CASES: u32 = 300;

#[global_allocator]
static ALLOCATOR: schedlab_sim::memory::CountingAllocator = schedlab_sim::memory::CountingAllocator;

/// Wall-clock start of the current case, in ms since the watchdog began
/// (0: no case running).
static CASE_STARTED: AtomicU64 = AtomicU64::new(0);

fn start_watchdog() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let origin = std::time::Instant::now();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let started = CASE_STARTED.load(Ordering::SeqCst);
                let now = origin.elapsed().as_millis() as u64 + 1;
                if started != 0 && now - started > WATCHDOG.as_millis() as u64 {
                    eprintln!("fuzz: a case ran longer than {WATCHDOG:?}: a hang");
                    std::process::abort();
                }
            }
        });
        CASE_STARTED.store(0, Ordering::SeqCst);
        ORIGIN.set(origin).ok();
    });
}

static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn files(dir: &str, ext: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(format!("{}/../../{dir}", env!("CARGO_MANIFEST_DIR")))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    out.sort();
    out
}

fn mutate(text: &str, op: u8, at: usize, len: usize, insert: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = at % (chars.len() + 1);
    let end = (at + len).min(chars.len());
    let head: String = chars[..at].iter().collect();
    let tail: String = chars[end..].iter().collect();
    match op % 4 {
        0 => head,
        1 => head + &tail,
        // Replace a range: a number becomes another, a name a path.
        2 => head + insert + &tail,
        _ => head + insert + &chars[at..].iter().collect::<String>(),
    }
}

fn insertion() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::string::string_regex(r#"[\[\]{}",:=#\n 0-9a-z./\-]{0,8}"#).unwrap(),
        Just("99999999999999999999".to_string()),
        Just("18446744073709551615".to_string()),
        Just("4294967296".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1e308".to_string()),
        Just("\"../../etc\"".to_string()),
        Just("2147483647".to_string()),
        Just(" 1000000 ".to_string()),
    ]
}

/// Reads and, when it reads, simulates 20 ms on one scheduler of each
/// family; checks the peak allocation of the whole case.
fn case(kind: &str, text: &str) -> Result<(), TestCaseError> {
    start_watchdog();
    let origin = ORIGIN.get().expect("watchdog started");
    CASE_STARTED.store(origin.elapsed().as_millis() as u64 + 1, Ordering::SeqCst);
    let (tasks, peak) = schedlab_sim::memory::peak_during(|| {
        let ov = Overrides { duration: Some(20_000_000), ..Overrides::default() };
        let w: Option<Workload> = match kind {
            "toml" => Workload::from_toml(text, "fuzz.toml", &ov).ok(),
            "rtapp" => schedlab_sim::formats::rtapp::from_rtapp_json(text, "fuzz.json", &ov).ok(),
            _ => schedlab_sim::formats::replay::workload_from_trace(text, "fuzz.trace", &ov).ok().map(|(w, _)| w),
        };
        let mut tasks = 0;
        if let Some(w) = w {
            SIMULATED.fetch_add(1, Ordering::Relaxed);
            tasks = w.initial_tasks() as usize;
            for sched in ["eevdf", "bfs", "bmq", "baby"] {
                if let Ok(report) = schedlab_policies::simulate(&w, sched) {
                    tasks = tasks.max(report.tasks.len());
                }
            }
        }
        tasks
    });
    CASE_STARTED.store(0, Ordering::SeqCst);
    let bound = BASE_ALLOCATION + BYTES_PER_TASK * tasks;
    prop_assert!(
        peak <= bound,
        "{kind} case of {tasks} tasks allocated {} MiB at its peak, more than its {} MiB",
        peak >> 20,
        bound >> 20
    );
    Ok(())
}

/// Cases whose input read and was simulated: the campaign must reach the
/// simulator, not only the parsers' error paths.
static SIMULATED: AtomicU64 = AtomicU64::new(0);

fn cases() -> u32 {
    std::env::var("SCHEDLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(FUZZ_CASES)
}

fn campaign_seed() -> u64 {
    std::env::var("SCHEDLAB_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The case generator of input `index` in campaign `seed`.
fn runner(config: &ProptestConfig, seed: u64, index: usize) -> proptest::test_runner::TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&(index as u64).to_le_bytes());
    let rng = proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &bytes);
    proptest::test_runner::TestRunner::new_with_rng(config.clone(), rng)
}

// One test function: the allocation counter is global, so no other test
// may run beside it in this binary.
#[test]
fn mutated_inputs_read_and_simulate_without_crashing() {
    let config = ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() };
    let mut seeds: Vec<(&str, String)> = Vec::new();
    seeds.extend(files("scenarios", ".toml").into_iter().map(|f| ("toml", read(&f))));
    seeds.extend(files("examples/rt-app", ".toml").into_iter().map(|f| ("toml", read(&f))));
    seeds.extend(files("examples/rt-app", ".json").into_iter().map(|f| ("rtapp", read(&f))));
    for ext in [".trace", ".txt"] {
        seeds.extend(files("crates/schedlab-policies/tests/fixtures", ext).into_iter().map(|f| ("trace", read(&f))));
    }
    let total = seeds.len() as u64 * cases() as u64;
    // The largest workload a file may ask for: MAX_TASKS hogs (found by
    // the campaign when a count became 1000000; 866 MiB then, from arrays
    // grown by doubling and the policy kept alive beside the report rows).
    let most = format!(
        "name = \"most\"\n[[task]]\nname = \"hog\"\ncount = {}\nprogram = [{{ run = \"1s\" }}]\n",
        schedlab_sim::workload::MAX_TASKS
    );
    let (result, peak) = schedlab_sim::memory::peak_during(|| case("toml", &most));
    result.unwrap_or_else(|e| panic!("{} hogs: {e}", schedlab_sim::workload::MAX_TASKS));
    let per_task = peak / schedlab_sim::workload::MAX_TASKS as usize;
    eprintln!("fuzz: {} hogs took {per_task} bytes per task at the peak", schedlab_sim::workload::MAX_TASKS);
    let campaign = campaign_seed();
    for (index, (kind, seed)) in seeds.iter().enumerate() {
        let strategy = (any::<u8>(), any::<usize>(), 0usize..40, insertion());
        runner(&config, campaign, index)
            .run(&strategy, |(op, at, len, ins)| case(kind, &mutate(seed, op, at, len, &ins)))
            .unwrap_or_else(|e| {
                panic!("{kind} seed starting {:?} (SCHEDLAB_FUZZ_SEED={campaign}): {e}", &seed[..seed.len().min(60)])
            });
    }
    let simulated = SIMULATED.load(Ordering::Relaxed);
    eprintln!("fuzz: {simulated} of {total} mutated inputs read and were simulated");
    assert!(simulated * 5 >= total, "only {simulated} of {total} cases reached the simulator");
}

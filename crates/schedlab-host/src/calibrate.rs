//! `schedlab calibrate`: the costs the simulator charges (a workload's
//! `[machine] costs`) measured on this machine's kernel, so that a
//! simulation and `schedlab host` of the same workload start from the same
//! floor. The simulator's defaults (2 us per switch, 5 us to wake an idle
//! CPU) are bare-metal figures; a VM or a traced kernel pays several times
//! that, and its wakeup latencies sit that much higher from the start.
//!
//! Three measurements, each the median of batches so that a stray
//! interruption moves nothing:
//! - context_switch: two threads on one CPU pass a token through a pair of
//!   pipes (lmbench's `lat_ctx -s 0 2` on one CPU); a hop is the write, the
//!   switch and the read's return, which is what a blocking switch costs.
//! - idle_exit: a thread on one CPU writes a timestamp into a pipe that a
//!   thread blocked on another CPU, idle for 50 us, reads. The simulator
//!   charges idle_exit + context_switch for that wakeup, so idle_exit is
//!   the median latency less the context switch. Wakeups after 1 ms and
//!   10 ms of idle are measured and shown too: deeper idle states (or, in
//!   a VM, the host descheduling a halted vCPU once KVM's halt polling
//!   gives up) cost more, and the simulator's one figure cannot follow.
//! - syscall: sched_yield with nothing else runnable on the CPU.
//!
//! The migration cost (cold caches after a move) depends on the task's
//! working set, not the machine alone, and is left at its default.

use crate::HostError;
use crate::sys::{self, Pipe};
use schedlab_sim::Nanos;

/// What `calibrate` found, in the units `[machine] costs` takes.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// CPUs this process may use.
    pub cpus_allowed: usize,
    /// CPU the single-CPU measurements ran on, and the idle CPU woken.
    pub cpu: usize,
    pub other_cpu: Option<usize>,
    pub context_switch: Nanos,
    /// Median wakeup latency onto an idle CPU (None on a one-CPU machine).
    pub idle_wakeup: Option<Nanos>,
    /// Wakeup latency onto a CPU idle for longer (idle length, latency):
    /// deeper idle states cost more to leave, which one figure cannot say.
    pub deep_idle: Vec<(Nanos, Nanos)>,
    pub syscall: Nanos,
    /// Round trips, wakeups and yields measured.
    pub samples: (u32, u32, u32),
    /// CPU time other processes took on the CPUs measured, in % of their
    /// time: the figures are this kernel's floor only when it is near 0.
    pub other_load_pct: f64,
}

impl Calibration {
    /// The simulator charges idle_exit + context_switch for a wakeup onto
    /// an idle CPU, so idle_exit is the measured wakeup less the switch.
    pub fn idle_exit(&self) -> Option<Nanos> {
        self.idle_wakeup.map(|w| w.saturating_sub(self.context_switch))
    }

    /// The measured costs under the names `[machine] costs` gives them.
    fn costs(&self) -> Vec<(&'static str, Nanos)> {
        let mut costs = vec![("context_switch", self.context_switch)];
        costs.extend(self.idle_exit().map(|idle| ("idle_exit", idle)));
        costs.push(("syscall", self.syscall));
        costs
    }

    /// The `--cost` flags that give a simulation these costs.
    pub fn cost_flags(&self) -> String {
        self.costs().iter().map(|(name, v)| format!("--cost {name}={v}ns")).collect::<Vec<_>>().join(" ")
    }

    /// The same as a workload file's `[machine]` line.
    pub fn toml(&self) -> String {
        let items: Vec<String> = self.costs().iter().map(|(name, v)| format!("{name} = \"{v}ns\"")).collect();
        format!("costs = {{ {} }}", items.join(", "))
    }
}

const BATCHES: u32 = 9;
/// How long the woken CPU has been idle in the idle_exit measurement: a
/// busy machine's CPUs idle briefly between wakeups.
pub const SHALLOW_IDLE: Nanos = 50_000;
/// Longer idle periods whose wakeups are measured too.
pub const DEEP_IDLE: [Nanos; 2] = [1_000_000, 10_000_000];

/// Measures this machine's costs with `scale` x the default sample counts
/// (20,000 round trips, 2,000 idle wakeups, 200,000 yields at 1.0).
pub fn calibrate(scale: f64) -> Result<Calibration, HostError> {
    if !(scale > 0.0 && scale <= 100.0) {
        return Err(HostError::Setup(format!("sample scale {scale} is out of range: give 0.01 to 100")));
    }
    let count = |n: f64| ((n * scale) as u32 / BATCHES).max(1) * BATCHES;
    let allowed = sys::allowed_cpus();
    let Some(&cpu) = allowed.first() else {
        return Err(HostError::Setup("this process may run on no CPU (sched_getaffinity)".into()));
    };
    let other_cpu = allowed.get(1).copied();
    let (trips, wakeups, yields) = (count(20_000.0), count(2_000.0), count(200_000.0));
    let used: Vec<usize> = std::iter::once(cpu).chain(other_cpu).collect();
    let busy = || -> (u64, std::time::Instant) {
        let stat = sys::cpu_times();
        let jiffy = 1_000_000_000 / sys::user_hz();
        let machine: u64 = used.iter().map(|&c| stat.get(c).map_or(0, |s| s.0) * jiffy).sum();
        (machine.saturating_sub(sys::process_cpu_time()), std::time::Instant::now())
    };
    let (other0, t0) = busy();
    let context_switch = ping_pong(cpu, trips)?;
    let syscall = yield_cost(cpu, yields)?;
    let (idle_wakeup, deep_idle) = match other_cpu {
        Some(other) => {
            let shallow = idle_wakeup(cpu, other, wakeups, SHALLOW_IDLE)?;
            let mut deep = Vec::new();
            for gap in DEEP_IDLE {
                // About a tenth of a second of samples at each length.
                let n = ((100 * 1_000_000 / gap) as f64 * scale).clamp(10.0, 1000.0) as u32;
                deep.push((gap, idle_wakeup(cpu, other, n, gap)?));
            }
            (Some(shallow), deep)
        }
        None => (None, Vec::new()),
    };
    let (other1, t1) = busy();
    let span = (t1 - t0).as_nanos() as f64 * used.len() as f64;
    let other_load_pct = other1.saturating_sub(other0) as f64 / span.max(1.0) * 100.0;
    Ok(Calibration {
        other_load_pct,
        cpus_allowed: allowed.len(),
        cpu,
        other_cpu,
        context_switch,
        idle_wakeup,
        deep_idle,
        syscall,
        samples: (trips, if other_cpu.is_some() { wakeups } else { 0 }, yields),
    })
}

fn median(mut v: Vec<Nanos>) -> Nanos {
    v.sort_unstable();
    v[v.len() / 2]
}

/// Median over BATCHES batches of the time per call of `op`, `calls` calls
/// in all; one batch more runs first to warm caches and settle the
/// threads, and is not kept.
fn per_call(calls: u32, mut op: impl FnMut(u32) -> Result<(), HostError>) -> Result<Nanos, HostError> {
    let per_batch = calls / BATCHES;
    let mut times = Vec::with_capacity(BATCHES as usize);
    for batch in 0..=BATCHES {
        let start = sys::now();
        for i in 0..per_batch {
            op(i)?;
        }
        if batch > 0 {
            times.push((sys::now() - start) / u64::from(per_batch));
        }
    }
    Ok(median(times))
}

fn pin(cpu: usize) -> Result<(), HostError> {
    sys::set_affinity(sys::gettid(), &[cpu]).map_err(HostError::Setup)
}

fn pipe() -> Result<Pipe, HostError> {
    Pipe::new().map_err(|e| HostError::Setup(format!("cannot create a pipe: {e}")))
}

/// Per hop of a token passed between two threads on `cpu`.
fn ping_pong(cpu: usize, trips: u32) -> Result<Nanos, HostError> {
    let (there, back) = (pipe()?, pipe()?);
    std::thread::scope(|s| {
        let echo = s.spawn(|| -> Result<(), HostError> {
            pin(cpu)?;
            while let Some(v) = there.recv() {
                if v == crate::STOP || !back.send(v) {
                    break;
                }
            }
            Ok(())
        });
        // A round trip is two hops.
        let timed = pin(cpu).and_then(|()| {
            per_call(trips, |i| {
                if there.send(u64::from(i)) && back.recv().is_some() {
                    Ok(())
                } else {
                    Err(HostError::Setup("the echo thread stopped".into()))
                }
            })
            .map(|trip| trip / 2)
        });
        there.send(crate::STOP);
        echo.join().expect("echo thread does not panic")?;
        timed
    })
}

/// Per sched_yield of a thread alone on `cpu`.
fn yield_cost(cpu: usize, yields: u32) -> Result<Nanos, HostError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(cpu)?;
            per_call(yields, |_| {
                sys::sched_yield();
                Ok(())
            })
        })
        .join()
        .expect("yield thread does not panic")
    })
}

/// Median latency from a write on `cpu` to the reader blocked on idle
/// `other` running, `gap` after its previous wakeup (the writer sleeps that
/// long between samples, and `other` is idle all that time).
fn idle_wakeup(cpu: usize, other: usize, wakeups: u32, gap: Nanos) -> Result<Nanos, HostError> {
    let (there, back) = (pipe()?, pipe()?);
    std::thread::scope(|s| {
        let reader = s.spawn(|| -> Result<Vec<Nanos>, HostError> {
            pin(other)?;
            let mut lat = Vec::with_capacity(wakeups as usize);
            while let Some(sent) = there.recv() {
                let woke = sys::now();
                if sent == crate::STOP {
                    break;
                }
                lat.push(woke.saturating_sub(sent));
                back.send(0);
            }
            Ok(lat)
        });
        let writer = (|| {
            pin(cpu)?;
            sys::set_min_timer_slack();
            for _ in 0..wakeups {
                sys::sleep_until(sys::now() + gap);
                if !there.send(sys::now()) || back.recv().is_none() {
                    return Err(HostError::Setup("the reader thread stopped".into()));
                }
            }
            Ok(())
        })();
        there.send(crate::STOP);
        let lat = reader.join().expect("reader thread does not panic")?;
        writer?;
        // The first tenth warms up and is not kept.
        Ok(median(lat[lat.len() / 10..].to_vec()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_come_out_as_flags_and_toml_the_simulator_reads() {
        let c = Calibration {
            cpus_allowed: 2,
            other_load_pct: 0.0,
            cpu: 0,
            other_cpu: Some(1),
            context_switch: 4_100,
            idle_wakeup: Some(12_000),
            deep_idle: vec![(1_000_000, 25_000)],
            syscall: 350,
            samples: (9, 9, 9),
        };
        assert_eq!(c.idle_exit(), Some(7_900));
        assert_eq!(c.cost_flags(), "--cost context_switch=4100ns --cost idle_exit=7900ns --cost syscall=350ns");
        let text = format!(
            "duration = \"1s\"\n[machine]\n{}\n[[task]]\nname = \"t\"\nprogram = [ {{ run = \"1ms\" }} ]\n",
            c.toml()
        );
        let w = schedlab_sim::Workload::from_toml(&text, "calibrated.toml", &Default::default()).unwrap();
        assert_eq!(w.machine.costs.context_switch, 4_100);
        assert_eq!(w.machine.costs.idle_exit, 7_900);
        assert_eq!(w.machine.costs.syscall, 350);
    }

    #[test]
    fn a_silly_sample_scale_is_refused() {
        assert!(calibrate(0.0).is_err());
        assert!(calibrate(f64::NAN).is_err());
    }
}

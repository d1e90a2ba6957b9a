//! `schedlab calibrate`: this machine's (or a guest's) costs, measured,
//! as the simulator takes them.

use anyhow::Result;
use schedlab_sim::time::format_duration;

pub(crate) fn run(samples: f64, json: bool) -> Result<()> {
    let c = schedlab_host::calibrate::calibrate(samples)?;
    if json {
        let costs: serde_json::Map<String, serde_json::Value> =
            c.costs().into_iter().map(|(name, v)| (name.to_string(), v.into())).collect();
        let measured = |m: &Result<schedlab_host::calibrate::TickLateness, String>| match m {
            Ok(t) => serde_json::json!({"median_ns": t.median, "p95_ns": t.p95, "max_ns": t.max, "samples": t.samples}),
            Err(why) => serde_json::json!({"not_measured": why}),
        };
        let (tick, gap) = (measured(&c.tick), measured(&c.tick_gap));
        let out = serde_json::json!({
            "costs": costs,
            "idle_wakeup_ns": c.idle_wakeup,
            "idle_reader_cycle_cpu_ns": c.reader_cycle_cpu,
            "timer_late_ns": c.timer_late,
            "tick_lateness": tick,
            "tick_gap": gap,
            "other_load_pct": c.other_load_pct,
        });
        println!("{out}");
        return Ok(());
    }
    let us = |ns: u64| format!("{:.2} us", ns as f64 / 1e3);
    let (trips, wakeups, yields) = c.samples;
    let k = schedlab_host::info::read();
    println!(
        "Linux {}, {} CPUs usable, HZ={}: medians of batches; other processes took {:.1}% of the CPUs measured\n",
        k.release,
        c.cpus_allowed,
        k.hz.map_or("unknown".to_string(), |hz| hz.to_string()),
        c.other_load_pct
    );
    if c.other_load_pct > 5.0 {
        eprintln!(
            "schedlab: calibrate: other processes took {:.1}% of the CPUs measured: these are not this kernel's \
             costs on a quiet machine; run again when it is quiet",
            c.other_load_pct
        );
    }
    println!(
        "context_switch  {:>10}  per hop of a token between two threads on CPU {} ({trips} round trips)",
        us(c.context_switch),
        c.cpu
    );
    match (c.idle_wakeup, c.idle_exit(), c.other_cpu) {
        (Some(wakeup), Some(exit), Some(other)) => {
            println!(
                "idle_exit       {:>10}  a wakeup from CPU {} onto CPU {other}, idle for {}, takes {} ({wakeups} wakeups), less the switch",
                us(exit),
                c.cpu,
                format_duration(schedlab_host::calibrate::SHALLOW_IDLE),
                us(wakeup)
            );
            if let Some(w) = c.wake_remote {
                println!(
                    "wake_remote     {:>10}  of the writer's CPU per such wakeup, beyond the same write with nobody waiting",
                    us(w)
                );
            }
            if let Some(r) = c.reader_cycle_cpu {
                println!(
                    "                            the woken reader uses {} of CPU from one wakeup to the next (its reply wakes the writer's idle CPU)",
                    us(r)
                );
            }
            for (idle, latency) in &c.deep_idle {
                println!(
                    "                            after {} idle the same wakeup takes {}",
                    format_duration(*idle),
                    us(*latency)
                );
            }
        }
        _ => println!("idle_exit       not measured: this process may use only one CPU"),
    }
    println!("syscall         {:>10}  per sched_yield alone on CPU {} ({yields} calls)", us(c.syscall), c.cpu);
    println!(
        "fork            {:>10}  of the creating thread's CPU per thread created as `host` creates one",
        us(c.fork_parent)
    );
    println!("thread_start    {:>10}  of the new thread's CPU before its work begins", us(c.fork_child));
    println!(
        "timer_wakeup    {:>10}  of a thread's CPU per sleep to a time {} ahead, alone on CPU {}",
        us(c.timer_cpu),
        format_duration(200_000),
        c.cpu
    );
    println!(
        "timer_latency   {:>10}  it woke {} late at the median, less what waking an idle CPU costs",
        us(c.timer_latency()),
        us(c.timer_late)
    );
    match &c.tick {
        Ok(t) => println!(
            "tick_jitter     {:>10}  twice the median lateness of the tick past its jiffy (median {}, p95 {}, max {}, {} ticks)",
            us(t.jitter()),
            us(t.median),
            us(t.p95),
            us(t.max),
            t.samples
        ),
        Err(why) => println!("tick_jitter     not measured: {why} (default 4 us)"),
    }
    match &c.tick_gap {
        Ok(t) => println!(
            "tick_spread     {:>10}  the CPUs' ticks of one jiffy came {} apart at the median (p95 {}, max {}, {} ticks): \
             two draws up to this differ by that much",
            us(t.spread()),
            us(t.median),
            us(t.p95),
            us(t.max),
            t.samples
        ),
        Err(why) => println!("tick_spread     not measured: {why} (unset: each CPU's tick late by up to tick_jitter)"),
    }
    println!("migration       not measured: it depends on the task's working set (default 10 us)");
    println!("\nSimulate with these costs:\n  {}", c.cost_flags());
    println!("or put them in the workload's [machine] table:\n  {}", c.toml());
    Ok(())
}

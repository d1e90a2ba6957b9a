//! `schedlab list`: the schedulers with their sources, kernels and
//! tunables, and the built-in scenarios.

use schedlab_sim::{Overrides, Workload};

pub(crate) fn run() {
    println!("Schedulers (tunables shown as set for an 8-CPU machine):\n");
    let sample = Workload::from_toml(
        "[machine]\ncpus = 8\n[[task]]\nname = \"t\"\nprogram = [ { run = \"1ms\" } ]\n",
        "list",
        &Overrides::default(),
    )
    .expect("the built-in sample workload is valid");
    for p in schedlab_policies::all() {
        println!("{:<8} {}\n         follows {}", p.name, p.summary, p.source);
        match p.kernel {
            Some((file, what)) => println!("         checked against {what} ({file}.bzImage, `schedlab validate`)"),
            None => match p.audit {
                Some(what) => println!("         no bootable kernel; source-audited against {what}"),
                None => println!("         no bootable kernel to check it against"),
            },
        }
        if let Ok(policy) = schedlab_policies::build(p.name, &sample) {
            for t in policy.tunables() {
                println!("           {:<30} {:>12}  {}", t.name, t.value, t.help);
            }
        }
        println!();
    }
    let kernels = crate::commands::program::kernels_dir();
    let scx = schedlab_vm::scx::available(&kernels.join("scx"));
    if !scx.is_empty() {
        println!(
            "sched_ext schedulers of {} (real kernels only: `schedlab vm --kernel scx-6.12.bzImage --scx NAME`, \
             or the row scx-6.12+NAME of `compare --kernel`):\n  {}\n",
            kernels.join("scx").display(),
            scx.join(", ")
        );
    }
    println!("Built-in scenarios (run with `schedlab compare NAME`):\n");
    for (name, text) in schedlab_sim::formats::scenarios::SCENARIOS {
        println!("  {name:<22} {}", schedlab_sim::formats::scenarios::summary(text));
        let params = Workload::from_toml(text, name, &Overrides::default()).map(|w| w.params).unwrap_or_default();
        if !params.is_empty() {
            let list: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("  {:<22} parameters (--param NAME=N), by default: {}", "", list.join(", "));
        }
    }
    println!("\nTool command lines as workloads (quote them; join several with ' + '):\n");
    for example in [
        "stress-ng --cpu 24 --cpu-method loop --timeout 10s",
        "cyclictest --smp -p 80 -i 1000 -D 5s",
        "cyclictest -t -a -i 1000 + stress-ng --cpu 24",
        "hackbench -g 10 -l 1000",
        "perf bench sched messaging -g 10",
        "perf bench sched pipe -l 100000",
        "lat_ctx -s 0 2",
    ] {
        println!("  '{example}'");
    }
}

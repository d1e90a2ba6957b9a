//! Policies of one's own, run by schedlab's whole command line beside the
//! built-in ones: `rr`, round robin written on the engine's hooks
//! (src/rr.rs), and `simple` / `simple-fifo`, the kernel's scx_simple
//! written in sched_ext's shape on schedlab's sched_ext core
//! (schedlab_policies::scx::simple, the template for a BPF scheduler's
//! prototype). `cargo run -- compare thread-test --sched
//! rr,simple,eevdf,bmq` runs them beside the built-in ones.

mod rr;

use schedlab_policies::UserPolicy;
use schedlab_policies::scx::simple::Simple;

fn main() {
    schedlab_cli::main_with(vec![
        UserPolicy::new("rr", "round robin: per-CPU FIFO queues, 4 ms slices", |w| {
            Ok(Box::new(rr::RoundRobin::new(w)?))
        }),
        UserPolicy::new("simple", "scx_simple on the sched_ext core: one DSQ in weighted vtime order", |w| {
            Ok(Box::new(Simple::policy(w, false)))
        }),
        UserPolicy::new("simple-fifo", "scx_simple -f on the sched_ext core: one FIFO DSQ", |w| {
            Ok(Box::new(Simple::policy(w, true)))
        }),
    ]);
}

//! scx_simple, the kernel's own example sched_ext scheduler (Linux 6.12
//! tools/sched_ext/scx_simple.bpf.c), written on [`ScxCore`] as a model
//! for one's own: one shared DSQ, ordered by a weighted vtime (or FIFO
//! with `fifo`); an idle CPU found at wakeup takes the task in its local
//! DSQ at once; every slice is SCX_SLICE_DFL (20 ms, ended at the tick);
//! a sleeper's vtime is kept at most one slice behind the newest. It is
//! not a built-in policy (no kernel here runs it to validate it against):
//! `examples/own-policies` registers it as `simple`.

use super::{Dsq, SLICE_DFL, Scx, ScxCore, ScxOps};
use schedlab_sim::{CpuId, TaskId, Workload};

/// SHARED_DSQ.
const SHARED_DSQ: Dsq = Dsq::User(0);

pub struct Simple {
    fifo: bool,
    vtime_now: u64,
}

/// vtime_before.
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

impl Simple {
    /// scx_simple on the sched_ext core; `fifo` is its -f.
    pub fn policy(w: &Workload, fifo: bool) -> ScxCore<Simple> {
        ScxCore::new(w, Simple { fifo, vtime_now: 0 })
    }
}

impl ScxOps for Simple {
    fn name(&self) -> &'static str {
        if self.fifo { "simple-fifo" } else { "simple" }
    }

    fn init(&mut self, scx: &mut Scx) {
        scx.create_dsq(0);
    }

    fn enable(&mut self, scx: &mut Scx, p: TaskId) {
        scx.set_dsq_vtime(p, self.vtime_now);
    }

    // simple_select_cpu is the trait's default select_cpu: the core's
    // choice, and an idle CPU found takes the task in its local DSQ with
    // SCX_SLICE_DFL.

    fn enqueue(&mut self, scx: &mut Scx, p: TaskId, enq_flags: u64) {
        if self.fifo {
            scx.dsq_insert(p, SHARED_DSQ, SLICE_DFL, enq_flags);
            return;
        }
        // A sleeper's budget is limited to one slice.
        let floor = self.vtime_now.wrapping_sub(SLICE_DFL);
        let vtime = if before(scx.dsq_vtime(p), floor) { floor } else { scx.dsq_vtime(p) };
        scx.dsq_insert_vtime(p, SHARED_DSQ, SLICE_DFL, vtime, enq_flags);
    }

    fn dispatch(&mut self, scx: &mut Scx, _cpu: CpuId, _prev: Option<TaskId>) {
        scx.dsq_move_to_local(SHARED_DSQ);
    }

    fn running(&mut self, scx: &mut Scx, p: TaskId) {
        if !self.fifo && before(self.vtime_now, scx.dsq_vtime(p)) {
            self.vtime_now = scx.dsq_vtime(p);
        }
    }

    fn stopping(&mut self, scx: &mut Scx, p: TaskId, _runnable: bool) {
        if !self.fifo {
            // The slice used, scaled by the inverse of the weight.
            let used = (SLICE_DFL - scx.slice(p).min(SLICE_DFL)) * 100 / scx.weight(p);
            scx.set_dsq_vtime(p, scx.dsq_vtime(p).wrapping_add(used));
        }
    }
}

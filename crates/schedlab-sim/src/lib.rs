//! schedlab's simulator: workloads, the discrete-event engine, the
//! interface scheduling policies implement, and the report every run fills.

pub mod decisions;
pub mod dist;
pub mod engine;
pub mod ftrace;
pub mod grid;
pub mod input;
pub mod policy;
pub mod presets;
mod queue;
pub mod replay;
pub mod report;
mod rt;
pub mod rtapp;
pub mod scenarios;
pub mod time;
pub mod timeline;
pub mod topology;
pub mod trace_out;
pub mod workload;

pub use engine::{Engine, EngineOptions, Observer, SimError, TraceEvent};
pub use policy::{CpuInfo, Dequeue, Enqueue, Policy, Sys, TaskId, TaskInfo, TaskState, Tunable, WakeKind};
pub use queue::MAX_TIME;
pub use report::Report;
pub use time::Nanos;
pub use topology::{CpuId, CpuSet, Topology};
pub use workload::{Overrides, Workload, WorkloadError};

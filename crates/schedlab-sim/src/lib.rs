//! schedlab's simulator, in the order a run goes through it:
//!
//! - `formats/`: the files people already have (rt-app JSON, tracefs text,
//!   `trace-cmd report`, `perf script`), benchmark command lines and the
//!   built-in scenarios, read into a [`Workload`]; and the trace a run writes.
//! - `workload/`: the workload model and its own TOML file.
//! - `policy`: the interface a scheduling policy implements.
//! - `engine/`: the discrete-event engine that runs a workload under a policy.
//! - `report/`: the report every run fills, and the observers (timeline,
//!   placement decisions) that read a run as it goes.

pub mod engine;
pub mod formats;
pub mod grid;
pub mod memory;
pub mod names;
pub mod policy;
pub mod report;
pub mod time;
pub mod topology;
pub mod workload;

pub use engine::queue::MAX_TIME;
pub use engine::{Engine, EngineOptions, Observer, SimError, TraceEvent};
pub use policy::{CpuInfo, Dequeue, Enqueue, Policy, Sys, TaskId, TaskInfo, TaskState, Tunable, WakeKind};
pub use report::Report;
pub use time::Nanos;
pub use topology::{CpuId, CpuSet, Topology};
pub use workload::{Overrides, Workload, WorkloadError};

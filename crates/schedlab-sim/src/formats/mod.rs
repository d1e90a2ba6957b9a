//! Inputs and outputs in other tools' formats: rt-app JSON, traces of the
//! kernel's sched events (tracefs, trace-cmd, perf script) replayed as
//! workloads, benchmark command lines (stress-ng, cyclictest, hackbench,
//! perf bench, lat_ctx) and the built-in scenarios; `input` decides which
//! one a name or file is. `trace_out` writes a run as a tracefs-format trace.

pub mod ftrace;
pub mod input;
pub mod perfetto_proto;
pub mod presets;
pub mod replay;
pub mod rtapp;
pub mod scenarios;
pub mod trace_dat;
pub mod trace_out;

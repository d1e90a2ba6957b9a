//! `schedlab`: run a workload on simulated schedulers, side by side.
//!
//! The whole command line is this library's [`main_with`]: the `schedlab`
//! binary calls it with no policies of its own, and a user's crate calls it
//! with theirs to get every command with their policies beside the
//! built-in ones (docs/writing-a-policy.md).
//!
//! The layout: `args` is the command line as clap reads it, `commands/` has
//! one module per command (and `commands::run` dispatches to them),
//! `simulate` what the commands share (loading a workload, choosing
//! policies, simulating, the host runner), `output` and `render/` how
//! reports leave (text tables, JSON/CSV, HTML and SVG).

mod args;
mod commands;
mod output;
mod render;
mod simulate;

use args::Cli;
use clap::Parser;

/// Runs schedlab's command line (`std::env::args`) with `policies` added
/// to the built-in ones; on an error, prints it and exits with its code.
pub fn main_with(policies: Vec<schedlab_policies::UserPolicy>) {
    if let Err(e) = schedlab_policies::register(policies) {
        eprintln!("schedlab: {}", for_terminal(&e.to_string()));
        std::process::exit(2);
    }
    if schedlab_vm::guest::is_init() {
        guest_main();
    }
    // Like other Unix tools, end quietly when the reader of stdout goes
    // away (`schedlab run ... --json | head -1`) instead of failing a
    // write: Rust ignores SIGPIPE by default.
    // SAFETY: restoring the default disposition of one signal.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    if let Err(e) = commands::run(cli) {
        eprintln!("schedlab: {}", for_terminal(&format!("{e:#}")));
        std::process::exit(exit_code(&e));
    }
}

/// An error as a terminal may show it: errors quote what the input said,
/// and an input's escape sequences (ESC, BEL, ...) would act on the
/// terminal, and a 10 MB value would bury the message. Control characters
/// other than newline and tab are written as Rust escapes; a line longer
/// than `LONGEST_LINE` characters keeps its start and end.
pub(crate) fn for_terminal(message: &str) -> String {
    const LONGEST_LINE: usize = 1000;
    const HEAD: usize = 700;
    const TAIL: usize = 200;
    let mut out = String::with_capacity(message.len().min(64 * 1024));
    for (i, line) in message.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let chars = line.chars().count();
        let escape = |out: &mut String, c: char| {
            if c.is_control() && c != '\t' {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        };
        if chars <= LONGEST_LINE {
            line.chars().for_each(|c| escape(&mut out, c));
        } else {
            line.chars().take(HEAD).for_each(|c| escape(&mut out, c));
            out.push_str(&format!(" [... {} characters left out ...] ", chars - HEAD - TAIL));
            line.chars().skip(chars - TAIL).for_each(|c| escape(&mut out, c));
        }
    }
    out
}

/// 128 + the signal for a run a stop signal ended, as a shell reports a
/// process killed by it; 1 for every other error.
fn exit_code(e: &anyhow::Error) -> i32 {
    match (e.downcast_ref::<schedlab_vm::VmError>(), e.downcast_ref::<schedlab_host::HostError>()) {
        (Some(schedlab_vm::VmError::Interrupted(sig)), _)
        | (_, Some(schedlab_host::HostError::Interrupted(sig) | schedlab_host::HostError::CutShort(sig))) => 128 + sig,
        _ => 1,
    }
}

/// schedlab as the init of a `schedlab vm` guest: the job's command line
/// comes from the initramfs, its stdout goes to the result port.
fn guest_main() -> ! {
    let code = match schedlab_vm::guest::start() {
        Ok(args) => match Cli::try_parse_from(args) {
            Ok(cli) => match commands::run(cli) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("schedlab: {}", for_terminal(&format!("{e:#}")));
                    exit_code(&e)
                }
            },
            Err(e) => {
                eprintln!("schedlab: {}", e.to_string().trim());
                2
            }
        },
        Err(e) => {
            eprintln!("schedlab: guest: {e}");
            1
        }
    };
    schedlab_vm::guest::finish(code)
}

#[cfg(test)]
mod tests {
    use super::for_terminal;

    #[test]
    fn an_error_cannot_drive_the_terminal_or_bury_itself() {
        assert_eq!(
            for_terminal("bad name 't\x1b[31mred\x07'\nnext\tline"),
            "bad name 't\\u{1b}[31mred\\u{7}'\nnext\tline"
        );
        let huge = format!("value {} is not a number", "9".repeat(10_000_000));
        let shown = for_terminal(&huge);
        assert!(shown.len() < 1100, "{} bytes", shown.len());
        assert!(shown.starts_with("value 999") && shown.ends_with("999 is not a number"), "{shown}");
        assert!(shown.contains("characters left out"));
    }
}

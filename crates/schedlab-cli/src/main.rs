//! The `schedlab` binary: the command line of [`schedlab_cli`] with the
//! built-in policies only.

fn main() {
    schedlab_cli::main_with(Vec::new())
}

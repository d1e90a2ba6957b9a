#!/bin/bash
# A workload's run in the scx-6.12 guest (EEVDF 6.12.117 with no BPF
# scheduler loaded; the one guest kernel built with kprobe events) traced
# with kprobes beside the sched events, for questions a sched_switch trace
# cannot answer: when update_curr saw a deadline pass, which entity
# pick_eevdf returned, whether a new-idle balance ran.
#
#   tools/validation/guest-kprobes.sh OUT [WORKLOAD [DURATION]]
#
# OUT gets the guest's tracefs text (kprobe lines and sched events) and,
# after it, the runner's report. WORKLOAD is a built-in scenario (default
# fork-burst), DURATION as `schedlab host --duration` takes it (default 1s).
# The probes are kprobe_events lines, one per line of $KPROBES; by default
# update_deadline's entry with BTF arguments and its return, pick_eevdf's
# return and set_next_entity's entity (what open.toml's fork-burst entry
# was traced with on 2026-12-07):
#
#   KPROBES='p:dbg/nidle sched_balance_newidle' tools/validation/guest-kprobes.sh /tmp/t.txt make-j4 3s
#
# Every probe goes in the group `dbg`. The guest is the machine's own: the
# probes die with it. Run from the repository's root after `cargo build
# --release`; the kernels come from $SCHEDLAB_KERNELS (../shared/kernels).
set -euo pipefail
out=${1:?usage: guest-kprobes.sh OUT [WORKLOAD [DURATION]]}
workload=${2:-fork-burst}
duration=${3:-1s}
kernels=${SCHEDLAB_KERNELS:-../shared/kernels}
probes=${KPROBES:-'p:dbg/udl update_deadline se->vruntime se->deadline se->slice
r:dbg/udlr update_deadline ret=$retval:u8
r:dbg/pick pick_eevdf ret=$retval:x64
p:dbg/sne set_next_entity se=$arg2:x64'}
case $workload in *[!a-z0-9-]*) echo "guest-kprobes.sh: '$workload' is not a built-in scenario's name" >&2; exit 2 ;; esac
case $duration in *[!0-9a-z.]*) echo "guest-kprobes.sh: '$duration' is not a duration such as 1s or 500ms" >&2; exit 2 ;; esac

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
script=$dir/probe.sh
{
    echo 'T=/sys/kernel/tracing; [ -d $T/events ] || T=/sys/kernel/debug/tracing'
    echo ': > $T/kprobe_events'
    while IFS= read -r line; do
        [ -n "$line" ] && printf "echo '%s' >> \$T/kprobe_events || exit 3\n" "$line"
    done <<< "$probes"
    echo 'echo 1 > $T/events/dbg/enable'
    for ev in sched_switch sched_wakeup sched_wakeup_new sched_migrate_task; do
        echo "echo 1 > \$T/events/sched/$ev/enable"
    done
    echo 'echo 20000 > $T/buffer_size_kb'
    echo 'echo 1 > $T/tracing_on'
    # /init is schedlab itself, the guest's runner.
    echo "/init host $workload --duration $duration --no-trace > /tmp/report.txt 2>&1"
    echo 'echo 0 > $T/tracing_on'
    echo 'cat $T/trace /tmp/report.txt'
} > "$script"
target/release/schedlab vm --kernel "$kernels/scx-6.12.bzImage" --accel tcg \
    --include "$script" --include "$(command -v cat)" --timeout 4min -- sh "$script" > "$out"
echo "guest-kprobes.sh: wrote $out ($(grep -c ' ([a-z_0-9.]*+0x' "$out" || true) probe lines)" >&2

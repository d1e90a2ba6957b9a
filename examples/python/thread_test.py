"""The seeds' first experiment from Python, end to end: do more threads on
one CPU mean more context switches? thread-test for 1 to 4096 spinning
threads on every scheduler, as a pandas frame and a plot.

    pip install ./python matplotlib
    python examples/python/thread_test.py [--ray] [-o thread-test.png]
"""

import argparse

import schedlab


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ray", action="store_true", help="run the grid as Ray tasks (local cluster unless RAY_ADDRESS)")
    ap.add_argument("-o", "--output", default="thread-test.png")
    args = ap.parse_args()

    frame = schedlab.sweep(
        "thread-test",
        {"threads": "1,2,4,...,4096"},
        duration="1s",
        backend="ray" if args.ray else "local",
    )
    table = frame.pivot(index="threads", columns="scheduler", values="context_switches_per_sec")
    print(table.round(0).to_string())

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    markers = "osD^v<>px*"
    for i, sched in enumerate(schedlab.schedulers()):
        ax.plot(table.index, table[sched], marker=markers[i % len(markers)], markersize=4, label=sched)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("spinning threads on one CPU")
    ax.set_ylabel("context switches/s")
    ax.set_title("thread-test: do more threads mean more switching? (HZ=250)")
    ax.legend(ncol=2, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Moves the bands of open.toml to a new full `schedlab validate` run.

After `schedlab validate --out docs` has booted every kernel again, each open
difference must be measured where the new runs put it, and an open entry
whose figure is no longer flagged is stale (validate fails on both). This
rewrites the `figures = [...]` list of every entry of
crates/schedlab-cli/src/commands/validate/open.toml from
docs/validation-figures.json, leaving each entry's `known` text as it is:

- a figure still unexplained gets the new simulated, re-simulated and real
  values (the real one as a [low, high] range where the boots differ by
  more than a tenth), measured by MEASURED;
- a figure no longer unexplained is dropped, and an entry left with none
  is removed; both are printed, so that their text can be looked at; but
  a figure of an experiment of the quick suite keeps its line as it is
  (`validate --quick` judges one boot, which a band may be there for: the
  planted-knob test fails without BMQ's nice 5 hog's), and says so;
- an unexplained figure that no entry names is printed, to be placed in
  the entry whose cause it shares (or a new one) by hand.

The `known` texts give the figures of the runs they were written from:
read each entry again against the new page before committing.

    python3 tools/validation/rebase-open.py "0.1.0 (abcdef012345), 2026-11-27" [EXPERIMENT,...]

With a list of experiments (those booted again alone), only their figures
are touched; the others' lines stay as they are, kept ones included. With
--policies (kernels booted again alone, their calibration with them), only
those policies' figures are:

    python3 tools/validation/rebase-open.py --policies muqss,cacule "0.1.0 (abcdef012345), 2026-11-27"
"""
import argparse
import json
import re
import tomllib

OPEN = "crates/schedlab-cli/src/commands/validate/open.toml"
FIGURES = "docs/validation-figures.json"
EXPERIMENTS = "crates/schedlab-cli/src/commands/validate/experiments.rs"


def quick_experiments():
    """The ids of experiments.rs's experiments with `quick: true`."""
    text = open(EXPERIMENTS).read()
    ids = []
    for block in text.split("Experiment {")[1:]:
        m = re.search(r'id: "([^"]+)"', block)
        if m and "quick: true" in block:
            ids.append(m.group(1))
    return set(ids)


def band(f):
    lo, hi = f["real_range"]
    v = f["real"]
    if v and (hi - lo) > abs(v) * 0.1:
        return f"[{lo!r}, {hi!r}]"
    return repr(float(v))


def line(f, measured):
    parts = [f'policy = "{f["policy"]}"', f'experiment = "{f["experiment"]}"', f'figure = "{f["figure"]}"']
    for side in ("sim", "guest"):
        if f.get(side) is not None:
            parts.append(f"{side} = {float(f[side])!r}")
    if f.get("real") is not None:
        parts.append(f"real = {band(f)}")
    parts.append(f'measured = "{measured}"')
    return "    { " + ", ".join(parts) + " },"


def kept_line(text, key):
    """The line of open.toml that names `key`, as it is."""
    policy, experiment, figure = key
    want = f'policy = "{policy}", experiment = "{experiment}", figure = "{figure}"'
    return next(l for l in text.splitlines() if want in l)


def main():
    args = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    args.add_argument("measured", help='the band label, e.g. "0.1.0 (abcdef012345), 2026-11-27"')
    args.add_argument("experiments", nargs="?", help="comma-separated experiments booted again alone")
    args.add_argument("--policies", help="comma-separated policies booted again alone")
    args = args.parse_args()
    measured = args.measured
    only = set(args.experiments.split(",")) if args.experiments else None
    policies = set(args.policies.split(",")) if args.policies else None

    def untouched(key):
        return (only is not None and key[1] not in only) or (policies is not None and key[0] not in policies)

    figures = {(f["policy"], f["experiment"], f["figure"]): f for f in json.load(open(FIGURES))}
    text = open(OPEN).read()
    entries = tomllib.loads(text)["open"]
    blocks = list(re.finditer(r"\[\[open\]\]\nfigures = \[\n(.*?)\n\]\n", text, re.S))
    assert len(blocks) == len(entries), f"{len(blocks)} figure lists for {len(entries)} entries"
    quick = quick_experiments()
    named = set()
    out, at = [], 0
    for entry, block in zip(entries, blocks):
        lines = []
        for o in entry["figures"]:
            key = (o["policy"], o["experiment"], o["figure"])
            named.add(key)
            if untouched(key):
                lines.append(kept_line(text, key))
                continue
            f = figures.get(key)
            if f is not None and f["outcome"] != "Unexplained" and o["experiment"] in quick:
                print(f"kept for the quick suite, which judges one boot: {' '.join(key)} ({f['outcome']})")
                lines.append(kept_line(text, key))
                continue
            if f is None or f["outcome"] != "Unexplained":
                print(f"resolved: {' '.join(key)} ({f['outcome'] if f else 'not in the run'})")
                continue
            lines.append(line(f, measured))
        out.append(text[at:block.start()])
        if lines:
            out.append("[[open]]\nfigures = [\n" + "\n".join(lines) + "\n]\n")
            at = block.end()
        else:
            # The whole entry goes: up to the next [[open]] or the end.
            nxt = text.find("[[open]]", block.end())
            first_line = entry["known"].strip().split(". ")[0]
            print(f"entry removed, nothing of it is flagged now: {first_line[:100]}...")
            at = nxt if nxt >= 0 else len(text)
    out.append(text[at:])
    open(OPEN, "w").write("".join(out).rstrip("\n") + "\n")
    for key, f in sorted(figures.items()):
        if untouched(key):
            continue
        if f["outcome"] == "Unexplained" and key not in named:
            print("unnamed: " + line(f, measured).strip())


if __name__ == "__main__":
    main()

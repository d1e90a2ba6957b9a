"""What Ray costs per run: a 1,000-run grid (thread-test, 100 seeds x 10
schedulers, 200 ms each) on this machine's cores, then as Ray tasks on a
local Ray cluster of the same cores; checks both give the same rows and
prints the wall times and the overhead per task.

    pip install ./python pandas ray
    python examples/python/ray_overhead.py
"""

import os
import time

import ray

import schedlab

GRID = {"seed": "1,2,...,100"}
OPTIONS = {"duration": "200ms", "params": {"threads": 8}}


def timed(backend):
    start = time.monotonic()
    frame = schedlab.sweep("thread-test", GRID, backend=backend, progress=False, **OPTIONS)
    return frame, time.monotonic() - start


def main():
    cpus = os.cpu_count()
    local, t_local = timed("local")
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    try:
        timed("ray")  # the workers' first start is not the per-task cost
        remote, t_ray = timed("ray")
    finally:
        ray.shutdown()
    assert local.equals(remote), "the backends disagree"
    runs = len(local)
    print(f"{runs} runs on {cpus} cores: local {t_local:.2f} s ({t_local / runs * 1e3:.2f} ms/run),"
          f" Ray {t_ray:.2f} s ({t_ray / runs * 1e3:.2f} ms/run)")
    overhead = (t_ray - t_local) * cpus / runs
    print(f"Ray's overhead: {overhead * 1e3:.2f} ms of a core per task")


if __name__ == "__main__":
    main()

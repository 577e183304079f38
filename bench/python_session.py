#!/usr/bin/env python3
"""The Python package's costs, measured side by side in one run (a benchmark, not a test):

1. sess.run overhead: sess.run() timed from Python against one C++ run timed inside the library
   (sess.benchmark(runs=1), the loop `lowbit bench` uses), alternating run by run so that drift in
   the host's speed falls on both alike; the medians of each, and of the per-pair differences;
   target <= 3%.
2. Python threads on one session (threads=1 each): aggregate runs/s of 4 threads against 1;
   target >= 1.7x on 2 cores.

Usage: PYTHONPATH=build/release/python /usr/bin/python3 bench/python_session.py [--model resnet18]
       [--precision int8] [--runs 60] [--rounds 3]
"""
import argparse
import statistics
import threading
import time

import numpy as np

import lowbit


def py_runs(sess, feed, n):
    ms = []
    for _ in range(n):
        t0 = time.perf_counter()
        sess.run(None, feed)
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def throughput(sess, feed, threads, per_thread):
    start = threading.Barrier(threads + 1)

    def work():
        start.wait()
        for _ in range(per_thread):
            sess.run(None, feed)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    return threads * per_thread / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--precision", default="int8")
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    sess = lowbit.InferenceSession(a.model, precision=a.precision, threads=1)
    inp = sess.get_inputs()[0]
    feed = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    py_runs(sess, feed, 5)
    py_ms, cpp_ms = [], []
    for r in range(a.rounds):
        p_round, c_round = [], []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            sess.run(None, feed)
            p_round.append((time.perf_counter() - t0) * 1e3)
            c_round.append(sess.benchmark(runs=1, warmup=0)["median_ms"])
        p, c = statistics.median(p_round), statistics.median(c_round)
        print(f"round {r}: sess.run median {p:.3f} ms, C++ run median {c:.3f} ms: overhead {100 * (p / c - 1):+.2f}%")
        py_ms += p_round
        cpp_ms += c_round
    p, c = statistics.median(py_ms), statistics.median(cpp_ms)
    d = statistics.median(x - y for x, y in zip(py_ms, cpp_ms))
    print(f"{a.model} {a.precision} (1 thread, {len(py_ms)} pairs): sess.run {p:.3f} ms vs C++ {c:.3f} ms: "
          f"overhead {100 * (p / c - 1):+.2f}%, median per-pair difference {1e3 * d:+.1f} us "
          f"({100 * d / c:+.2f}%) (target <= 3%)")
    per = max(4, a.runs // 4)
    ones, fours = [], []
    for r in range(a.rounds):
        one = throughput(sess, feed, 1, per * 2)
        four = throughput(sess, feed, 4, per)
        ones.append(one)
        fours.append(four)
        print(f"round {r}: 1 thread {one:.1f} runs/s, 4 threads {four:.1f} runs/s: {four / one:.2f}x")
    one, four = statistics.median(ones), statistics.median(fours)
    print(f"4 Python threads on one session vs 1: {four / one:.2f}x aggregate (target >= 1.7x on 2 cores)")


if __name__ == "__main__":
    main()

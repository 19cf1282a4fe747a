#!/usr/bin/env python3
"""net_roofline.py - the network's roofline by hardware counters, from
`ncu --csv --page raw` over `bench-net --profile B` (bench/net-roofline.sh).

bench-net's profile section runs three plans ten times each, in the order
of PLANS. Each run starts with the stem kernel, so runs are cut there; the
first run of each plan is read, and its kernel count checked. Per plan (one run, time-weighted over its kernels): time with each
kernel alone, DRAM bytes a tile, DRAM TB/s, SMs active, SM busy
(instructions issued of peak), warps active; with --kernels, each kernel.

  net_roofline.py NCU_CSV [--batch 64] [--kernels]
"""
import argparse
import csv
import sys

TIME = "gpu__time_duration.sum"
DRAM = "dram__bytes.sum"
ACTIVE = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
BUSY = "sm__instruction_throughput.avg.pct_of_peak_sustained_active"
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"
PLANS = (("fused fp16", 46), ("blocks fp16", 21), ("blocks fp16all", 21))
RUNS_A_PLAN = 10   # bench_net.c's profile loop


def read_launches(path):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    head = rows[0]
    want = {n: head.index(n) for n in ("Kernel Name", TIME, DRAM, ACTIVE, BUSY, WARPS)}
    out = []
    for r in rows[2:]:       # rows[1] holds the units
        if len(r) < len(head) or not r[0].isdigit():   # a cut-off last row too
            continue
        k = {n: r[i] for n, i in want.items()}
        for n in (TIME, DRAM, ACTIVE, BUSY, WARPS):
            k[n] = float(k[n].replace(",", ""))
        out.append(k)
    return out


def split_runs(launches):
    runs, cur = [], None
    for k in launches:
        if "k_stem" in k["Kernel Name"]:
            if cur:
                runs.append(cur)
            cur = []
        if cur is not None:
            cur.append(k)
    if cur:
        runs.append(cur)
    return runs


def first_runs(runs):
    """The first run of each plan, or exit if the section is not as expected."""
    out = {}
    for p, (name, kernels) in enumerate(PLANS):
        i = p * RUNS_A_PLAN
        if i >= len(runs):
            sys.exit("net_roofline: %d runs in the CSV; %s's first (run %d) is missing"
                     % (len(runs), name, i))
        if len(runs[i]) != kernels:
            sys.exit("net_roofline: run %d (%s) has %d kernels, expected %d"
                     % (i, name, len(runs[i]), kernels))
        out[name] = runs[i]
    return out


def summary(run, batch):
    t = sum(k[TIME] for k in run)
    b = sum(k[DRAM] for k in run)
    w = lambda n: sum(k[n] * k[TIME] for k in run) / t
    return (len(run), t / 1e6, b / batch / 1e6, b / t / 1e3, w(ACTIVE), w(BUSY), w(WARPS))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--kernels", action="store_true")
    a = ap.parse_args()
    full = first_runs(split_runs(read_launches(a.csv)))
    print("plan            kernels  ms alone  DRAM MB/tile   TB/s  SM active  SM busy  warps")
    for n, r in full.items():
        print("%-15s %7d %9.3f %13.2f %6.2f %9.1f%% %7.1f%% %5.1f%%" % ((n,) + summary(r, a.batch)))
    if a.kernels:
        for n, r in full.items():
            print("\n" + n)
            for k in r:
                print("  %-42s %7.1f us %7.1f MB  active %5.1f%%  busy %5.1f%%  warps %5.1f%%"
                      % (k["Kernel Name"][:42], k[TIME] / 1e3, k[DRAM] / 1e6,
                         k[ACTIVE], k[BUSY], k[WARPS]))


if __name__ == "__main__":
    main()

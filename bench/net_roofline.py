#!/usr/bin/env python3
"""net_roofline.py - the network's roofline by hardware counters, from
`ncu --csv --page raw` over `bench-net --profile B` (bench/net-roofline.sh).

bench-net's profile section runs three plans ten times each: fused fp16
(46 kernels), blocks fp16 and blocks fp16all (21 each). Each run starts
with the stem kernel, so runs are cut there and named by their length and
order. Per plan (one run, time-weighted over its kernels): time with each
kernel alone, DRAM bytes a tile, DRAM TB/s, SMs active, SM busy
(instructions issued of peak), warps active; with --kernels, each kernel.

  net_roofline.py NCU_CSV [--batch 64] [--kernels]
"""
import argparse
import csv

TIME = "gpu__time_duration.sum"
DRAM = "dram__bytes.sum"
ACTIVE = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
BUSY = "sm__instruction_throughput.avg.pct_of_peak_sustained_active"
WARPS = "sm__warps_active.avg.pct_of_peak_sustained_active"


def read_launches(path):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    head = rows[0]
    want = {n: head.index(n) for n in ("Kernel Name", TIME, DRAM, ACTIVE, BUSY, WARPS)}
    out = []
    for r in rows[2:]:       # rows[1] holds the units
        if not r or not r[0].isdigit():
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


def plan_names(runs):
    """Full runs in order: fused fp16, blocks fp16, blocks fp16all."""
    names, seen_blocks = [], 0
    for r in runs:
        if len(r) >= 40:
            names.append("fused fp16")
        else:
            names.append("blocks fp16" if seen_blocks < 10 else "blocks fp16all")
            seen_blocks += 1
    return names


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
    runs = split_runs(read_launches(a.csv))
    names = plan_names(runs)
    full = {}
    for n, r in zip(names, runs):
        if n not in full and (len(r) == 46 or len(r) == 21):
            full[n] = r
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

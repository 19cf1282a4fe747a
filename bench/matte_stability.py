#!/usr/bin/env python3
"""matte_stability.py - how much a matte moves from frame to frame against
the picture it was made from (a benchmark, not a test; numbers go to
docs/notes/temporal.md).

    bench/matte_stability.py SOURCE MATTE [--cut N --fresh MATTE2]

Reads both videos as 8-bit gray at the matte's size (ffmpeg CLI) and prints:
  picture   mean |Y_t - Y_t-1| over all pixels and frame pairs;
  matte     mean |M_t - M_t-1| over all pixels and frame pairs;
  still     mean |M_t - M_t-1| where the picture is still (|dY| <= 2):
            flicker a viewer sees on a motionless person (picture_still: the
            picture's own change there);
  moving    mean |M_t - M_t-1| where it is not (the matte must follow);
with --raw MATTE0 (the clip's matte without the filter), lag: mean
|M - M0| where the picture moves (how far the filter holds the matte back);
with --cut N (the first frame of a new shot) the frame pair across the cut
is left out, and with --fresh MATTE2 (the same tool run on the new shot
alone) the mean |diff| of the three frames from N on against it: what of
the previous shot leaks across the cut ("ghost").
"""
import argparse
import json
import subprocess
import sys


def probe_size(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=width,height", "-of", "json", path],
                         check=True, capture_output=True, text=True).stdout
    s = json.loads(out)["streams"][0]
    return s["width"], s["height"]


def frames(path, w, h):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", f"scale={w}:{h}:flags=area",
                          "-f", "rawvideo", "-pix_fmt", "gray", "-"],
                         check=True, capture_output=True).stdout
    n = w * h
    return [raw[i:i + n] for i in range(0, len(raw) - n + 1, n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("matte")
    ap.add_argument("--cut", type=int, default=-1)
    ap.add_argument("--fresh")
    ap.add_argument("--raw", help="the same clip's matte without temporal filtering")
    a = ap.parse_args()
    w, h = probe_size(a.matte)
    ys, ms = frames(a.source, w, h), frames(a.matte, w, h)
    if len(ys) != len(ms):
        sys.exit(f"matte_stability: {len(ys)} source frames, {len(ms)} matte frames")
    pic = mat = still = moving = pic_still = 0
    n_all = n_still = n_moving = 0
    for t in range(1, len(ys)):
        if t == a.cut:
            continue
        y0, y1, m0, m1 = ys[t - 1], ys[t], ms[t - 1], ms[t]
        for p in range(w * h):
            dy = abs(y1[p] - y0[p])
            dm = abs(m1[p] - m0[p])
            pic += dy
            mat += dm
            if dy <= 2:
                still += dm
                pic_still += dy
                n_still += 1
            else:
                moving += dm
                n_moving += 1
        n_all += w * h
    res = {"frames": len(ms), "picture": pic / n_all, "matte": mat / n_all,
           "still": still / max(n_still, 1), "picture_still": pic_still / max(n_still, 1), "moving": moving / max(n_moving, 1),
           "still_share": n_still / n_all}
    if a.raw:
        raw = frames(a.raw, w, h)
        lag = n_lag = 0
        for t in range(1, len(ys)):
            for p in range(w * h):
                if abs(ys[t][p] - ys[t - 1][p]) > 2:
                    lag += abs(ms[t][p] - raw[t][p])
                    n_lag += 1
        res["lag"] = lag / max(n_lag, 1)
    if a.fresh and a.cut >= 0:
        fresh = frames(a.fresh, w, h)
        ghost = []
        for k in range(3):
            m, f = ms[a.cut + k], fresh[k]
            ghost.append(sum(abs(m[p] - f[p]) for p in range(w * h)) / (w * h))
        res["ghost"] = ghost
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in res.items()}))


if __name__ == "__main__":
    main()

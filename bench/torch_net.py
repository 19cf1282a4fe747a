#!/usr/bin/env python3
"""torch_net.py - the MediaPipe selfie segmentation network built in PyTorch
from the same tflite file our CUDA engine runs, for `make bench-gpu`.

The tflite flatbuffer is parsed here with numpy and a small hand-written
flatbuffer reader (no TensorFlow): float16 weights behind DEQUANTIZE are
converted, and the op list becomes a PyTorch module that runs it in order
(CONV_2D / DEPTHWISE_CONV_2D with TFLite's SAME padding, HARD_SWISH, RELU,
LOGISTIC, AVERAGE_POOL_2D / MEAN, ADD, MUL, RESIZE_BILINEAR with
half_pixel_centers, mediapipe's Convolution2DTransposeBias).

  torch_net.py --model models/selfie_segmentation.tflite \
      [--check DIR]      compare with our fp32 output DIR/out.f32 on DIR/in.f32
      [--ours JSON]      bench-net's JSON lines: print ours / PyTorch ratios
      [--batches 1,8,32,64,128,256] [--compile-batches 64,256] [--iters 30]
      [--modes graph,default,reduce-overhead,max-autotune]

Timing: fp16, channels_last, cudnn.benchmark, CUDA events around each
forward after a warm-up, median. Eager at every batch; at --compile-batches
every other way PyTorch offers to run it faster, so that ours is compared
with the best of them, not a convenient one: eager captured in a CUDA graph
("graph"), and torch.compile (inductor) in its modes "default",
"reduce-overhead" (CUDA graphs) and "max-autotune" (Triton autotuning and
CUDA graphs; minutes a shape). The summary prints, per batch, the fastest
PyTorch way against ours.
"""
import argparse
import json
import struct
import sys
import time

import numpy as np

# ---- flatbuffer reading ----


class FB:
    def __init__(self, buf):
        self.b = buf

    def u8(self, o): return self.b[o]
    def i32(self, o): return struct.unpack_from('<i', self.b, o)[0]
    def u32(self, o): return struct.unpack_from('<I', self.b, o)[0]

    def ref(self, o): return o + self.u32(o)

    def table(self, o):
        """field(i) -> absolute offset of field i of the table at o, or None"""
        vt = o - self.i32(o)
        vlen = struct.unpack_from('<H', self.b, vt)[0]

        def field(i):
            if 4 + 2 * i >= vlen:
                return None
            x = struct.unpack_from('<H', self.b, vt + 4 + 2 * i)[0]
            return o + x if x else None
        return field

    def vec(self, o):
        o = self.ref(o)
        return o + 4, self.u32(o)

    def ivec(self, o):
        p, n = self.vec(o)
        return [self.i32(p + 4 * k) for k in range(n)]

    def string(self, o):
        p, n = self.vec(o)
        return bytes(self.b[p:p + n]).decode()


BUILTIN = {0: 'ADD', 1: 'AVERAGE_POOL_2D', 3: 'CONV_2D', 4: 'DEPTHWISE_CONV_2D',
           6: 'DEQUANTIZE', 14: 'LOGISTIC', 18: 'MUL', 19: 'RELU', 23: 'RESIZE_BILINEAR',
           40: 'MEAN', 117: 'HARD_SWISH'}


def load_tflite(path):
    b = open(path, 'rb').read()
    fb = FB(b)
    M = fb.table(fb.ref(0))
    codes = []
    p, n = fb.vec(M(1))
    for i in range(n):
        t = fb.table(fb.ref(p + 4 * i))
        dep = fb.u8(t(0)) if t(0) else 0
        bc = fb.i32(t(3)) if t(3) else 0
        custom = fb.string(t(1)) if t(1) else None
        code = max(dep, bc)
        codes.append(custom if custom else BUILTIN.get(code, 'OP%d' % code))
    bufs = []
    p, n = fb.vec(M(4))
    for i in range(n):
        t = fb.table(fb.ref(p + 4 * i))
        if t(0):
            q, m = fb.vec(t(0))
            bufs.append(bytes(b[q:q + m]))
        else:
            bufs.append(b'')
    sp, _ = fb.vec(M(2))
    S = fb.table(fb.ref(sp))
    tensors = []
    tp, tn = fb.vec(S(0))
    for i in range(tn):
        t = fb.table(fb.ref(tp + 4 * i))
        shape = fb.ivec(t(0)) if t(0) else []
        typ = fb.u8(t(1)) if t(1) else 0
        buf = fb.u32(t(2)) if t(2) else 0
        data = None
        raw = bufs[buf] if buf < len(bufs) else b''
        if raw:
            dt = {0: np.float32, 1: np.float16, 2: np.int32}.get(typ)
            if dt is None:
                raise SystemExit('tensor %d: unsupported type %d' % (i, typ))
            data = np.frombuffer(raw, dtype=dt).reshape(shape)
        tensors.append({'shape': shape, 'data': data})
    inputs, outputs = fb.ivec(S(1)), fb.ivec(S(2))
    ops = []
    op_, on = fb.vec(S(3))
    for i in range(on):
        t = fb.table(fb.ref(op_ + 4 * i))
        name = codes[fb.u32(t(0)) if t(0) else 0]
        ins, outs = fb.ivec(t(1)), fb.ivec(t(2))
        opt = fb.table(fb.ref(t(4))) if t(4) else (lambda k: None)

        def obyte(k, d=0):
            a = opt(k)
            return fb.u8(a) if a is not None else d

        def oint(k, d=0):
            a = opt(k)
            return fb.i32(a) if a is not None else d
        o = {'name': name, 'in': ins, 'out': outs[0]}
        if name == 'CONV_2D':
            o.update(pad=obyte(0), sw=oint(1, 1), sh=oint(2, 1), act=obyte(3),
                     dw=oint(4, 1), dh=oint(5, 1))
        elif name == 'DEPTHWISE_CONV_2D':
            o.update(pad=obyte(0), sw=oint(1, 1), sh=oint(2, 1), mult=oint(3, 1),
                     act=obyte(4), dw=oint(5, 1), dh=oint(6, 1))
        elif name == 'AVERAGE_POOL_2D':
            o.update(pad=obyte(0), sw=oint(1, 1), sh=oint(2, 1), fw=oint(3), fh=oint(4),
                     act=obyte(5))
        elif name in ('ADD', 'MUL'):
            o.update(act=obyte(0))
        elif name == 'RESIZE_BILINEAR':
            o.update(align=obyte(2), half=obyte(3))
        elif name == 'Convolution2DTransposeBias':
            q, m = fb.vec(t(5))
            pad, sw, sh = struct.unpack_from('<iii', b, q)
            o.update(pad=pad, sw=sw, sh=sh)
        ops.append(o)
    # DEQUANTIZE of a constant: the output tensor becomes that constant, float32
    for o in ops:
        if o['name'] == 'DEQUANTIZE':
            tensors[o['out']]['data'] = tensors[o['in'][0]]['data'].astype(np.float32)
    ops = [o for o in ops if o['name'] != 'DEQUANTIZE']
    return tensors, ops, inputs[0], outputs[0]


# ---- the network in PyTorch ----

def same_pad(size, k, s, d):
    out = (size + s - 1) // s
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def build(torch, tensors, ops, inp, out, in_hw):
    F = torch.nn.functional

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.params = torch.nn.ParameterList()
            self.plan = []
            hw = {inp: in_hw}
            for o in ops:
                n = o['name']
                x = o['in'][0]
                step = dict(o)
                if n in ('CONV_2D', 'DEPTHWISE_CONV_2D'):
                    w = tensors[o['in'][1]]['data']
                    b = tensors[o['in'][2]]['data'] if len(o['in']) > 2 and o['in'][2] >= 0 else None
                    if n == 'CONV_2D':
                        wt = torch.tensor(w).permute(0, 3, 1, 2).contiguous()   # OHWI -> OIHW
                        groups = 1
                    else:
                        wt = torch.tensor(w).permute(3, 0, 1, 2).contiguous()   # 1HWC -> C1HW
                        groups = wt.shape[0] // o['mult']
                    k = wt.shape[2]
                    h, wd = hw[x]
                    if o['pad'] == 0:
                        pt, pb = same_pad(h, k, o['sh'], o['dh'])
                        pl, pr = same_pad(wd, wt.shape[3], o['sw'], o['dw'])
                    else:
                        pt = pb = pl = pr = 0
                    step.update(w=len(self.params), groups=groups, sym=(pt == pb and pl == pr),
                                padding=(pt, pb, pl, pr))
                    self.params.append(torch.nn.Parameter(wt, requires_grad=False))
                    self.params.append(torch.nn.Parameter(torch.tensor(b) if b is not None else
                                                          torch.zeros(wt.shape[0]), requires_grad=False))
                    oh = (h + pt + pb - ((k - 1) * o['dh'] + 1)) // o['sh'] + 1
                    ow = (wd + pl + pr - ((wt.shape[3] - 1) * o['dw'] + 1)) // o['sw'] + 1
                    hw[o['out']] = (oh, ow)
                elif n == 'Convolution2DTransposeBias':
                    w = tensors[o['in'][1]]['data']      # OHWI
                    b = tensors[o['in'][2]]['data']
                    wt = torch.tensor(w).permute(3, 0, 1, 2).contiguous()       # -> I O H W
                    step.update(w=len(self.params))
                    self.params.append(torch.nn.Parameter(wt, requires_grad=False))
                    self.params.append(torch.nn.Parameter(torch.tensor(b), requires_grad=False))
                    h, wd = hw[x]
                    if o['pad'] == 1:   # VALID
                        hw[o['out']] = ((h - 1) * o['sh'] + wt.shape[2], (wd - 1) * o['sw'] + wt.shape[3])
                        step['crop'] = (0, 0)
                    else:
                        th = max(wt.shape[2] - (h - 1) % o['sh'] - 1, 0)
                        tw = max(wt.shape[3] - (wd - 1) % o['sw'] - 1, 0)
                        hw[o['out']] = ((h - 1) * o['sh'] + wt.shape[2] - th,
                                        (wd - 1) * o['sw'] + wt.shape[3] - tw)
                        step['crop'] = (th // 2, tw // 2)
                elif n == 'RESIZE_BILINEAR':
                    hw[o['out']] = tuple(int(v) for v in tensors[o['out']]['shape'][1:3])
                    step['size'] = hw[o['out']]
                elif n in ('AVERAGE_POOL_2D', 'MEAN'):
                    h, wd = hw[x]
                    if n == 'AVERAGE_POOL_2D' and not (o['fh'] >= h and o['fw'] >= wd):
                        raise SystemExit('only global average pools are supported')
                    hw[o['out']] = (1, 1)
                else:
                    hw[o['out']] = hw[x] if hw[x] != (1, 1) else hw.get(o['in'][-1], (1, 1))
                    if n in ('ADD', 'MUL'):
                        a, b2 = hw[o['in'][0]], hw[o['in'][1]]
                        hw[o['out']] = a if a != (1, 1) else b2
                self.plan.append(step)
            self.inp, self.out = inp, out

        def forward(self, x):
            env = {self.inp: x}
            P = self.params
            for s in self.plan:
                n = s['name']
                a = env[s['in'][0]]
                if n in ('CONV_2D', 'DEPTHWISE_CONV_2D'):
                    w, b = P[s['w']], P[s['w'] + 1]
                    pt, pb, pl, pr = s['padding']
                    if s['sym']:
                        y = F.conv2d(a, w, b, (s['sh'], s['sw']), (pt, pl), (s['dh'], s['dw']), s['groups'])
                    else:
                        y = F.conv2d(F.pad(a, (pl, pr, pt, pb)), w, b, (s['sh'], s['sw']), 0,
                                     (s['dh'], s['dw']), s['groups'])
                    y = act(F, y, s['act'])
                elif n == 'Convolution2DTransposeBias':
                    y = F.conv_transpose2d(a, P[s['w']], P[s['w'] + 1], (s['sh'], s['sw']))
                    ct, cl = s['crop']
                    y = y[:, :, ct:, cl:] if (ct or cl) else y
                elif n == 'HARD_SWISH':
                    y = F.hardswish(a)
                elif n == 'RELU':
                    y = F.relu(a)
                elif n == 'LOGISTIC':
                    y = torch.sigmoid(a)
                elif n in ('AVERAGE_POOL_2D', 'MEAN'):
                    y = a.mean(dim=(2, 3), keepdim=True)
                elif n == 'ADD':
                    y = act(F, a + env[s['in'][1]], s['act'])
                elif n == 'MUL':
                    y = act(F, a * env[s['in'][1]], s['act'])
                elif n == 'RESIZE_BILINEAR':
                    y = F.interpolate(a, size=s['size'], mode='bilinear',
                                      align_corners=bool(s['align']))
                else:
                    raise SystemExit('op %s not supported' % n)
                env[s['out']] = y
            return env[self.out]
    return Net()


def act(F, y, a):
    if a == 1:
        return F.relu(y)
    if a == 2:
        return y.clamp(-1, 1)
    if a == 3:
        return y.clamp(0, 6)
    return y


# ---- timing ----

def time_model(torch, fn, x, iters):
    for _ in range(5):
        fn(x)
    torch.cuda.synchronize()
    ts = []
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        s.record()
        fn(x)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def graphed(torch, net, x):
    """Eager captured once in a CUDA graph: replaying it costs one launch."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            net(x)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        net(x)
    return lambda _x: graph.replay()


def compiled(torch, net, mode):
    """torch.compile in `mode`, from a clean slate: each mode compiles anew."""
    torch._dynamo.reset()
    return torch.compile(net, mode=mode)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', default='models/selfie_segmentation.tflite')
    ap.add_argument('--check')
    ap.add_argument('--ours')
    ap.add_argument('--batches', default='1,8,32,64,128,256')
    ap.add_argument('--compile-batches', default='64,256')
    ap.add_argument('--iters', type=int, default=30)
    ap.add_argument('--modes', default='graph,default,reduce-overhead,max-autotune')
    ap.add_argument('--json')
    args = ap.parse_args()
    import torch
    tensors, ops, inp, out = load_tflite(args.model)
    ishape = tensors[inp]['shape']
    h, w = ishape[1], ishape[2]
    net = build(torch, tensors, ops, inp, out, (h, w)).cuda().eval()
    failed = False
    dev = torch.cuda.get_device_name(0)
    print('torch_net: %s, %d ops, torch %s on %s' % (args.model, len(ops), torch.__version__, dev))
    if args.check:
        # exact float32 in PyTorch: cuDNN would use TF32 for float32 convs
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        xin = np.fromfile(args.check + '/in.f32', dtype=np.float32).reshape(1, h, w, 3)
        ours = np.fromfile(args.check + '/out.f32', dtype=np.float32).reshape(1, h, w)
        with torch.no_grad():
            x = torch.tensor(xin).permute(0, 3, 1, 2).cuda()
            ref32 = net.float()(x)[:, 0].cpu().numpy()
            net16 = net.half().to(memory_format=torch.channels_last)
            ref16 = net16(x.half().contiguous(memory_format=torch.channels_last))[:, 0].float().cpu().numpy()
        d32 = float(np.abs(ref32 - ours).max())
        d16 = float(np.abs(ref16 - ours).max())
        print('torch_net: check vs ours (fp32 fused): max |torch fp32 - ours| = %.3g, '
              'max |torch fp16 - ours| = %.3g, mask mean %.3f' % (d32, d16, float(ours.mean())))
        for name in ('out-unfused.f32', 'out-fp16.f32', 'out-blocks.f32', 'out-fp16-blocks.f32'):
            try:
                o2 = np.fromfile(args.check + '/' + name, dtype=np.float32).reshape(1, h, w)
                print('torch_net: max |torch fp32 - ours %s| = %.3g' % (name, float(np.abs(ref32 - o2).max())))
            except (OSError, ValueError):
                pass
        if d32 > 1e-3:
            print('torch_net: CHECK FAILED: PyTorch network differs from ours')
            failed = True
    torch.backends.cudnn.benchmark = True
    net = net.half().to(memory_format=torch.channels_last)
    batches = [int(v) for v in args.batches.split(',') if v]
    cbatches = [int(v) for v in args.compile_batches.split(',') if v]
    res = {}
    g = torch.Generator(device='cuda').manual_seed(1)
    with torch.no_grad():
        for b in batches:
            x = torch.rand(b, 3, h, w, device='cuda', generator=g).half().contiguous(
                memory_format=torch.channels_last)
            res[('eager', b)] = time_model(torch, net, x, args.iters)
        for mode in [m for m in args.modes.split(',') if m]:
            for b in cbatches:
                x = torch.rand(b, 3, h, w, device='cuda', generator=g).half().contiguous(
                    memory_format=torch.channels_last)
                t0 = time.time()
                fn = graphed(torch, net, x) if mode == 'graph' else compiled(torch, net, mode)
                fn(x)
                torch.cuda.synchronize()
                ct = time.time() - t0
                res[(mode, b)] = time_model(torch, fn, x, args.iters)
                print('torch_net: %s batch %d: ready in %.0f s, %.3f ms' % (mode, b, ct, res[(mode, b)]))
    ours = {}
    if args.ours:
        for line in open(args.ours):
            j = json.loads(line)
            ours[(j['batch'], j['precision'], j['variant'])] = j['ms_median']

    def best_ours(b, prec):
        # the faster of our fused variants (per-op fusion, block chains)
        t = [ours[k] for k in ((b, prec, 'fused'), (b, prec, 'blocks')) if k in ours]
        return min(t) if t else None
    print('%-6s %-16s %10s %12s %12s %12s %14s %14s' % (
        'batch', 'torch', 'ms/batch', 'tiles/s', 'ours fp16', 'ours/torch', 'ours fp16all',
        'fp16all/torch'))
    out_json = []
    for (mode, b), ms in sorted(res.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        o = best_ours(b, 'fp16')
        o2 = best_ours(b, 'fp16all')
        ratio = (ms / o) if o else float('nan')
        print('%-6d %-16s %10.3f %12.0f %12s %12s %14s %14s' % (
            b, mode, ms, b / ms * 1e3, '%.0f' % (b / o * 1e3) if o else '-',
            '%.2fx' % ratio if o else '-', '%.0f' % (b / o2 * 1e3) if o2 else '-',
            '%.2fx' % (ms / o2) if o2 else '-'))
        out_json.append({'bench': 'torch_net', 'gpu': dev, 'mode': mode, 'batch': b,
                         'precision': 'fp16', 'ms_median': ms, 'tiles_per_s': b / ms * 1e3,
                         'ours_fp16_ms': o, 'speedup_ours_over_torch': ratio})
    print('best PyTorch way per batch against ours (fp16, the faster of fused and blocks):')
    for b in sorted({b for (_, b) in res}):
        mode, ms = min(((m, t) for (m, bb), t in res.items() if bb == b), key=lambda kv: kv[1])
        o = best_ours(b, 'fp16')
        print('  batch %-4d best torch: %-16s %10.0f tiles/s   ours %10s tiles/s   ours/best %s' % (
            b, mode, b / ms * 1e3, '%.0f' % (b / o * 1e3) if o else '-',
            '%.2fx' % (ms / o) if o else '-'))
        out_json.append({'bench': 'torch_net_best', 'gpu': dev, 'mode': mode, 'batch': b,
                         'ms_median': ms, 'ours_fp16_ms': o,
                         'speedup_ours_over_best': (ms / o) if o else None})
    if args.json:
        with open(args.json, 'w') as f:
            for j in out_json:
                f.write(json.dumps(j) + '\n')
    if failed:
        sys.exit(1)


if __name__ == '__main__':
    main()

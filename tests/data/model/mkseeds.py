#!/usr/bin/env python3
"""mkseeds.py - writes the small crafted tflite files in tests/data/fuzz-seeds/.

Run from the repository root: python3 tests/data/model/mkseeds.py
No dependencies: a forward-laid-out flatbuffer writer (each table before its
children, so every uoffset is positive) following tensorflow/lite/schema/
schema.fbs. The files are tiny versions of the selfie network's op mix, used
as the fuzzer's starting corpus and by tests/t-model-graph.c.
"""
import math
import os
import struct

# ---- a minimal flatbuffer writer ----

class Table:
    def __init__(self, *fields):
        self.fields = fields  # (id, kind, value); kind: u8 i8 i32 u32 u64 ref


class Vec:
    def __init__(self, kind, items):
        self.kind, self.items = kind, items  # kind: i32 u8 ref


def s(text):
    return Vec('u8', list(text.encode()) + [])  # strings: u8 vector plus NUL


def serialize(root, ident=b'TFL3'):
    out = bytearray(8)
    out[4:8] = ident
    queue = [(0, root)]

    def align(n):
        while len(out) % n:
            out.append(0)

    def emit(obj):
        if isinstance(obj, Table):
            fields = sorted(obj.fields, key=lambda f: -{'u64': 8}.get(f[1], 4 if f[1] in ('i32', 'u32', 'ref') else 1))
            layout, off = [], 4
            for fid, kind, val in fields:
                size = {'u8': 1, 'i8': 1, 'i32': 4, 'u32': 4, 'ref': 4, 'u64': 8}[kind]
                while off % size:
                    off += 1
                layout.append((fid, kind, val, off))
                off += size
            obj_len = (off + 3) & ~3
            nslots = max([f[0] for f in fields], default=-1) + 1
            vt = [4 + 2 * nslots, obj_len] + [0] * nslots
            for fid, _, _, o in layout:
                vt[2 + fid] = o
            # vtable right before the table; the table starts 8-aligned
            align(2)
            vt_bytes = struct.pack('<%dH' % len(vt), *vt)
            pad = (-(len(out) + len(vt_bytes))) % 8
            out.extend(b'\0' * pad)
            vt_pos = len(out)
            out.extend(vt_bytes)
            pos = len(out)
            out.extend(b'\0' * obj_len)
            struct.pack_into('<i', out, pos, pos - vt_pos)
            for fid, kind, val, o in layout:
                if kind == 'ref':
                    queue.append((pos + o, val))
                else:
                    fmt = {'u8': '<B', 'i8': '<b', 'i32': '<i', 'u32': '<I', 'u64': '<Q'}[kind]
                    struct.pack_into(fmt, out, pos + o, val)
            return pos
        assert isinstance(obj, Vec)
        align(8 if obj.kind == 'u64' else 4)
        pos = len(out)
        out.extend(struct.pack('<I', len(obj.items)))
        if obj.kind == 'i32':
            out.extend(struct.pack('<%di' % len(obj.items), *obj.items))
        elif obj.kind == 'u8':
            out.extend(bytes(obj.items) + b'\0')
        else:
            for item in obj.items:
                queue.append((len(out), item))
                out.extend(b'\0\0\0\0')
        return pos

    while queue:
        slot, obj = queue.pop(0)
        pos = emit(obj)
        struct.pack_into('<I', out, slot, pos - slot)
    align(4)
    return bytes(out)

# ---- a tiny model builder ----

FLOAT32, FLOAT16, INT32 = 0, 1, 2


class Model:
    def __init__(self, old_codes=False):
        self.old_codes = old_codes  # only deprecated_builtin_code, as pre-2.4 files
        self.codes, self.tensors, self.ops, self.buffers = [], [], [], [Table()]
        self.ext = []  # (buffer index, bytes) stored after the flatbuffer

    def code(self, builtin, custom=None):
        key = (builtin, custom)
        if key not in self.codes:
            self.codes.append(key)
        return self.codes.index(key)

    def tensor(self, name, shape, ttype=FLOAT32, data=None, external=False):
        buf = 0
        if data is not None:
            buf = len(self.buffers)
            if external:
                self.buffers.append(None)
                self.ext.append((buf, data))
            else:
                self.buffers.append(Table((0, 'ref', Vec('u8', list(data)))))
        self.tensors.append(Table((0, 'ref', Vec('i32', shape)), (1, 'i8', ttype),
                                  (2, 'u32', buf), (3, 'ref', s(name))))
        return len(self.tensors) - 1

    def const(self, name, shape, ttype=FLOAT32, seed=1, external=False):
        n = math.prod(shape)
        vals = [((i * 37 + seed * 11) % 17 - 8) / 16.0 for i in range(n)]
        fmt = {FLOAT32: 'f', FLOAT16: 'e'}[ttype]
        return self.tensor(name, shape, ttype, struct.pack('<%d%s' % (n, fmt), *vals), external)

    def weights16(self, name, shape, seed):
        """fp16 constant behind a DEQUANTIZE, as in the mediapipe files."""
        raw = self.const(name + '_fp16', shape, FLOAT16, seed)
        out = self.tensor(name, shape)
        self.op(6, [raw], out)
        return out

    def op(self, builtin, ins, out, opt_type=0, opts=None, custom=None, custom_opts=None):
        code = self.code(builtin, custom)
        f = [(0, 'u32', code), (1, 'ref', Vec('i32', ins)), (2, 'ref', Vec('i32', [out]))]
        if opt_type:
            f += [(3, 'u8', opt_type), (4, 'ref', Table(*opts))]
        if custom_opts is not None:
            f.append((5, 'ref', Vec('u8', list(custom_opts))))
        self.ops.append(Table(*f))
        return out

    def build(self, inp, outp):
        codes = []
        for builtin, custom in self.codes:
            f = [(0, 'i8', min(builtin, 127))] if self.old_codes else [(0, 'i8', min(builtin, 127)), (3, 'i32', builtin)]
            if custom:
                f.append((1, 'ref', s(custom)))
            f.append((2, 'i32', 1))
            codes.append(Table(*f))
        sub = Table((0, 'ref', Vec('ref', self.tensors)), (1, 'ref', Vec('i32', [inp])),
                    (2, 'ref', Vec('i32', [outp])), (3, 'ref', Vec('ref', self.ops)),
                    (4, 'ref', s('main')))
        # external buffers: offset/size patched after the flatbuffer is laid out
        bufs = list(self.buffers)
        for i, _ in self.ext:
            bufs[i] = Table((1, 'u64', 0x7fffffff00 + i), (2, 'u64', 0x7fffffff00 + i))
        root = Table((0, 'u32', 3), (1, 'ref', Vec('ref', codes)), (2, 'ref', Vec('ref', [sub])),
                     (3, 'ref', s('vrseg test seed')), (4, 'ref', Vec('ref', bufs)))
        data = bytearray(serialize(root))
        for i, blob in self.ext:
            while len(data) % 16:
                data.append(0)
            for marker, value in ((0x7fffffff00 + i, len(data)),):
                m = struct.pack('<Q', marker)
                at = data.index(m)
                struct.pack_into('<Q', data, at, value)          # offset
                at2 = data.index(m, at + 8)
                struct.pack_into('<Q', data, at2, len(blob))     # size
            data.extend(blob)
        return bytes(data)

# ---- the seeds ----

def conv_opts(pad, stride, act=0):
    return [(0, 'u8', pad), (1, 'i32', stride), (2, 'i32', stride), (3, 'u8', act)]


def tiny(pool='avg', external=False, old_codes=False, extra=None):
    """8x8x3 -> 8x8x1 with every op kind of the selfie network."""
    m = Model(old_codes)
    x = m.tensor('input', [1, 8, 8, 3])
    w0 = m.weights16('conv0/w', [4, 3, 3, 3], 1)
    b0 = m.const('conv0/b', [4], FLOAT32, 2, external)
    c0 = m.op(3, [x, w0, b0], m.tensor('conv0', [1, 4, 4, 4]), 1, conv_opts(0, 2))
    h0 = m.op(117, [c0], m.tensor('hswish0', [1, 4, 4, 4]))
    dw = m.weights16('dw/w', [1, 3, 3, 4], 3)
    db = m.weights16('dw/b', [4], 4)
    d0 = m.op(4, [h0, dw, db], m.tensor('dw', [1, 2, 2, 4]), 2,
              [(0, 'u8', 0), (1, 'i32', 2), (2, 'i32', 2), (3, 'i32', 1), (4, 'u8', 1)])
    if pool == 'avg':
        p0 = m.op(1, [d0], m.tensor('pool', [1, 1, 1, 4]), 5,
                  [(0, 'u8', 1), (1, 'i32', 2), (2, 'i32', 2), (3, 'i32', 2), (4, 'i32', 2)])
    else:
        axes = m.tensor('axes', [2], INT32, struct.pack('<2i', 1, 2))
        p0 = m.op(40, [d0, axes], m.tensor('mean', [1, 1, 1, 4]), 27, [(0, 'u8', 1)])
    g0 = m.op(14, [p0], m.tensor('gate', [1, 1, 1, 4]))
    m0 = m.op(18, [d0, g0], m.tensor('mul', [1, 2, 2, 4]), 21, [(0, 'u8', 0)])
    size = m.tensor('size', [2], INT32, struct.pack('<2i', 4, 4))
    r0 = m.op(23, [m0, size], m.tensor('resize', [1, 4, 4, 4]), 15, [(3, 'u8', 1)])
    a0 = m.op(0, [r0, h0], m.tensor('add', [1, 4, 4, 4]), 11, [(0, 'u8', 1)])
    if extra:
        a0 = extra(m, a0)
    tw = m.const('tconv/w', [1, 2, 2, 4], FLOAT32, 5)
    tb = m.const('tconv/b', [1], FLOAT32, 6)
    t0 = m.op(32, [a0, tw, tb],
              m.tensor('tconv', [1, 8, 8, 1]), custom='Convolution2DTransposeBias',
              custom_opts=struct.pack('<3i', 1, 2, 2))
    y = m.op(14, [t0], m.tensor('output', [1, 8, 8, 1]))
    return m.build(x, y)


def sub_op(m, a):
    return m.op(41, [a, a], m.tensor('sub', [1, 4, 4, 4]))


def relu(m, a):
    return m.op(19, [a], m.tensor('relu', [1, 4, 4, 4]))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dst = os.path.join(here, '..', 'fuzz-seeds')
    os.makedirs(dst, exist_ok=True)
    seeds = {
        'tiny.tflite': tiny(),
        'tiny-mean.tflite': tiny(pool='mean'),
        'tiny-oldcodes.tflite': tiny(old_codes=True, extra=relu),
        'tiny-external.tflite': tiny(external=True),
        'tiny-sub.tflite': tiny(extra=sub_op),
    }
    for name, data in seeds.items():
        with open(os.path.join(dst, name), 'wb') as f:
            f.write(data)
        print('%s: %d bytes' % (name, len(data)))


if __name__ == '__main__':
    main()

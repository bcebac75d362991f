#!/usr/bin/env python3
"""Calibrate trnsim's GPU baseline on a real GPU (docs/gpu.md#calibrating-on-a-real-gpu).

Run it on your own GPU machine with PyTorch and CUDA; trnsim's CI never runs it.

    trnsim run examples/llama3-1b-decode.yaml --gpu-ops ops.json     # the workload's kernel shapes
    python3 scripts/gpu-calibrate.py ops.json -o gpu-calibration.json   # time them here, fit, write
    # then in the run config:  workload: {model: {gpu_calibration: gpu-calibration.json}}

It times every kernel shape of the workload (and the reference shapes gpu.Fit's
rows use, so every constant can be fitted: --no-reference leaves them out) on
the local GPU with CUDA events (warm-up runs, then back-to-back repetitions: the
mean per kernel includes its launch and the gap to the next, as the model's
LaunchUs does), and solves MatmulEff, StreamEff, GEMVEff, AttnEff and LaunchUs
from the timings the way gpu.FitTimings does (gpu/calib.go): LaunchUs is the
empty kernel's mean time; each efficiency is the one at which the model
reproduces the summed time of the shapes it decides, the shapes classed by the
bound the model gives them, iterated to a fixed point. A constant with no shape
longer than twice the launch keeps trnsim's default; the file's "fit" says which.

--fit TIMINGS.json fits a timing table (a list of rows, or a calibration
file's "timings") without a GPU or torch, to check the fit or redo it.
"""

import argparse
import datetime
import json
import math
import sys

FORMAT = "trnsim-gpu-calibration/1"
OPS_FORMAT = "trnsim-gpu-ops/1"
MIN_WORK_SHARE = 2.0  # a timing counts in a fit when at least twice the launch (gpu.minWorkShare)
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4, "fp8e4": 1, "fp8e5": 1, "fp8e3": 1,
               "int32": 4, "uint32": 4, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1}  # isa's dtypes
CONSTANTS = ["matmul_eff", "stream_eff", "gemv_eff", "attn_eff", "launch_us"]


# ---------------------------------------------------------------- the model (gpu/model.go), no torch


def peak(dev, dtype):
    """A device's dense peak FLOP/s for matmuls in dtype (bf16's where it has no rate: Device.Peak)."""
    p = dev["peak_tflops"]
    return (p[dtype] if dtype in p else p["bf16"]) * 1e12


def wave_eff(dev, tiles):
    """The share of SM time a grid of tiles uses (Device.waveEff)."""
    if tiles <= 0:
        return 1.0
    sms = dev["sms"]
    waves = (tiles + sms - 1) // sms
    return tiles / (waves * sms)


def matmul_work(dev, row):
    """A GEMM's compute and memory time at full efficiency, no launch (Calibration.MatmulTime)."""
    m, k, n, batch = row["m"], row["k"], row["n"], max(row.get("batch", 1), 1)
    dt = row["dtype"]
    out = row.get("out_dtype") or dt
    tile_m = dev["tile_m"]
    while tile_m > 16 and tile_m // 2 >= m:
        tile_m //= 2
    tile_n = dev["tile_n"]
    tm, tn = (m + tile_m - 1) // tile_m, (n + tile_n - 1) // tile_n
    tiles = tm * tn * batch
    flops = 2.0 * (tm * tile_m) * (tn * tile_n) * k * batch
    compute = flops / (peak(dev, dt) * wave_eff(dev, tiles))
    nbytes = batch * ((m * k + k * n) * DTYPE_BYTES[dt] + m * n * DTYPE_BYTES[out])
    memory = nbytes / (dev["hbm_gbps"] * 1e9)
    return compute, memory


def fit(dev, rows, start):
    """Solve the constants from timings on dev, as gpu.FitTimings does; returns (constants, notes)."""
    c = dict(start)
    notes = {}
    launches = [(r["time_s"], max(r.get("count", 1), 1)) for r in rows if r["kind"] == "launch" and r.get("time_s", 0) > 0]
    if launches:
        n = sum(w for _, w in launches)
        c["launch_us"] = sum(t * w for t, w in launches) / n * 1e6
        notes["launch_us"] = "the mean of %.0f empty kernels" % n
    else:
        notes["launch_us"] = "kept: no empty-kernel timing"
    for _ in range(20):
        launch = c["launch_us"] * 1e-6
        sums = {k: [0.0, 0.0, 0] for k in ("matmul_eff", "gemv_eff", "stream_eff", "attn_eff")}

        def add(key, work, net):
            s = sums[key]
            s[0] += work
            s[1] += net
            s[2] += 1

        for r in rows:
            t = r.get("time_s", 0)
            if t <= 0 or t < MIN_WORK_SHARE * launch:
                continue
            w = max(r.get("count", 1), 1)
            net = (t - launch) * w
            kind = r["kind"]
            if kind == "matmul":
                a, b = matmul_work(dev, r)
                if a / c["matmul_eff"] >= b / c["gemv_eff"]:
                    add("matmul_eff", a * w, net)
                else:
                    add("gemv_eff", b * w, net)
            elif kind == "attention":
                a = r["flops"] / peak(dev, r["dtype"])
                b = r["bytes"] / (dev["hbm_gbps"] * 1e9)
                if a / c["attn_eff"] >= b / c["stream_eff"]:
                    add("attn_eff", a * w, net)
                else:
                    add("stream_eff", b * w, net)
            elif kind == "stream":
                add("stream_eff", r["bytes"] / (dev["hbm_gbps"] * 1e9) * w, net)
            elif kind != "launch":
                raise SystemExit("%s: unknown kind %r (kinds: matmul, attention, stream, launch)" % (r.get("op"), kind))
        nxt = dict(c)
        for key, (work, net, n) in sums.items():
            if n == 0 or net <= 0 or work <= 0:
                nxt[key] = start[key]
                notes[key] = "kept: no timing it decides longer than twice the launch"
            else:
                nxt[key] = work / net
                notes[key] = "fitted on %d shapes (%.4g s of their time)" % (n, net)
        if nxt == c:
            break
        c = nxt
    return c, notes


# ---------------------------------------------------------------- timing on the GPU (torch)

PRESET_BY_NAME = [  # (substrings of torch.cuda.get_device_name(), preset)
    (("H100",), "h100"),
    (("H200",), "h200"),
    (("B200",), "b200"),
    (("A100", "40GB"), "a100-40gb"),
    (("A100", "80GB"), "a100-80gb"),
    (("A800",), "a800-pcie"),
]


def detect_preset(name):
    for parts, preset in PRESET_BY_NAME:
        if all(p in name for p in parts):
            return preset
    return None


def torch_dtype(torch, row, notes, key="dtype"):
    """The torch dtype a row's kernel runs in; a dtype the script has no kernel for runs in bf16,
    and the row then says so (its dtype becomes bf16, so the fit counts the bytes that were moved)."""
    table = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    name = row.get(key) or "bf16"
    if name in table:
        return table[name]
    notes.add("%s operands are timed in bf16 (the script has no %s kernel)" % (name, name))
    row[key] = "bf16"
    row["source"] = "timed in bf16: the script has no %s kernel" % name
    return torch.bfloat16


def time_kernel(torch, fn, min_total_s=0.02, warmup=3):
    """Mean seconds per call of fn, back to back, after warm-up (CUDA events)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 10
    while True:
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        total = start.elapsed_time(end) / 1e3
        if total >= min_total_s or reps >= 100000:
            return total / reps
        reps = min(100000, max(reps * 2, int(reps * min_total_s / max(total, 1e-9)) + 1))


def make_kernel(torch, row, notes):
    """A callable running the row's kernel on the GPU."""
    F = torch.nn.functional
    dev = "cuda"
    kind = row["kind"]
    if kind == "launch":
        x = torch.zeros(1, device=dev)
        return lambda: x.add_(1)
    if kind == "matmul":
        dt = torch_dtype(torch, row, notes)
        m, k, n, batch = row["m"], row["k"], row["n"], max(row.get("batch", 1), 1)
        if batch == 1:
            a = torch.randn(m, k, device=dev, dtype=dt)
            w = torch.randn(n, k, device=dev, dtype=dt)
            return lambda: F.linear(a, w)
        a = torch.randn(batch, m, k, device=dev, dtype=dt)
        b = torch.randn(batch, k, n, device=dev, dtype=dt)
        return lambda: torch.bmm(a, b)
    if kind == "attention":
        dt = torch_dtype(torch, row, notes)
        b, h, hkv, s, t, d = row["batch"], row["heads"], row["kv_heads"], row["q_len"], row["kv_len"], row["head_dim"]
        q = torch.randn(b, h, s, d, device=dev, dtype=dt)
        kk = torch.randn(b, hkv, t, d, device=dev, dtype=dt)
        v = torch.randn(b, hkv, t, d, device=dev, dtype=dt)
        causal = bool(row.get("causal")) and s == t  # a decode step's queries see the whole cache
        if row.get("causal") and s != t and s > 1:
            notes.add("causal attention with a past is timed without a mask")
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if hkv != h:
            try:
                if sdpa is None:
                    raise TypeError("no scaled_dot_product_attention")
                sdpa(q[:, :, :1], kk[:, :, :1], v[:, :, :1], enable_gqa=True)
                return lambda: sdpa(q, kk, v, is_causal=causal, enable_gqa=True)
            except (TypeError, RuntimeError):
                notes.add("grouped-query attention is timed with the k and v heads repeated (torch < 2.5)")
                kk = kk.repeat_interleave(h // hkv, dim=1)
                v = v.repeat_interleave(h // hkv, dim=1)
        if sdpa is None:
            notes.add("attention is timed unfused, softmax(q k^T) v (torch < 2.0 has no scaled_dot_product_attention)")
            scale = 1.0 / math.sqrt(d)
            mask = torch.ones(s, t, device=dev, dtype=torch.bool).tril(t - s) if causal else None

            def unfused():
                w = torch.matmul(q, kk.transpose(-1, -2)) * scale
                if mask is not None:
                    w = w.masked_fill(~mask, float("-inf"))
                return torch.matmul(torch.softmax(w, -1), v)

            return unfused
        return lambda: sdpa(q, kk, v, is_causal=causal)
    if kind == "stream":
        return stream_kernel(torch, row, notes)
    raise SystemExit("%s: unknown kind %r" % (row.get("op"), kind))


def stream_kernel(torch, row, notes):
    """The graph op itself where the script knows it, else a copy of the same bytes."""
    F = torch.nn.functional
    dev = "cuda"
    dt = torch_dtype(torch, row, notes)
    ins = row.get("inputs") or []
    gk = row.get("graph_kind", "")

    def t(shape):
        return torch.randn(*shape, device=dev, dtype=dt)

    try:
        if gk in ("rms_norm", "layer_norm") and ins:
            x = t(ins[0])
            w = torch.ones(ins[0][-1], device=dev, dtype=dt)
            if gk == "layer_norm":
                return lambda: F.layer_norm(x, (x.shape[-1],), w)
            if hasattr(F, "rms_norm"):
                return lambda: F.rms_norm(x, (x.shape[-1],), w)
        if gk in ("silu", "gelu", "relu", "tanh", "softmax") and ins:
            x = t(ins[0])
            f = {"silu": F.silu, "gelu": F.gelu, "relu": F.relu, "tanh": torch.tanh, "softmax": lambda y: torch.softmax(y, -1)}[gk]
            return lambda: f(x)
        if gk in ("add", "mul") and len(ins) >= 2:
            x, y = t(ins[0]), t(ins[1])
            return (lambda: torch.add(x, y)) if gk == "add" else (lambda: torch.mul(x, y))
        if gk == "swiglu" and len(ins) >= 2:
            x, y = t(ins[0]), t(ins[1])
            return lambda: F.silu(x) * y
        if gk == "embedding" and len(ins) >= 2:
            size = [math.prod(s) for s in ins[:2]]
            table_shape, ids_shape = (ins[1], ins[0]) if size[1] >= size[0] else (ins[0], ins[1])
            table = t(table_shape)
            ids = torch.randint(0, table.shape[0], tuple(ids_shape), device=dev)
            return lambda: F.embedding(ids, table)
    except (RuntimeError, ValueError, TypeError, IndexError) as e:
        notes.add("%s timed as a copy (%s)" % (gk, e))
    # A copy moving the same bytes: half read, half written.
    n = max(int(row["bytes"] // 2 // 2), 1)
    src = torch.empty(n, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    if gk not in ("copy",):
        notes.add("ops timed as copies of their bytes: " + gk)
    return lambda: dst.copy_(src)


def measure(ops, reference):
    try:
        import torch  # only here: --fit needs no torch
    except ImportError:
        raise SystemExit("PyTorch is not installed: install it on the GPU machine (or use --fit TIMINGS.json)")

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU: run this on the GPU machine (or use --fit TIMINGS.json)")
    notes = set()
    rows = []
    todo = list(reference) + list(ops)
    for i, r in enumerate(todo):
        row = dict(r)
        row.pop("source", None)
        fn = make_kernel(torch, row, notes)  # may record a substituted dtype in row
        row["time_s"] = time_kernel(torch, fn)
        rows.append(row)
        print("  [%d/%d] %-48s %10.2f us" % (i + 1, len(todo), r.get("op", "")[:48], row["time_s"] * 1e6), file=sys.stderr)
        del fn
        torch.cuda.empty_cache()
    import subprocess

    driver = ""
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=10).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        pass
    device = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda or "", "driver": driver}
    return rows, device, sorted(notes)


# ---------------------------------------------------------------- main


def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise SystemExit("%s: cannot read %s: %s" % (path, what, e.strerror))
    except json.JSONDecodeError as e:
        raise SystemExit("%s: invalid JSON: %s" % (path, e))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ops", help="the ops file trnsim run CONFIG --gpu-ops FILE wrote (the shapes, the presets' specs, the defaults)")
    ap.add_argument("-o", "--out", default="gpu-calibration.json", help="the calibration file to write (default %(default)s)")
    ap.add_argument("--device", help="the GPU preset it runs on (default: from the GPU's name)")
    ap.add_argument("--no-reference", action="store_true", help="time only the workload's shapes, not the reference shapes")
    ap.add_argument("--no-timings", action="store_true", help="leave the raw timings out of the file")
    ap.add_argument("--fit", metavar="TIMINGS.json", help="fit these timings (a list of rows or a calibration file) instead of measuring: no GPU needed")
    ap.add_argument("--example", metavar="TEXT", help="mark the file as an example, not a measurement, with this text")
    args = ap.parse_args(argv)

    spec = load_json(args.ops, "the ops file")
    if not isinstance(spec, dict) or spec.get("format") != OPS_FORMAT:
        raise SystemExit("%s: format: want %r (write it with trnsim run CONFIG --gpu-ops FILE)" % (args.ops, OPS_FORMAT))
    devices, defaults = spec["devices"], spec["defaults"]
    device = {}
    if args.fit:
        data = load_json(args.fit, "the timings")
        rows = data.get("timings", []) if isinstance(data, dict) else data
        if isinstance(data, dict) and isinstance(data.get("device"), dict):
            device = dict(data["device"])
        sw_notes = []
    else:
        rows, device, sw_notes = measure(spec.get("ops", []), [] if args.no_reference else spec.get("reference", []))
    name = args.device or device.get("name") or detect_preset(device.get("gpu", ""))
    if not name:
        raise SystemExit("cannot tell which preset %r is: give --device (GPUs: %s)" % (device.get("gpu", "?"), ", ".join(sorted(devices))))
    if name not in devices:
        raise SystemExit("--device %s: unknown GPU (GPUs: %s)" % (name, ", ".join(sorted(devices))))
    device["name"] = name
    for bad in [r for r in rows if not (r.get("time_s", 0) > 0)]:
        raise SystemExit("%s: time_s must be greater than 0, got %r" % (bad.get("op"), bad.get("time_s")))
    constants, notes = fit(devices[name], rows, defaults)
    for k in CONSTANTS:
        if not (constants[k] > 0) or math.isinf(constants[k]):
            raise SystemExit("the fit gave %s = %r: check the timings" % (k, constants[k]))
    out = {"format": FORMAT}
    if args.example:
        out["example"] = args.example
    out["device"] = {k: device[k] for k in ("name", "gpu", "torch", "cuda", "driver") if device.get(k)}
    out["workload"] = spec.get("workload", "")
    if not args.fit:
        out["measured"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out["constants"] = {k: round(constants[k], 6) for k in CONSTANTS}
    out["fit"] = dict(sorted(notes.items()))
    for i, n in enumerate(sw_notes):
        out["fit"]["timing_note_%d" % (i + 1)] = n
    if not args.no_timings:
        out["timings"] = rows
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print("wrote %s for %s: %s" % (args.out, name, ", ".join("%s %.4g" % (k, constants[k]) for k in CONSTANTS)), file=sys.stderr)


if __name__ == "__main__":
    main()

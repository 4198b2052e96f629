"""Where a fresh process's CUDA context time goes, alone and with several at once (GPU machine).

`validate` gives every kernel a fresh process, and with several jobs on one GPU the context's
creation and teardown bound kernels per minute (docs/harness.md, "Throughput"). This probe
separates the phases so that a change can aim at the one that costs: a parent forks `--total`
children, `--concurrency` at a time, and each child reports

  init     cuInit (driver) or torch.cuda.init() (torch modes)
  ctx      primary context retained and current (driver) / first tensor on the device (torch)
  op       a first small operation and synchronize
  down     from the child's "done" to its exit status in the parent: context teardown at exit

Modes: `driver` (ctypes on libcuda, parent without torch), `driver-fat` (the same from a parent
that imported torch, as the validate zygote does: the cost of forking a big process), `torch`
(parent imported torch; the child initialises CUDA through torch, as a test does), `torch-free`
(as torch, but the child empties torch's cache and releases the primary context before it exits).

    python3 scripts/context_probe.py --modes driver,driver-fat,torch,torch-free --concurrency 1,4,8 \
        --total 32 --out $OUT

Prints one row per (mode, concurrency): children/min and median phase times in ms.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import statistics
import sys
import time
from pathlib import Path


def _cuda() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what} returned {rc}")


def child_driver() -> dict[str, float]:
    cu = _cuda()
    t0 = time.perf_counter()
    _check(cu.cuInit(0), "cuInit")
    t1 = time.perf_counter()
    dev = ctypes.c_int()
    _check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    _check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    _check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    t2 = time.perf_counter()
    ptr = ctypes.c_uint64()
    _check(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)), "cuMemAlloc")
    _check(cu.cuMemsetD8_v2(ptr, ctypes.c_ubyte(1), ctypes.c_size_t(1 << 20)), "cuMemsetD8")
    _check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    _check(cu.cuMemFree_v2(ptr), "cuMemFree")
    t3 = time.perf_counter()
    return {"init": t1 - t0, "ctx": t2 - t1, "op": t3 - t2}


def child_torch(free: bool) -> dict[str, float]:
    import torch

    t0 = time.perf_counter()
    torch.cuda.init()
    t1 = time.perf_counter()
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    y = torch.randn(1 << 16, device="cuda")
    (y * 2 + x).sum().item()
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    out = {"init": t1 - t0, "ctx": t2 - t1, "op": t3 - t2}
    if free:
        del x, y
        torch.cuda.empty_cache()
        t4 = time.perf_counter()
        cu = _cuda()
        cu.cuDevicePrimaryCtxReset_v2(ctypes.c_int(0))
        out["free"] = time.perf_counter() - t4
    return out


def run(mode: str, concurrency: int, total: int) -> dict[str, object]:
    if mode != "driver":
        import torch  # noqa: F401 - the zygote's situation: a parent that imported torch, CUDA untouched
    running: dict[int, tuple[int, float]] = {}
    results: list[dict[str, float]] = []
    started = 0
    t_begin = time.perf_counter()

    def launch() -> None:
        nonlocal started
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                rec = child_driver() if mode.startswith("driver") else child_torch(mode == "torch-free")
            except Exception as exc:  # noqa: BLE001 - reported as a row field, the probe goes on
                rec = {"error": str(exc)[:200]}
            os.write(w, (json.dumps(rec) + "\n").encode())
            os._exit(0)
        os.close(w)
        running[pid] = (r, 0.0)
        started += 1

    while started < min(concurrency, total):
        launch()
    while running:
        by_fd = {r: pid for pid, (r, _) in running.items()}
        ready, _, _ = select.select(list(by_fd), [], [])
        for r in ready:
            pid = by_fd[r]
            data = b""
            while not data.endswith(b"\n"):
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                data += chunk
            t_done = time.perf_counter()
            os.waitpid(pid, 0)
            rec = json.loads(data or b"{}")
            rec["down"] = time.perf_counter() - t_done
            results.append(rec)
            os.close(r)
            del running[pid]
            if started < total:
                launch()
    wall = time.perf_counter() - t_begin
    errors = [r["error"] for r in results if "error" in r]
    row: dict[str, object] = {"mode": mode, "concurrency": concurrency, "n": len(results),
                              "per_min": round(60 * len(results) / wall, 1), "errors": len(errors)}
    for key in ("init", "ctx", "op", "free", "down"):
        vals = [r[key] for r in results if key in r]
        if vals:
            row[key] = round(1000 * statistics.median(vals))
    if errors:
        row["first_error"] = errors[0]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="driver,driver-fat,torch,torch-free")
    ap.add_argument("--concurrency", default="1,4,8")
    ap.add_argument("--total", type=int, default=32)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = []
    for mode in args.modes.split(","):
        for c in (int(x) for x in args.concurrency.split(",")):
            # each (mode, c) in its own python so that the parent's imports match the mode
            import subprocess

            cmd = [sys.executable, __file__, "--one", mode, str(c), str(args.total)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            line = (proc.stdout.strip().splitlines() or ["{}"])[-1]
            row = json.loads(line) if line.startswith("{") else {"mode": mode, "concurrency": c,
                                                                  "error": proc.stderr[-300:]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    keys = ("per_min", "init", "ctx", "op", "free", "down", "errors")
    print(f"\n{'mode':12}{'conc':>5}" + "".join(f"{k:>9}" for k in keys))
    for r in rows:
        cells = "".join(f"{str(r.get(k, '-')):>9}" for k in keys)
        print(f"{r.get('mode', '?'):12}{r.get('concurrency', '?'):>5}" + cells)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "context_probe.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        print(json.dumps(run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        sys.exit(0)
    sys.exit(main())

#!/usr/bin/env bash
# kverify capture on real programs: a TMA kernel of our own (driver API and runtime API host
# programs, tests/capture/) and CUTLASS's examples 48 (sm90 warp-specialized GEMM) and 49 (the
# collective builder's schedules: ping-pong, cooperative, stream-K) and the CuTe TMA/wgmma tutorial
# (examples/cute/tutorial/hopper/wgmma_tma_sm90.cu, its NT and TN GEMMs) compiled from the headers of
# the nvidia-cutlass pip wheel. No CUTLASS code is in this repository: the example
# is compiled here, at run time, from the installed wheel.
#
#   bench/capture_demo.sh record DIR   # on a machine with an H100/H200 GPU, nvcc and python3:
#                                      # builds the programs, records their launches into
#                                      # DIR/{drv,rt,cutlass,cutlass_k512,cutlass_big,cutlass49,cute_nt,cute_tn}
#   bench/capture_demo.sh check DIR    # anywhere kverify is installed: kverify check on every
#                                      # recorded launch of DIR, summary -> bench/results/capture.json
#
# Environment: CUTLASS_SOURCE (default: <site-packages>/cutlass_library/source of `pip install
# nvidia-cutlass==4.2.0.0`), CURAND_INCLUDE (where curand_kernel.h is, when the CUDA toolkit lacks
# it), GEMM48 / GEMM49 / CUTE_TMA (already built example binaries: skip their compilation), PYTHON (default python3),
# KVERIFY_PYTHONPATH (prepended to PYTHONPATH, a checkout of kverify), RESULTS (check's output file).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: capture_demo.sh record|check DIR}
dir=${2:?usage: capture_demo.sh record|check DIR}
py=${PYTHON:-python3}
export PYTHONPATH="${KVERIFY_PYTHONPATH:-$here}${PYTHONPATH:+:$PYTHONPATH}"
src=$here/tests/capture
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ "$mode" = record ]; then
  { nvidia-smi -L; nvcc --version | tail -1; } > "$dir/device.txt" || true
  bin=$dir/bin; mkdir -p "$bin"
  nvcc -O2 -o "$bin/host_driver" "$src/host_driver.cpp" -lcuda ||
    nvcc -O2 -o "$bin/host_driver" "$src/host_driver.cpp" -L/usr/local/cuda/lib64/stubs -lcuda
  nvcc -gencode 'arch=compute_90a,code=[sm_90a,compute_90a]' --compress-mode=none -o "$bin/tma_rt" "$src/tma_scale_rt.cu"
  cs=${CUTLASS_SOURCE:-$($py -c 'import cutlass_library, os; print(os.path.dirname(cutlass_library.__file__) + "/source")')}
  build() {  # example source, binary: the two examples compile at once
    nvcc -std=c++17 -O2 --expt-relaxed-constexpr -gencode 'arch=compute_90a,code=[sm_90a,compute_90a]' --compress-mode=none -DNDEBUG \
      -I"$cs/include" -I"$cs/tools/util/include" -I"$cs/examples/common" ${CURAND_INCLUDE:+-I"$CURAND_INCLUDE"} \
      -o "$2" "$cs/examples/$1"
  }
  [ -n "${GEMM48:-}" ] || { build 48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu "$bin/gemm48" & }
  [ -n "${GEMM49:-}" ] || { build 49_hopper_gemm_with_collective_builder/49_collective_builder.cu "$bin/gemm49" & }
  [ -n "${CUTE_TMA:-}" ] || { build cute/tutorial/hopper/wgmma_tma_sm90.cu "$bin/cute_wgmma_tma" & }
  wait
  GEMM48=${GEMM48:-$bin/gemm48}; GEMM49=${GEMM49:-$bin/gemm49}; CUTE_TMA=${CUTE_TMA:-$bin/cute_wgmma_tma}
  $py -m kverify.capture -o "$dir/drv" -- "$bin/host_driver" "$src/tma_scale.ptx" | tee "$dir/drv.txt"
  $py -m kverify.capture -o "$dir/rt" -- "$bin/tma_rt" | tee "$dir/rt.txt"
  $py -m kverify.capture -o "$dir/cutlass" -- "$GEMM48" --m=256 --n=256 --k=128 --iterations=0 | tee "$dir/cutlass.txt"
  $py -m kverify.capture -o "$dir/cutlass_k512" -- "$GEMM48" --m=256 --n=256 --k=512 --iterations=0 | tee "$dir/cutlass_k512.txt"
  $py -m kverify.capture -o "$dir/cutlass_big" -- "$GEMM48" --m=1024 --n=1024 --k=512 --iterations=0 | tee "$dir/cutlass_big.txt"
  $py -m kverify.capture -o "$dir/cutlass49" -- "$GEMM49" --m=256 --n=256 --k=128 | tee "$dir/cutlass49.txt"
  # the tutorial times 100 more launches of the same kernel: the first is recorded
  $py -m kverify.capture --limit 1 -o "$dir/cute_nt" -- "$CUTE_TMA" 256 256 512 N T | tee "$dir/cute_nt.txt"
  $py -m kverify.capture --limit 1 -o "$dir/cute_tn" -- "$CUTE_TMA" 256 256 512 T N | tee "$dir/cute_tn.txt"
  exit 0
fi

[ "$mode" = check ] || { echo "unknown mode $mode" >&2; exit 2; }
$py - "$dir" "${RESULTS:-$here/bench/results/capture.json}" <<'PY'
import json, os, subprocess, sys, time
from pathlib import Path
root, out = Path(sys.argv[1]), Path(sys.argv[2])
dev = root / "device.txt"
result = {"recorded_on": dev.read_text().strip().splitlines() if dev.exists() else None,
          "checked_with": "kverify check --format json --timeout 60 from " + (os.environ.get("KVERIFY_PYTHONPATH") or "this checkout"), "runs": []}
for name in ("drv", "rt", "cutlass", "cutlass_k512", "cutlass_big", "cutlass49", "cute_nt", "cute_tn"):
    d = root / name
    if not (d / "index.json").exists():
        continue
    index = json.loads((d / "index.json").read_text())
    run = {"program": name, "command": index.get("command"), "exit_status": index.get("program_exit_status"),
           "modules": [{k: m[k] for k in ("api", "kind", "ptx_note")} for m in index["modules"]],
           "allocations": index["allocations"], "tensormaps": index["tensormaps"], "launches": []}
    seen = set()
    for l in index["launches"]:
        rec = {k: l[k] for k in ("kernel", "api", "grid", "block", "cluster", "dynamic_smem", "param_source")}
        rec["params"] = [p.get("kind") for p in l["params"]]
        rec["param_bytes"] = sum(p["size"] for p in l["params"])
        rec["notes"] = l["notes"]
        fields = {str(p["index"]): [{"offset": f["offset"], "kind": "tensormap" if "tensormap" in f else "pointer",
                                     "to": (f["tensormap"] if "tensormap" in f else f["pointer"])} for f in p["fields"]]
                  for p in l["params"] if p.get("fields")}
        if fields:
            rec["struct_fields"] = fields
        key = (l["kernel"], tuple(l["grid"]), tuple(l["block"]))
        if l.get("ptx") and key not in seen:
            seen.add(key)
            t = time.time()
            cmd = [sys.executable, "-m", "kverify", "check", str(d / l["ptx"]), "--kernel", l["kernel"],
                   "--launch", str(d / l["spec"]), "--format", "json", "--timeout", "60"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=root)
                rc, so, se = r.returncode, r.stdout, r.stderr
            except subprocess.TimeoutExpired:
                rc, so, se = None, "", "timed out after 300 s"
            rec["check"] = {"exit": rc, "seconds": round(time.time() - t, 1)}
            try:
                rep = json.loads(so)
                k = rep["kernels"][0]
                rec["check"]["verdict"] = k["verdict"]
                rec["check"]["obligations"] = {o["id"]: o["status"] for o in k["obligations"]}
                bad = [o for o in k["obligations"] if o["status"] in ("violated", "unknown")]
                rec["check"]["messages"] = [f"{o['id']}: {o['status']}: {(o.get('message') or '')[:300]}" for o in bad][:6]
            except (json.JSONDecodeError, KeyError, IndexError):
                rec["check"]["error"] = (se.strip() or so.strip())[-600:]
        elif not l.get("ptx"):
            rec["check"] = {"skipped": l["ptx_note"]}
        else:
            rec["check"] = {"skipped": "same kernel and launch shape as an earlier launch"}
        run["launches"].append(rec)
    result["runs"].append(run)
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(result, indent=1) + "\n")
print(json.dumps(result, indent=1)[:6000])
PY

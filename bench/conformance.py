"""Semantics conformance: random PTX programs (tests/conformance/generate.py) and every
correct zoo kernel, run on kverify's interpreter and on a GPU, outputs compared bit for bit.

Three steps, so the GPU is held only for the launches:

    python bench/conformance.py gen --n 400 --seed 20261203 --dir .conf    # programs, inputs,
                                                                            # cubins, interpreter outputs
    python bench/conformance.py gpu --dir .conf --out OUTDIR                # on the GPU machine
    python bench/conformance.py compare --dir .conf --gpu OUTDIR/gpu.npz    # -> bench/results/conformance.json

A disagreement in a random program is a semantics bug (or a generator bug); the program is
kept under tests/conformance/regressions/ with its inputs and the GPU's output, and
tests/test_conformance.py replays it on the interpreter. Zoo kernels that use approximate
instructions (``ex2.approx``...) or tensor-core matrix operations (``wgmma``, whose
accumulation order and internal precision the interpreter does not model bit for bit) are
compared with their largest difference in units in the last place instead, and reported
as such, not as disagreements. A zoo variant may name inputs of its own
(``"conformance_inputs": "ref:FN"`` in its manifest entry; ``FN(launch, seed)`` gives the
buffers) whose partial sums are all exact (tests/zoo/fp8_mma: FP8 wgmma and mma.sync): it
runs a second time with them as ``<name>__exact``, and there any difference, MMA or not, is
a disagreement.

    # only some families, e.g. the FP8 tensor-core kernels:
    python bench/conformance.py gen --zoo-only --families fp8_mma --dir .conf_fp8

    # the TMA im2col cases (tests/conformance/im2col.py) alone, compared with the interpreter
    # and with a direct numpy reading of PTX ISA §5.5.4:
    python bench/conformance.py gen --im2col-only --dir .conf_im2col
    python bench/conformance.py gpu --dir .conf_im2col --out OUTDIR
    python bench/conformance.py compare --dir .conf_im2col --gpu OUTDIR/gpu.npz \
        --result bench/results/conformance_im2col.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from reduce_launch import tensor_reduce_launch  # noqa: E402  (tests/reduce_launch.py)

APPROX = ("ex2.approx", "lg2.approx", "sin.approx", "cos.approx", "rsqrt.approx", "tanh.approx",
          "div.approx", "div.full", "sqrt.approx", "rcp.approx")
MMA = ("wgmma.mma_async", "mma.sync")


def collect(n: int, seed: int, single: bool = False) -> list:
    """``n`` distinct programs from the hypothesis strategy, reproducibly for ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from conformance.generate import programs

    out, seen = [], set()

    @hseed(seed)
    @settings(max_examples=int(n * 1.5) + 20, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(1, 1, control=False) if single else programs())
    def draw(p):
        if len(out) < n and p.ptx not in seen:
            seen.add(p.ptx)
            out.append(p)

    draw()
    return out


def _interp(ptx_path, launch, inputs):
    from kverify.launch import LaunchSpec
    from kverify.semantics.interpreter import run_kernel
    from kverify.semantics.ir import load_module

    m = load_module(str(ptx_path))
    spec = LaunchSpec.from_dict(launch)
    return run_kernel(m, m.kernel(launch.get("kernel")), spec, inputs=inputs, check=False)


def cmd_gen(a):
    from kverify.lowering.build import BuildError, assemble
    from kverify.verifier.validate import _buffer_names, _params
    from kverify.launch import LaunchSpec
    from kverify.semantics.ir import KernelError, load_module

    d = Path(a.dir)
    (d / "prog").mkdir(parents=True, exist_ok=True)
    (d / "zoo").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    progs = [] if a.zoo_only or a.im2col_only else collect(a.n, a.seed, a.single)
    index = {"seed": a.seed, "programs": [], "zoo": [], "zoo_lowered": [], "im2col": []}
    if a.im2col or a.im2col_only:
        index["im2col"] = gen_im2col(d, a.seed)
    t_interp = 0.0
    for i, p in enumerate(progs):
        name = f"p{i:04d}"
        ptx = d / "prog" / f"{name}.ptx"
        ptx.write_text(p.ptx)
        entry = {"name": name, "grid": p.grid, "block": p.block, "input_seed": p.input_seed,
                 "templates": list(p.templates)}
        try:
            (d / "prog" / f"{name}.cubin").write_bytes(assemble(p.ptx))
        except BuildError as e:
            entry["ptxas_error"] = e.log.strip().splitlines()[:3]
            index["programs"].append(entry)
            continue
        launch = p.launch()
        inputs = {"conf_param_0": p.inputs(), "conf_param_1": np.zeros(p.grid * p.block * __import__(
            "conformance.generate", fromlist=["OUT_BYTES"]).OUT_BYTES, np.uint8)}
        np.savez_compressed(d / "prog" / f"{name}.in.npz", **inputs)
        t1 = time.perf_counter()
        try:
            r = _interp(ptx, launch, inputs)
        except Exception as ex:  # an interpreter crash is a finding, not the end of the run
            entry["interp_status"] = f"crash: {type(ex).__name__}: {ex}"
            index["programs"].append(entry)
            continue
        t_interp += time.perf_counter() - t1
        entry["interp_status"] = r.status + (f": {r.reason}" if r.reason else "")
        if r.status == "complete":
            np.save(_idir(d) / f"{name}.interp.npy", r.outputs["conf_param_1"])
        entry["plan"] = _plan(d / "prog" / f"{name}.cubin", "conf", launch, d / "prog" / f"{name}.in.npz",
                              str(Path("prog") / f"{name}.gpu.npz"), [{"kind": "buffer", "buffer": "conf_param_0"},
                                                                       {"kind": "buffer", "buffer": "conf_param_1"}], 0, d)
        index["programs"].append(entry)
        if i % 50 == 0:
            print(f"{i} programs ({time.perf_counter() - t0:.0f} s)", flush=True)
    # every correct zoo kernel, and the correct test kernels of features the zoo lacks (DATA)
    families = set(a.families.split(",")) if a.families else None
    kernels = [] if a.single or a.im2col_only else _zoo_kernels(families) + _data_kernels(families)
    for family, ptx, v in kernels:
        launch = v["launch"]
        spec = LaunchSpec.from_dict(launch)
        m = load_module(str(ptx))
        k = m.kernel(launch.get("kernel"))
        text = ptx.read_text()
        base = f"{family}__{ptx.stem}" + (f"__{launch['kernel']}{v.get('suffix', '')}" if v.get("several") else "")
        (d / "zoo" / f"{base}.cubin").write_bytes(assemble(text))
        # the seeded random inputs; and, where the variant names them ("conformance_inputs":
        # "ref:FN", FN(launch, seed) -> {buffer: array}), inputs whose outputs do not depend
        # on the tensor core's accumulation order: that run must agree bit for bit
        modes = [("", None)]
        if v.get("conformance_inputs"):
            from kverify.semantics.interpreter import load_reference

            modes.append(("__exact", load_reference(v["conformance_inputs"], str(ptx))(launch, a.seed)))
        for suffix, given in modes:
            name = base + suffix
            t1 = time.perf_counter()
            from kverify.semantics.interpreter import run_kernel

            r = run_kernel(m, k, spec, seed=a.seed, check=False, inputs=given)
            names = _buffer_names(k, spec)
            inputs, outputs = {n: r.inputs[n] for n in names}, {n: r.outputs[n] for n in names}
            pair = _dependent(m, spec, r, a.seed, inputs, outputs) if spec.dependent else None
            dt = time.perf_counter() - t1
            status = r.status if pair is None or r.status != "complete" else pair["status"]
            entry = {"name": name, "file": str(ptx.relative_to(ROOT)), "interp_status": status,
                     "interp_s": round(dt, 4), "approx": sorted({x for x in APPROX if x in text}),
                     "mma": sorted({x for x in MMA if x in text}),
                     "outputs": list(spec.outputs) + (pair["outputs"] if pair else []),
                     "exact_sums": given is not None}
            if r.cooperative:
                entry["cooperative"] = True
            np.savez(d / "zoo" / f"{name}.in.npz", **inputs)
            np.savez(_idir(d) / f"{name}.interp.npz", **outputs)
            try:
                params = _params(k, spec, names)
            except KernelError as e:  # a launch the GPU runner cannot make: not run, with the reason
                entry["not_run"] = e.message
                index["zoo"].append(entry)
                print(f"zoo {name}: not run on the GPU ({e.message})", flush=True)
                continue
            entry["plan"] = _plan(d / "zoo" / f"{base}.cubin", k.name, launch, d / "zoo" / f"{name}.in.npz",
                                  str(Path("zoo") / f"{name}.gpu.npz"), params,
                                  spec.dynamic_smem, d, cluster=list(spec.cluster)
                                  if spec.cluster != (1, 1, 1) and not any(x[0] == "reqnctapercluster"
                                                                           for x in k.directives) else None,
                                  cooperative=r.cooperative, dependent=pair["plan"] if pair else None)
            index["zoo"].append(entry)
            print(f"zoo {name}: {r.status} {dt:.2f} s", flush=True)
            if not a.no_lowered and given is None:
                index["zoo_lowered"].append(_gen_lowered(d, a, name, entry, m, k, spec, launch, names, r,
                                                              inputs, outputs))
    index["interp_s_programs"] = round(t_interp, 3)
    (d / "index.json").write_text(json.dumps(index))
    bad = [e["name"] for e in index["programs"] if "ptxas_error" in e]
    print(f"{len(progs)} programs, {len(bad)} rejected by ptxas, {time.perf_counter() - t0:.0f} s; interpreter "
          f"{t_interp:.1f} s")
    for e in index["programs"]:
        if "ptxas_error" in e:
            print(e["name"], e["ptxas_error"])
            break
    return 0


#: (kernel, scale, swizzle, name suffix) of the reductions run: every kernel at scale 1, the float
#: ones also scaled into their subnormal range (2^-130 for f32 and bf16, 2^-17 for f16: whether
#: the reduction keeps subnormal inputs and results), and the f32 tensor reduction through a
#: 128-byte swizzled map
_REDUCTIONS = [(k, 1000.0 if k.endswith("s32") else 1.0, "none", "") for k in (
    "tensor_add_f32", "tensor_add_f16", "tensor_add_bf16", "tensor_max_s32", "bulk_add_f32", "bulk_add_f16",
    "bulk_add_bf16", "red_add_f32", "red_add_f16", "red_add_bf16", "red_add_f32_shared")] + [
    (k, 2.0 ** (-17 if k.endswith("f16") and not k.endswith("bf16") else -130), "none", "_subnormal") for k in (
        "tensor_add_f32", "tensor_add_f16", "tensor_add_bf16", "bulk_add_f32", "bulk_add_f16", "bulk_add_bf16",
        "red_add_f32", "red_add_f16", "red_add_bf16", "red_add_f32_shared")] + [
    ("tensor_add_f32", 1.0, "128B", "_swizzle128")]


#: correct kernels of tests/data for instructions no zoo kernel uses, run like the zoo's
#: (family "data_<dir>"): TMA multicast in a 2x1 cluster, a bulk reduction (cp.reduce.async.bulk),
#: brx.idx over .branchtargets, calls through function pointers, cooperative groups' grid.sync() in
#: a cooperative launch, a programmatic dependent launch (PDL) pair, distributed shared memory in a
#: 2-CTA cluster (st.shared::cluster, remote mbarrier arrives, st.async and red.async completing on the
#: peer's mbarrier), cp.async.mbarrier.arrive with and without .noinc, and the tensor and byte-range bulk
#: reductions and red.add of f32, f16 and bf16 (tests/data/bulk_reduce/tensor_reduce.cu), dp4a/dp2a
#: with accumulators at the edges of the 32-bit range (tests/data/dp4a) and float atomic adds on
#: shared memory at the subnormal edge (tests/data/atom_shared).
DATA = [
    ("multicast/tma_multicast.ptx", "multicast/launch.json"),
    ("bulk_reduce/bulk_reduce.ptx", "bulk_reduce/launch.json"),
    ("brx/roles.ptx", {"kernel": "roles", "grid": [2, 1, 1], "block": [128, 1, 1], "outputs": ["roles_param_1"],
                       "buffers": {"roles_param_0": {"dtype": "float32", "shape": [256]},
                                   "roles_param_1": {"dtype": "float32", "shape": [256]}}}),
    ("brx/roles_uni.ptx", {"kernel": "roles_uni", "grid": [2, 1, 1], "block": [128, 1, 1],
                           "outputs": ["roles_uni_param_1"],
                           "buffers": {"roles_uni_param_0": {"dtype": "float32", "shape": [256]},
                                       "roles_uni_param_1": {"dtype": "float32", "shape": [256]}}}),
    ("grid_sync/two_phase.ptx", {"kernel": "two_phase", "grid": [4, 1, 1], "block": [128, 1, 1], "args": {"n": 500},
                                 "cooperative": True, "outputs": ["tmp", "out"],
                                 "buffers": {"in": {"dtype": "float32", "shape": [500]},
                                             "tmp": {"dtype": "float32", "shape": [500]},
                                             "out": {"dtype": "float32", "shape": [500]}}}),
    ("pdl/pair.ptx", "pdl/pair.json"),
] + [("dsmem/dsmem.ptx", {"kernel": k, "grid": [4, 1, 1], "block": [64, 1, 1], "outputs": ["out"],
                          "buffers": {"out": {"dtype": "int32", "shape": [256]}}}) for k in ("exchange", "tail", "push")] + [
    ("dsmem/st_async.ptx", {"kernel": k, "grid": [4, 1, 1], "block": [64, 1, 1], "outputs": ["out"],
                            "buffers": {"out": {"dtype": "int32", "shape": [256]}}}) for k in ("send", "accumulate")] + [
    ("cp_async_arrive/copy_arrive.ptx", {"kernel": k, "grid": [2, 1, 1], "block": [64, 1, 1], "outputs": ["out"],
                                         "buffers": {"in": {"dtype": "float32", "shape": [512]},
                                                     "out": {"dtype": "float32", "shape": [512]}}})
    for k in ("noinc", "inc")] + [
    ("bulk_reduce/tensor_reduce.ptx", tensor_reduce_launch(k, scale, swizzle), suffix)
    for k, scale, swizzle, suffix in _REDUCTIONS] + [
    ("indirect_call/dispatch.ptx", {"kernel": k, "grid": [2, 1, 1], "block": [128, 1, 1], "args": {"which": w, "n": 200},
                                    "outputs": ["y"], "buffers": {"x": {"dtype": "float32", "shape": [256]},
                                                                  "y": {"dtype": "float32", "shape": [256]}}})
    for k, w in (("pick_param", 0), ("pick_param", 1), ("pick_table", 1))] + [
    ("dp4a/dp4a.ptx", {"kernel": k, "grid": [2, 1, 1], "block": [128, 1, 1], "outputs": ["out"],
                       "buffers": {"av": {"dtype": "uint32", "shape": [256]}, "bv": {"dtype": "uint32", "shape": [256]},
                                   "cv": {"dtype": "uint32", "shape": [256]},
                                   "out": {"dtype": "int32", "shape": [n]}}})
    for k, n in (("forms", 2048), ("dot_clamp", 256))] + [
    ("atom_shared/atom_float.ptx", {"kernel": k, "grid": [2, 1, 1], "block": [128, 1, 1], "outputs": ["out"],
                                    "buffers": {"x": {"dtype": "float32", "shape": [256]},
                                                "y": {"dtype": "float32", "shape": [256]},
                                                "out": {"dtype": dt, "shape": [n]}}})
    for k, dt, n in (("add_f32", "float32", 256), ("add_f16", "float32", 512), ("add_f64", "float64", 256))]


def _zoo_kernels(families) -> list:
    """(family, ptx, variant) of every correct zoo variant."""
    out = []
    for mpath in sorted((ROOT / "tests" / "zoo").glob("*/manifest.json")):
        if families is not None and mpath.parent.name not in families:
            continue
        for v in json.loads(mpath.read_text())["variants"]:
            if v["correct"]:
                out.append((mpath.parent.name, mpath.parent / (Path(v["file"]).stem + ".ptx"), v))
    return out


def _data_kernels(families) -> list:
    """(family, ptx, variant) of ``DATA``; a file with several entries names each by kernel (and
    the arguments that differ)."""
    out, seen = [], {}
    for rel, launch, *suffix in DATA:
        fam = "data_" + rel.split("/")[0]
        if families is not None and fam not in families:
            continue
        if isinstance(launch, str):
            launch = json.loads((ROOT / "tests" / "data" / launch).read_text())
        seen[rel] = seen.get(rel, 0) + 1
        out.append((fam, ROOT / "tests" / "data" / rel, {"launch": launch, "correct": True,
                                                         **({"suffix": suffix[0]} if suffix else {})}))
    for fam, ptx, v in out:
        if seen[str(ptx.relative_to(ROOT / "tests" / "data"))] > 1:
            v["several"] = True
            w = v["launch"].get("args", {}).get("which")
            if w is not None:
                v["suffix"] = f"_which{w}"
    return out


def _gen_lowered(d, a, name, entry, m, k, spec, launch, names, r, inputs, outputs):
    """The zoo kernel lowered to CUDA (``kverify.lowering.cuda``), rebuilt with nvcc and ptxas: a
    plan on the same inputs, whose GPU outputs are compared with the interpreter's outputs
    for the original PTX. The interpreter also runs the lowered PTX here (``interp_same``:
    bit-identical outputs to the original's)."""
    from kverify.lowering.build import BuildError, assemble, compile_to_ptx
    from kverify.lowering.cuda import lower_module
    from kverify.semantics.interpreter import run_kernel
    from kverify.semantics.ir import parse_ptx
    from kverify.verifier.validate import _params

    low = {"name": f"{name}__lowered", "of": name, "file": entry["file"], "approx": entry["approx"],
           "mma": entry["mma"], "outputs": entry["outputs"]}
    from kverify.lowering.ctype import LoweringError

    try:
        text = compile_to_ptx(lower_module(m), name=name)
        cubin = assemble(text)
    except LoweringError as e:  # a construct the lowering does not take (brx.idx): no lowered run
        low["lowering_error"] = str(e).replace(str(ROOT) + "/", "")
        print(f"zoo {name} lowered: not lowered ({e})", flush=True)
        return low
    except BuildError as e:
        low["build_error"] = e.log.strip().splitlines()[:3]
        print(f"zoo {name} lowered: build error {low['build_error']}", flush=True)
        return low
    (d / "zoo" / f"{low['name']}.ptx").write_text(text)
    (d / "zoo" / f"{low['name']}.cubin").write_bytes(cubin)
    lm = parse_ptx(text, str(d / "zoo" / f"{low['name']}.ptx"))

    def named(kname):  # the original's parameters, in order: give them its CUDA names
        lk, ok = lm.kernel(kname), m.kernel(kname)
        return dataclasses.replace(lk, params=tuple(dataclasses.replace(lp, source_name=op.source_name or op.name)
                                                    for lp, op in zip(lk.params, ok.params)))

    lk = named(k.name)
    pair = None
    try:
        lr = run_kernel(lm, lk, spec, inputs={n: inputs[n] for n in names}, check=False)
        louts = {n: lr.outputs[n] for n in names}
        if spec.dependent:
            pair = _dependent(lm, spec, lr, a.seed, dict(inputs), louts, kernel_of=named)
        low["interp_status"] = lr.status if pair is None or lr.status != "complete" else pair["status"]
        low["interp_same"] = low["interp_status"] == "complete" and all(
            np.array_equal(np.asarray(louts[o]).view(np.uint8), np.asarray(outputs[o]).view(np.uint8))
            for o in entry["outputs"])
    except Exception as ex:  # an interpreter crash on the lowered PTX is a finding
        low["interp_status"] = f"crash: {type(ex).__name__}: {ex}"
        low["interp_same"] = False
    if spec.dependent and pair is None:
        pair = _dependent(lm, spec, r, a.seed, dict(inputs), {}, kernel_of=named, run=False)
    low["plan"] = _plan(d / "zoo" / f"{low['name']}.cubin", lk.name, launch, d / "zoo" / f"{name}.in.npz",
                        str(Path("zoo") / f"{low['name']}.gpu.npz"), _params(lk, spec, names),
                        spec.dynamic_smem, d, cluster=list(spec.cluster)
                        if spec.cluster != (1, 1, 1) and not any(x[0] == "reqnctapercluster"
                                                                 for x in lk.directives) else None,
                        cooperative=r.cooperative, dependent=pair["plan"] if pair else None)
    print(f"zoo {name} lowered: interpreter on the lowered PTX {'identical' if low['interp_same'] else 'DIFFERS'}",
          flush=True)
    return low


def _reinterp_one(job):
    d, e = job
    inputs = dict(np.load(Path(d) / "prog" / f"{e['name']}.in.npz"))
    from conformance.generate import Program

    launch = Program("", e["grid"], e["block"], 0, ()).launch()
    t0 = time.perf_counter()
    try:
        r = _interp(Path(d) / "prog" / f"{e['name']}.ptx", launch, inputs)
    except Exception as ex:  # a crash is a finding
        return e["name"], f"crash: {type(ex).__name__}: {ex}", 0.0
    if r.status == "complete":
        np.save(_idir(Path(d)) / f"{e['name']}.interp.npy", r.outputs["conf_param_1"])
    return e["name"], r.status + (f": {r.reason}" if r.reason else ""), time.perf_counter() - t0


def cmd_reinterp(a):
    """Run the interpreter again over an existing corpus (after a semantics fix): the GPU
    outputs stay as recorded."""
    from multiprocessing import Pool

    d = Path(a.dir)
    index = json.loads((d / "index.json").read_text())
    jobs = [(str(d), e) for e in index["programs"] if "plan" in e]
    with Pool(a.jobs) as pool:
        res = pool.map(_reinterp_one, jobs, chunksize=16)
    status = {n: st for n, st, _ in res}
    for e in index["programs"]:
        if e["name"] in status:
            e["interp_status"] = status[e["name"]]
    index["interp_s_programs"] = round(sum(t for *_, t in res), 3)
    if not a.programs_only:
        from kverify.launch import LaunchSpec
        from kverify.semantics.interpreter import run_kernel
        from kverify.semantics.ir import load_module

        for e in index["zoo"]:
            mpath = ROOT / e["file"]
            man = json.loads((mpath.parent / "manifest.json").read_text())
            v = next(v for v in man["variants"] if Path(v["file"]).stem == mpath.stem)
            m = load_module(str(mpath))
            inputs = dict(np.load(d / "zoo" / f"{e['name']}.in.npz"))
            r = run_kernel(m, m.kernel(v["launch"].get("kernel")), LaunchSpec.from_dict(v["launch"]), inputs=inputs,
                           check=False)
            np.savez(_idir(d) / f"{e['name']}.interp.npz", **{n: r.outputs[n] for n in inputs})
    (d / "index.json").write_text(json.dumps(index))
    bad = [(n, st) for n, st, _ in res if not st.startswith("complete")]
    print(f"{len(res)} programs re-run on the interpreter; not complete: {bad[:5]}")
    return 0


def gen_im2col(d: Path, seed: int) -> list:
    """The TMA im2col cases: PTX, cubin, inputs, the interpreter's output and the numpy
    reference's (tests/conformance/im2col.py), and a GPU plan each."""
    from conformance.im2col import CASES, reference
    from kverify.lowering.build import BuildError, assemble
    from kverify.semantics.memory_model.byte_layout import swizzle_offset

    (d / "im2col").mkdir(parents=True, exist_ok=True)
    out = []
    for c in CASES:
        name = f"im2col__{c.name}"
        ptx = d / "im2col" / f"{name}.ptx"
        ptx.write_text(c.ptx())
        launch = c.launch()
        entry = {"name": name, "case": c.name, "launch": launch, "output": launch["outputs"][0]}
        try:
            (d / "im2col" / f"{name}.cubin").write_bytes(assemble(c.ptx()))
        except BuildError as e:
            entry["ptxas_error"] = e.log.strip().splitlines()[:3]
            out.append(entry)
            continue
        inputs = c.inputs(seed)
        np.savez(d / "im2col" / f"{name}.in.npz", **inputs)
        r = _interp(ptx, launch, inputs)
        entry["interp_status"] = r.status + (f": {r.reason}" if r.reason else "")
        ref = reference(c, inputs["x"]).reshape(-1).view(np.uint8)
        if c.swizzle != "none":
            sw = np.empty_like(ref)
            sw[swizzle_offset(np.arange(ref.size), c.swizzle)] = ref
            ref = sw
        np.save(_idir(d) / f"{name}.ref.npy", ref)
        if r.status == "complete":
            np.save(_idir(d) / f"{name}.interp.npy", r.outputs[entry["output"]])
        from kverify.verifier.validate import _params

        from kverify.launch import LaunchSpec
        from kverify.semantics.ir import load_module

        m = load_module(str(ptx))
        k = m.kernel(launch["kernel"])
        spec = LaunchSpec.from_dict(launch)
        entry["plan"] = _plan(d / "im2col" / f"{name}.cubin", k.name, launch, d / "im2col" / f"{name}.in.npz",
                              str(Path("im2col") / f"{name}.gpu.npz"), _params(k, spec, list(inputs)), 0, d)
        print(f"im2col {name}: {entry['interp_status']}", flush=True)
        out.append(entry)
    return out


def _compare_im2col(d: Path, entries: list, garr: dict) -> list:
    """One row per im2col case: the GPU's destination bytes against the interpreter's, bit for
    bit (NaN payloads included), and against the numpy reference's (NaN = NaN)."""
    rows = []
    for e in entries:
        row = {"name": e["name"]}
        key = f"{e['name']}::{e['output']}"
        ipath = _idir(d) / f"{e['name']}.interp.npy"
        if key not in garr or not ipath.exists():
            row["status"] = "not run: " + (str(e.get("ptxas_error") or e.get("interp_status") or "gpu run failed"))
            rows.append(row)
            continue
        g, i = garr[key], np.load(ipath)
        row["bit_exact"] = bool(np.array_equal(g, i))
        diff = np.flatnonzero(g != i)
        row["differing_bytes"] = int(diff.size)
        if diff.size:
            row["first_differing_byte"] = int(diff[0])
        row["status"] = "bit-exact" if row["bit_exact"] else "DISAGREEMENT"
        rows.append(row)
    return rows


def _idir(d) -> Path:
    """Interpreter outputs live beside the corpus, not in it (the corpus travels to the GPU)."""
    p = Path(str(d).rstrip("/") + "_interp")
    p.mkdir(parents=True, exist_ok=True)
    return p


def _plan(cubin, kernel, launch, npz, out_rel, params, smem, d, cluster=None, cooperative=False, dependent=None):
    run = {"id": "r", "npz": str(Path(npz).relative_to(d)), "out": out_rel, "grid": list(launch["grid"]),
           "block": list(launch["block"]), "cluster": cluster, "params": params}
    if cooperative:
        run["cooperative"] = True
    if dependent:
        run["dependent"] = dependent
    return {"image": str(Path(cubin).relative_to(d)), "kernel": kernel, "dynamic_smem": smem, "runs": [run]}


#: a PDL pair's dependent grid's own buffers, beside the primary's in one run's buffers
DEP = "dep."


def _dependent(m, spec, r, seed, inputs: dict, outputs: dict, kernel_of=None, run: bool = True) -> dict:
    """A PDL pair (``spec.dependent``): the dependent grid run on the interpreter from the memory
    the primary's run ``r`` left (as ``check`` runs it), its own buffers' initial contents taken
    from ``inputs`` (``dep.NAME``) where there, else drawn and added; its final contents, and
    those of the buffers it shares with the primary, go to ``outputs``. Returns its status, its
    outputs' names in those dicts, and the worker's ``dependent`` launch. ``kernel_of``: kernel
    name -> kernel (``m.kernel``); ``run`` False: the launch only."""
    from kverify.semantics.interpreter import run_kernel
    from kverify.verifier.validate import _buffer_names, _params

    dspec, shared = spec.dependent_spec()
    dk = (kernel_of or m.kernel)(dspec.kernel)
    dnames = _buffer_names(dk, dspec)
    place = {n: shared.get(n, DEP + n) for n in dnames}
    dr = None
    if run and r.status == "complete":
        given = {n: inputs[place[n]] for n in dnames if n not in shared and place[n] in inputs}
        dr = run_kernel(m, dk, dspec, seed=seed, check=False,
                        inputs={**given, **{p: r.outputs[b] for p, b in shared.items()}})
        for n in dnames:
            inputs.setdefault(place[n], dr.inputs[n])
            outputs[place[n]] = dr.outputs[n]
    params = [dict(p, buffer=place[p["buffer"]]) if p["kind"] == "buffer" else p for p in _params(dk, dspec, dnames)]
    plan = {"kernel": dk.name, "grid": list(dspec.grid), "block": list(dspec.block), "params": params,
            "dynamic_smem": dspec.dynamic_smem}
    if dr is not None and dr.cooperative:
        plan["cooperative"] = True
    return {"status": dr.status if dr else "not run", "outputs": [place.get(o, DEP + o) for o in dspec.outputs],
            "plan": plan}


def cmd_gpu(a):
    import importlib.util

    from kverify.lowering.gpu import Gpu

    # the worker module alone (not the verifier.validate package, which needs the interpreter)
    spec = importlib.util.spec_from_file_location("kverify_worker",
                                                  ROOT / "kverify" / "verifier" / "validate" / "worker.py")
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    run_plan = worker.run_plan

    d = Path(a.dir)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    index = json.loads((d / "index.json").read_text())
    gpu = Gpu()
    scratch = __import__("tempfile").mkdtemp(prefix="kverify-conf-")
    res = {"device": gpu.describe(), "programs": {}, "zoo": {}}
    arrays = {}
    t0 = time.perf_counter()
    keep = []
    res["zoo_lowered"] = {}
    res["im2col"] = {}
    for kind in ("programs", "zoo", "zoo_lowered", "im2col"):
        for e in index.get(kind, []):
            if "plan" not in e:
                continue
            plan = json.loads(json.dumps(e["plan"]))
            plan["image"] = str(d / plan["image"])
            for r in plan["runs"]:
                r["npz"] = str(d / r["npz"])
                r["out"] = str(Path(scratch) / (e["name"] + ".npz"))
            events = []
            t1 = time.perf_counter()
            rc = run_plan(gpu, plan, lambda **kw: events.append(kw), keep)
            res[kind][e["name"]] = {"rc": rc, "events": [x for x in events if x.get("event") != "start"],
                                    "s": round(time.perf_counter() - t1, 4)}
            if rc == 0:
                for k, v in np.load(plan["runs"][0]["out"]).items():
                    arrays[f"{e['name']}::{k}"] = v
            else:
                print(e["name"], events[-1] if events else "", flush=True)
                gpu = Gpu()  # a fresh context after a launch failure
    res["gpu_s"] = round(time.perf_counter() - t0, 3)
    part, size, k = {}, 0, 0  # files of at most ~12 MB each
    for key, v in arrays.items():
        part[key] = v
        size += v.nbytes
        if size > 12 << 20:
            np.savez_compressed(out / ("gpu.npz" if k == 0 else f"gpu_{k}.npz"), **part)
            part, size, k = {}, 0, k + 1
    np.savez_compressed(out / ("gpu.npz" if k == 0 else f"gpu_{k}.npz"), **part)
    (out / "gpu.json").write_text(json.dumps(res))
    print(f"GPU: {sum(1 for v in res['programs'].values() if v['rc'] == 0)} programs, "
          f"{sum(1 for v in res['zoo'].values() if v['rc'] == 0)} zoo kernels, "
          f"{sum(1 for v in res['zoo_lowered'].values() if v['rc'] == 0)} lowered zoo kernels in {res['gpu_s']} s "
          f"on {res['device']}")
    return 0


def _ulp_diff(a, b, dtype):
    if dtype == np.float32:
        ia = a.view(np.int32).astype(np.int64)
        ib = b.view(np.int32).astype(np.int64)
    elif dtype == np.float16:
        ia = a.view(np.int16).astype(np.int64)
        ib = b.view(np.int16).astype(np.int64)
    else:
        return None
    ia = np.where(ia < 0, np.int64(-2 ** 31) - ia if dtype == np.float32 else np.int64(-2 ** 15) - ia, ia)
    ib = np.where(ib < 0, np.int64(-2 ** 31) - ib if dtype == np.float32 else np.int64(-2 ** 15) - ib, ib)
    return int(np.max(np.abs(ia - ib))) if ia.size else 0


def cmd_compare(a):
    d = Path(a.dir)
    index = json.loads((d / "index.json").read_text())
    gdir = Path(a.gpu).parent
    gmeta = json.loads((gdir / "gpu.json").read_text())
    garr = {}
    for f in sorted(gdir.glob("gpu*.npz")):
        garr.update(dict(np.load(f)))
    summary = {"programs": 0, "seed": index["seed"], "generator": "tests/conformance/generate.py (hypothesis)",
               "device": gmeta["device"], "agree": 0, "disagreements": [], "not_run": [],
               "templates": {}, "zoo": []}
    reg = ROOT / "tests" / "conformance" / "regressions"
    for e in index["programs"]:
        summary["programs"] += 1
        for t in e["templates"]:
            summary["templates"][t] = summary["templates"].get(t, 0) + 1
        key = f"{e['name']}::conf_param_1"
        ipath = _idir(d) / f"{e['name']}.interp.npy"
        if "ptxas_error" in e or key not in garr or not ipath.exists():
            summary["not_run"].append({"name": e["name"], "why": e.get("ptxas_error") or e.get("interp_status")
                                       or "gpu run failed"})
            continue
        g, i = garr[key], np.load(ipath)
        if np.array_equal(g, i):
            summary["agree"] += 1
            continue
        from conformance.generate import IN_BYTES, NH, NR, NRD, OUT_BYTES

        gw, iw = g.reshape(-1, OUT_BYTES), i.reshape(-1, OUT_BYTES)
        bad_t = np.flatnonzero((gw != iw).any(axis=1))
        t = int(bad_t[0])
        diff_bytes = np.flatnonzero(gw[t] != iw[t])
        regions = []
        for off in sorted(set(int(x) for x in diff_bytes)):
            if off < 4 * NR:
                r = f"%r{off // 4}"
            elif off < 4 * NR + 8 * NRD:
                r = f"%rd{(off - 4 * NR) // 8}"
            elif off < 4 * NR + 8 * NRD + 2 * NH:
                r = f"%h{(off - 4 * NR - 8 * NRD) // 2}"
            else:
                r = f"%p{(off - IN_BYTES) // 4}"
            if r not in regions:
                regions.append(r)
        summary["disagreements"].append({"name": e["name"], "threads": len(bad_t), "first_thread": t,
                                         "registers": regions})
        if a.keep:
            reg.mkdir(parents=True, exist_ok=True)
            (reg / f"{e['name']}_s{index['seed']}.ptx").write_text((d / "prog" / f"{e['name']}.ptx").read_text())
            inputs = dict(np.load(d / "prog" / f"{e['name']}.in.npz"))
            np.savez_compressed(reg / f"{e['name']}_s{index['seed']}.npz", gpu_out=g, grid=e["grid"],
                                block=e["block"], **{f"in_{k}": v for k, v in inputs.items()})
    summary["zoo"] = _compare_zoo(d, index["zoo"], garr)
    summary["zoo_disagreements"] = [z["name"] for z in summary["zoo"] if z.get("status") == "DISAGREEMENT"]
    if index.get("zoo_lowered"):
        summary["zoo_lowered"] = _compare_zoo(d, index["zoo_lowered"], garr)
        summary["zoo_lowered_disagreements"] = [z["name"] for z in summary["zoo_lowered"]
                                                if z.get("status") not in ("bit-exact", "expected (approximate or "
                                                                           "tensor-core instructions)")
                                                and not z["status"].startswith("not lowered")]
    if index.get("im2col"):
        summary["im2col"] = _compare_im2col(d, index["im2col"], garr)
        summary["im2col_disagreements"] = [z["name"] for z in summary["im2col"] if z["status"] != "bit-exact"]
        print(f"im2col: {sum(1 for z in summary['im2col'] if z.get('bit_exact'))} bit-exact of "
              f"{len(summary['im2col'])}, not bit-exact {summary['im2col_disagreements']}")
    summary["gpu_s"] = gmeta["gpu_s"]
    summary["interp_s_programs"] = index.get("interp_s_programs")
    out = Path(a.result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1))
    print(f"{summary['programs']} programs: {summary['agree']} agree, {len(summary['disagreements'])} disagree, "
          f"{len(summary['not_run'])} not run; zoo: "
          f"{sum(1 for z in summary['zoo'] if z.get('bit_exact'))} bit-exact of {len(summary['zoo'])}, "
          f"disagreements {summary['zoo_disagreements']}")
    if "zoo_lowered" in summary:
        print(f"lowered zoo: {sum(1 for z in summary['zoo_lowered'] if z.get('bit_exact'))} bit-exact of "
              f"{len(summary['zoo_lowered'])}, not as expected {summary['zoo_lowered_disagreements']}")
    for x in summary["disagreements"][:20]:
        print("  ", x)
    return 0


def _compare_zoo(d, entries, garr) -> list:
    """One row per zoo kernel: its GPU outputs against the interpreter's for the original
    PTX (``of``: the kernel a lowered entry was lowered from), bit for bit; approximate and
    tensor-core kernels with their largest difference in ulps."""
    rows = []
    for e in entries:
        row = {"name": e["name"], "file": e["file"], "approx": e["approx"], "mma": e["mma"]}
        for key in ("interp_status", "interp_same", "build_error"):
            if key in e:
                row[key] = e[key]
        if "build_error" in e:
            row["status"] = "does not build"
            rows.append(row)
            continue
        if "not_run" in e or "lowering_error" in e:
            row["status"] = (f"not run on the GPU: {e['not_run']}" if "not_run" in e
                             else f"not lowered: {e['lowering_error']}")
            rows.append(row)
            continue
        interp = dict(np.load(_idir(d) / f"{e.get('of', e['name'])}.interp.npz"))
        if not all(f"{e['name']}::{o}" in garr for o in e["outputs"]):
            row["status"] = "not run on the GPU"
            rows.append(row)
            continue
        exact, ulps = True, {}
        for o in e["outputs"]:
            g, i = garr[f"{e['name']}::{o}"], interp[o]
            same = np.array_equal(g.view(np.uint8), i.view(np.uint8))
            exact &= same
            if not same:
                ulps[o] = _ulp_diff(g.reshape(-1), i.reshape(-1), g.dtype.type) if g.dtype.kind == "f" else \
                    int(np.count_nonzero(g != i))
        row["bit_exact"] = exact
        if e.get("exact_sums"):
            row["exact_sums"] = True
        if not exact:
            row["max_ulp_or_count"] = ulps
            # inputs chosen so that every partial sum is exact leave no room for the
            # accumulation order: a difference there is a disagreement even for an MMA
            tolerated = (e["approx"] or e["mma"]) and not e.get("exact_sums")
            row["status"] = "expected (approximate or tensor-core instructions)" if tolerated else "DISAGREEMENT"
        else:
            row["status"] = "bit-exact"
        rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--n", type=int, default=400)
    g.add_argument("--seed", type=int, default=20261203)
    g.add_argument("--dir", default=".conf")
    g.add_argument("--zoo-only", action="store_true")
    g.add_argument("--families", help="comma-separated zoo families to include (default: every family), "
                                      "e.g. wgmma_fp8,mma_fp8")
    g.add_argument("--no-lowered", action="store_true", help="without the zoo kernels lowered to CUDA")
    g.add_argument("--single", action="store_true", help="one instruction per program, no guards or branches")
    g.add_argument("--im2col", action="store_true", help="also the TMA im2col cases (tests/conformance/im2col.py)")
    g.add_argument("--im2col-only", action="store_true", help="only the TMA im2col cases")
    g.set_defaults(func=cmd_gen)
    g = sub.add_parser("gpu")
    g.add_argument("--dir", default=".conf")
    g.add_argument("--out", required=True)
    g.set_defaults(func=cmd_gpu)
    g = sub.add_parser("compare")
    g.add_argument("--dir", default=".conf")
    g.add_argument("--gpu", required=True)
    g.add_argument("--result", default=str(ROOT / "bench" / "results" / "conformance.json"))
    g.add_argument("--keep", action="store_true", help="save disagreeing programs as regression tests")
    g.set_defaults(func=cmd_compare)
    g = sub.add_parser("reinterp")
    g.add_argument("--dir", default=".conf")
    g.add_argument("--jobs", type=int, default=2)
    g.add_argument("--programs-only", action="store_true")
    g.set_defaults(func=cmd_reinterp)
    a = ap.parse_args(argv)
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())

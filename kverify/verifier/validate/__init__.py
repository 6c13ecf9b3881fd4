"""``kverify validate``: run a kernel on the GPU and compare it with a reference, in a way
that the documented exploits (B1-B10 of docs/validation.md) do not fool.

What one validation does, in order:

1. load the kernel (``.ptx``, or ``.cu`` through nvcc), optionally lower it back to CUDA
   and rebuild it (``lowered=True``); the PTX that runs is assembled by ptxas with the
   pinned flags (``--fmad=false``) and hashed;
2. static audits of that PTX (``audit``): calls outside the module, store dtypes,
   precision downgrades, launch values against the ``.param`` list;
3. the launches (``shapes``): the launch as given plus fuzzed shapes;
4. per trial fresh random inputs from a replayable seed, outputs poisoned twice
   (``poison``), the reference computed from private copies;
5. every run on the GPU in a child process with a timeout (``runner``), fresh device
   buffers between red zones;
6. the checks: each run against its own reference in float64 (``tolerance``), the two
   poisons agree, inputs unchanged, red zones intact, no hang, a reference strong enough
   to tell; optionally compute-sanitizer (``sanitize``).

The result is a ``KernelReport`` of obligations (``kverify.report/2``). Passing checks are
``bounded`` with the sample they cover stated (trials, shapes, seed): random testing is
evidence, not proof.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kverify.launch import LaunchSpec, dtype, load, lookup, param_key, random_array
from kverify.launch.params import is_by_value, struct_bytes
from kverify.semantics.ir import KernelError, load_module
from kverify.verifier.report import Finding, KernelReport, Location, Obligation

from . import audit, poison, shapes as shp, tolerance
from .runner import RunOutcome, SubprocessRunner
from . import rules as R

SCHEMA_DETAILS = "kverify.validate/1"


@dataclass
class Validation:
    """A report plus what a person needs to replay it."""

    report: KernelReport
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        from kverify.verifier.report import report_json

        d = report_json([self.report], "validate")
        d["validate"] = self.details
        return d


# --------------------------------------------------------------------------- the PTX and the harness


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def harness_hash() -> str:
    """SHA-256 over the validator's own sources (B9: pin the harness)."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    files = sorted(here.glob("*.py")) + [here.parents[1] / "lowering" / "gpu.py"] + \
        sorted((here.parents[1] / "launch").glob("*.py"))  # launches, dtypes and inputs it builds on
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def kernel_ptx(file: str, module, lowered: bool, arch: str, defines: dict | None) -> tuple[str, str]:
    """``(ptx text that runs, how it was obtained)``."""
    if lowered:
        from kverify.lowering.build import BuildError, compile_to_ptx
        from kverify.lowering.cuda import lower_module

        try:
            return compile_to_ptx(lower_module(module), arch), "lowered CUDA (lowering.cuda) built with nvcc"
        except BuildError as e:
            raise KernelError(f"the lowered CUDA does not build: {e.log.strip().splitlines()[0] if e.log else e}",
                              file, 0, 0) from None
    if file.endswith((".cu", ".cuh")):
        from kverify.semantics.ir.cuda import compile_cuda

        text, used = compile_cuda(file, arch, defines)
        return text, f"{used} -arch={arch} -lineinfo"
    return Path(file).read_text(), "the PTX as given"


def _tensormap_param(t: dict, buffers: dict) -> dict:
    b = buffers[t["buffer"]]
    shape = [int(x) for x in (t.get("shape") or b["shape"])]
    esize = dtype(t["dtype"]).itemsize
    st = t.get("strides")
    if st is None:
        st = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    strides_bytes = [int(s) * esize for s in st[:-1]]
    if t.get("mode") == "im2col":
        if t.get("strides") is not None and len(t["strides"]) == len(shape) - 1:
            strides_bytes = [int(s) for s in t["strides"]]  # the launch spec's byte strides of the outer dims
        if any(int(e) != 1 for e in t.get("element_strides") or []):
            raise KernelError("validate: im2col tensor maps with element strides other than 1 are not supported by "
                              "the GPU runner", "<launch>", 1, 1)
        return {"kind": "tensormap", "mode": "im2col", "buffer": t["buffer"], "dtype": t["dtype"], "shape": shape,
                "strides_bytes": strides_bytes, "lower_corner": [int(x) for x in t["lower_corner"]],
                "upper_corner": [int(x) for x in t["upper_corner"]],
                "channels_per_pixel": int(t["channels_per_pixel"]), "pixels_per_column": int(t["pixels_per_column"]),
                "swizzle": t.get("swizzle", "none"), "oob_fill": t.get("oob_fill", "zero")}
    return {"kind": "tensormap", "buffer": t["buffer"], "dtype": t["dtype"], "shape": shape,
            "strides_bytes": strides_bytes, "box": [int(x) for x in t["box"]],
            "swizzle": t.get("swizzle", "none")}


# --------------------------------------------------------------------------- the validation


def validate(file: str, launch: str | None = None, ref: str | None = None, trials: int = 4,
             shapes: dict | None = None, seed: int = 0, sanitize: bool = False, timeout: float = 30.0,
             kernel_name: str | None = None, lowered: bool = False, rtol: float | None = None,
             atol: float | None = None, runner=None, arch: str = "sm_90a", defines: dict | None = None,
             workdir: str | None = None, allow_fast_math: bool = False) -> Validation:
    t_start = time.perf_counter()
    opts = {"arch": arch, "defines": defines or {}} if file.endswith((".cu", ".cuh")) else {}
    module = load_module(file, **opts)
    if kernel_name is None and launch and len(module.kernels) > 1:  # the kernel the launch JSON names
        try:
            kernel_name = load(launch, file).data.get("kernel")
        except KernelError:
            pass
    try:
        kernel = module.kernel(kernel_name)
    except KeyError as e:
        raise KernelError(e.args[0], file, 1, 1) from None
    src = load(launch, file, kernel.name)  # a launch JSON (possibly a template) or a zoo manifest
    template = src.data
    if template.get("dependent") is not None:
        raise KernelError("validate runs one grid against its reference; this launch names a dependent grid "
                          "(PDL pair): `kverify check` checks the pair, and each grid validates with a launch of "
                          "its own", src.path, 1, 1)
    ref = ref or src.reference
    if not ref:
        raise KernelError("--ref module:function is required (the manifest names none)", file, 0, 0)
    from kverify.semantics.interpreter import load_reference

    ref_fn = load_reference(ref, file)
    ref_path = getattr(__import__("inspect").getmodule(ref_fn), "__file__", None)
    launches = shp.launches(template, shapes)
    if trials < 1:
        raise KernelError("--trials must be at least 1", "<command line>", 1, 1)

    ptx, ptx_how = kernel_ptx(file, module, lowered, arch, defines)
    report = KernelReport(kernel.name, file)
    details = {"schema": SCHEMA_DETAILS, "seed": seed, "trials": trials, "kernel_source": ptx_how,
               "ptx_sha256": _sha256(ptx.encode()), "reference": ref,
               "reference_sha256": _sha256(Path(ref_path).read_bytes()) if ref_path else None,
               "harness_sha256": harness_hash(), "launches": [lbl for lbl, _ in launches],
               "replay": _replay_cmd(file, launch, ref, trials, shapes, seed, lowered)}

    # ---- static audits of the kernel that runs (IR of the original; lowering keeps every instruction)
    specs = []
    for lbl, d in launches:
        try:
            specs.append((lbl, d, LaunchSpec.from_dict(d, launch or file)))
        except KernelError as e:
            raise KernelError(f"launch {lbl}: {e.message if hasattr(e, 'message') else e}", launch or file, 1, 1) \
                from None
    base_spec = specs[0][2]
    _static(report, module, kernel, base_spec, specs, allow_fast_math)
    from kverify.semantics.interpreter.specials import reads_grid_workspace

    reads_workspace = reads_grid_workspace(module, kernel)

    # ---- trials and the plan
    tmp = tempfile.mkdtemp(prefix="kverify-validate-", dir=workdir)
    from kverify.lowering.gpu import module_image

    image_path = Path(tmp) / "kernel.img"
    try:
        image, image_how = module_image(ptx, arch)
    except Exception as e:  # ptxas rejected it: a verdict when the audits explain why, else bad input
        log = " ".join(str(getattr(e, "log", e)).split())
        if any(o.status == "violated" for o in report.obligations):
            _ob(report, "terminates", "violated", f"the kernel does not assemble: {log}", R.BUILD_ERROR.id)
            details["time_s"] = round(time.perf_counter() - t_start, 3)
            return Validation(report, details)
        raise KernelError(f"ptxas rejected the kernel: {log}", file, 0, 0) from None
    image_path.write_bytes(image.rstrip(b"\0") if image_how == "driver JIT" else image)
    details["image"] = image_how
    details["fp_flags"] = {"fmad": image_how == "driver JIT", "ftz": "as written in the PTX",
                           "prec_div": "as written in the PTX", "prec_sqrt": "as written in the PTX"}
    plan = {"image": str(image_path), "image_is_ptx": image_how == "driver JIT", "kernel": kernel.name,
            "dynamic_smem": base_spec.dynamic_smem, "runs": []}
    trial_list = []  # (trial id, label, spec, launch dict, initial A, initial B, poison bits, outputs)
    tid = 0
    per_launch = [trials] + [1] * (len(specs) - 1)
    for (lbl, d, spec), count in zip(specs, per_launch):
        if spec.dynamic_smem != base_spec.dynamic_smem:
            plan["dynamic_smem"] = max(plan["dynamic_smem"], spec.dynamic_smem)
        for _ in range(count):
            rng = np.random.default_rng([seed, tid])
            names = _buffer_names(kernel, spec)
            outputs = [n for n in names if n in spec.outputs or _spec_key(kernel, spec, n) in spec.outputs]
            if not outputs:
                raise KernelError("launch spec names no output buffer (\"outputs\")", launch or file, 1, 1)
            base = {}
            for n in names:
                b = spec.buffers[_spec_key(kernel, spec, n)]
                base[n] = random_array(rng, b["dtype"], tuple(b["shape"]))
            bits = {}
            init = {}
            for which in ("A", "B"):
                arrs = dict(base)
                for n in outputs:
                    b = spec.buffers[_spec_key(kernel, spec, n)]
                    bits[(which, n)] = poison.poison_bits(b["dtype"], which, rng)
                    arrs[n] = poison.filled(b["dtype"], b["shape"], bits[(which, n)])
                init[which] = arrs
            trial_list.append({"id": tid, "label": lbl, "spec": spec, "launch": d, "init": init, "bits": bits,
                               "outputs": outputs, "names": names, "tmp": tmp})
            for which in ("A", "B"):
                rid = f"t{tid}{which}"
                npz = Path(tmp) / f"{rid}.npz"
                np.savez(npz, **init[which])
                plan["runs"].append({"id": rid, "npz": str(npz), "out": str(Path(tmp) / f"{rid}.out.npz"),
                                     "grid": list(spec.grid), "block": list(spec.block),
                                     "cluster": list(spec.cluster) if _needs_cluster(kernel, spec) else None,
                                     "params": _params(kernel, spec, names), "launch": _interp_launch(d, spec),
                                     # cooperative as the interpreter takes it: given, or when grid.sync() is read
                                     "cooperative": spec.cooperative if spec.cooperative is not None
                                     else reads_workspace})
            tid += 1
    plan_path = Path(tmp) / "plan.json"
    plan_path.write_text(json.dumps(plan))

    # ---- references, from private copies, before anything runs
    for t in trial_list:
        t["ref"] = {}
        for which in ("A", "B"):
            t["ref"][which] = _reference(ref_fn, ref, t["init"][which], t["spec"], kernel, file)

    # ---- run
    runner = runner or SubprocessRunner(timeout=timeout)
    outcome: RunOutcome = runner(plan, str(plan_path))
    details["device"] = outcome.device
    details["run_wall_s"] = round(outcome.wall_s, 3)
    details["launch_ms"] = {rid: round(r["ms"], 3) for rid, r in outcome.runs.items() if r.get("ms") is not None}
    details["pointers"] = {rid: r["pointers"] for rid, r in outcome.runs.items() if r.get("pointers")}
    if outcome.unavailable:
        details["unavailable"] = outcome.unavailable
        for oid in ("terminates", "matches-reference", "deterministic", "inputs-unmodified", "in-bounds-writes"):
            report.obligations.append(Obligation(oid, "validate", "unknown",
                                                 f"not run: {outcome.unavailable}", rule=R.NO_GPU.id))
    else:
        _evaluate(report, trial_list, outcome, rtol, atol, seed, kernel)
        if sanitize:
            _sanitize(report, plan, tmp, timeout)
    details["time_s"] = round(time.perf_counter() - t_start, 3)
    details["workdir"] = tmp
    return Validation(report, details)


def _replay_cmd(file, launch, ref, trials, shapes, seed, lowered) -> str:
    parts = ["kverify validate", file]
    if launch:
        parts += ["--launch", launch]
    parts += ["--ref", ref, "--trials", str(trials), "--seed", str(seed)]
    for k, v in (shapes or {}).items():
        parts += ["--shapes", f"{k}={','.join(map(str, v))}"]
    if lowered:
        parts.append("--lowered")
    return " ".join(parts)


def _spec_key(kernel, spec, name):
    """The key of ``spec.buffers`` for buffer ``name`` (a parameter key or a plain name)."""
    if name in spec.buffers:
        return name
    for i, p in enumerate(kernel.params):
        if param_key(kernel, i) == name:
            for key in (p.source_name, p.name, str(i)):
                if key in spec.buffers:
                    return key
    return name


def _buffer_names(kernel, spec) -> list:
    names = []
    for i, p in enumerate(kernel.params):
        if lookup(spec.buffers, kernel, i) is not None:
            names.append(param_key(kernel, i))
    taken = {_spec_key(kernel, spec, n) for n in names}
    for k in spec.buffers:
        if k not in taken and not str(k).isdigit():
            names.append(k)
    return names


def _needs_cluster(kernel, spec) -> bool:
    if tuple(spec.cluster) == (1, 1, 1):
        return False
    return not any(d[0] == "reqnctapercluster" for d in kernel.directives)


def _params(kernel, spec, names) -> list:
    out = []
    for i, p in enumerate(kernel.params):
        name = param_key(kernel, i)
        t = lookup(spec.tensormaps, kernel, i)
        if p.array and t is not None:
            out.append(_tensormap_param(t, {n: spec.buffers[_spec_key(kernel, spec, n)] for n in names}))
            continue
        if lookup(spec.buffers, kernel, i) is not None:
            out.append({"kind": "buffer", "buffer": name})
            continue
        v = lookup(spec.args, kernel, i)
        if is_by_value(v):
            out.append({"kind": "bytes", "hex": _by_value_hex(kernel, spec, i, v)})
            continue
        out.append({"kind": "bytes", "hex": audit.param_blob(v if v is not None else 0, p).hex()})
    return out


def _by_value_hex(kernel, spec, i, v) -> str:
    """The bytes of a by-value parameter given as raw bytes or scalar struct fields; pointers
    and tensor maps inside a struct need GPU addresses this runner does not yet place."""
    p = kernel.params[i]
    if "bytes" in v:
        raw = bytes.fromhex(v["bytes"].replace(" ", "").removeprefix("0x"))
        return (raw + bytes(max(0, p.size - len(raw)))).hex()
    if any(k in ("ptr", "tensormap") for f in v["struct"].values() for k in f):
        raise KernelError(f"validate: parameter {param_key(kernel, i)}: pointers and tensor maps inside a by-value "
                          f"struct are not supported by the GPU runner (kverify run / check follow them)",
                          spec.path, 1, 1)
    raw, _, _ = struct_bytes(v["struct"], p.size, {}, spec, ["args", param_key(kernel, i), "struct"])
    return bytes(raw).hex()


def _interp_launch(d: dict, spec) -> dict:
    return {k: v for k, v in d.items() if k in ("kernel", "grid", "block", "cluster", "args", "buffers",
                                                 "tensormaps", "outputs", "dynamic_smem", "shared_bytes",
                                                 "cooperative")}


def _reference(fn, ref, init: dict, spec, kernel, file) -> dict:
    from kverify.semantics.interpreter import call_reference

    private = {k: np.array(v, copy=True) for k, v in init.items()}
    for i, p in enumerate(kernel.params):  # the reference may use either name of a buffer
        for key in (p.name, p.source_name):
            if key and param_key(kernel, i) in private and key not in private:
                private[key] = private[param_key(kernel, i)]
    try:
        return call_reference(fn, private, spec)
    except Exception as e:  # the reference is user code
        raise KernelError(f"reference {ref} failed: {type(e).__name__}: {e}", file, 0, 0) from None


# --------------------------------------------------------------------------- static obligations


def _ob(report, oid, status, message="", rule=None, bound=None, findings=()):
    locs = []
    for f in findings:
        l = f.get("loc") or {}
        loc = Location(l.get("path"), l.get("line") or l.get("ptx_line") or 0, 0, l.get("ptx_line") or 0)
        locs.append(loc)
        report.findings.append(Finding(f["rule"], f["message"], [loc]))
    report.obligations.append(Obligation(oid, "validate", status, message, bound=bound, locations=locs[:4],
                                         rule=rule))


def _static(report, module, kernel, base_spec, specs, allow_fast_math=False):
    ext = audit.extern_calls(module, kernel)
    _ob(report, "no-extern-calls", "violated" if ext else "proved",
        ext[0]["message"] if ext else "every call stays inside the module", R.EXTERN_CALL.id if ext else None,
        findings=ext)
    st, counts = audit.store_dtypes(module, kernel, base_spec)
    if st:
        _ob(report, "store-dtypes", "violated", st[0]["message"], R.STORE_DTYPE.id, findings=st)
    else:
        total = counts["checked"] + counts["untraced"]
        status = "proved" if counts["untraced"] == 0 else "bounded"
        _ob(report, "store-dtypes", status, f"{counts['checked']} of {total} global stores traced to their buffer, "
            f"each of the buffer's dtype", bound=None if status == "proved" else
            f"{counts['untraced']} store(s) whose address the PTX does not trace to one parameter")
    dg = audit.precision_downgrades(module, kernel, base_spec)
    _ob(report, "no-precision-downgrade", "violated" if dg else "proved",
        dg[0]["message"] if dg else "no narrowing conversion or matrix operation below the buffers' formats",
        R.PRECISION_DOWNGRADE.id if dg else None, findings=dg)
    fm = audit.fast_math(module, kernel)
    if fm and not allow_fast_math:
        _ob(report, "no-fast-math", "violated", f"{fm[0]['message']} ({len(fm)} instruction(s))", R.FAST_MATH.id,
            findings=fm[:8])
    else:
        _ob(report, "no-fast-math", "proved", "no fast-math instruction" if not fm else
            f"{len(fm)} fast-math instruction(s), allowed by --allow-fast-math")
    bad = []
    for lbl, _d, spec in specs:
        for f in audit.abi(kernel, spec):
            f["message"] = f"launch {lbl}: {f['message']}"
            bad.append(f)
    _ob(report, "launch-abi", "violated" if bad else "proved",
        bad[0]["message"] if bad else "every launch value matches its .param type and size",
        R.ABI.id if bad else None, findings=bad[:8])


# --------------------------------------------------------------------------- dynamic obligations


def _evaluate(report, trial_list, outcome: RunOutcome, rtol, atol, seed, kernel):
    runs = outcome.runs
    n_runs = 2 * len(trial_list)
    hang = [(rid, r) for rid, r in runs.items() if r["status"] == "timeout"]
    errs = [(rid, r) for rid, r in runs.items() if r["status"] == "error"]
    labels = {f"t{t['id']}{w}": t["label"] for t in trial_list for w in "AB"}
    if hang:
        rid, r = hang[0]
        _ob(report, "terminates", "violated", f"run {rid} ({labels.get(rid, rid)}): {r['message']} (killed)",
            R.TIMEOUT.id)
    elif errs:
        rid, r = errs[0]
        _ob(report, "terminates", "violated", f"run {rid} ({labels.get(rid, rid)}): {r['message']}",
            R.LAUNCH_ERROR.id)
    else:
        _ob(report, "terminates", "bounded", f"{n_runs} launches completed", bound=f"{n_runs} launches")
    mism, unwritten, disagree, mutated, oob = [], [], [], [], []
    weak_all = True
    compared = 0
    for t in trial_list:
        ra, rb = runs.get(f"t{t['id']}A"), runs.get(f"t{t['id']}B")
        if not ra or not rb or ra["status"] != "done" or rb["status"] != "done":
            continue
        compared += 1
        got = {w: dict(np.load(runs_path(t, w))) for w in "AB"}
        spec = t["spec"]
        for w, r in (("A", ra), ("B", rb)):
            for name, cnt in (r.get("redzone") or {}).items():
                if cnt:
                    oob.append(f"trial {t['id']} ({t['label']}) run {w}: {cnt} byte(s) written outside buffer {name}")
        for name in t["names"]:
            if name in t["outputs"]:
                continue
            for w in "AB":
                if not np.array_equal(poison.as_bits(got[w][name]), poison.as_bits(t["init"][w][name])):
                    k = int(np.count_nonzero(poison.as_bits(got[w][name]) != poison.as_bits(t["init"][w][name])))
                    mutated.append(f"trial {t['id']} ({t['label']}): input {name} changed in {k} element(s)")
                    break
        for name in t["outputs"]:
            dtype = spec.buffers[_spec_key(kernel, spec, name)]["dtype"]
            refs = {w: _ref_for(t["ref"][w], name, kernel) for w in "AB"}
            if refs["A"] is None:
                continue
            for w in "AB":
                out = got[w][name]
                ref = np.asarray(refs[w]).reshape(-1)
                c = tolerance.compare(out, ref, dtype, rtol=rtol, atol=atol)
                if not c.ok:
                    pz = poison.still_poisoned(out.reshape(-1)[:ref.size], t["bits"][(w, name)])
                    ref_pz = poison.still_poisoned(np.asarray(ref, dtype=out.dtype), t["bits"][(w, name)]) \
                        if out.dtype != np.uint16 or dtype == "bfloat16" else np.zeros(ref.size, bool)
                    left = pz & ~ref_pz
                    if left.any():
                        unwritten.append(f"trial {t['id']} ({t['label']}) run {w}: {int(left.sum())} of {ref.size} "
                                         f"elements of {name} never written (still the poison), first at flat index "
                                         f"{int(np.flatnonzero(left)[0])}")
                    else:
                        mism.append(f"trial {t['id']} ({t['label']}) run {w}: {name}: {c.mismatches} of {c.of} "
                                    f"elements differ (first at flat index {c.first_index}: got {c.got}, expected "
                                    f"{c.expected}); max |err| {c.max_abs_err:.3g}, ||err||/||ref|| "
                                    f"{c.rel_err:.3g} (rtol {c.rtol:g}, atol {c.atol:.3g})")
            dmask = poison.runs_disagree(got["A"][name].reshape(-1)[:np.size(refs["A"])],
                                         got["B"][name].reshape(-1)[:np.size(refs["B"])],
                                         np.asarray(refs["A"]).reshape(-1), np.asarray(refs["B"]).reshape(-1))
            if dmask.any():
                i = int(np.flatnonzero(dmask)[0])
                disagree.append(f"trial {t['id']} ({t['label']}): {name} differs between the two poisoned runs in "
                                f"{int(dmask.sum())} element(s) where the reference does not depend on the initial "
                                f"contents (first at flat index {i}: {got['A'][name].reshape(-1)[i]!r} vs "
                                f"{got['B'][name].reshape(-1)[i]!r})")
            for w in "AB":  # signal: reference elements that are not just the poison left in place
                r = np.asarray(refs[w]).reshape(-1)
                real = ~poison.still_poisoned(np.asarray(r, dtype=got[w][name].dtype), t["bits"][(w, name)])
                if not tolerance.is_constant(r, dtype, real) and not tolerance.signal_below_tolerance(r, dtype, atol):
                    weak_all = False
    shapes_note = ", ".join(sorted({t["label"] for t in trial_list}))
    bound = f"{compared} trial(s) x 2 poisons, seed {seed}, launches: {shapes_note}"
    if compared == 0:
        for oid in ("matches-reference", "deterministic", "inputs-unmodified", "in-bounds-writes"):
            _ob(report, oid, "unknown", "no run completed", R.NOT_RUN.id)
        return
    if unwritten:
        _ob(report, "matches-reference", "violated", unwritten[0], R.UNWRITTEN.id)
    elif mism:
        _ob(report, "matches-reference", "violated", mism[0], R.MISMATCH.id)
    elif weak_all:
        _ob(report, "matches-reference", "unknown",
            "the reference is constant in every output (or the given atol is as large as its signal): a trivial "
            "kernel would pass the same comparison", R.WEAK_REFERENCE.id)
    else:
        _ob(report, "matches-reference", "bounded", "every run within tolerance of its reference", bound=bound)
    _ob(report, "deterministic", "violated" if disagree else "bounded",
        disagree[0] if disagree else "the two poisoned runs agree wherever the reference does",
        R.NONDETERMINISTIC.id if disagree else None, bound=None if disagree else bound)
    _ob(report, "inputs-unmodified", "violated" if mutated else "bounded",
        mutated[0] if mutated else "every input buffer bit-identical after each run",
        R.INPUT_MUTATION.id if mutated else None, bound=None if mutated else bound)
    _ob(report, "in-bounds-writes", "violated" if oob else "bounded",
        oob[0] if oob else "red zones around every buffer intact",
        R.OUT_OF_BOUNDS_WRITE.id if oob else None, bound=None if oob else bound)
    for msgs, rule in ((unwritten[1:], R.UNWRITTEN.id), (mism[1:], R.MISMATCH.id),
                       (disagree[1:], R.NONDETERMINISTIC.id), (mutated[1:], R.INPUT_MUTATION.id),
                       (oob[1:], R.OUT_OF_BOUNDS_WRITE.id)):
        for m in msgs[:4]:
            report.findings.append(Finding(rule, m))


def runs_path(t, which) -> str:
    return str(Path(t["tmp"]) / f"t{t['id']}{which}.out.npz")


def _ref_for(ref: dict, name: str, kernel):
    if name in ref:
        return ref[name]
    for p in kernel.params:
        if name in (p.name, p.source_name):
            for key in (p.name, p.source_name):
                if key in ref:
                    return ref[key]
    return None


def _sanitize(report, plan, tmp, timeout):
    from .sanitize import TOOLS, find_sanitizer, run_tool

    san = find_sanitizer()
    if san is None:
        for tool in TOOLS:
            _ob(report, f"sanitizer-{tool}", "unknown", "compute-sanitizer is not installed", R.SANITIZER[tool].id)
        return
    small = dict(plan)
    small["runs"] = plan["runs"][:1]
    p = Path(tmp) / "plan_sanitize.json"
    p.write_text(json.dumps(small))
    for tool in TOOLS:
        r = run_tool(tool, str(p), max(timeout * 4, 120.0), san)
        if r["status"] == "ok":
            _ob(report, f"sanitizer-{tool}", "bounded", f"compute-sanitizer {tool}: 0 errors",
                bound="the first run of the plan")
        elif r["status"] == "findings":
            msg = r["messages"][0] if r["messages"] else f"{r['errors']} error(s)"
            _ob(report, f"sanitizer-{tool}", "violated", f"compute-sanitizer {tool}: {r['errors']} error(s): {msg}",
                R.SANITIZER[tool].id)
            for m in r["messages"][1:6]:
                report.findings.append(Finding(R.SANITIZER[tool].id, m))
        else:
            _ob(report, f"sanitizer-{tool}", "unknown",
                f"compute-sanitizer {tool}: {r['status']}: {r.get('tail') or '; '.join(r['messages'])}",
                R.SANITIZER[tool].id)

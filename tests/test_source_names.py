"""The source a PTX file's .file table names is looked up next to the PTX first: an unrelated file of
the same name in the working directory renamed the parameters (a verified launch) and took the
findings' locations."""
import subprocess
import sys

from conftest import ROOT, needs_nvcc


@needs_nvcc
def test_the_source_next_to_the_ptx_wins_over_the_working_directory(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "k.cu").write_text('extern "C" __global__ void k(float* out, int n, int m) {\n'
                              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = (float)m;\n}\n")
    subprocess.run(["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "k.cu", "-o", "k.ptx"], cwd=sub, check=True)
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* out, int m, int n) {}\n')
    r = subprocess.run([sys.executable, "-m", "kverify", "check", "sub/k.ptx", "--grid", "2", "--block", "128",
                        "--arg", "out=128:f32", "--arg", "n=256", "--arg", "m=100"], cwd=tmp_path,
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.startswith("sub/k.cu:3:3: error[bounds]: global access of 4 bytes"), r.stdout

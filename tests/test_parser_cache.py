"""The PTX grammar's LALR tables are cached per user ($XDG_CACHE_HOME/kverify/lark): written under
a temporary name and moved into place, validated by lark before use, rebuilt (silently) when a
file is damaged, and skipped when no cache directory can be written."""
from pathlib import Path

from kverify.semantics.ir.ptx_grammar import _lark

PTX = (Path(__file__).parent / "zoo" / "vadd" / "vadd.ptx").read_text()


def test_cache_written_once_used_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    want = _lark("module").parse(PTX)
    files = sorted((tmp_path / "kverify" / "lark").iterdir())
    assert [f.name.split("-")[:2] for f in files] == [["ptx", "module"]] and files[0].suffix == ".lark"
    size = files[0].stat().st_size
    assert size > 10_000
    assert _lark("module").parse(PTX) == want  # from the file
    files[0].write_text("garbage\n")
    assert _lark("module").parse(PTX) == want  # rebuilt, and the file rewritten
    assert files[0].stat().st_size > 10_000 and files[0].read_bytes()[:8] != b"garbage\n"
    assert [f.name for f in (tmp_path / "kverify" / "lark").iterdir()] == [files[0].name]  # no temporary left


def test_no_writable_cache_directory_still_parses(tmp_path, monkeypatch, capfd):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no directory can be made under it
    assert _lark("module").parse(PTX).data == "module"
    assert capfd.readouterr().err == ""

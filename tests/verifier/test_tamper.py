"""Environment snapshots see added, removed and edited project files and new modules on the import path."""

from __future__ import annotations

from pathlib import Path

from agent.verifier.tamper import changes, snapshot, watched_dirs


def _project(root: Path) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "reference.py").write_text("x = 1\n")
    (root / "agent").mkdir()
    (root / "agent" / "verifier.py").write_text("y = 2\n")
    return root


def test_no_change_no_report(tmp_path):
    root = _project(tmp_path)
    assert changes(snapshot(root), snapshot(root)) == []


def test_edits_additions_and_removals_are_named(tmp_path):
    root = _project(tmp_path)
    before = snapshot(root)
    (root / "kernels" / "reference.py").write_text("x = 2\n")
    (root / "torch.py").write_text("raise SystemExit\n")
    (root / "agent" / "verifier.py").unlink()
    found = changes(before, snapshot(root))
    assert any("reference.py was modified" in f for f in found)
    assert any("torch.py was added" in f for f in found)
    assert f"listing of {root.resolve()} was modified (added: torch.py)" in found
    assert f"listing of {(root / 'agent').resolve()} was modified (removed: verifier.py)" in found
    assert any("verifier.py was removed" in f for f in found)


def test_watched_dirs_cover_the_import_path(tmp_path):
    import torch

    dirs = {str(d) for d in watched_dirs(_project(tmp_path))}
    assert str(Path(torch.__file__).parent.resolve()) in dirs
    assert any(d.endswith("site-packages") for d in dirs)


def test_entries_that_cannot_change_an_import_are_not_watched(tmp_path):
    root = _project(tmp_path)
    before = snapshot(root)
    (root / ".pytest_cache").mkdir()
    (root / "run.log").write_text("x")
    (root / "core.1234").write_text("")
    assert changes(before, snapshot(root)) == []
    (root / "numpy").mkdir()  # a directory can become a package
    (root / "shadow.so").write_text("")
    (root / ".hidden.pth").write_text("")
    found = changes(before, snapshot(root))
    assert f"listing of {root.resolve()} was modified (added: .hidden.pth, numpy, shadow.so)" in found


def test_rewritten_bytecode_and_git_configuration_are_named(tmp_path):
    root = _project(tmp_path)
    cache = root / "agent" / "__pycache__"
    cache.mkdir()
    (cache / "verifier.cpython-311.pyc").write_bytes(b"\x00" * 32)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    before = snapshot(root)
    (cache / "verifier.cpython-311.pyc").write_bytes(b"\x01" * 32)
    (cache / "new_module.cpython-311.pyc").write_bytes(b"\x00" * 32)  # a first import compiles: not a finding
    (root / ".git" / "config").write_text('[core]\n\tfsmonitor = "touch pwned"\n')
    (root / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    found = changes(before, snapshot(root))
    assert f"{cache / 'verifier.cpython-311.pyc'} was modified" in found
    assert f"{root / '.git' / 'config'} was modified" in found
    assert f"{root / '.git' / 'hooks' / 'pre-commit'} was added" in found
    assert not any("new_module" in f for f in found)

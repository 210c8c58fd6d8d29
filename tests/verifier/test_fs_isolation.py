"""Landlock write isolation of sandbox children (`agent.verifier.fs_isolation`): the kernel refuses writes outside
the allowed folders whatever API asks (Python, C++ storages, subprocesses); reads stay allowed."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent.verifier import Verifier, VerifyOptions, fs_isolation
from agent.verifier.fs_isolation import file_write_rights, gpu_device_paths, landlock_abi, restrict_writes, write_rights

ROOT = Path(__file__).resolve().parents[2]
needs_landlock = pytest.mark.skipif(landlock_abi() < 1, reason="the kernel has no Landlock")


def _in_child(fn) -> list[str]:
    """Run `fn() -> list[str]` in a forked process (Landlock cannot be undone) and return its lines."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            lines = fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            lines = [f"error {type(exc).__name__}: {exc}"]
        os.write(write, "\n".join(lines).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        out = fh.read().splitlines()
    os.waitpid(pid, 0)
    return out


def test_rights_grow_with_the_abi():
    assert write_rights(1) < write_rights(2) < write_rights(3) == write_rights(7)


def test_device_files_get_only_the_file_write_rights():
    """write_file (bit 1), and truncate (bit 14) from ABI 3 on; never a directory right (make_*, remove_*, refer)."""
    assert file_write_rights(1) == file_write_rights(2) == 1 << 1
    assert file_write_rights(3) == file_write_rights(7) == (1 << 1) | (1 << 14)
    for abi in (1, 2, 3, 7):
        assert file_write_rights(abi) & write_rights(abi) == file_write_rights(abi) < write_rights(abi)


def test_gpu_device_paths_are_the_driver_nodes_and_null_of_a_dev_folder(tmp_path):
    nodes = ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "null", "zero",
             "kfd", "fuse", "ptmx"]
    for name in nodes:
        (tmp_path / name).write_text("")
    for name in ("nvidia-caps", "dri", "shm", "mqueue", "pts"):
        (tmp_path / name).mkdir()
    nvidia = [str(tmp_path / n) for n in ("nvidia-caps", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools",
                                         "nvidia0", "nvidia1", "nvidiactl")]
    assert gpu_device_paths(str(tmp_path)) == nvidia + [str(tmp_path / "null")]
    assert gpu_device_paths(str(tmp_path), hip=True) == nvidia + [str(tmp_path / n) for n in ("kfd", "dri", "null")]
    for name in ("null", "nvidia0", "nvidia1", "nvidia-modeset", "nvidia-uvm-tools", "kfd"):
        (tmp_path / name).unlink()
    (tmp_path / "nvidia-caps").rmdir()
    assert gpu_device_paths(str(tmp_path), hip=True) == [str(tmp_path / n) for n in ("nvidia-uvm", "nvidiactl", "dri")]
    assert gpu_device_paths(str(tmp_path / "missing"), hip=True) == []


@needs_landlock
def test_a_device_rule_carries_file_rights_only_and_grants_nothing_else(tmp_path):
    """Landlock refuses a directory right on a character device (EINVAL); with file rights /dev/null stays
    writable, while other devices, /dev/shm and files outside the allowed folder are refused. A directory given as a
    device (as /dev/nvidia-caps) lets its existing files be written, never a new one be created."""
    allowed, other, caps = tmp_path / "allowed", tmp_path / "other", tmp_path / "caps"
    for folder in (allowed, other, caps):
        folder.mkdir()
    (caps / "cap1").write_text("")
    shm = Path("/dev/shm") / f"chiplore-test-{os.getpid()}"

    def attempt() -> list[str]:
        import ctypes
        import struct

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        rights = write_rights(landlock_abi())
        attr = ctypes.create_string_buffer(struct.pack("=Q", rights))
        ruleset = int(libc.syscall(fs_isolation._CREATE_RULESET, attr, ctypes.c_size_t(8), ctypes.c_uint32(0)))
        try:
            fs_isolation._allow_beneath(libc, ruleset, "/dev/null", rights)
            lines = ["directory rights on /dev/null accepted"]
        except OSError as exc:
            lines = [f"directory rights on /dev/null: errno {exc.errno}"]
        os.close(ruleset)
        lines.append(restrict_writes([str(allowed)], ["/dev/null", str(caps), str(tmp_path / "absent")]))
        for path in ("/dev/null", allowed / "a.txt", other / "b.txt", caps / "cap1", caps / "new", "/dev/zero",
                     shm):
            try:
                with open(path, "w") as fh:  # O_WRONLY | O_CREAT | O_TRUNC
                    fh.write("x")
                lines.append(f"wrote {path}")
            except PermissionError:
                lines.append(f"refused {path}")
        return lines

    try:
        lines = _in_child(attempt)
    finally:
        shm.unlink(missing_ok=True)
    assert lines[0] == f"directory rights on /dev/null: errno {errno.EINVAL}", lines
    assert lines[1].startswith("landlock ABI"), lines
    assert lines[2:] == ["wrote /dev/null", f"wrote {allowed / 'a.txt'}", f"refused {other / 'b.txt'}",
                         f"wrote {caps / 'cap1'}", f"refused {caps / 'new'}", "refused /dev/zero", f"refused {shm}"]
    assert not any(other.iterdir()) and sorted(p.name for p in caps.iterdir()) == ["cap1"]


@needs_landlock
@pytest.mark.parametrize("dev_writes", ["nodes", pytest.param("all", marks=pytest.mark.slow)])
def test_a_gpu_child_writes_only_the_device_nodes_unless_told_all_of_dev(tmp_path, dev_writes):
    """`confine` of a GPU child: by default (`gpu_dev_writes="nodes"`) /dev/null and the driver's nodes only, so
    /dev/shm (red team, session 5) is refused by the kernel; "all" is the fallback that grants all of /dev."""
    scratch = tmp_path / "candidate"
    scratch.mkdir()
    shm = f"/dev/shm/chiplore-test-{os.getpid()}-{dev_writes}"
    script = textwrap.dedent(f"""
        from agent.verifier.child import confine
        request = {{"scratch": {str(scratch)!r}, "max_file_bytes": 1 << 20, "fs_isolation": True, "gpu": True,
                    "gpu_dev_writes": {dev_writes!r}}}
        confine(request, ())
        print("status", request["fs_isolation_status"])
        for path in ("/dev/null", {shm!r}, {str(tmp_path / "outside")!r}):
            try:
                with open(path, "w") as fh:
                    fh.write("x")
                print("wrote", path)
            except PermissionError:
                print("refused", path)
    """)
    try:
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       check=True, timeout=120)
    finally:
        Path(shm).unlink(missing_ok=True)
    log = (scratch / "candidate.log").read_text().splitlines()
    granted = len(gpu_device_paths())
    status = f"; GPU: {granted} device paths" if dev_writes == "nodes" else "; GPU: all of /dev"
    assert log[0].startswith("status landlock ABI") and log[0].endswith(status), log
    shm_line = f"refused {shm}" if dev_writes == "nodes" else f"wrote {shm}"
    assert log[1:] == ["wrote /dev/null", shm_line, f"refused {tmp_path / 'outside'}"], log


@needs_landlock
def test_writes_outside_the_allowed_folders_are_refused_for_every_api(tmp_path):
    import torch

    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()

    def attempt() -> list[str]:
        lines = [restrict_writes([str(allowed)])]
        for path in (allowed / "a.txt", other / "b.txt"):
            try:
                path.write_text("x")
                lines.append(f"wrote {path.name}")
            except PermissionError:
                lines.append(f"refused {path.name}")
        try:
            torch.UntypedStorage.from_file(str(other / "c.bin"), True, 8)
            lines.append("wrote c.bin")
        except RuntimeError:
            lines.append("refused c.bin")
        touched = subprocess.run(["touch", str(other / "d.txt")], capture_output=True).returncode
        lines.append("refused d.txt" if touched else "wrote d.txt")
        lines.append("read ok" if (ROOT / "README.md").read_text() else "read failed")
        return lines

    lines = _in_child(attempt)
    assert lines[0].startswith("landlock ABI"), lines
    assert lines[1:] == ["wrote a.txt", "refused b.txt", "refused c.bin", "refused d.txt", "read ok"]
    assert (allowed / "a.txt").exists() and not any(other.iterdir())


@pytest.mark.slow  # ~15 s on a busy 2-core machine
@needs_landlock
def test_a_file_write_the_torch_guards_would_not_see_is_refused_by_the_kernel(tmp_path):
    """With the torch-side refusals switched off (`compute_guard=False`) a file-backed storage opens any file; with
    fs isolation the child cannot create it outside its scratch, and the verdict names the isolation."""
    target = tmp_path / "outside.bin"
    candidate = tmp_path / "writer.py"
    candidate.write_text(textwrap.dedent(f"""\
        import torch
        from kernels.extend_attention.baseline import extend_attention_fwd as base_fwd


        def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                                 kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale,
                                 v_scale, sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True,
                                 sliding_window_size=-1, sinks=None):
            torch.UntypedStorage.from_file({str(target)!r}, True, 8)
            return base_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                            kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                            sm_scale, logit_cap, skip_prefix_custom_mask, sliding_window_size, sinks)
        """))
    options = dict(device="cpu", skip_static=True, compute_guard=False, case_ids=("gqa-4",), random_cases=1,
                   timeout_s=300)
    with Verifier("extend_attention", options=VerifyOptions(**options, fs_isolation=True)) as verifier:
        verdict = verifier.verify(candidate)
        assert verdict.stage == "runtime_error" and "Permission denied" in " ".join(verdict.reasons), verdict.summary()
        assert verdict.config["fs_isolation"].startswith("landlock ABI") and not target.exists()
        verifier.options = VerifyOptions(**options, fs_isolation=False)  # the test can fail: without it, it writes
        verdict = verifier.verify(candidate)
        assert verdict.config["fs_isolation"] == "off" and target.exists()


@pytest.mark.slow  # ~17 s on 2 cores
def test_honest_baseline_passes_with_isolation_on_the_cpu_by_default():
    with Verifier("extend_attention", options=VerifyOptions(device="cpu", case_ids=("gqa-4",), random_cases=1,
                                                            timeout_s=300)) as verifier:
        verdict = verifier.verify(ROOT / "kernels" / "extend_attention" / "baseline.py")
    assert verdict.stage == "pass", verdict.summary()
    expected = "landlock ABI" if landlock_abi() >= 1 else "unavailable"
    assert verdict.config["fs_isolation"].startswith(expected)


@pytest.mark.slow  # ~8 s on a busy 2-core machine
def test_triton_cache_writers_refuse_a_candidate_that_calls_them_without_isolation():
    """Triton's own opens pass the audit hook (it writes compiled kernels); its cache writers refuse when the
    candidate calls them itself -- the layer that stands where Landlock is off (on a GPU by default)."""
    cheat = ROOT / "tests" / "verifier" / "cheats" / "triton_cache_write.py"
    options = VerifyOptions(device="cpu", skip_static=True, fs_isolation=False, case_ids=("gqa-4",),
                            random_cases=1, timeout_s=300)
    with Verifier("extend_attention", options=options) as verifier:
        verdict = verifier.verify(cheat)
    assert verdict.stage == "runtime_error", verdict.summary()
    assert "FileCacheManager.put writes into Triton's cache" in verdict.reasons[0], verdict.reasons


@pytest.mark.skipif(landlock_abi() < 1, reason="the kernel has no Landlock")
@pytest.mark.slow
def test_temporary_files_of_a_confined_child_go_to_its_scratch(tmp_path):
    """Python's tempfile caches its directory on first use: the zygote's (the scratch base, not writable for a
    child) until `confine` resets it. Triton's compiler on a GPU writes its temporary files there (H200, session 5:
    every honest candidate failed with EACCES under Landlock before the reset)."""
    base, scratch = tmp_path / "base", tmp_path / "base" / "candidate"
    scratch.mkdir(parents=True)
    script = textwrap.dedent(f"""
        import os, tempfile
        os.environ["TMPDIR"] = {str(base)!r}
        assert tempfile.gettempdir() == {str(base)!r}  # cached, as in the zygote before fork
        from agent.verifier.child import confine
        confine({{"scratch": {str(scratch)!r}, "max_file_bytes": 1 << 20, "fs_isolation": True}}, ())
        made = tempfile.mkdtemp()
        with open(os.path.join(made, "x"), "w") as fh:
            fh.write("ok")
        try:
            open(os.path.join({str(base)!r}, "outside"), "w")
        except PermissionError:
            print("outside refused", made)
    """)
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                   check=True, timeout=120)
    log = (scratch / "candidate.log").read_text()
    assert "outside refused" in log and log.split()[-1].startswith(str(scratch)), log

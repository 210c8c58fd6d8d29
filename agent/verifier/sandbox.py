"""Fresh processes for candidates, cheaply: a zygote and the parent-side client.

The zygote is started once per `Sandbox` as ``python -I`` (no user site, no PYTHON* variables, no current
directory on the path) with only the project root added and a minimal environment. It imports torch, triton
and the harness, never runs candidate code, and forks one fresh child per request (a candidate gets one or two,
which may run at the same time); the child gets its own pipes (the private channel, passed over a Unix socket)
and confines itself (see `child.confine`). Forking after the imports shares their start-up cost without sharing
any state a candidate could have touched. The parent enforces the wall-clock timeout and, on CUDA, a
resident-memory limit, by killing the child's process group (per child).
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch

from agent.verifier.channel import ChannelError, MessageReader, write_message
from core.errors import ChiploreError

_BOOT = "import sys; sys.path.insert(0, {root!r}); from agent.verifier.sandbox import serve; serve(int(sys.argv[1]))"
_PASS_ENV = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "HIP_VISIBLE_DEVICES",
             "ROCR_VISIBLE_DEVICES", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "OMP_NUM_THREADS", "LANG")


def serve(sock_fd: int) -> None:
    """Zygote loop: preload, then fork one child per request until the socket closes.

    Several children may run at once (a verification can split its trials over two): the loop waits on the
    socket and on one pidfd per running child, and reports each child's exit (after reaping it) when it comes,
    in whatever order. Replies are ``{"pid": p}`` right after a fork and ``{"exit": p, "status": s}`` later.
    """
    import torch._dynamo  # noqa: F401 - torch's modes import it lazily; never inside a candidate's window
    import triton  # noqa: F401 - preloaded for every child
    import triton.language  # noqa: F401

    from agent.verifier import child
    from kernels.task import TASK_MODULES, load_task

    for name in TASK_MODULES:
        load_task(name)
    if torch.cuda.is_initialized():
        print("sandbox zygote: CUDA was initialized by a preload; forked children could not use it", file=sys.stderr)
        sys.exit(3)
    sys.dont_write_bytecode = True
    sock = socket.socket(fileno=sock_fd)
    running: dict[int, int] = {}  # pidfd (or -pid where pidfds are missing) -> pid
    while True:
        waitable = [fd for fd in running if fd >= 0]
        polled = len(waitable) < len(running)
        try:
            ready = select.select([sock, *waitable], [], [], 0.05 if polled else None)[0]
        except InterruptedError:
            continue
        for key, pid in list(running.items()):
            if key >= 0:
                if key not in ready:
                    continue
                status = os.waitpid(pid, 0)[1]
                os.close(key)
            else:
                done, status = os.waitpid(pid, os.WNOHANG)
                if not done:
                    continue
            del running[key]
            try:
                sock.send(json.dumps({"exit": pid, "status": status}).encode())
            except OSError:  # the verifier is gone
                return
        if sock not in ready:
            continue
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 4)
        except OSError:
            return
        if not msg:
            return
        request = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            sock.close()  # the sibling children's pidfds are closed by `child.confine`
            code = 1
            try:
                code = child.child_main(request, fds[0], fds[1])
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        try:
            running[os.pidfd_open(pid)] = pid
        except (AttributeError, OSError):  # no pidfds (Linux < 5.3): poll with WNOHANG
            running[-pid] = pid
        try:
            sock.send(json.dumps({"pid": pid}).encode())
        except OSError:
            return


class ChildTimeout(Exception):
    """The child did not answer before its deadline."""


class SandboxError(ChiploreError):
    """The sandbox itself (not the candidate) failed: the zygote could not start or fork a child."""


class ChildProcess:
    """Parent-side handle of one sandbox child: message queue (with receive times), control, kill."""

    def __init__(self, sandbox: Sandbox, pid: int, to_child: int, from_child: int, timeout_s: float,
                 rss_limit_bytes: int | None):
        self.sandbox = sandbox
        self.pid = pid
        self.to_child = to_child
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.killed_because = ""
        self._status: int | None = None
        self._finish_lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._reader = MessageReader(from_child)
        threading.Thread(target=self._pump, daemon=True).start()
        if rss_limit_bytes:
            threading.Thread(target=self._watch_memory, args=(rss_limit_bytes,), daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                message = self._reader.read()
            except (ChannelError, OSError) as exc:
                self._queue.put((time.perf_counter(), {"type": "channel_error", "summary": str(exc)}, None))
                return
            if message is None:
                self._queue.put((time.perf_counter(), {"type": "eof"}, None))
                return
            self._queue.put((time.perf_counter(), *message))

    def _watch_memory(self, limit: int) -> None:
        path = f"/proc/{self.pid}/status"
        while self.pid and not self.killed_because:
            try:
                with open(path) as fh:
                    rss = next((int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:")), 0)
            except OSError:
                return
            if rss > limit:
                self.kill(f"resident memory {rss / 2**30:.1f} GiB exceeded the limit {limit / 2**30:.1f} GiB")
                return
            time.sleep(0.2)

    def next(self) -> tuple[float, dict[str, Any], torch.Tensor | None]:
        """Next message ``(receive time, header, tensor)``; kills the child and raises at the deadline."""
        remaining = self.deadline - time.monotonic()
        try:
            return self._queue.get(timeout=max(0.0, remaining))
        except queue.Empty:
            self.kill(f"timed out after {self.timeout_s:g} s (the per-process limit, --timeout)")
            raise ChildTimeout() from None

    def send(self, header: dict[str, Any]) -> None:
        try:
            write_message(self.to_child, header)
        except OSError:
            pass

    def kill(self, because: str = "") -> None:
        if self._status is not None:  # reaped: the pid may belong to another process by now
            return
        if because and not self.killed_because:
            self.killed_because = because
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self) -> int:
        """Kill what is left of the child's process group and return its wait status (once; later calls return
        the same status and touch nothing)."""
        with self._finish_lock:
            if self._status is None:
                self.kill()
                try:
                    os.close(self.to_child)
                except OSError:
                    pass
                self._status = self.sandbox.reap(self.pid)
                self._reader.close()
            return self._status


class Sandbox:
    """A zygote for one device mode (interpreter or not); `launch` forks a fresh child per candidate."""

    def __init__(self, root: Path, interpret: bool, scratch_base: Path | None = None):
        self.root = root
        self.interpret = interpret
        self._own_base = scratch_base is None
        self.scratch_base = Path(scratch_base or tempfile.mkdtemp(prefix="chiplore-verify-"))
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._log = self.scratch_base / "zygote.log"
        # one thread at a time talks to the zygote; exit reports read while waiting for another reply are kept
        self._lock = threading.RLock()
        self._exits: dict[int, int] = {}
        self._live: set[int] = set()  # children forked by the running zygote, not reaped yet

    def _env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
        env.update(HOME=str(self.scratch_base), TMPDIR=str(self.scratch_base), PYTHONDONTWRITEBYTECODE="1",
                   TRITON_CACHE_DIR=str(self.scratch_base / "triton-cache"))
        if self.interpret:
            env["TRITON_INTERPRET"] = "1"
        return env

    def start(self) -> None:
        """Start the zygote if it is not running."""
        if self._proc is not None and self._proc.poll() is None:
            return
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(self._log, "ab") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", _BOOT.format(root=str(self.root)), str(child.fileno())],
                pass_fds=(child.fileno(),), env=self._env(), cwd=self.scratch_base, stdin=subprocess.DEVNULL,
                stdout=log, stderr=log)
        child.close()
        self._sock = parent

    def launch(self, request: dict[str, Any], timeout_s: float, rss_limit_bytes: int | None = None
               ) -> ChildProcess:
        """Fork a fresh child for `request`; its channel, deadline and memory watch are set up here.

        Raises:
            SandboxError: the zygote cannot be (re)started or does not fork (its log is named).
        """
        with self._lock:  # the {"pid"} reply is the next one that is not an exit report
            for attempt in range(2):
                self.start()
                assert self._sock is not None
                to_child_r, to_child_w = os.pipe()
                from_child_r, from_child_w = os.pipe()
                try:
                    socket.send_fds(self._sock, [json.dumps(request).encode()], [to_child_r, from_child_w])
                    reply = self._recv_until(lambda r: "pid" in r, timeout=300.0)
                except OSError:
                    reply = None
                finally:
                    os.close(to_child_r)
                    os.close(from_child_w)
                if reply is not None:
                    break
                os.close(to_child_w)
                os.close(from_child_r)
                self.close()
                if attempt:
                    tail = self._log.read_text(errors="replace")[-600:].strip() if self._log.exists() else ""
                    raise SandboxError(f"the verifier's sandbox zygote did not start a child; its log ends with: "
                                       f"{tail or '(empty)'}")
            self._live.add(int(reply["pid"]))
        return ChildProcess(self, int(reply["pid"]), to_child_w, from_child_r, timeout_s, rss_limit_bytes)

    def _recv(self, timeout: float) -> dict[str, Any] | None:
        sock = self._sock
        if sock is None:
            return None
        sock.settimeout(timeout)
        try:
            data = sock.recv(1 << 16)
        except (TimeoutError, OSError):
            return None
        try:
            reply = json.loads(data) if data else None
        except json.JSONDecodeError:
            return None
        return reply if isinstance(reply, dict) else None

    def _recv_until(self, wanted: Any, timeout: float) -> dict[str, Any] | None:
        """The next reply for which `wanted(reply)` holds; exit reports received on the way are kept for `reap`.
        None at the timeout or when the zygote is gone."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                remaining = deadline - time.monotonic()
                reply = self._recv(remaining) if remaining > 0 else None
                if reply is None or wanted(reply):
                    return reply
                if "exit" in reply:
                    self._exits[int(reply["exit"])] = int(reply.get("status", -1))

    def reap(self, pid: int) -> int:
        """Wait for the zygote's report that `pid` exited (other children may exit first: their reports are
        kept); restart the zygote if it does not come."""
        with self._lock:
            if pid in self._exits:
                self._live.discard(pid)
                return self._exits.pop(pid)
            if pid not in self._live:  # forked by a zygote that was stopped since: no report will come
                return -1
            reply = self._recv_until(lambda r: r.get("exit") == pid, timeout=30.0)
            self._live.discard(pid)
            if reply is None:
                self.close()
                return -1
            return int(reply.get("status", -1))

    def new_scratch(self) -> Path:
        """A fresh scratch directory for one candidate."""
        return Path(tempfile.mkdtemp(prefix="candidate-", dir=self.scratch_base))

    def close(self) -> None:
        """Stop the zygote (closing its socket ends its loop; killed if it does not exit)."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        self._exits.clear()
        self._live.clear()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

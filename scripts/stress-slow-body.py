#!/usr/bin/env python3
"""Slow request bodies against `retryctl serve` (docs/serve.md, docs/reference/bars.md).

1,100 connections each send a valid request header with a valid bearer token and
`Content-Length: 1000000`, then one body byte a second, to a server started under
`ulimit -n 1024` (its connection cap is then ~960, so the attack fills it). A probe then
tries `GET /health` on a new connection once every 0.25 s for the window (default 45 s,
from the moment all 1,100 are open), each try given 1 s; the seconds spent in tries that got
no answer are the lockout. Also counted: the attack connections the server answered 408 and
the ones it closed.

Bar (docs/reference/bars.md): a body must arrive within 30 s of its header (408 and close), so no new client
is kept out past that deadline. Before the fix the server closed none of the 1,100 and kept
new clients out ~42 s of 45.

Usage: scripts/stress-slow-body.py [--window SECONDS] [--connections N] BIN [BIN...]
  Each BIN (a retryctl binary; default target/profiling/retryctl, built if missing) is
  measured in turn, on a fresh server, and the results are printed side by side.
Needs python3 only; not run by CI (it takes a minute per binary).
"""

import argparse
import asyncio
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

TOKEN = "stress-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, port, log):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    proc = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--in-memory", "--token", TOKEN],
        stdout=subprocess.DEVNULL,
        stderr=log,
        preexec_fn=limit,
        env={"HOME": tempfile.gettempdir(), "PATH": os.environ.get("PATH", "")},
    )
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"stress-slow-body: {binary} did not start")


class Attacker:
    """One connection: header, then a body byte a second until the server closes it."""

    def __init__(self):
        self.status = None  # the status line the server answered, if any
        self.closed_at = None

    async def run(self, port, opened, stop):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            self.closed_at = time.monotonic()
            if not opened.done():
                opened.set_result(None)
            return
        writer.write(
            (
                "POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\n"
                f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                "Content-Length: 1000000\r\n\r\n{"
            ).encode()
        )
        if not opened.done():
            opened.set_result(None)
        read = asyncio.ensure_future(reader.read(4096))
        try:
            while not stop.is_set():
                try:
                    await writer.drain()
                    done, _ = await asyncio.wait({read}, timeout=1.0)
                    if done:
                        data = read.result()
                        if data:
                            self.status = data.split(b"\r\n", 1)[0].decode(errors="replace")
                        self.closed_at = time.monotonic()
                        return
                    writer.write(b" ")
                except (ConnectionError, OSError):
                    self.closed_at = time.monotonic()
                    return
        finally:
            read.cancel()
            writer.close()


async def probe_once(port):
    """Whether a new client gets `/health` answered within 1 s."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 1.0)
    except (OSError, asyncio.TimeoutError):
        return False
    try:
        writer.write(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = await asyncio.wait_for(reader.read(64), 1.0)
        return data.startswith(b"HTTP/1.1 200")
    except (OSError, asyncio.TimeoutError):
        return False
    finally:
        writer.close()


async def attack(port, connections, window):
    stop = asyncio.Event()
    attackers = [Attacker() for _ in range(connections)]
    tasks = []
    # In batches the kernel's listen queue can take: a burst overflows it, and a client told
    # it is connected by a SYN cookie is one the server never sees.
    for i, a in enumerate(attackers):
        opened = asyncio.get_running_loop().create_future()
        tasks.append(asyncio.ensure_future(a.run(port, opened, stop)))
        await opened
        if (i + 1) % 50 == 0:
            await asyncio.sleep(0.05)
    start = time.monotonic()
    locked = 0.0
    longest = 0.0
    current = 0.0
    tries = 0
    while time.monotonic() - start < window:
        t0 = time.monotonic()
        ok = await probe_once(port)
        tries += 1
        spent = time.monotonic() - t0
        if ok:
            current = 0.0
            await asyncio.sleep(0.25)
        else:
            locked += spent
            current += spent
            longest = max(longest, current)
    stop.set()
    closed = sum(1 for a in attackers if a.closed_at is not None and a.closed_at - start <= window)
    answered = sum(1 for a in attackers if a.status and " 408 " in a.status + " ")
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return locked, longest, tries, closed, answered


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=45.0)
    parser.add_argument("--connections", type=int, default=1100)
    parser.add_argument("bins", nargs="*")
    args = parser.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bins = args.bins
    if not bins:
        target = os.environ.get("CARGO_TARGET_DIR", "target")
        bins = [os.path.join(target, "profiling", "retryctl")]
        if not os.access(bins[0], os.X_OK):
            subprocess.run(["cargo", "build", "--profile", "profiling", "--locked", "--bin", "retryctl"], check=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.connections + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(
        f"machine: {os.cpu_count()} cores, load {load}; {args.connections} connections sending "
        f"1 body byte/s with a valid token, server under ulimit -n 1024, window {args.window:.0f} s"
    )
    for binary in bins:
        port = free_port()
        with tempfile.TemporaryFile() as log:
            proc = start_server(binary, port, log)
            try:
                locked, longest, tries, closed, answered = asyncio.run(
                    attack(port, args.connections, args.window)
                )
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
        print(
            f"{binary}: new clients locked out {locked:.1f} s of {args.window:.0f} s "
            f"(longest stretch {longest:.1f} s, {tries} probes); attack connections answered 408: "
            f"{answered}, closed by the server within the window: {closed} of {args.connections}"
        )


if __name__ == "__main__":
    main()

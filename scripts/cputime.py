"""The CPU time of one command, for the benchmark scripts written in Python (cpu-ab.py,
shards-ab.py): user and system seconds from the kernel's accounting of the process (wait4),
its stdout to a file, its stderr dropped; a failing command ends the script."""
import os
import sys


def cpu(cmd, out):
    """(user + system, user, system) seconds of `cmd`, its stdout written to `out`."""
    o = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    e = os.open(os.devnull, os.O_WRONLY)
    pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, o, 1), (os.POSIX_SPAWN_DUP2, e, 2)])
    _, status, r = os.wait4(pid, 0)
    os.close(o)
    os.close(e)
    if status != 0:
        sys.exit(f"`{' '.join(cmd)}` failed (status {status})")
    return r.ru_utime + r.ru_stime, r.ru_utime, r.ru_stime

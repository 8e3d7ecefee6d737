"""Hostile: make the system calls a sandbox escape usually starts with (a user namespace of its
own, the keyring, eBPF, io_uring, ptrace, ...), each in a fresh single-threaded process (a
threaded one may not unshare its user namespace), and say what each returned: "ok" or the errno
name. The arguments are harmless or invalid on purpose: what tells the filter apart is EPERM (or
ENOSYS for clone3) where the kernel would have answered otherwise."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

from _bot import report, run

NUMBERS = {  # the calls' numbers by machine (asm/unistd.h)
    "x86_64": {"unshare": 272, "setns": 308, "keyctl": 250, "bpf": 321, "perf_event_open": 298,
               "io_uring_setup": 425, "ptrace": 101, "clone3": 435},
    "aarch64": {"unshare": 97, "setns": 268, "keyctl": 219, "bpf": 280, "perf_event_open": 241,
                "io_uring_setup": 425, "ptrace": 117, "clone3": 435},
}
CALLS = {  # name -> arguments
    "unshare": (0x10000000,),  # CLONE_NEWUSER
    "setns": (-1, 0),
    "keyctl": (0, -3, 0),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "bpf": (-1, 0, 0),
    "perf_event_open": (0, 0, -1, -1, 0),
    "io_uring_setup": (1, 0),
    "ptrace": (0, 0, 0, 0),  # PTRACE_TRACEME
    "clone3": (0, 0),
}
PROBE = """
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
for name, (number, args) in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    out[name] = "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
print(json.dumps(out))
"""


def attack() -> None:
    numbers = NUMBERS.get(platform.machine())
    if numbers is None:
        report("kernel_calls", f"no call numbers for {platform.machine()}")
        return
    table = {name: (numbers[name], args) for name, args in CALLS.items()}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(table)], capture_output=True, text=True,
                          timeout=30)
    report("kernel_calls", json.loads(done.stdout) if done.returncode == 0 else done.stderr[-300:])


run(at_start=attack)

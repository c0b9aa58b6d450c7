#!/usr/bin/python3
"""Runs a command with one system call refused by the kernel (a seccomp filter, inherited by
every process the command starts), as a container runtime's seccomp profile refuses calls it
does not allow: Docker's default profile refuses set_mempolicy to a process without
CAP_SYS_NICE.

Usage: seccomp_deny.py SYSCALL ERRNO_NAME -- COMMAND [ARGS...]"""
import errno
import os
import sys

import seccomp  # Debian: python3-seccomp (libseccomp)

if len(sys.argv) < 5 or sys.argv[3] != "--":
    sys.exit(__doc__.splitlines()[-1])
syscall, err = sys.argv[1], getattr(errno, sys.argv[2])
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
f.add_rule(seccomp.ERRNO(err), syscall)
f.load()
os.execvp(sys.argv[4], sys.argv[4:])

"""A seccomp filter for commands run without network: no Unix sockets on disk.

With network off a command has its own network namespace: IP sockets reach nothing, and abstract
Unix sockets (which belong to a network namespace) find no one. Unix sockets bound to a path do
cross namespaces: `~/.docker/desktop/docker.sock` is root on the host, and a D-Bus or an agent
socket in a project or home folder hands out what the user can do. A seccomp filter cannot read the
address `connect()` is given (it sits behind a pointer), so this one refuses what makes a socket
that could be connected to one:

- `socket(AF_UNIX, ...)` fails with EPERM. So does `socket(AF_VSOCK, ...)`: virtual machine sockets
  are not namespaced and reach the host of a VM (WSL, Docker Desktop, Firecracker).
- `socketpair()` stays allowed for stream and seqpacket sockets, the pipes between processes
  (multiprocessing, asyncio, subprocess): a connected pair cannot be connected elsewhere. Datagram
  pairs are refused, since `sendto()` can point a datagram socket at any socket on disk.
- io_uring is refused (`io_uring_setup`, `_enter`, `_register`): its socket and connect operations
  make and connect sockets without the system calls this filter sees.

The program is classic BPF as seccomp takes it (`struct sock_filter`, 8 bytes each, native byte
order) and covers every architecture a process can enter the kernel as on an x86_64 machine
(x86_64, x32, i386) and on an aarch64 one (aarch64, arm). `seccomp_data` there is little-endian, so
the low 32 bits of an argument sit at its offset. On any other machine `program()` is None and
commands run without the filter (their network namespace still stands; sockets on disk do not).
"""

from __future__ import annotations

import os
import platform
import struct
from functools import cache

# struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # offsets (an argument's low half: little-endian)

# classic BPF opcodes (linux/filter.h)
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: A = 32 bits of seccomp_data at k
_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K: A &= k
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K: A == k ? jt : jf
_RET_K = 0x06  # BPF_RET | BPF_K: return k

_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_KILL = 0x80000000  # SECCOMP_RET_KILL_PROCESS

# audit architectures (linux/audit.h)
_X86_64, _I386, _AARCH64, _ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
_X32_BIT = 0x40000000  # x32 system calls are x86_64's numbers with this bit set

_AF_UNIX, _AF_VSOCK = 1, 40
_SOCK_TYPE_MASK, _SOCK_DGRAM = 0xF, 2  # the type argument also carries SOCK_NONBLOCK | SOCK_CLOEXEC
_SYS_SOCKET, _SYS_SOCKETPAIR = 1, 8  # socketcall()'s first argument
_IO_URING = (425, 426, 427)  # io_uring_setup, io_uring_enter, io_uring_register: same on all four

# (socket, socketpair) per architecture, and i386's multiplexer, socketcall (its arguments are
# behind a pointer, so it cannot make a socket or a pair at all)
_SOCKET_CALLS = {_X86_64: (41, 53), _I386: (359, 360), _AARCH64: (198, 199), _ARM: (281, 288)}
_SOCKETCALL_I386 = 102
_MACHINES = {"x86_64", "amd64", "aarch64", "arm64"}


class _Program:
    """Instructions with forward jumps to labels, resolved into `struct sock_filter` records."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def load(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def mask(self, bits: int) -> None:
        self.code.append((_AND_K, 0, 0, bits))

    def jump_if(self, value: int, target: str) -> None:
        """To `target` when A == value, else on to the next instruction."""
        self.code.append((_JEQ_K, target, 0, value))

    def ret(self, action: int) -> None:
        self.code.append((_RET_K, 0, 0, action))

    def assemble(self) -> bytes:
        out = b""
        for index, (code, true, false, k) in enumerate(self.code):
            offsets = []
            for target in (true, false):
                offset = target if isinstance(target, int) else self.labels[target] - index - 1
                if not 0 <= offset <= 255:  # classic BPF jumps only forward, at most 255
                    raise ValueError(f"jump out of range at {index}")
                offsets.append(offset)
            out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
        return out


def _build() -> bytes:
    p = _Program()
    p.load(_ARCH)
    for arch in _SOCKET_CALLS:
        p.jump_if(arch, f"arch-{arch:x}")
    p.ret(_KILL)  # no other architecture can enter the kernel on these machines
    for arch, (socket_nr, socketpair_nr) in _SOCKET_CALLS.items():
        p.label(f"arch-{arch:x}")
        p.load(_NR)
        if arch == _X86_64:
            p.mask(~_X32_BIT & 0xFFFFFFFF)  # x32's calls are judged as x86_64's
        p.jump_if(socket_nr, "socket")
        p.jump_if(socketpair_nr, "socketpair")
        if arch == _I386:
            p.jump_if(_SOCKETCALL_I386, "socketcall")
        for nr in _IO_URING:
            p.jump_if(nr, "deny")
        p.ret(_ALLOW)
    p.label("socket")  # socket(domain, type, protocol)
    p.load(_ARG0)
    p.jump_if(_AF_UNIX, "deny")
    p.jump_if(_AF_VSOCK, "deny")
    p.ret(_ALLOW)
    p.label("socketpair")  # socketpair(domain, type, protocol, sv)
    p.load(_ARG1)
    p.mask(_SOCK_TYPE_MASK)
    p.jump_if(_SOCK_DGRAM, "deny")
    p.ret(_ALLOW)
    p.label("socketcall")  # socketcall(call, args): the domain and type are behind `args`
    p.load(_ARG0)
    p.jump_if(_SYS_SOCKET, "deny")
    p.jump_if(_SYS_SOCKETPAIR, "deny")
    p.ret(_ALLOW)
    p.label("deny")
    p.ret(_EPERM)
    return p.assemble()


@cache
def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine, or None where its system call numbers are not known here."""
    if (machine or platform.machine()).lower() not in _MACHINES:
        return None
    return _build()


def program_fd(machine: str | None = None) -> int | None:
    """A new file descriptor at offset 0 holding the filter, for one `bwrap --seccomp FD` (bwrap
    reads it to the end, so each command needs its own); None without a filter for this machine."""
    code = program(machine)
    if code is None:
        return None
    fd = os.memfd_create("piton-seccomp", os.MFD_CLOEXEC)  # the launcher hands it to bwrap alone
    try:
        os.write(fd, code)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd

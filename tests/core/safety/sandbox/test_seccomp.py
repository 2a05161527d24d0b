"""The seccomp program, run by a classic-BPF interpreter written here from the kernel's definitions:
what it does for each architecture, system call and argument, without a kernel in the loop."""

from __future__ import annotations

import struct

import pytest

from piton.core.safety.sandbox import seccomp

ALLOW, EPERM, KILL = 0x7FFF0000, 0x00050001, 0x80000000
X86_64, I386, AARCH64, ARM = 0xC000003E, 0x40000003, 0xC00000B7, 0x40000028
X32 = 0x40000000
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_VSOCK = 1, 2, 10, 16, 40
SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET = 1, 2, 5
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, 0o2000000


def run(program: bytes, nr: int, arch: int, *args: int) -> int:
    """Execute `program` on a `struct seccomp_data` (little-endian) as the kernel would."""
    padded = (*args, 0, 0, 0, 0, 0, 0)[:6]
    data = struct.pack("<iIQ6Q", nr, arch, 0x401000, *padded)
    code: list[tuple[int, int, int, int]] = [
        struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)
    ]
    a, pc = 0, 0
    for _ in range(len(code)):  # jumps go forward only: at most one pass
        op, jt, jf, k = code[pc]
        if op == 0x20:  # ld [k]
            a = struct.unpack_from("<I", data, k)[0]
        elif op == 0x54:  # and #k
            a &= k
        elif op == 0x15:  # jeq #k
            pc += jt if a == k else jf
        elif op == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")
        pc += 1
    raise AssertionError("fell off the end")


PROGRAM = seccomp.program("x86_64")


def test_the_program_is_well_formed() -> None:
    assert PROGRAM is not None and len(PROGRAM) % 8 == 0 and len(PROGRAM) // 8 < 4096
    assert seccomp.program("aarch64") == PROGRAM  # one program covers both machines
    assert seccomp.program("riscv64") is None and seccomp.program("ppc64le") is None


@pytest.mark.parametrize(
    ("arch", "nr"), [(X86_64, 41), (X86_64, 41 | X32), (I386, 359), (AARCH64, 198), (ARM, 281)]
)
def test_unix_and_vsock_sockets_are_refused_on_every_architecture(arch: int, nr: int) -> None:
    assert PROGRAM is not None
    for kind in (SOCK_STREAM, SOCK_DGRAM | SOCK_CLOEXEC, SOCK_SEQPACKET | SOCK_NONBLOCK):
        assert run(PROGRAM, nr, arch, AF_UNIX, kind, 0) == EPERM
    assert run(PROGRAM, nr, arch, AF_VSOCK, SOCK_STREAM, 0) == EPERM
    for family in (AF_INET, AF_INET6, AF_NETLINK):
        assert run(PROGRAM, nr, arch, family, SOCK_STREAM, 0) == ALLOW


@pytest.mark.parametrize(
    ("arch", "nr"), [(X86_64, 53), (X86_64, 53 | X32), (I386, 360), (AARCH64, 199), (ARM, 288)]
)
def test_socket_pairs_are_allowed_except_datagram_ones(arch: int, nr: int) -> None:
    assert PROGRAM is not None
    assert run(PROGRAM, nr, arch, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, 0x7FFC) == ALLOW
    assert run(PROGRAM, nr, arch, AF_UNIX, SOCK_SEQPACKET, 0, 0x7FFC) == ALLOW
    assert run(PROGRAM, nr, arch, AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, 0x7FFC) == EPERM


def test_i386_socketcall_cannot_make_a_socket_or_a_pair() -> None:
    assert PROGRAM is not None
    assert run(PROGRAM, 102, I386, 1, 0xFFFF0000) == EPERM  # SYS_SOCKET: its domain is behind a pointer
    assert run(PROGRAM, 102, I386, 8, 0xFFFF0000) == EPERM  # SYS_SOCKETPAIR
    assert run(PROGRAM, 102, I386, 3, 0xFFFF0000) == ALLOW  # SYS_CONNECT on a socket it already has


@pytest.mark.parametrize("arch", [X86_64, I386, AARCH64, ARM])
def test_io_uring_is_refused(arch: int) -> None:
    assert PROGRAM is not None
    for nr in (425, 426, 427):
        assert run(PROGRAM, nr, arch) == EPERM
    if arch == X86_64:
        assert run(PROGRAM, 425 | X32, arch) == EPERM


OTHER_CALLS = [(X86_64, 0), (X86_64, 42), (X86_64, 59), (X86_64, 231), (I386, 41), (I386, 11)]


@pytest.mark.parametrize(("arch", "nr"), [*OTHER_CALLS, (AARCH64, 203), (ARM, 283)])
def test_everything_else_is_allowed(arch: int, nr: int) -> None:
    """read, connect, execve, exit_group...; and other architectures' socket numbers are not theirs
    (41 is i386's dup, 203 aarch64's connect)."""
    assert PROGRAM is not None
    assert run(PROGRAM, nr, arch, AF_UNIX, SOCK_STREAM) == ALLOW


def test_an_architecture_no_process_here_can_have_is_killed() -> None:
    assert PROGRAM is not None
    assert run(PROGRAM, 41, 0xC00000F3, AF_UNIX) == KILL  # riscv64


def test_each_command_gets_its_own_descriptor_at_offset_zero() -> None:
    import os

    first, second = seccomp.program_fd("x86_64"), seccomp.program_fd("x86_64")
    assert first is not None and second is not None and first != second
    try:
        assert os.read(first, 1 << 16) == PROGRAM and os.read(second, 1 << 16) == PROGRAM
        assert not os.get_inheritable(first)  # only the launcher's pass_fds hands it on
    finally:
        os.close(first)
        os.close(second)
    assert seccomp.program_fd("riscv64") is None

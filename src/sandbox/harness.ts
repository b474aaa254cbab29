// The Python side of the sandbox: a harness that locks its own process down (rlimits, a seccomp filter)
// and then runs the submitted program once per test input. Expected outputs never enter the sandbox.

/**
 * Python source run as `python3 -S -s -P -B -c HARNESS`. It reads one JSON job from stdin:
 * `{code, style: "stdin" | "call", functionName, inputs: [...], limits: {cpuSeconds, memoryBytes,
 * outputBytes, perTestSeconds}}`, writes each test input to the scratch directory, then (before any
 * submitted code runs) sets RLIMIT_CPU / AS / FSIZE / NOFILE / CORE and installs a seccomp filter that
 * kills the process on process creation, exec, sockets, ptrace, mounts and namespace calls. Each test
 * then runs with fd 0 = the input file and fd 1 = an output file; one JSON line per test goes to the
 * result channel (the original stdout): `{"i", "status": ok|error|timeout|output_limit, "out", "error"}`.
 * A line `{"fatal": msg}` means the harness itself could not start.
 */
export const PY_HARNESS = String.raw`
import sys, os, json, io, resource, signal, struct, ctypes, platform, traceback, time

# Syscalls that kill the process: process creation, exec, sockets, tracing, mounts, namespaces, kernel
# interfaces a test program never needs. Per architecture: (AUDIT_ARCH, numbers, has x32 ABI).
DENY = {
    'x86_64': (0xC000003E, [57, 58, 56, 435, 59, 322, 41, 53, 101, 165, 166, 272, 308, 321, 248, 249, 250,
                            323, 298, 425, 426, 427, 310, 311, 161, 155, 303, 304, 246, 320, 169, 167, 168], True),
    'aarch64': (0xC00000B7, [220, 435, 221, 281, 198, 199, 117, 40, 39, 97, 268, 280, 217, 218, 219, 282, 241,
                             425, 426, 427, 270, 271, 51, 41, 264, 265, 104, 294, 142, 224, 225], False),
}

def seccomp():
    arch, nrs, x32 = DENY.get(platform.machine(), (None, None, None))
    if arch is None:
        raise RuntimeError('no seccomp syscall table for machine ' + platform.machine())
    prog = []
    def ins(code, jt, jf, k):
        prog.append(struct.pack('HBBI', code, jt, jf, k))
    KILL, ALLOW = 0x80000000, 0x7FFF0000
    ins(0x20, 0, 0, 4)          # A = arch
    ins(0x15, 1, 0, arch)       # A == arch ? skip : kill
    ins(0x06, 0, 0, KILL)
    ins(0x20, 0, 0, 0)          # A = syscall number
    checks = [(0x35, 0x40000000)] if x32 else []   # x32 ABI numbers: jge -> kill
    checks += [(0x15, nr) for nr in nrs]
    n = len(checks)
    for i, (code, k) in enumerate(checks):
        ins(code, n - i, 0, k)  # match -> the KILL after ALLOW
    ins(0x06, 0, 0, ALLOW)
    ins(0x06, 0, 0, KILL)
    buf = ctypes.create_string_buffer(b''.join(prog))
    class FProg(ctypes.Structure):
        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]
    fprog = FProg(len(prog), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_NO_NEW_PRIVS) failed')
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_SECCOMP) failed')

class TestTimeout(BaseException):
    pass

def on_alarm(signum, frame):
    raise TestTimeout()

def describe(exc):
    if isinstance(exc, TestTimeout):
        return 'time limit per test exceeded'
    text = ''.join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[-300:]

def main():
    global RESULT_FD
    RESULT_FD = os.dup(1)
    job = json.loads(sys.stdin.buffer.read().decode('utf-8'))
    result = os.fdopen(RESULT_FD, 'w', encoding='utf-8', closefd=False)
    def report(obj):
        result.write(json.dumps(obj) + '\n')
        result.flush()
    limits = job['limits']
    inputs = job['inputs']
    scratch = os.getcwd()
    paths = []
    for i, text in enumerate(inputs):
        p = os.path.join(scratch, '.input-%d' % i)
        with open(p, 'w', encoding='utf-8') as f:
            f.write(text)
        paths.append(p)
    out_path = os.path.join(scratch, '.stdout')
    null = os.open(os.devnull, os.O_RDWR)
    try:
        code = compile(job['code'], '<solution>', 'exec')
    except BaseException as exc:
        for i in range(len(inputs)):
            report({'i': i, 'status': 'error', 'out': '', 'error': describe(exc)})
        return
    cpu = limits['cpuSeconds']
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits['memoryBytes'], limits['memoryBytes']))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits['outputBytes'], limits['outputBytes']))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if job.get('seccomp', True):
        seccomp()
    signal.signal(signal.SIGALRM, on_alarm)
    os.dup2(null, 2)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, 'wb', closefd=False), encoding='utf-8', errors='replace', write_through=True)
    call = job['style'] == 'call'
    namespace = None
    target_error = None
    if call:
        os.dup2(null, 0)
        os.dup2(null, 1)
        namespace = {'__name__': '__main__', '__builtins__': __builtins__}
        try:
            signal.setitimer(signal.ITIMER_REAL, limits['perTestSeconds'])
            exec(code, namespace)
            signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            target_error = describe(exc)
    for i, p in enumerate(paths):
        fd_in = os.open(p, os.O_RDONLY)
        os.dup2(fd_in, 0)
        os.close(fd_in)
        fd_out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd_out, 1)
        os.close(fd_out)
        sys.stdin = io.TextIOWrapper(os.fdopen(0, 'rb', closefd=False), encoding='utf-8', errors='replace')
        sys.stdout = io.TextIOWrapper(os.fdopen(1, 'wb', closefd=False), encoding='utf-8', errors='replace')
        status, error, value = 'ok', None, None
        try:
            if target_error is not None:
                raise RuntimeError(target_error)
            signal.setitimer(signal.ITIMER_REAL, limits['perTestSeconds'])
            if call:
                args = json.loads(inputs[i])
                fn = job['functionName']
                if 'Solution' in namespace:
                    value = str(getattr(namespace['Solution'](), fn)(*args))
                else:
                    value = str(namespace[fn](*args))
            else:
                exec(code, {'__name__': '__main__', '__builtins__': __builtins__})
            signal.setitimer(signal.ITIMER_REAL, 0)
        except SystemExit as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if exc.code not in (None, 0):
                status, error = 'error', 'exit status %r' % (exc.code,)
        except BaseException as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            status = 'timeout' if isinstance(exc, TestTimeout) else 'error'
            error = describe(exc)
        try:
            sys.stdout.flush()
        except BaseException as exc:
            if status == 'ok':
                status, error = 'error', describe(exc)
        with open(out_path, 'rb') as f:
            data = f.read(limits['outputBytes'] + 1)
        if len(data) >= limits['outputBytes'] and status in ('ok', 'error'):
            status, error = 'output_limit', 'output limit (%d bytes) exceeded' % limits['outputBytes']
        if call and value is not None and len(value) > limits['outputBytes']:
            status, error = 'output_limit', 'output limit (%d bytes) exceeded' % limits['outputBytes']
        out = value if call and value is not None else ('' if call else data.decode('utf-8', 'replace'))
        report({'i': i, 'status': status, 'out': out[: limits['outputBytes']], 'error': error})

RESULT_FD = 1
try:
    main()
except BaseException as exc:
    try:
        os.write(RESULT_FD, (json.dumps({'fatal': ''.join(traceback.format_exception_only(type(exc), exc)).strip()[-500:]}) + '\n').encode())
    except BaseException:
        pass
    os._exit(3)
`;

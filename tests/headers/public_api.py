#!/usr/bin/env python3
"""The public C API as the headers declare it, and libquiver.so's exports.

Usage:
  public_api.py declared INCLUDE_DIR          print every declared function
  public_api.py check INCLUDE_DIR LIBQUIVER   fail unless the shared library
        exports exactly the functions include/quiver/*.h declare (both ways),
        and every declaration carries QV_API

A declaration is a top-level statement of a header (outside comments,
preprocessor lines and braces) that names a function `qv_*(...)` and is not a
typedef or a static inline definition. nm(1) gives the exports (defined,
dynamic, text symbols).
"""
import os
import re
import subprocess
import sys

IDENT_CALL = re.compile(r"\b(qv_\w+)\s*\(")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def statements(text):
    """Top-level statements of a C header: (text, has_body)."""
    text = strip_comments(text)
    # the extern "C" braces live in #ifdef __cplusplus blocks: drop them
    text = re.sub(r"#ifdef __cplusplus\n.*?#endif", "", text, flags=re.S)
    lines = []
    cont = False
    for line in text.split("\n"):  # drop preprocessor lines (with continuations)
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            continue
        lines.append(line)
    text = "\n".join(lines)
    out, cur, depth, body = [], [], 0, False
    for ch in text:
        if ch == "{":
            depth += 1
            body = True
        elif ch == "}":
            depth -= 1
            if depth == 0:
                cur.append(ch)
                s = "".join(cur).strip()
                # a braced statement ends at '}' for function bodies;
                # struct/enum/union definitions go on to ';'
                if not re.search(r"\b(struct|enum|union)\b[^(]*\{", s):
                    out.append((s, True))
                    cur, body = [], False
                continue
        if depth == 0 and ch == ";":
            out.append(("".join(cur).strip(), body))
            cur, body = [], False
            continue
        cur.append(ch)
    return out


def declared(include_dir):
    """{name: (header, statement)} of every public function declaration."""
    found = {}
    for fn in sorted(os.listdir(include_dir)):
        if not fn.endswith(".h"):
            continue
        path = os.path.join(include_dir, fn)
        with open(path, encoding="utf-8") as f:
            for stmt, has_body in statements(f.read()):
                if has_body or re.match(r"(typedef|static)\b", stmt):
                    continue
                m = IDENT_CALL.search(stmt)
                if not m or re.search(r"\(\s*\*\s*" + m.group(1), stmt):
                    continue
                found[m.group(1)] = (fn, " ".join(stmt.split()))
    return found


def exported(lib):
    res = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True)
    names = set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "TtWwiDdBbRrVv":
            names.add(parts[2].split("@")[0])
    return names


def main(argv):
    if len(argv) == 3 and argv[1] == "declared":
        for name, (fn, _) in sorted(declared(argv[2]).items()):
            print(fn, name)
        return 0
    if len(argv) != 4 or argv[1] != "check":
        print(__doc__, file=sys.stderr)
        return 2
    decl = declared(argv[2])
    exp = exported(argv[3])
    ok = True
    if len(decl) < 100:
        print(f"only {len(decl)} declarations parsed from {argv[2]}: parser broken?")
        ok = False
    no_api = sorted(n for n, (_, s) in decl.items() if not s.startswith("QV_API "))
    for n in no_api:
        print(f"declared without QV_API ({decl[n][0]}): {n}")
    extra = sorted(exp - set(decl))
    for n in extra:
        print(f"exported but declared in no public header: {n}")
    missing = sorted(set(decl) - exp)
    for n in missing:
        print(f"declared in {decl[n][0]} but not exported (undefined or hidden): {n}")
    ok = ok and not (no_api or extra or missing)
    print(f"{len(decl)} declared, {len(exp)} exported: {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

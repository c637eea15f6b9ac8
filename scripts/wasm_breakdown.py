#!/usr/bin/env python3
"""Where a WASM module's bytes are: code per crate, and the largest functions.

Usage:
    wasm_breakdown.py MODULE.wasm [TOP]

Reads the module's sections, the size of every function body and the function names (the
`name` custom section: build with `strip = false`, e.g. `CARGO_PROFILE_WASM_STRIP=false`,
and read the module before wasm-bindgen and wasm-opt, which drop the names). A function is
counted to the crate that defines it: the first path segment of its demangled name, the
implementing type's crate for `<Type as Trait>::f`, and `C` plus a prefix for C symbols
(blst's `blst_*`, ...). Prints the section sizes, code bytes per crate, and the TOP (default
25) largest functions. Standard library only.
"""

import re
import sys
from collections import Counter


def leb(data, pos):
    """An unsigned LEB128 at pos: (value, next position)."""
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def sections(data):
    """(id, custom name or None, payload start, payload end) of every section."""
    if data[:4] != b"\0asm":
        sys.exit("wasm_breakdown: not a WASM module")
    pos = 8
    while pos < len(data):
        sid = data[pos]
        size, start = leb(data, pos + 1)
        name = None
        if sid == 0:
            length, p = leb(data, start)
            name = data[p : p + length].decode("utf-8", "replace")
        yield sid, name, start, start + size
        pos = start + size


def imported_functions(data, start):
    """How many functions the import section brings in (they come first in the index space)."""
    count, pos = leb(data, start)
    functions = 0
    for _ in range(count):
        for _ in range(2):  # module and field names
            length, pos = leb(data, pos)
            pos += length
        kind = data[pos]
        pos += 1
        if kind == 0:
            functions += 1
            _, pos = leb(data, pos)
        elif kind == 1:  # table: element type, limits
            pos += 1
            flags, pos = leb(data, pos)
            _, pos = leb(data, pos)
            if flags & 1:
                _, pos = leb(data, pos)
        elif kind == 2:  # memory: limits
            flags, pos = leb(data, pos)
            _, pos = leb(data, pos)
            if flags & 1:
                _, pos = leb(data, pos)
        elif kind == 3:  # global: type, mutability
            pos += 2
        else:
            sys.exit(f"wasm_breakdown: import kind {kind} is not read")
    return functions


def body_sizes(data, start):
    """The byte size of each function body, in order."""
    count, pos = leb(data, start)
    sizes = []
    for _ in range(count):
        size, body = leb(data, pos)
        sizes.append(size + (body - pos))
        pos = body + size
    return sizes


def function_names(data, start, end):
    """Function index -> name, from the `name` section's function subsection."""
    names = {}
    length, pos = leb(data, start)
    pos += length
    while pos < end:
        kind = data[pos]
        size, sub = leb(data, pos + 1)
        if kind == 1:
            count, p = leb(data, sub)
            for _ in range(count):
                index, p = leb(data, p)
                length, p = leb(data, p)
                names[index] = data[p : p + length].decode("utf-8", "replace")
                p += length
        pos = sub + size
    return names


C_PREFIXES = {"blst_": "blst (C)", "POINTon": "blst (C)", "ring_core_": "ring (C)"}

LEGACY_ESCAPES = {"$LT$": "<", "$GT$": ">", "$u20$": " ", "$RF$": "&", "$BP$": "*",
                  "$C$": ",", "$u5b$": "[", "$u5d$": "]", "$u7b$": "{", "$u7d$": "}",
                  "..": "::"}


def legacy_path(name):
    """The path of a legacy-mangled Rust symbol (`_ZN...E`), escapes decoded, hash dropped."""
    pos, parts = 3, []
    while pos < len(name) and name[pos].isdigit():
        digits = re.match(r"\d+", name[pos:]).group()
        pos += len(digits)
        part = name[pos : pos + int(digits)]
        pos += int(digits)
        if not re.fullmatch(r"h[0-9a-f]{16}", part):
            parts.append(part)
    path = "::".join(parts)
    for escape, text in LEGACY_ESCAPES.items():
        path = path.replace(escape, text)
    return path.lstrip("_")


def crate_of(name):
    """The crate that defines a function, from its (mangled or demangled) name."""
    for prefix, crate in C_PREFIXES.items():
        if name.startswith(prefix):
            return crate
    if name.startswith("_R"):  # v0 mangling: the first crate root named
        match = re.search(r"C(?:s[0-9a-zA-Z]*_)?\d+([A-Za-z_][A-Za-z0-9_]*)", name)
        return match.group(1) if match else "other (no path)"
    if name.startswith("_ZN"):
        name = legacy_path(name)
    name = re.sub(r"\[[0-9a-f]{16}\]", "", name)  # v0 names demangled by wasm-bindgen
    if name.endswith(" shim"):
        return "wasm-bindgen shims"
    primitive = re.match(r"<(?:[ui](?:\d+|size)|f32|f64|str|char|bool|\[u8\]) as (\w+)::", name)
    if primitive:  # `<u64 as core::fmt::Display>`: the trait's crate
        return primitive.group(1)
    name = re.sub(r"^<(?:&(?:mut )?|\*(?:const|mut) |dyn |impl )*", "", name)
    match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
    if match:
        return match.group(1)
    return "C (blst; no path)" if re.fullmatch(r"\w+", name) else "other"


def readable(name):
    """A function name for the listing (legacy Rust names demangled)."""
    return legacy_path(name) if name.startswith("_ZN") else name


SECTION_NAMES = {1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
                 7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "data count"}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    top = int(sys.argv[2]) if len(sys.argv) == 3 else 25
    imports, sizes, names = 0, [], {}
    print(f"{len(data):>10,} B  {sys.argv[1]}")
    for sid, custom, start, end in sections(data):
        label = f"custom {custom}" if sid == 0 else SECTION_NAMES.get(sid, str(sid))
        print(f"{end - start:>10,} B  section {label}")
        if sid == 2:
            imports = imported_functions(data, start)
        elif sid == 10:
            sizes = body_sizes(data, start)
        elif sid == 0 and custom == "name":
            names = function_names(data, start, end)
    if not names:
        print("wasm_breakdown: no function names (build with strip = false)", file=sys.stderr)
    functions = [(size, names.get(imports + i, f"func[{imports + i}]")) for i, size in enumerate(sizes)]
    per_crate = Counter()
    for size, name in functions:
        per_crate[crate_of(name)] += size
    total = sum(sizes)
    print(f"\ncode per crate ({total:,} B of function bodies):")
    for crate, size in per_crate.most_common():
        if size * 200 < total:
            break
        print(f"{size:>10,} B  {100 * size / total:5.1f} %  {crate}")
    print(f"\nthe {top} largest functions:")
    for size, name in sorted(functions, reverse=True)[:top]:
        print(f"{size:>10,} B  {readable(name)[:150]}")


if __name__ == "__main__":
    main()

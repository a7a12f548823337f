#!/usr/bin/env python3
"""Writes a copy of QuickJS-ng's quickjs.c in which a bytecode function object carries
its own realm (the context it was made in), used where QuickJS used its bytecode's
realm. Then one compiled function can be made into closures of several contexts, each
running with its own globals: the k6 layer compiled once per instance, not per VU
(docs/js-multivu.md, step 1). Fails when a spot it patches is not found.

Usage: patch-realm.py QUICKJS.C OUT.C
"""
import sys

src, out = sys.argv[1], sys.argv[2]
s = open(src).read()
edits = [
    # A new object's union starts zeroed (QuickJS cleared its first word only), so a
    # function object made elsewhere has no realm of its own and uses its bytecode's.
    ("    p->first_weak_ref = NULL;\n    p->u.opaque = NULL;\n    p->shape = sh;\n",
     "    p->first_weak_ref = NULL;\n    memset(&p->u, 0, sizeof p->u);\n    p->shape = sh;\n"),
    # The field, in the union member of bytecode functions.
    ("            JSObject *home_object; /* for 'super' access */\n        } func;",
     "            JSObject *home_object; /* for 'super' access */\n"
     "            JSContext *realm; /* patched: this closure's realm */\n        } func;"),
    # Closures and a module's function: the context that makes them.
    ("    p = JS_VALUE_GET_OBJ(func_obj);\n    p->u.func.function_bytecode = b;\n    p->u.func.home_object = NULL;\n",
     "    p = JS_VALUE_GET_OBJ(func_obj);\n    p->u.func.function_bytecode = b;\n    p->u.func.realm = ctx;\n    p->u.func.home_object = NULL;\n"),
    ("    p->u.func.function_bytecode = b;\n    JS_REF_COUNT(b)++;\n",
     "    p->u.func.function_bytecode = b;\n    p->u.func.realm = ctx;\n    JS_REF_COUNT(b)++;\n"),
    # A call runs in its function object's realm (generators resumed too).
    ("            b = p->u.func.function_bytecode;\n            ctx = b->realm;\n",
     "            b = p->u.func.function_bytecode;\n            ctx = p->u.func.realm ? p->u.func.realm : b->realm;\n"),
    ("    ctx = b->realm; /* set the current realm */",
     "    ctx = p->u.func.realm ? p->u.func.realm : b->realm; /* set the current realm */"),
    ("            b = p->u.func.function_bytecode;\n            realm = b->realm;\n",
     "            b = p->u.func.function_bytecode;\n            realm = p->u.func.realm ? p->u.func.realm : b->realm;\n"),
]
for old, new in edits:
    n = s.count(old)
    if n != 1:
        sys.exit(f"patch-realm.py: expected one match, found {n}: {old[:70]!r}")
    s = s.replace(old, new)
open(out, "w").write(s)

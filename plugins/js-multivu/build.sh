#!/usr/bin/env bash
# Builds the multi-VU QuickJS guest (issue #53 prototype): a core wasm module,
# instrumented with Binaryen's Asyncify so a VU's `sleep` can suspend it.
#
# Needs Debian's clang, lld, wasi-libc, libclang-rt-14-dev-wasm32 (or the same for
# another clang) and binaryen; not part of the default build or CI. QuickJS-ng's C
# sources come from the `rquickjs-sys` crate on crates.io (fetched by cargo).
# Output: $OUT (default: target/js-multivu/guest.wasm under this folder).
set -euo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-target/js-multivu/guest.wasm}
mkdir -p "$(dirname "$OUT")" target/js-multivu/obj
OBJ=target/js-multivu/obj

# Its tools, from Debian, when missing (as bench/instructions installs valgrind): a
# fresh machine builds the prototype with this one command.
if ! command -v clang >/dev/null || ! command -v wasm-opt >/dev/null || [ ! -d /usr/include/wasm32-wasi ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            clang lld wasi-libc libclang-rt-14-dev-wasm32 binaryen >/dev/null
    else
        echo "needs clang, lld, wasi-libc, libclang-rt-14-dev-wasm32 and binaryen (Debian)" >&2
        exit 1
    fi
fi

# QuickJS-ng 0.16.2, as rquickjs-sys 0.14.0 ships it.
cargo fetch --manifest-path quickjs-src/Cargo.toml -q
QJS=$(cargo metadata --manifest-path quickjs-src/Cargo.toml --format-version 1 \
    | python3 -c 'import json,sys,os; m=json.load(sys.stdin); print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"]=="rquickjs-sys"))')/quickjs

# quickjs.c with a function object's own realm (patch-realm.py): the k6 layer's
# bytecode compiled once per instance and shared by its VUs' contexts (`--shared`).
mkdir -p "$OBJ/qjs"
python3 patch-realm.py "$QJS/quickjs.c" "$OBJ/qjs/quickjs.c"

CC=${CC:-clang}
# As rquickjs-sys builds QuickJS for WASI: the emscripten branches fit it.
CFLAGS="--target=wasm32-wasi --sysroot=/usr -O2 -D_GNU_SOURCE -DEMSCRIPTEN=1 -DFE_DOWNWARD=0 -DFE_UPWARD=0 \
  -I$QJS -Wno-implicit-const-int-float-conversion -w"
GUEST_CFLAGS="-DMV_SHARED_REALM -I$OBJ/qjs"
for f in libregexp libunicode dtoa; do
    "$CC" $CFLAGS -c "$QJS/$f.c" -o "$OBJ/$f.o"
done
"$CC" $GUEST_CFLAGS $CFLAGS -c guest.c -o "$OBJ/guest.o"
"$CC" --target=wasm32-wasi -c sp.s -o "$OBJ/sp.o"
"$CC" --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor \
    -Wl,--export=mv_get_sp -Wl,--export=mv_set_sp -Wl,-z,stack-size=262144 \
    "$OBJ"/*.o -o "$OBJ/guest-plain.wasm"
# Every function that can reach `host.sleep` (through QuickJS's indirect calls, most of
# the interpreter) saves and restores its locals.
wasm-opt ${WASM_OPT_FLAGS:-} -O2 --asyncify --pass-arg=asyncify-imports@host.sleep -O2 "$OBJ/guest-plain.wasm" -o "$OUT"
ls -l "$OBJ/guest-plain.wasm" "$OUT"

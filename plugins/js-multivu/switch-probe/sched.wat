;; One continuation per VU for the VU's whole life (wasm stack switching): `start(vu)`
;; runs a new iteration of VU `vu`, `resume(vu)` continues the one it left in `sleep`;
;; both return the iteration's result, or -1 when the VU suspended in `sleep` (its wait
;; in `wait`). A VU's continuation loops over its iterations and parks between two of
;; them ($done): wasmtime 48 frees a continuation's native stack only with the store
;; (`StoreOpaque::allocate_continuation`), so a continuation made per iteration would
;; keep every finished iteration's stack mapped until the run ends.
;; The table of `mv_iterate` is imported (`host.fns`, the guest fills it), so that this
;; module defines one table: wasmtime's pooling allocator, the host's, allows one table
;; per module by default. At most 10,000 VUs per instance: the pooling allocator's
;; default limit is 20,000 elements per table.
(module
  (type $ft (func))
  (type $ct (cont $ft))
  (type $iter (func (param i32) (result i32)))
  (import "host" "fns" (table $fns 1 funcref))
  (tag $yield)
  (tag $done (param i32))
  (table $conts 10000 (ref null $ct))
  (global $vu (mut i32) (i32.const 0))
  (global $wait (export "wait") (mut f64) (f64.const 0))
  ;; A VU's life: its number is read once, when `start` made the continuation.
  (func $body (type $ft)
    (local $me i32)
    (local.set $me (global.get $vu))
    (loop $l
      (suspend $done (call_indirect $fns (type $iter) (local.get $me) (i32.const 0)))
      (br $l)))
  (elem declare func $body)
  ;; Runs VU `vu`'s continuation until it sleeps (-1) or ends an iteration (its result).
  (func $run (param $vu i32) (param $k (ref $ct)) (result i32)
    (local $left (ref null $ct))
    (local $r i32)
    (block $h (result (ref $ct))
      (block $d (result i32 (ref $ct))
        (resume $ct (on $yield $h) (on $done $d) (local.get $k))
        (unreachable))
      (local.set $left)
      (local.set $r)
      (table.set $conts (local.get $vu) (local.get $left))
      (return (local.get $r)))
    (local.set $left)
    (table.set $conts (local.get $vu) (local.get $left))
    (i32.const -1))
  (func (export "start") (param $vu i32) (result i32)
    (local $k (ref null $ct))
    (local.set $k (table.get $conts (local.get $vu)))
    (if (ref.is_null (local.get $k))
      (then
        (global.set $vu (local.get $vu))
        (local.set $k (cont.new $ct (ref.func $body)))))
    (call $run (local.get $vu) (ref.as_non_null (local.get $k))))
  (func (export "resume") (param $vu i32) (result i32)
    (call $run (local.get $vu) (ref.as_non_null (table.get $conts (local.get $vu)))))
  (func (export "sleep") (param $s f64)
    (global.set $wait (local.get $s))
    (suspend $yield)))

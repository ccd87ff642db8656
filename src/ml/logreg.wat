;; The logistic regression's K-wide loops (./logreg-wasm.ts loads this, ./logreg.ts calls it): over one CSR row's
;; non-zeros k in [from, to), each touching the block of `stride` single-precision weights of column indices[k]
;; (stride a multiple of 4), four lanes at a time with 128-bit SIMD:
;;   dot:  dots[c] += data[k] * w[indices[k] * stride + c]        (f64 sums)
;;   axpy: w[indices[k] * stride + c] += data[k] * deltas[c]       (each new weight rounded to f32)
;; The arithmetic is JavaScript's own, operation for operation: each f32 weight widened to f64, one f64 product and
;; one f64 sum per lane (no fused multiply-add: relaxed SIMD is off), the new weight rounded to f32 to nearest; so the
;; weights are the scalar loops' bit for bit (src/ml/logreg.test.ts checks it).
;; Every argument is a byte offset into the module's memory, or a count. Within a block, $c is the byte offset of a
;; weight (4 bytes each) and 2 * $c that of its f64 partner in dots or deltas (8 bytes each).
(module
  (func $dot (param $w i32) (param $stride i32) (param $indices i32) (param $data i32) (param $from i32) (param $to i32)
    (param $dots i32)
    (local $k i32) (local $base i32) (local $c i32) (local $end i32) (local $v v128) (local $x v128)
    ;; $end: a block's length in bytes.
    (local.set $end (i32.shl (local.get $stride) (i32.const 2)))
    (local.set $k (local.get $from))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_s (local.get $k) (local.get $to)))
        ;; $v = [data[k], data[k]]; $base = the byte offset of column indices[k]'s block.
        (local.set $v
          (f64x2.splat (f64.load (i32.add (i32.shl (local.get $k) (i32.const 3)) (local.get $data)))))
        (local.set $base
          (i32.add
            (i32.mul
              (i32.load (i32.add (i32.shl (local.get $k) (i32.const 2)) (local.get $indices)))
              (local.get $end))
            (local.get $w)))
        (local.set $c (i32.const 0))
        (block $lanes_done
          (loop $lanes
            (br_if $lanes_done (i32.ge_s (local.get $c) (local.get $end)))
            ;; $x = four weights, w[c .. c + 3].
            (local.set $x (v128.load (i32.add (local.get $base) (local.get $c))))
            ;; dots[c], dots[c + 1] += v * f64(w[c]), v * f64(w[c + 1])
            (v128.store
              (i32.add (i32.shl (local.get $c) (i32.const 1)) (local.get $dots))
              (f64x2.add
                (v128.load (i32.add (i32.shl (local.get $c) (i32.const 1)) (local.get $dots)))
                (f64x2.mul (local.get $v) (f64x2.promote_low_f32x4 (local.get $x)))))
            ;; dots[c + 2], dots[c + 3] += v * f64(w[c + 2]), v * f64(w[c + 3]): lanes 2 and 3 of $x moved down.
            (v128.store offset=16
              (i32.add (i32.shl (local.get $c) (i32.const 1)) (local.get $dots))
              (f64x2.add
                (v128.load offset=16 (i32.add (i32.shl (local.get $c) (i32.const 1)) (local.get $dots)))
                (f64x2.mul
                  (local.get $v)
                  (f64x2.promote_low_f32x4
                    (i8x16.shuffle 8 9 10 11 12 13 14 15 8 9 10 11 12 13 14 15 (local.get $x) (local.get $x))))))
            (local.set $c (i32.add (local.get $c) (i32.const 16)))
            (br $lanes)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $rows))))

  (func $axpy (param $w i32) (param $stride i32) (param $indices i32) (param $data i32) (param $from i32) (param $to i32)
    (param $deltas i32)
    (local $k i32) (local $base i32) (local $c i32) (local $end i32) (local $v v128) (local $x v128)
    (local.set $end (i32.shl (local.get $stride) (i32.const 2)))
    (local.set $k (local.get $from))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_s (local.get $k) (local.get $to)))
        (local.set $v
          (f64x2.splat (f64.load (i32.add (i32.shl (local.get $k) (i32.const 3)) (local.get $data)))))
        (local.set $base
          (i32.add
            (i32.mul
              (i32.load (i32.add (i32.shl (local.get $k) (i32.const 2)) (local.get $indices)))
              (local.get $end))
            (local.get $w)))
        (local.set $c (i32.const 0))
        (block $lanes_done
          (loop $lanes
            (br_if $lanes_done (i32.ge_s (local.get $c) (local.get $end)))
            ;; The address the four new weights are stored at (the store's first operand, pushed first).
            (i32.add (local.get $base) (local.get $c))
            (local.set $x (v128.load (i32.add (local.get $base) (local.get $c))))
            ;; w[c .. c + 3] = f32(f64(w) + v * deltas), two lanes at a time: each half demoted to [a, b, 0, 0] and
            ;; the two low halves joined as [a, b, c, d].
            (v128.store
              (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
                (f32x4.demote_f64x2_zero
                  (f64x2.add
                    (f64x2.promote_low_f32x4 (local.get $x))
                    (f64x2.mul
                      (local.get $v)
                      (v128.load (i32.add (i32.shl (local.get $c) (i32.const 1)) (local.get $deltas))))))
                (f32x4.demote_f64x2_zero
                  (f64x2.add
                    (f64x2.promote_low_f32x4
                      (i8x16.shuffle 8 9 10 11 12 13 14 15 8 9 10 11 12 13 14 15 (local.get $x) (local.get $x)))
                    (f64x2.mul
                      (local.get $v)
                      (v128.load offset=16
                        (i32.add (i32.shl (local.get $c) (i32.const 1)) (local.get $deltas))))))))
            (local.set $c (i32.add (local.get $c) (i32.const 16)))
            (br $lanes)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $rows))))

  ;; One page to start; ./logreg-wasm.ts grows it to the arena it lays out.
  (memory $memory 1)
  (export "dot" (func $dot))
  (export "axpy" (func $axpy))
  (export "memory" (memory $memory)))

;; The bootstrap's replicates (./draws-wasm.ts loads this): `replicate(stats, width, n, sums)` draws n rows with
;; xoshiro128** (https://prng.di.unimi.it/xoshiro128starstar.c; the state in the exported globals s0..s3, as ./rng.ts
;; keeps it) and adds each drawn row of the f64 matrix at byte offset `stats` (n rows of `width` columns) to the f64
;; sums at byte offset `sums`. A row is floor(u32 / 2^32 * n), the products exact in f64, so the very row
;; `Rng.fillInts` draws from the same state (src/metrics/draws-wasm.test.ts checks it draw for draw).
;; Widths 1 (accuracy) and 2 (ranking) keep their sums in locals; other widths add to memory column by column.
;;
;; One draw, written out in each of the three loops below (no call in the hot loop):
;;   result = rotl(b * 5, 7) * 9; t = b << 9; c ^= a; d ^= b; b ^= c; a ^= d; c ^= t; d = rotl(d, 11)
;;   row = floor(result / 2^32 * n); $row = stats + 8 * width * row (the row's byte offset)
(module
  (func $replicate (param $stats i32) (param $width i32) (param $n i32) (param $sums i32)
    (local $i i32) (local $a i32) (local $b i32) (local $c i32) (local $d i32) (local $x i32) (local $result i32)
    (local $t i32) (local $row i32) (local $k i32) (local $at i32) (local $sum0 f64) (local $sum1 f64)
    (local.set $a (global.get $s0))
    (local.set $b (global.get $s1))
    (local.set $c (global.get $s2))
    (local.set $d (global.get $s3))

    ;; Width 1: sums[0] += stats[row].
    (if (i32.eq (local.get $width) (i32.const 1))
      (then
        (local.set $i (i32.const 0))
        (block $draws_done
          (loop $draws
            (br_if $draws_done (i32.ge_s (local.get $i) (local.get $n)))
            (local.set $x (i32.mul (local.get $b) (i32.const 5)))
            (local.set $result (i32.mul (i32.rotl (local.get $x) (i32.const 7)) (i32.const 9)))
            (local.set $t (i32.shl (local.get $b) (i32.const 9)))
            (local.set $c (i32.xor (local.get $c) (local.get $a)))
            (local.set $d (i32.xor (local.get $d) (local.get $b)))
            (local.set $b (i32.xor (local.get $b) (local.get $c)))
            (local.set $a (i32.xor (local.get $a) (local.get $d)))
            (local.set $c (i32.xor (local.get $c) (local.get $t)))
            (local.set $d (i32.rotl (local.get $d) (i32.const 11)))
            (local.set $row
              (i32.add
                (i32.shl
                  (i32.trunc_f64_u
                    (f64.floor
                      (f64.mul
                        (f64.mul (f64.convert_i32_u (local.get $result)) (f64.const 0x1p-32))
                        (f64.convert_i32_s (local.get $n)))))
                  (i32.const 3))
                (local.get $stats)))
            (local.set $sum0 (f64.add (local.get $sum0) (f64.load (local.get $row))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $draws)))
        (f64.store (local.get $sums) (f64.add (f64.load (local.get $sums)) (local.get $sum0)))
        (global.set $s0 (local.get $a))
        (global.set $s1 (local.get $b))
        (global.set $s2 (local.get $c))
        (global.set $s3 (local.get $d))
        (return)))

    ;; Width 2: sums[0] += stats[2 row], sums[1] += stats[2 row + 1].
    (if (i32.eq (local.get $width) (i32.const 2))
      (then
        (local.set $i (i32.const 0))
        (block $draws_done
          (loop $draws
            (br_if $draws_done (i32.ge_s (local.get $i) (local.get $n)))
            (local.set $x (i32.mul (local.get $b) (i32.const 5)))
            (local.set $result (i32.mul (i32.rotl (local.get $x) (i32.const 7)) (i32.const 9)))
            (local.set $t (i32.shl (local.get $b) (i32.const 9)))
            (local.set $c (i32.xor (local.get $c) (local.get $a)))
            (local.set $d (i32.xor (local.get $d) (local.get $b)))
            (local.set $b (i32.xor (local.get $b) (local.get $c)))
            (local.set $a (i32.xor (local.get $a) (local.get $d)))
            (local.set $c (i32.xor (local.get $c) (local.get $t)))
            (local.set $d (i32.rotl (local.get $d) (i32.const 11)))
            (local.set $row
              (i32.add
                (i32.shl
                  (i32.shl
                    (i32.trunc_f64_u
                      (f64.floor
                        (f64.mul
                          (f64.mul (f64.convert_i32_u (local.get $result)) (f64.const 0x1p-32))
                          (f64.convert_i32_s (local.get $n)))))
                    (i32.const 1))
                  (i32.const 3))
                (local.get $stats)))
            (local.set $sum0 (f64.add (local.get $sum0) (f64.load (local.get $row))))
            (local.set $sum1 (f64.add (local.get $sum1) (f64.load offset=8 (local.get $row))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $draws)))
        (f64.store (local.get $sums) (f64.add (f64.load (local.get $sums)) (local.get $sum0)))
        (f64.store offset=8 (local.get $sums) (f64.add (f64.load offset=8 (local.get $sums)) (local.get $sum1)))
        (global.set $s0 (local.get $a))
        (global.set $s1 (local.get $b))
        (global.set $s2 (local.get $c))
        (global.set $s3 (local.get $d))
        (return)))

    ;; Any other width: sums[k] += stats[width * row + k], k < width.
    (local.set $i (i32.const 0))
    (block $draws_done
      (loop $draws
        (br_if $draws_done (i32.ge_s (local.get $i) (local.get $n)))
        (local.set $x (i32.mul (local.get $b) (i32.const 5)))
        (local.set $result (i32.mul (i32.rotl (local.get $x) (i32.const 7)) (i32.const 9)))
        (local.set $t (i32.shl (local.get $b) (i32.const 9)))
        (local.set $c (i32.xor (local.get $c) (local.get $a)))
        (local.set $d (i32.xor (local.get $d) (local.get $b)))
        (local.set $b (i32.xor (local.get $b) (local.get $c)))
        (local.set $a (i32.xor (local.get $a) (local.get $d)))
        (local.set $c (i32.xor (local.get $c) (local.get $t)))
        (local.set $d (i32.rotl (local.get $d) (i32.const 11)))
        (local.set $row
          (i32.add
            (i32.shl
              (i32.mul
                (i32.trunc_f64_u
                  (f64.floor
                    (f64.mul
                      (f64.mul (f64.convert_i32_u (local.get $result)) (f64.const 0x1p-32))
                      (f64.convert_i32_s (local.get $n)))))
                (local.get $width))
              (i32.const 3))
            (local.get $stats)))
        (local.set $k (i32.const 0))
        (block $columns_done
          (loop $columns
            (br_if $columns_done (i32.ge_s (local.get $k) (local.get $width)))
            (local.set $at (i32.add (i32.shl (local.get $k) (i32.const 3)) (local.get $sums)))
            (f64.store
              (local.get $at)
              (f64.add
                (f64.load (local.get $at))
                (f64.load (i32.add (i32.shl (local.get $k) (i32.const 3)) (local.get $row)))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $columns)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $draws)))
    (global.set $s0 (local.get $a))
    (global.set $s1 (local.get $b))
    (global.set $s2 (local.get $c))
    (global.set $s3 (local.get $d)))

  ;; One page to start; ./draws-wasm.ts grows it to the matrix it copies in.
  (memory $memory 1)
  ;; The generator's state between calls (i32: the same bits as ./rng.ts's u32 words, signed).
  (global $s0 (mut i32) (i32.const 0))
  (global $s1 (mut i32) (i32.const 0))
  (global $s2 (mut i32) (i32.const 0))
  (global $s3 (mut i32) (i32.const 0))
  (export "replicate" (func $replicate))
  (export "memory" (memory $memory))
  (export "s0" (global $s0))
  (export "s1" (global $s1))
  (export "s2" (global $s2))
  (export "s3" (global $s3)))

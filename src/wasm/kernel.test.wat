;; The loader's test kernel (./kernel.test.ts): one SIMD function, so that a test proves SIMD is assembled and runs.
(module
  (memory (export "memory") 1)
  ;; lanes(x, y) = f64x2(x, y) + f64x2(y, x), its two lanes stored at bytes 0 and 8.
  (func (export "lanes") (param $x f64) (param $y f64)
    (v128.store (i32.const 0)
      (f64x2.add
        (f64x2.replace_lane 1 (f64x2.splat (local.get $x)) (local.get $y))
        (f64x2.replace_lane 1 (f64x2.splat (local.get $y)) (local.get $x))))))

"""Small linalg programs shared by the compiler's tests."""

# y = w + x: w is the bound parameter, x the input.
ADD = """
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%w: tensor<8x16xf32>, %x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %x : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
"""

// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.attention: one case per rule.

func.func @mixed(%q: tensor<2x4x8xf32>, %kt: memref<2x8x4xf32>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>) {
  // expected-error @+1 {{operands must be all tensors or all buffers}}
  %r = nova.attention ins(%q, %kt, %v : tensor<2x4x8xf32>, memref<2x8x4xf32>, tensor<2x4x8xf32>) outs(%o : tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>
  return
}

// -----

func.func @keys_not_columns(%q: tensor<2x4x8xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>) {
  // expected-error @+1 {{keys must be [batch, 8, keys]}}
  %r = nova.attention ins(%q, %kt, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%o : tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>
  return
}

// -----

func.func @value_rows(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>) {
  // expected-error @+1 {{value must have 6 rows (one per key), got 4}}
  %r = nova.attention ins(%q, %kt, %v : tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x4x8xf32>) outs(%o : tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>
  return
}

// -----

func.func @causal_rectangular(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %o: tensor<2x4x8xf32>) {
  // expected-error @+1 {{causal attention needs as many queries as keys, got 4 and 6}}
  %r = nova.attention ins(%q, %kt, %v : tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>) outs(%o : tensor<2x4x8xf32>) scale 1.0 causal -> tensor<2x4x8xf32>
  return
}

// -----

func.func @buffer_result(%q: memref<2x4x8xf32>, %kt: memref<2x8x4xf32>, %v: memref<2x4x8xf32>, %o: memref<2x4x8xf32>) {
  // expected-error @+1 {{on buffers has no result}}
  %r = nova.attention ins(%q, %kt, %v : memref<2x4x8xf32>, memref<2x8x4xf32>, memref<2x4x8xf32>) outs(%o : memref<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>
  return
}

// -----

func.func @batch(%q: tensor<2x4x8xf32>, %kt: tensor<3x8x4xf32>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>) {
  // expected-error @+1 {{batch sizes must match, got 2, 3, 2, 2}}
  %r = nova.attention ins(%q, %kt, %v : tensor<2x4x8xf32>, tensor<3x8x4xf32>, tensor<2x4x8xf32>) outs(%o : tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>
  return
}

// -----

func.func @rank_mix(%q: tensor<1x4x2x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>) {
  // expected-error @+1 {{operands must all have the same rank}}
  %r = nova.attention ins(%q, %k, %v : tensor<1x4x2x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%o : tensor<2x4x8xf32>) scale 1.0 key_rows -> tensor<2x4x8xf32>
  return
}

// -----

func.func @sequence_major_key_columns(%q: tensor<1x4x2x8xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x4x2x8xf32>, %o: tensor<1x4x2x8xf32>) {
  // expected-error @+1 {{rank-4 operands need key_rows}}
  %r = nova.attention ins(%q, %k, %v : tensor<1x4x2x8xf32>, tensor<1x8x2x4xf32>, tensor<1x4x2x8xf32>) outs(%o : tensor<1x4x2x8xf32>) scale 1.0 -> tensor<1x4x2x8xf32>
  return
}

// -----

func.func @sequence_major_heads(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x3x8xf32>, %v: tensor<1x4x2x8xf32>, %o: tensor<1x4x2x8xf32>) {
  // expected-error @+1 {{batch and head sizes must match}}
  %r = nova.attention ins(%q, %k, %v : tensor<1x4x2x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x2x8xf32>) outs(%o : tensor<1x4x2x8xf32>) scale 1.0 key_rows -> tensor<1x4x2x8xf32>
  return
}

// -----

func.func @element_types(%q: tensor<2x4x8xbf16>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xbf16>, %o: tensor<2x4x8xf32>) {
  // expected-error @+1 {{query, keys and value must have one element type}}
  %r = nova.attention ins(%q, %kt, %v : tensor<2x4x8xbf16>, tensor<2x8x4xf32>, tensor<2x4x8xbf16>) outs(%o : tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>
  return
}

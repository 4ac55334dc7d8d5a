// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.attention_backward and nova.attention_lse: one case
// per rule.

func.func @mixed(%q: tensor<2x4x8xf32>, %k: memref<2x4x8xf32>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{operands must be all tensors or all buffers}}
  %r:3 = nova.attention_backward ins(%q, %k, %v, %o, %o, %l : tensor<2x4x8xf32>, memref<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%q, %v, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @one_type(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xbf16>, %v: tensor<2x4x8xf32>, %o: tensor<2x4x8xf32>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{query, keys and value must have one element type}}
  %r:3 = nova.attention_backward ins(%q, %k, %v, %o, %o, %l : tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%q, %v, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @grad_out_type(%q: tensor<2x4x8xf32>, %g: tensor<2x4x8xbf16>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{out and grad_out must be f32 or the query's type}}
  %r:3 = nova.attention_backward ins(%q, %q, %q, %q, %g, %l : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4xf32>) outs(%q, %q, %q : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @value_rows(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x4x8xf32>, %l: tensor<2x4xf32>, %dk: tensor<2x6x8xf32>) {
  // expected-error @+1 {{value must be [2, 6, 8], got 'tensor<2x4x8xf32>'}}
  %r:3 = nova.attention_backward ins(%q, %k, %v, %q, %q, %l : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%q, %dk, %v : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @lse_shape(%q: tensor<2x4x8xf32>, %l: tensor<2x5xf32>) {
  // expected-error @+1 {{lse must be [2, 4], got 'tensor<2x5xf32>'}}
  %r:3 = nova.attention_backward ins(%q, %q, %q, %q, %q, %l : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x5xf32>) outs(%q, %q, %q : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @grad_keys_shape(%q: tensor<2x4x8xf32>, %l: tensor<2x4xf32>, %dk: tensor<2x4x6xf32>) {
  // expected-error @+1 {{grad_keys must be [2, 4, 8], got 'tensor<2x4x6xf32>'}}
  %r:3 = nova.attention_backward ins(%q, %q, %q, %q, %q, %l : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%q, %dk, %q : tensor<2x4x8xf32>, tensor<2x4x6xf32>, tensor<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x4x6xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @causal_rectangular(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{causal attention needs as many queries as keys, got 4 and 6}}
  %r:3 = nova.attention_backward ins(%q, %k, %k, %q, %q, %l : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) outs(%q, %k, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>) scale 1.0 causal -> tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>
  return
}

// -----

func.func @buffers_no_result(%q: memref<2x4x8xf32>, %l: memref<2x4xf32>) {
  // expected-error @+1 {{on buffers has no result}}
  %r:3 = nova.attention_backward ins(%q, %q, %q, %q, %q, %l : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4xf32>) outs(%q, %q, %q : memref<2x4x8xf32>, memref<2x4x8xf32>, memref<2x4x8xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @lse_wrong_shape(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %l: tensor<2x5xf32>) {
  // expected-error @+1 {{lse must be [2, 4], got 'tensor<2x5xf32>'}}
  %r:2 = nova.attention_lse ins(%q, %kt, %q : tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%q, %l : tensor<2x4x8xf32>, tensor<2x5xf32>) scale 1.0 -> tensor<2x4x8xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @lse_one_result(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{on tensors returns the updated out and lse}}
  %r = nova.attention_lse ins(%q, %kt, %q : tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%q, %l : tensor<2x4x8xf32>, tensor<2x4xf32>) scale 1.0 -> tensor<2x4x8xf32>
  return
}

// RUN: nova-opt %s -split-input-file -verify-diagnostics

func.func @negative_gather_indices_shape(%table: memref<128x8xf32, #nova.memory_space<hbm>>, %pos: memref<4x4xi64, #nova.memory_space<sram>>, %rows: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.gather' op indices shape must be 4x8, got 4x4}}
  %t = nova.gather %table[%pos] into %rows : memref<128x8xf32, #nova.memory_space<hbm>>, memref<4x4xi64, #nova.memory_space<sram>> -> memref<4x8xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_gather_indices_in_hbm(%table: memref<128x8xf32, #nova.memory_space<hbm>>, %pos: memref<4x8xi64, #nova.memory_space<hbm>>, %rows: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.gather' op indices must live in sram, got hbm}}
  %t = nova.gather %table[%pos] into %rows : memref<128x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<hbm>> -> memref<4x8xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_gather_element_type(%table: memref<128x8xf32, #nova.memory_space<hbm>>, %pos: memref<4x8xi64, #nova.memory_space<sram>>, %rows: memref<4x8xbf16, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.gather' op source and target element types must match, got 'f32' and 'bf16'}}
  %t = nova.gather %table[%pos] into %rows : memref<128x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<4x8xbf16, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_exp_of_integers(%a: memref<4xi64, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op 'exp' needs float operands, got 'i64'}}
  nova.elementwise <exp> ins(%a : memref<4xi64, #nova.memory_space<sram>>) outs(%a : memref<4xi64, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_xor_of_floats(%a: memref<4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op 'xor' needs integer or i1 operands, got 'f32'}}
  nova.elementwise <xor> ins(%a, %a : memref<4xf32, #nova.memory_space<sram>>, memref<4xf32, #nova.memory_space<sram>>) outs(%a : memref<4xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_add_of_bools(%a: memref<4xi1, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op 'add' does not take i1 operands}}
  nova.elementwise <add> ins(%a, %a : memref<4xi1, #nova.memory_space<sram>>, memref<4xi1, #nova.memory_space<sram>>) outs(%a : memref<4xi1, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_argmax_float_index(%x: memref<4x8xf32, #nova.memory_space<sram>>, %r: memref<4x1xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.reduce' op 'argmax' writes an i64 or i32 index, got 'f32'}}
  nova.reduce <argmax> ins(%x : memref<4x8xf32, #nova.memory_space<sram>>) outs(%r : memref<4x1xf32, #nova.memory_space<sram>>) dim 1
  return
}

// -----

func.func @negative_avg_of_integers(%x: memref<4x8xi32, #nova.memory_space<sram>>, %r: memref<4x1xi32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.reduce' op 'avg' needs a float input, got 'i32'}}
  nova.reduce <avg> ins(%x : memref<4x8xi32, #nova.memory_space<sram>>) outs(%r : memref<4x1xi32, #nova.memory_space<sram>>) dim 1
  return
}

// -----

func.func @negative_iota_dim(%a: memref<4x8xi64, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.iota' op dim 2 is out of range for rank 2}}
  nova.iota outs(%a : memref<4x8xi64, #nova.memory_space<sram>>) dim 2
  return
}

// -----

func.func @negative_scatter_indices_shape(%rows: memref<4x8xf32, #nova.memory_space<hbm>>, %pos: memref<4x4xi64, #nova.memory_space<sram>>, %table: memref<128x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.scatter' op indices shape must be 4x8, got 4x4}}
  %t = nova.scatter %rows[%pos] into %table accumulate : memref<4x8xf32, #nova.memory_space<hbm>>, memref<4x4xi64, #nova.memory_space<sram>> -> memref<128x8xf32, #nova.memory_space<hbm>>
  return
}

// -----

func.func @negative_scatter_indices_in_hbm(%rows: memref<4x8xf32, #nova.memory_space<hbm>>, %pos: memref<4x8xi64, #nova.memory_space<hbm>>, %table: memref<128x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.scatter' op indices must live in sram, got hbm}}
  %t = nova.scatter %rows[%pos] into %table accumulate : memref<4x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<hbm>> -> memref<128x8xf32, #nova.memory_space<hbm>>
  return
}

// -----

func.func @negative_scatter_element_type(%rows: memref<4x8xf32, #nova.memory_space<hbm>>, %pos: memref<4x8xi64, #nova.memory_space<sram>>, %table: memref<128x8xbf16, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.scatter' op source and target element types must match, got 'f32' and 'bf16'}}
  %t = nova.scatter %rows[%pos] into %table accumulate : memref<4x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<128x8xbf16, #nova.memory_space<hbm>>
  return
}

// -----

func.func @negative_scatter_integers(%rows: memref<4x8xi32, #nova.memory_space<hbm>>, %pos: memref<4x8xi64, #nova.memory_space<sram>>, %table: memref<128x8xi32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.scatter' op accumulates floats only, got 'i32'}}
  %t = nova.scatter %rows[%pos] into %table accumulate : memref<4x8xi32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<128x8xi32, #nova.memory_space<hbm>>
  return
}

// -----

func.func @negative_scatter_add_positions_shape(%v: tensor<6x16xf32>, %pos: tensor<6x8xi64>, %base: tensor<10x16xf32>) -> tensor<10x16xf32> {
  // expected-error @+1 {{'nova.scatter_add' op positions must have the values' shape, got 'tensor<6x8xi64>' for 'tensor<6x16xf32>'}}
  %r = nova.scatter_add ins(%v, %pos : tensor<6x16xf32>, tensor<6x8xi64>) outs(%base : tensor<10x16xf32>) -> tensor<10x16xf32>
  return %r : tensor<10x16xf32>
}

// -----

func.func @negative_scatter_add_rank(%v: tensor<96xf32>, %pos: tensor<96xi64>, %base: tensor<10x16xf32>) -> tensor<10x16xf32> {
  // expected-error @+1 {{'nova.scatter_add' op values must have rank 2 (rows of a table), got 'tensor<96xf32>'}}
  %r = nova.scatter_add ins(%v, %pos : tensor<96xf32>, tensor<96xi64>) outs(%base : tensor<10x16xf32>) -> tensor<10x16xf32>
  return %r : tensor<10x16xf32>
}

// -----

func.func @negative_scatter_add_element_type(%v: tensor<6x16xbf16>, %pos: tensor<6x16xi64>, %base: tensor<10x16xf32>) -> tensor<10x16xf32> {
  // expected-error @+1 {{'nova.scatter_add' op values and out must have one element type, got 'bf16' and 'f32'}}
  %r = nova.scatter_add ins(%v, %pos : tensor<6x16xbf16>, tensor<6x16xi64>) outs(%base : tensor<10x16xf32>) -> tensor<10x16xf32>
  return %r : tensor<10x16xf32>
}

// -----

func.func @negative_scatter_add_mixed(%v: memref<6x16xf32>, %pos: tensor<6x16xi64>, %base: tensor<10x16xf32>) -> tensor<10x16xf32> {
  // expected-error @+1 {{'nova.scatter_add' op operands must be all tensors or all buffers}}
  %r = nova.scatter_add ins(%v, %pos : memref<6x16xf32>, tensor<6x16xi64>) outs(%base : tensor<10x16xf32>) -> tensor<10x16xf32>
  return %r : tensor<10x16xf32>
}

// -----

func.func @negative_scatter_add_buffers_result(%v: memref<6x16xf32>, %pos: memref<6x16xi64>, %base: memref<10x16xf32>) {
  // expected-error @+1 {{'nova.scatter_add' op on buffers has no result}}
  %r = nova.scatter_add ins(%v, %pos : memref<6x16xf32>, memref<6x16xi64>) outs(%base : memref<10x16xf32>) -> tensor<10x16xf32>
  return
}

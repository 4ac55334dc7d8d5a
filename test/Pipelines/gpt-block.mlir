// The GPT block imported from PyTorch (test/Fixtures/gpt_block.mlir: pre-LN,
// causal 4-head attention, GELU MLP, d_model 32, batch 2 x seq 8) through the
// whole compiler: to tiles, to instructions, to a binary.
// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-lower-to-tiles="target=nova-t1" | FileCheck %s --check-prefix=TILES
// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-lower-to-isa="target=nova-t1" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=ISA
// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-lower-to-isa="target=nova-t1" --mlir-print-op-on-diagnostic=false -o %t.mlir 2>/dev/null && nova-translate --nova-to-binary %t.mlir -o %t.nova && nova-translate --nova-to-binary-text %t.mlir | FileCheck %s --check-prefix=BIN

// Parameters and activations live in HBM; no tensor or linalg op is left.
// TILES-LABEL: func.func @forward
// TILES-SAME: (%{{.*}}: memref<32xf32, #nova.memory_space<hbm>>
// TILES-NOT: linalg.
// TILES-NOT: tensor<

// LayerNorm: row sums on the vector unit; the rows' last two dims (8 x 32)
// are whole and small, so the batch joins them: one tile, no loop. The
// centred rows are stored once and read back from SRAM, not reloaded.
// TILES: nova.dma_start %{{.*}}, %{{.*}} : memref<2x8x32xf32, #nova.memory_space<hbm>> -> memref<2x8x32xf32, #nova.memory_space<sram>>
// TILES: nova.reduce <sum> ins(%{{.*}} : memref<2x8x32xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<2x8x1xf32, #nova.memory_space<sram>>) dim 2
// TILES: nova.dma_start %{{.*}}, %{{.*}} : memref<2x8x32xf32, #nova.memory_space<sram>> -> memref<2x8x32xf32, #nova.memory_space<hbm>>
// TILES-NOT: memref<2x8x32xf32, #nova.memory_space<hbm>> -> memref<2x8x32xf32, #nova.memory_space<sram>>
// TILES: nova.elementwise <rsqrt> ins(%{{.*}} : memref<2x8x1xf32, #nova.memory_space<sram>>)

// Q, K and V projections on the matrix unit, the weights read through
// transposed SRAM views of their rows (x @ W.T).
// TILES-COUNT-3: nova.matmul ins(%{{.*}}, %{{.*}} : memref<16x32xf32, #nova.memory_space<sram>>, memref<32x32xf32, strided<[1, 32]>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<16x32xf32, #nova.memory_space<acc>>)

// Attention, fused (nova-fuse-attention): the causal mask built once on
// chip; q, k and v read in place from the projections' [B, T, H, D] rows
// (one strided DMA per head, no heads-first copy); the heads (all resident,
// one query block each) in one chain, each head's scores issued before the
// previous head's P V; the softmax, the mask (-1e38 above the diagonal)
// added to the scores (one block per sequence).
// TILES: nova.iota
// TILES: nova.elementwise <mul> scalar(-9.9999999999999997E+37)
// TILES-COUNT-3: nova.dma_start %{{.*}}, %{{.*}} : memref<1x1x8x16xf32, strided<[256, 16, 32, 1]>, #nova.memory_space<hbm>> -> memref<1x1x8x16xf32
// TILES: nova.matmul
// TILES: nova.matmul ins(%{{.*}}, %{{.*}} : memref<8x16xf32, strided<[16, 1], offset: ?>, #nova.memory_space<sram>>, memref<16x8xf32, strided<[1, 16], offset: ?>, #nova.memory_space<sram>>)
// TILES: nova.elementwise <add>
// TILES: nova.reduce <max>
// TILES: nova.elementwise <exp>

// MLP: the first matmul's accumulator is drained to an SRAM tile that the
// fused bias + exact-GELU epilogue reads on chip (no HBM round trip).
// TILES: nova.matmul ins(%{{.*}}, %{{.*}} : memref<16x32xf32, #nova.memory_space<sram>>, memref<32x128xf32, strided<[1, 32]>, #nova.memory_space<sram>>) outs(%[[ACC:.*]] : memref<16x128xf32, #nova.memory_space<acc>>)
// TILES-NEXT: nova.elementwise <copy> ins(%[[ACC]] : memref<16x128xf32, #nova.memory_space<acc>>) outs(%[[H:.*]] : memref<16x128xf32, #nova.memory_space<sram>>)
// TILES-NOT: nova.dma_start %[[H]]
// TILES: nova.elementwise <add> ins(%[[H]], %{{.*}} : memref<16x128xf32, #nova.memory_space<sram>>, memref<1x128xf32, #nova.memory_space<sram>>)
// TILES: nova.elementwise <erf>
// TILES: nova.matmul ins(%{{.*}}, %{{.*}} : memref<16x128xf32, #nova.memory_space<sram>>, memref<128x32xf32, strided<[1, 128]>, #nova.memory_space<sram>>)
// TILES: return

// Memory planning reports the peaks; every buffer has an address.
// ISA: remark: sram peak {{[0-9]+}} bytes of 25165824, acc peak {{[0-9]+}} bytes of 2097152
// ISA: func.func @forward(%{{.*}}: memref<32xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input"}
// ISA-SAME: nova.role = "output"
// ISA-NOT: nova.matmul
// ISA-NOT: nova.dma_start
// Instructions on explicit engines, semaphores between engines (the block
// has no loop left: its tiles are whole, its heads read in place).
// ISA: nova_isa.dma_copy %{{.*}} : #nova_isa.tile<hbm, f32, [2, 8, 32], [256, 32, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [2, 8, 32], [256, 32, 1]> queue {{[0-9]+}} on dma
// ISA: nova_isa.vreduce sum %{{.*}} : #nova_isa.tile<sram, f32, [2, 8, 32], [256, 32, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [2, 8, 1], [8, 1, 1]> axis 2 on vector
// ISA: nova_isa.matmul %{{.*}} : #nova_isa.tile<sram, f32, [16, 32], [32, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [32, 32], [1, 32]> -> %{{.*}} : #nova_isa.tile<acc, f32, [16, 32], [32, 1]> on matrix wait [{{[0-9, ]+}}]
// ISA-NOT: nova_isa.loop
// ISA: nova_isa.vunary erf
// ISA: nova_isa.halt on scalar

// The binary encoder accepts it (words shown next to their ops).
// BIN: nova_isa.matmul
// BIN: nova_isa.halt

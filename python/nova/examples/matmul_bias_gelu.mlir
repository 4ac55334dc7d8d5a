// y = gelu(x @ w + b) for x: 256x512 bf16, w: 512x256 bf16, b: 256 f32,
// written by hand in the `nova` dialect, the way convert-linalg-to-nova and
// nova-plan-memory will emit it: 128x128 output tiles (the matrix unit's
// shape), K streamed through SRAM in 128-wide slices into the accumulator,
// then a vector-unit epilogue (bias add, erf-based GELU) and a DMA back to HBM.
//
//   nova-opt --nova-attach-target=target=nova-t1 matmul_bias_gelu.mlir

!x_hbm = memref<256x512xbf16, #nova.memory_space<hbm>>
!w_hbm = memref<512x256xbf16, #nova.memory_space<hbm>>
!b_hbm = memref<1x256xf32, #nova.memory_space<hbm>>
!y_hbm = memref<256x256xf32, #nova.memory_space<hbm>>

!x_tile_hbm = memref<128x128xbf16, strided<[512, 1], offset: ?>, #nova.memory_space<hbm>>
!w_tile_hbm = memref<128x128xbf16, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>
!b_tile_hbm = memref<1x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>
!y_tile_hbm = memref<128x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>

!in_sram = memref<128x128xbf16, #nova.memory_space<sram>>
!bias_sram = memref<1x128xf32, #nova.memory_space<sram>>
!out_sram = memref<128x128xf32, #nova.memory_space<sram>>
!acc = memref<128x128xf32, #nova.memory_space<acc>>

func.func @matmul_bias_gelu(%x: !x_hbm, %w: !w_hbm, %b: !b_hbm, %y: !y_hbm) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index

  %x_s = memref.alloc() : !in_sram
  %w_s = memref.alloc() : !in_sram
  %b_s = memref.alloc() : !bias_sram
  %h_s = memref.alloc() : !out_sram
  %t_s = memref.alloc() : !out_sram
  %acc = memref.alloc() : !acc

  scf.for %m = %c0 to %c256 step %c128 {
    scf.for %n = %c0 to %c256 step %c128 {
      // acc = x[m, :] @ w[:, n], K in 128-wide slices.
      nova.fill 0.0 outs(%acc : !acc)
      scf.for %k = %c0 to %c512 step %c128 {
        %x_t = memref.subview %x[%m, %k] [128, 128] [1, 1] : !x_hbm to !x_tile_hbm
        %w_t = memref.subview %w[%k, %n] [128, 128] [1, 1] : !w_hbm to !w_tile_hbm
        %tx = nova.dma_start %x_t, %x_s : !x_tile_hbm -> !in_sram
        %tw = nova.dma_start %w_t, %w_s : !w_tile_hbm -> !in_sram
        nova.wait %tx, %tw
        nova.matmul ins(%x_s, %w_s : !in_sram, !in_sram) outs(%acc : !acc) accumulate
      }

      // h = acc + b[n]  (the bias row broadcasts over the tile's rows)
      %b_t = memref.subview %b[0, %n] [1, 128] [1, 1] : !b_hbm to !b_tile_hbm
      %tb = nova.dma_start %b_t, %b_s : !b_tile_hbm -> !bias_sram
      nova.wait %tb
      nova.elementwise <add> ins(%acc, %b_s : !acc, !bias_sram) outs(%h_s : !out_sram)

      // gelu(h) = 0.5 * h * (1 + erf(h / sqrt(2)))
      nova.elementwise <mul> scalar(0.70710678118654757) ins(%h_s : !out_sram) outs(%t_s : !out_sram)
      nova.elementwise <erf> ins(%t_s : !out_sram) outs(%t_s : !out_sram)
      nova.elementwise <add> scalar(1.0) ins(%t_s : !out_sram) outs(%t_s : !out_sram)
      nova.elementwise <mul> ins(%h_s, %t_s : !out_sram, !out_sram) outs(%t_s : !out_sram)
      nova.elementwise <mul> scalar(0.5) ins(%t_s : !out_sram) outs(%t_s : !out_sram)

      %y_t = memref.subview %y[%m, %n] [128, 128] [1, 1] : !y_hbm to !y_tile_hbm
      %ty = nova.dma_start %t_s, %y_t : !out_sram -> !y_tile_hbm
      nova.wait %ty
    }
  }

  memref.dealloc %acc : !acc
  memref.dealloc %t_s : !out_sram
  memref.dealloc %h_s : !out_sram
  memref.dealloc %b_s : !bias_sram
  memref.dealloc %w_s : !in_sram
  memref.dealloc %x_s : !in_sram
  return
}

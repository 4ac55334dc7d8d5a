// RUN: nova-opt %s --nova-lower-to-tiles="target=nova-t1" | FileCheck %s --check-prefix=DEFAULT
// RUN: nova-opt %s --nova-lower-to-tiles="target=nova-t1 tile-max-cols=1024" | FileCheck %s --check-prefix=WIDE
// RUN: nova-opt %s --nova-lower-to-tiles="target=nova-t1 tile-max-rows=2 tile-max-cols=256" | FileCheck %s --check-prefix=SMALL

// nova-tile's limits as options of the pipeline (a tile-size search tries
// several): an elementwise op on [4, 1024] rows is cut into 512 columns by
// default, left whole at 1024, and into [2, 256] tiles at the smallest.
// DEFAULT-LABEL: func.func @exp_rows
// DEFAULT: nova.elementwise <exp> ins(%{{.*}} : memref<4x512xf32, #nova.memory_space<sram>>)
// WIDE-LABEL: func.func @exp_rows
// WIDE: nova.elementwise <exp> ins(%{{.*}} : memref<4x1024xf32, #nova.memory_space<sram>>)
// SMALL-LABEL: func.func @exp_rows
// SMALL: nova.elementwise <exp> ins(%{{.*}} : memref<2x256xf32, #nova.memory_space<sram>>)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @exp_rows(%x: tensor<4x1024xf32>) -> tensor<4x1024xf32> {
  %e = tensor.empty() : tensor<4x1024xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x1024xf32>) outs(%e : tensor<4x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  return %y : tensor<4x1024xf32>
}

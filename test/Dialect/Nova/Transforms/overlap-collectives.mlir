// RUN: nova-opt %s --split-input-file --nova-overlap-collectives | FileCheck %s

// Independent compute (the matmul on %x) moves in front of the all-reduce's
// wait; what reads the reduced buffer stays behind it.
// CHECK-LABEL: func.func @independent_matmul_moves_up
// CHECK: %[[T:.*]] = nova.all_reduce
// CHECK: linalg.fill
// CHECK-NEXT: %[[Z:.*]] = linalg.matmul
// CHECK-NEXT: nova.wait %[[T]]
// CHECK-NEXT: %[[Y:.*]] = bufferization.to_tensor
// CHECK-NEXT: linalg.add ins(%[[Y]], %{{.*}} :
// CHECK: return %{{.*}}, %[[Z]]
func.func @independent_matmul_moves_up(%p: tensor<8x8xf32>, %x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %in = bufferization.to_buffer %p read_only : tensor<8x8xf32> to memref<8x8xf32, #nova.memory_space<hbm>>
  %out = memref.alloc() : memref<8x8xf32, #nova.memory_space<hbm>>
  %t = nova.all_reduce <sum> ins(%in : memref<8x8xf32, #nova.memory_space<hbm>>) outs(%out : memref<8x8xf32, #nova.memory_space<hbm>>) groups [[0, 1]]
  nova.wait %t
  %y = bufferization.to_tensor %out restrict writable : memref<8x8xf32, #nova.memory_space<hbm>> to tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %s = linalg.add ins(%y, %x : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %z = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s, %z : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Nothing moves past a second collective's buffer: the to_tensor of %out2
// reads what the second all-reduce writes, although it has no effect of its
// own; and an op that needs the first result stays after the wait. (The
// add's tensor.empty reads nothing, so it moves.)
// CHECK-LABEL: func.func @buffers_and_dependents_stay
// CHECK: %[[T1:.*]] = nova.all_reduce
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: nova.wait %[[T1]]
// CHECK-NEXT: %[[Y:.*]] = bufferization.to_tensor
// CHECK-NEXT: %[[T2:.*]] = nova.all_reduce
// CHECK-NEXT: nova.wait %[[T2]]
// CHECK-NEXT: bufferization.to_tensor
// CHECK-NEXT: linalg.add
func.func @buffers_and_dependents_stay(%p: tensor<8x8xf32>, %q: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %in = bufferization.to_buffer %p read_only : tensor<8x8xf32> to memref<8x8xf32, #nova.memory_space<hbm>>
  %out = memref.alloc() : memref<8x8xf32, #nova.memory_space<hbm>>
  %in2 = bufferization.to_buffer %q read_only : tensor<8x8xf32> to memref<8x8xf32, #nova.memory_space<hbm>>
  %out2 = memref.alloc() : memref<8x8xf32, #nova.memory_space<hbm>>
  %t = nova.all_reduce <sum> ins(%in : memref<8x8xf32, #nova.memory_space<hbm>>) outs(%out : memref<8x8xf32, #nova.memory_space<hbm>>) groups [[0, 1]]
  nova.wait %t
  %y = bufferization.to_tensor %out restrict writable : memref<8x8xf32, #nova.memory_space<hbm>> to tensor<8x8xf32>
  %t2 = nova.all_reduce <sum> ins(%in2 : memref<8x8xf32, #nova.memory_space<hbm>>) outs(%out2 : memref<8x8xf32, #nova.memory_space<hbm>>) groups [[0, 1]]
  nova.wait %t2
  %y2 = bufferization.to_tensor %out2 restrict writable : memref<8x8xf32, #nova.memory_space<hbm>> to tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %s = linalg.add ins(%y, %y2 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

// A collective whose result nothing reads: nothing to overlap.
// CHECK-LABEL: func.func @unused_result
// CHECK: nova.all_reduce
// CHECK-NEXT: return
func.func @unused_result(%p: memref<8xf32, #nova.memory_space<hbm>>, %r: memref<8xf32, #nova.memory_space<hbm>>) {
  %t = nova.all_reduce <sum> ins(%p : memref<8xf32, #nova.memory_space<hbm>>) outs(%r : memref<8xf32, #nova.memory_space<hbm>>) groups [[0, 1]]
  return
}

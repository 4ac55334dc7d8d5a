// The nova-linalg-normalize pipeline on the SmallCNN (two conv2d, ReLU, Linear head) fixture
// (test/Fixtures/generate.py). Five runs: what the pipeline produces, the
// normal-form exclusions over the whole output, and generic, matmul and
// batch_matmul counts.
// RUN: nova-opt %S/../Fixtures/cnn.mlir --nova-linalg-normalize | FileCheck %s
// RUN: nova-opt %S/../Fixtures/cnn.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=FORM
// RUN: nova-opt %S/../Fixtures/cnn.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=COUNT

// FORM-NOT: f64
// FORM-NOT: linalg.index
// FORM-NOT: {{xi1>|xi32>|xi64>|: i64|: i1 }}
// FORM-NOT: linalg.conv
// FORM-NOT: math.fpowi
// FORM-NOT: tensor.extract %
// FORM-NOT: linalg.yield %{{.*}}, %{{.*}}

// CHECK-LABEL: func.func @forward
// conv1: loops over 2 images x 3 x 3 taps around one matmul; conv2
// (stride 2) likewise; then the head.
// CHECK: tensor.pad
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 3, 8, 8] [1, 1, 1, 1] : tensor<2x3x10x10xf32> to tensor<1x3x8x8xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<8x64xf32>
// CHECK: linalg.generic
// CHECK: arith.cmpf ugt
// CHECK: tensor.pad
// CHECK: scf.for
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 8, 4, 4] [1, 1, 2, 2] : tensor<2x8x10x10xf32> to tensor<1x8x4x4xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<16x16xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<2x10xf32>

// COUNT-LABEL: func.func @forward
// COUNT-COUNT-3: linalg.generic
// COUNT-NOT: linalg.generic

// RUN: nova-opt %S/../Fixtures/cnn.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=MATMUL
// MATMUL-LABEL: func.func @forward
// MATMUL-COUNT-3: linalg.matmul
// MATMUL-NOT: linalg.matmul
// RUN: nova-opt %S/../Fixtures/cnn.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=BATCHMM
// BATCHMM-LABEL: func.func @forward
// BATCHMM-NOT: linalg.batch_matmul

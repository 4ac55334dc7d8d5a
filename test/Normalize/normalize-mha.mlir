// The nova-linalg-normalize pipeline on the MultiHeadAttention, causal fixture
// (test/Fixtures/generate.py). Five runs: what the pipeline produces, the
// normal-form exclusions over the whole output, and generic, matmul and
// batch_matmul counts.
// RUN: nova-opt %S/../Fixtures/mha.mlir --nova-linalg-normalize | FileCheck %s
// RUN: nova-opt %S/../Fixtures/mha.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=FORM
// RUN: nova-opt %S/../Fixtures/mha.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=COUNT

// FORM-NOT: f64
// FORM-NOT: linalg.index
// FORM-NOT: {{xi1>|xi32>|xi64>|: i64|: i1 }}
// FORM-NOT: linalg.conv
// FORM-NOT: math.fpowi
// FORM-NOT: tensor.extract %
// FORM-NOT: linalg.yield %{{.*}}, %{{.*}}

// CHECK-LABEL: func.func @forward
// The causal mask is an f32 constant (1.0 where masked), read by the
// scale-and-mask generic through cmpf une.
// CHECK: %[[MASK:.*]] = arith.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, {{.*}}> : tensor<8x8xf32>
// CHECK: linalg.batch_matmul
// CHECK: linalg.generic {{.*}} ins(%[[MASK]], %{{.*}} : tensor<8x8xf32>, tensor<4x8x8xf32>)
// CHECK: arith.mulf
// CHECK: %[[C:.*]] = arith.cmpf une
// CHECK: arith.select %[[C]]
// CHECK: linalg.generic {{.*}}"reduction"
// CHECK: arith.maximumf
// CHECK: linalg.yield %{{.*}} : f32
// CHECK: math.exp
// CHECK: linalg.batch_matmul

// COUNT-LABEL: func.func @forward
// COUNT-COUNT-9: linalg.generic
// COUNT-NOT: linalg.generic

// RUN: nova-opt %S/../Fixtures/mha.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=MATMUL
// MATMUL-LABEL: func.func @forward
// MATMUL-COUNT-4: linalg.matmul
// MATMUL-NOT: linalg.matmul
// RUN: nova-opt %S/../Fixtures/mha.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=BATCHMM
// BATCHMM-LABEL: func.func @forward
// BATCHMM-COUNT-2: linalg.batch_matmul
// BATCHMM-NOT: linalg.batch_matmul

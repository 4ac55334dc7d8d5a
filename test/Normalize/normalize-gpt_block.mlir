// The nova-linalg-normalize pipeline on the GPTBlock (pre-LN, causal attention, GELU MLP) fixture
// (test/Fixtures/generate.py). Five runs: what the pipeline produces, the
// normal-form exclusions over the whole output, and generic, matmul and
// batch_matmul counts.
// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-linalg-normalize | FileCheck %s
// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=FORM
// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=COUNT

// FORM-NOT: f64
// FORM-NOT: linalg.index
// FORM-NOT: {{xi1>|xi32>|xi64>|: i64|: i1 }}
// FORM-NOT: linalg.conv
// FORM-NOT: math.fpowi
// FORM-NOT: tensor.extract %
// FORM-NOT: linalg.yield %{{.*}}, %{{.*}}

// CHECK-LABEL: func.func @forward
// CHECK: arith.constant dense<{{.*}}> : tensor<8x8xf32>
// CHECK: linalg.batch_matmul
// CHECK: arith.cmpf une
// CHECK: linalg.batch_matmul
// MLP: matmul + one bias/GELU epilogue, matmul + bias/residual epilogue.
// CHECK: %[[FC1:.*]] = linalg.matmul {{.*}} -> tensor<16x128xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[FC1]], %{{.*}} : tensor<16x128xf32>, tensor<128xf32>)
// CHECK: math.erf
// CHECK: %[[FC2:.*]] = linalg.matmul
// CHECK-NEXT: linalg.generic {{.*}} ins(%{{.*}}, %[[FC2]], %{{.*}} : tensor<16x32xf32>, tensor<16x32xf32>, tensor<32xf32>)

// COUNT-LABEL: func.func @forward
// COUNT-COUNT-19: linalg.generic
// COUNT-NOT: linalg.generic

// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=MATMUL
// MATMUL-LABEL: func.func @forward
// MATMUL-COUNT-6: linalg.matmul
// MATMUL-NOT: linalg.matmul
// RUN: nova-opt %S/../Fixtures/gpt_block.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=BATCHMM
// BATCHMM-LABEL: func.func @forward
// BATCHMM-COUNT-2: linalg.batch_matmul
// BATCHMM-NOT: linalg.batch_matmul

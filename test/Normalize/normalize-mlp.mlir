// The nova-linalg-normalize pipeline on the MLP (Linear, GELU, Linear) fixture
// (test/Fixtures/generate.py). Five runs: what the pipeline produces, the
// normal-form exclusions over the whole output, and generic, matmul and
// batch_matmul counts.
// RUN: nova-opt %S/../Fixtures/mlp.mlir --nova-linalg-normalize | FileCheck %s
// RUN: nova-opt %S/../Fixtures/mlp.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=FORM
// RUN: nova-opt %S/../Fixtures/mlp.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=COUNT

// FORM-NOT: f64
// FORM-NOT: linalg.index
// FORM-NOT: {{xi1>|xi32>|xi64>|: i64|: i1 }}
// FORM-NOT: linalg.conv
// FORM-NOT: math.fpowi
// FORM-NOT: tensor.extract %
// FORM-NOT: linalg.yield %{{.*}}, %{{.*}}

// CHECK-LABEL: func.func @forward
// The first Linear's bias add and the GELU are one epilogue generic.
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK-NEXT: %[[EPI:.*]] = linalg.generic {{.*}} ins(%[[MM]], %{{.*}} : tensor<16x128xf32>, tensor<128xf32>)
// CHECK: arith.addf
// CHECK: math.erf
// CHECK: linalg.yield
// CHECK: linalg.matmul indexing_maps = {{.*}} ins(%[[EPI]],
// CHECK: linalg.generic
// CHECK: arith.addf

// COUNT-LABEL: func.func @forward
// COUNT-COUNT-2: linalg.generic
// COUNT-NOT: linalg.generic

// RUN: nova-opt %S/../Fixtures/mlp.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=MATMUL
// MATMUL-LABEL: func.func @forward
// MATMUL-COUNT-2: linalg.matmul
// MATMUL-NOT: linalg.matmul
// RUN: nova-opt %S/../Fixtures/mlp.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=BATCHMM
// BATCHMM-LABEL: func.func @forward
// BATCHMM-NOT: linalg.batch_matmul

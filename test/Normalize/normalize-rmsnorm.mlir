// The nova-linalg-normalize pipeline on the RMSNorm (x.pow(2) is math.fpowi) fixture
// (test/Fixtures/generate.py). Five runs: what the pipeline produces, the
// normal-form exclusions over the whole output, and generic, matmul and
// batch_matmul counts.
// RUN: nova-opt %S/../Fixtures/rmsnorm.mlir --nova-linalg-normalize | FileCheck %s
// RUN: nova-opt %S/../Fixtures/rmsnorm.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=FORM
// RUN: nova-opt %S/../Fixtures/rmsnorm.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=COUNT

// FORM-NOT: f64
// FORM-NOT: linalg.index
// FORM-NOT: {{xi1>|xi32>|xi64>|: i64|: i1 }}
// FORM-NOT: linalg.conv
// FORM-NOT: math.fpowi
// FORM-NOT: tensor.extract %
// FORM-NOT: linalg.yield %{{.*}}, %{{.*}}

// CHECK-LABEL: func.func @forward
// CHECK: linalg.generic {{.*}}"reduction"
// CHECK: %[[SQ:.*]] = arith.mulf %[[IN:.*]], %[[IN]] : f32
// CHECK: arith.addf %[[SQ]]
// CHECK: linalg.generic
// CHECK: math.rsqrt

// COUNT-LABEL: func.func @forward
// COUNT-COUNT-2: linalg.generic
// COUNT-NOT: linalg.generic

// RUN: nova-opt %S/../Fixtures/rmsnorm.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=MATMUL
// MATMUL-LABEL: func.func @forward
// MATMUL-NOT: linalg.matmul
// RUN: nova-opt %S/../Fixtures/rmsnorm.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=BATCHMM
// BATCHMM-LABEL: func.func @forward
// BATCHMM-NOT: linalg.batch_matmul

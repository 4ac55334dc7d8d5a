//===- NovaAttentionTrainOps.h - attention for training ----------*- C++ -*-===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVAATTENTIONTRAINOPS_H
#define NOVA_DIALECT_NOVA_IR_NOVAATTENTIONTRAINOPS_H

#include "nova/Dialect/Nova/IR/NovaOps.h"

#define GET_OP_CLASSES
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.h.inc"

#endif // NOVA_DIALECT_NOVA_IR_NOVAATTENTIONTRAINOPS_H

//===- MergeStages.cpp - pipeline stages into per-chip programs -*- C++ -*-===//
#include "nova/Schedule/Passes.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

#define DEBUG_TYPE "nova-merge-stages"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAMERGESTAGES
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

struct Stage {
  ModuleOp module;
  func::FuncOp func;
  FunctionType type;
};

struct MergeStagesPass : public nova::impl::NovaMergeStagesBase<MergeStagesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp top = getOperation();
    if (microbatches < 1) {
      top.emitError() << "microbatches must be at least 1, got " << microbatches;
      return signalPassFailure();
    }
    FailureOr<SmallVector<Stage>> stages = collectStages(top);
    if (failed(stages))
      return signalPassFailure();

    if (Attribute target = (*stages)[0].module->getAttr(NovaDialect::getTargetAttrName()))
      if (!top->hasAttr(NovaDialect::getTargetAttrName()))
        top->setAttr(NovaDialect::getTargetAttrName(), target);
    mergeGlobals(top, *stages);

    // The shared signature: every stage's parameters, then the microbatches.
    SmallVector<Type> args, results;
    SmallVector<unsigned> firstParam;
    for (Stage stage : *stages) {
      firstParam.push_back(args.size());
      llvm::append_range(args, stage.type.getInputs().drop_back());
    }
    Type xType = (*stages).front().type.getInputs().back();
    Type yType = (*stages).back().type.getResult(0);
    unsigned firstInput = args.size();
    args.append(microbatches, xType);
    results.append(microbatches, yType);
    auto merged = FunctionType::get(&getContext(), args, results);

    OpBuilder b(&getContext());
    b.setInsertionPointToEnd(top.getBody());
    for (auto [s, stage] : llvm::enumerate(*stages))
      buildStage(b, s, stage, stages->size(), merged, firstParam[s], firstInput);
    for (Stage stage : *stages)
      stage.module.erase();
  }

  FailureOr<SmallVector<Stage>> collectStages(ModuleOp top) {
    SmallVector<Stage> stages;
    for (Operation &op : top.getBody()->getOperations()) {
      auto module = dyn_cast<ModuleOp>(op);
      if (!module)
        return op.emitOpError() << "outside a stage module: nova-merge-stages takes "
                                   "one nested builtin.module per stage";
      SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
      if (funcs.size() != 1)
        return module.emitError() << "stage " << stages.size() << " holds " << funcs.size()
                                  << " functions, expected one";
      FunctionType type = funcs[0].getFunctionType();
      if (type.getNumResults() != 1 || type.getNumInputs() < 1 ||
          !funcs[0].getBody().hasOneBlock())
        return funcs[0].emitOpError()
               << "stage " << stages.size()
               << ": expected one block taking (parameters..., x) and returning y, got "
               << type;
      auto isBuffer = [](Type t) { return isa<MemRefType>(t); };
      if (!llvm::all_of(type.getInputs(), isBuffer) ||
          !llvm::all_of(type.getResults(), isBuffer))
        return funcs[0].emitOpError()
               << "stage " << stages.size()
               << ": expected buffers (the nova level, after nova-lower-to-tiles), got "
               << type;
      stages.push_back({module, funcs[0], type});
    }
    if (stages.empty())
      return top.emitError() << "no stage module to merge";
    for (size_t s = 0; s + 1 < stages.size(); ++s)
      if (stages[s].type.getResult(0) != stages[s + 1].type.getInputs().back())
        return stages[s + 1].func.emitOpError()
               << "stage " << s + 1 << " takes " << stages[s + 1].type.getInputs().back()
               << " but stage " << s << " returns " << stages[s].type.getResult(0);
    return stages;
  }

  /// Moves every stage's globals to the top module: one per (name, value),
  /// a clash renamed (and its uses in the stage's function).
  void mergeGlobals(ModuleOp top, MutableArrayRef<Stage> stages) {
    std::map<std::string, memref::GlobalOp> kept;
    for (auto [s, stage] : llvm::enumerate(stages)) {
      SmallVector<memref::GlobalOp> globals(stage.module.getOps<memref::GlobalOp>());
      for (memref::GlobalOp global : globals) {
        std::string name = global.getSymName().str();
        auto it = kept.find(name);
        if (it != kept.end() && it->second.getType() == global.getType() &&
            it->second.getInitialValueAttr() == global.getInitialValueAttr()) {
          global.erase();
          continue;
        }
        if (it != kept.end()) {
          // A name neither kept nor used in this stage.
          std::string renamed = name + "_stage" + std::to_string(s);
          for (int n = 1; kept.count(renamed) ||
                          SymbolTable::lookupSymbolIn(stage.module, renamed);
               ++n)
            renamed = name + "_stage" + std::to_string(s) + "_" + std::to_string(n);
          if (failed(SymbolTable::replaceAllSymbolUses(
                  global.getSymNameAttr(), StringAttr::get(&getContext(), renamed),
                  stage.func)))
            global.emitError() << "cannot rename its uses";
          global.setSymName(renamed);
          name = renamed;
        }
        global->moveBefore(top.getBody(), top.getBody()->end());
        kept[name] = global;
      }
    }
  }

  void buildStage(OpBuilder &b, size_t s, Stage stage, size_t count,
                  FunctionType merged, unsigned firstParam, unsigned firstInput) {
    Location loc = stage.func.getLoc();
    auto func = func::FuncOp::create(b, loc, "stage" + std::to_string(s), merged);
    func->setAttr(NovaDialect::ChipsAttrHelper::getNameStr(),
                  b.getDenseI64ArrayAttr({static_cast<int64_t>(s)}));
    Block *entry = func.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    Block &stageBody = stage.func.getBody().front();
    unsigned params = stage.type.getNumInputs() - 1;
    auto xType = cast<MemRefType>(stage.type.getInputs().back());
    auto yType = cast<MemRefType>(merged.getResult(0));
    bool last = s + 1 == count;
    Type tokenType = TokenType::get(b.getContext());
    SmallVector<Value> outputs, sends;
    for (int64_t i = 0; i < microbatches; ++i) {
      Value x;
      if (s == 0) {
        x = entry->getArgument(firstInput + i);
      } else {
        x = memref::AllocOp::create(body, loc, xType, body.getI64IntegerAttr(64));
        Value token = RecvOp::create(body, loc, tokenType, x, s - 1, i);
        WaitOp::create(body, loc, ValueRange{token});
      }
      IRMapping mapping;
      for (unsigned p = 0; p < params; ++p)
        mapping.map(stageBody.getArgument(p), entry->getArgument(firstParam + p));
      mapping.map(stageBody.getArgument(params), x);
      for (Operation &op : stageBody.without_terminator())
        body.clone(op, mapping);
      Value y = mapping.lookup(stageBody.getTerminator()->getOperand(0));
      if (last)
        outputs.push_back(y);
      else
        sends.push_back(SendOp::create(body, loc, tokenType, y, s + 1, i));
    }
    if (!sends.empty())
      WaitOp::create(body, loc, sends);
    // Only the last stage's outputs are read; the others return buffers of
    // the right type.
    if (!last)
      for (int64_t i = 0; i < microbatches; ++i)
        outputs.push_back(memref::AllocOp::create(body, loc, yType, body.getI64IntegerAttr(64)));
    func::ReturnOp::create(body, loc, outputs);
  }
};
} // namespace

//===- WidenSums.cpp - the nova-widen-sums pass -----------------*- C++ -*-===//
//
// torch-mlir writes `aten.sum` of a bf16 (or f16) tensor as a linalg
// reduction that accumulates in bf16, rounding at every step; PyTorch
// accumulates half-precision sums in f32 and rounds the result once (a bias
// gradient under autocast: a sum over every token). Such a reduction
// accumulates in f32 here, and its result is rounded to the narrow type.
//
//===----------------------------------------------------------------------===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAWIDENSUMS
#include "nova/Input/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// `g` sums its one input into a fill of a constant in bf16 or f16: the
/// constant, or null.
TypedAttr narrowSumStart(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || !g.hasPureTensorSemantics() ||
      !llvm::any_of(g.getIteratorTypesArray(), linalg::isReductionIterator))
    return {};
  Type element = getElementTypeOrSelf(g.getResult(0).getType());
  if (!element.isBF16() && !element.isF16())
    return {};
  Block &body = g.getRegion().front();
  auto add = dyn_cast<arith::AddFOp>(body.front());
  if (body.getOperations().size() != 2 || !add ||
      body.getTerminator()->getOperand(0) != add.getResult() ||
      !((add.getLhs() == body.getArgument(0) && add.getRhs() == body.getArgument(1)) ||
        (add.getLhs() == body.getArgument(1) && add.getRhs() == body.getArgument(0))))
    return {};
  auto fill = g.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  TypedAttr start;
  if (!fill || !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() ||
      !matchPattern(fill.getInputs()[0], m_Constant(&start)))
    return {};
  return start;
}

/// An elementwise generic converting `input` to `element` with `Cast`.
template <typename Cast>
Value converted(OpBuilder &b, Location loc, Value input, Type element) {
  auto type = cast<RankedTensorType>(input.getType());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), element);
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> parallel(type.getRank(), utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), input, init, ArrayRef<AffineMap>{id, id}, parallel,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, Cast::create(nb, nl, element, args[0])->getResult(0));
             })
      .getResult(0);
}

struct WidenSumsPass : public nova::impl::NovaWidenSumsBase<WidenSumsPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> sums;
    getOperation().walk([&](linalg::GenericOp g) {
      if (narrowSumStart(g))
        sums.push_back(g);
    });
    for (linalg::GenericOp g : sums) {
      TypedAttr start = narrowSumStart(g);
      Location loc = g.getLoc();
      Type narrow = getElementTypeOrSelf(g.getResult(0).getType());
      auto f32 = rewriter.getF32Type();
      rewriter.setInsertionPoint(g);
      auto resultType = cast<RankedTensorType>(g.getResult(0).getType());
      bool lossless = false;
      APFloat value = cast<FloatAttr>(start).getValue();
      value.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lossless);
      Value zero = arith::ConstantOp::create(rewriter, loc, FloatAttr::get(f32, value));
      Value empty = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), f32);
      Value init = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
      Value wide = converted<arith::ExtFOp>(rewriter, loc, g.getDpsInputs()[0], f32);
      auto sum = linalg::GenericOp::create(
          rewriter, loc, init.getType(), wide, init, g.getIndexingMapsArray(),
          g.getIteratorTypesArray(), [&](OpBuilder &nb, Location nl, ValueRange args) {
            linalg::YieldOp::create(nb, nl, arith::AddFOp::create(nb, nl, args[0], args[1]).getResult());
          });
      rewriter.replaceOp(g, converted<arith::TruncFOp>(rewriter, loc, sum.getResult(0), narrow));
      ++numWidened;
    }
  }
};

} // namespace

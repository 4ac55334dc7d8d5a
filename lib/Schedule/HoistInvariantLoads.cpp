//===- HoistInvariantLoads.cpp - load invariant tiles once ------*- C++ -*-===//
//
// A tile that no iteration of a loop changes is loaded once, in front of the
// loop. A tile that every iteration loads, updates and stores back at the
// same place (the output tile of a matmul whose K is split into panels)
// stays in SRAM for the whole loop: its load moves in front of the loop and
// its store behind it.
//
// Loads of one tile hoisted in front of neighbouring loops then share one
// SRAM copy: the parts of a loop that nova-interleave-loops split (a fused
// part and the rest), or two ops that read one operand whole (a linear's
// input and weight gradients both read its output gradient).
//
//===----------------------------------------------------------------------===//
#include "nova/Schedule/Passes.h"
#include "Accesses.h"
#include "LoopWrites.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "nova-hoist-invariant-loads"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAHOISTINVARIANTLOADS
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

struct HoistInvariantLoadsPass
    : public nova::impl::NovaHoistInvariantLoadsBase<HoistInvariantLoadsPass> {
  using Base::Base;

  /// Moves the side-effect-free ops of `loop`'s body that compute `value`
  /// (tiling leaves a tile's views in the innermost loop) in front of the
  /// loop, if none of them depends on the loop. True if `value` is then
  /// defined outside the loop.
  static bool hoistComputation(scf::ForOp loop, Value value) {
    SmallVector<Operation *> chain;
    SmallVector<Value> worklist{value};
    llvm::SmallPtrSet<Operation *, 8> seen;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (loop.isDefinedOutsideOfLoop(v))
        continue;
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != loop.getBody() ||
          def->getNumRegions() != 0 || !isMemoryEffectFree(def))
        return false;
      if (seen.insert(def).second) {
        chain.push_back(def);
        llvm::append_range(worklist, def->getOperands());
      }
    }
    llvm::sort(chain, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : chain)
      op->moveBefore(loop);
    return true;
  }

  /// The op of `body` that is or contains `op`.
  static Operation *inBody(Block *body, Operation *op) {
    return body->findAncestorOpInBlock(*op);
  }

  /// The single-token wait in `body` that is the only use of `dma`'s token.
  static WaitOp waitOf(Block *body, DmaStartOp dma) {
    if (!dma.getToken().hasOneUse())
      return {};
    auto wait = dyn_cast<WaitOp>(*dma.getToken().user_begin());
    if (!wait || wait->getBlock() != body || wait.getTokens().size() != 1)
      return {};
    return wait;
  }

  /// `dma`'s target when it is a statically shaped alloc of `body`.
  static memref::AllocOp staticTileOf(Block *body, DmaStartOp dma) {
    auto alloc = dma.getTarget().getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != body || !alloc.getDynamicSizes().empty() ||
        !alloc.getSymbolOperands().empty())
      return {};
    return alloc;
  }

  /// Moves the invariant loads of `loop` in front of it.
  void hoist(scf::ForOp loop) {
    Block *body = loop.getBody();
    SmallVector<DmaStartOp> dmas(body->getOps<DmaStartOp>());
    for (DmaStartOp dma : dmas) {
      if (dma.getPeer())
        continue;
      // Every check before moving the source's views (a failed check must
      // leave the loop as it was): nothing in the loop writes the tile (but
      // this DMA) or the source.
      memref::AllocOp alloc = staticTileOf(body, dma);
      WaitOp wait = alloc ? waitOf(body, dma) : WaitOp();
      if (!wait || mayWriteInLoop(loop, alloc.getResult(), dma) ||
          mayWriteInLoop(loop, rootOf(dma.getSource())))
        continue;
      if (!loop.isDefinedOutsideOfLoop(dma.getSource()) &&
          !hoistComputation(loop, dma.getSource()))
        continue;
      alloc->moveBefore(loop);
      dma->moveBefore(loop);
      wait->moveBefore(loop);
      ++numHoisted;
    }
  }

  /// Keeps the tiles that `loop` loads, updates and stores back at one
  /// loop-invariant place in SRAM across its iterations.
  void promote(scf::ForOp loop) {
    Block *body = loop.getBody();
    SmallVector<DmaStartOp> dmas(body->getOps<DmaStartOp>());
    for (DmaStartOp load : dmas) {
      if (load.getPeer())
        continue;
      memref::AllocOp alloc = staticTileOf(body, load);
      if (!alloc)
        continue;
      Value place = load.getSource();
      DmaStartOp store;
      for (Operation *user : alloc->getUsers())
        if (auto dma = dyn_cast<DmaStartOp>(user);
            dma && dma != load && dma->getBlock() == body && !dma.getPeer() &&
            dma.getSource() == alloc.getResult() && dma.getTarget() == place)
          store = dma;
      if (!store || !store->isBeforeInBlock(body->getTerminator()))
        continue;
      WaitOp loadWait = waitOf(body, load), storeWait = waitOf(body, store);
      if (!loadWait || !storeWait || !load->isBeforeInBlock(store))
        continue;
      // The tile is only touched between its load and its store (through
      // views too), and nothing else in the loop touches the place.
      bool inside = true;
      SmallVector<Value> worklist{alloc.getResult()};
      while (!worklist.empty() && inside) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          Operation *op = inBody(body, user);
          if (!op || (op != load && op != store &&
                      (!load->isBeforeInBlock(op) || !op->isBeforeInBlock(store)))) {
            inside = false;
            break;
          }
          if (isa<ViewLikeOpInterface, memref::TransposeOp>(user))
            llvm::append_range(worklist, user->getResults());
        }
      }
      if (!inside || mayAccessInLoop(loop, rootOf(place), {load, store}))
        continue;
      if (!loop.isDefinedOutsideOfLoop(place) && !hoistComputation(loop, place))
        continue;
      alloc->moveBefore(loop);
      load->moveBefore(loop);
      loadWait->moveBefore(loop);
      storeWait->moveAfter(loop);
      store->moveAfter(loop);
      ++numPromoted;
    }
  }

  /// A whole-tile load of `block`: an HBM -> SRAM copy into a static alloc
  /// of the block, waited for alone.
  struct Load {
    DmaStartOp dma;
    WaitOp wait;
    memref::AllocOp tile;
  };

  static std::optional<Load> loadOf(Block *block, DmaStartOp dma) {
    if (dma.getPeer())
      return std::nullopt;
    auto source = dyn_cast<MemRefType>(dma.getSource().getType());
    auto target = dyn_cast<MemRefType>(dma.getTarget().getType());
    if (!source || !target || getMemorySpace(source) != MemorySpace::HBM ||
        getMemorySpace(target) != MemorySpace::SRAM)
      return std::nullopt;
    memref::AllocOp tile = staticTileOf(block, dma);
    WaitOp wait = tile ? waitOf(block, dma) : WaitOp();
    if (!wait)
      return std::nullopt;
    return Load{dma, wait, tile};
  }

  /// Whether `op` or an op nested in it uses `tile` (through views too).
  static bool usesTile(Operation *op, Value tile) {
    SmallVector<Value> worklist{tile};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (op->isAncestor(user))
          return true;
        if (isa<ViewLikeOpInterface, memref::TransposeOp>(user))
          llvm::append_range(worklist, user->getResults());
      }
    }
    return false;
  }

  /// A load of the tile an earlier load of `block` already holds (same
  /// source value, same tile type) uses that copy instead. Between the two
  /// only ops that use the copy, lazy ops, waits and other loads may run, so
  /// that keeping the copy live adds no SRAM at any point (each op between
  /// needed it, or its own tile, anyway); none of them may write the source's
  /// buffer or the copy.
  void share(Block &block) {
    SmallVector<Load> kept;
    for (Operation *op = &block.front(), *next; op; op = next) {
      next = op->getNextNode();
      if (auto dma = dyn_cast<DmaStartOp>(op)) {
        if (std::optional<Load> load = loadOf(&block, dma)) {
          auto same = llvm::find_if(kept, [&](Load &k) {
            return k.dma.getSource() == dma.getSource() &&
                   k.tile.getType() == load->tile.getType();
          });
          if (same == kept.end()) {
            kept.push_back(*load);
            continue;
          }
          if (next == load->wait.getOperation())
            next = next->getNextNode();
          load->wait->erase();
          dma->erase();
          load->tile.getResult().replaceAllUsesWith(same->tile.getResult());
          load->tile->erase();
          ++numShared;
          continue;
        }
      }
      if (isa<WaitOp>(op) || isLazy(op))
        continue;
      Accesses acc = accessesOf(op);
      llvm::erase_if(kept, [&](Load &k) {
        const void *source = bufferKey(k.dma.getSource());
        return acc.unknown || !source || acc.writes.contains(source) ||
               acc.writes.contains(bufferKey(k.tile.getResult())) ||
               !usesTile(op, k.tile.getResult());
      });
    }
  }

  void runOnOperation() override {
    // Inner loops first, so that a load can leave a loop nest level by level.
    getOperation().walk<WalkOrder::PostOrder>([&](scf::ForOp loop) {
      hoist(loop);
      promote(loop);
    });
    // Then the loads hoisted in front of sibling loops share their copies.
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      if (!block->empty())
        share(*block);
  }
};
} // namespace
